"""What gpufabric writes for machines stays readable by strict readers whatever the switches and tools said:
JSON without NaN or Infinity (RFC 8259 has neither), JUnit XML with only the characters XML 1.0 allows."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from xml.etree import ElementTree as ET

from conftest import INVENTORY, ROOT, run_in_process

from gpufabric.acceptance.report import Report, Verdict, junit
from gpufabric.acceptance.suite import build_suite
from gpufabric.intent import load_intent
from gpufabric.outputs import json_dumps, xml_text
from gpufabric.plan import build_plan
from gpufabric.validate import report
from gpufabric.verify.running.results import CheckResult

OUTPUTS = Path(__file__).parents[1] / "acceptance_outputs"
# What a switch or a tool may hand back: NUL, a terminal colour, the end of a CDATA section, markup.
HOSTILE = ["\x00", "\x1b[31m", "]]>", "<script>", "&", "\ud800", "\ufffe", "tab\tand\nline"]


def _no_constant(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


def _strict(text: str) -> object:
    """json.loads as a strict reader: NaN, Infinity and -Infinity refused."""
    return json.loads(text, parse_constant=_no_constant)


# -- JSON -------------------------------------------------------------------------------------------


def test_a_nan_in_a_validate_report_comes_out_as_strict_json():
    results = [CheckResult("interface", "leaf1", "swp1", "up", "up", True)]
    for seconds, what in ((math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")):
        doc = _strict(report.as_json(results, seconds))
        assert doc["seconds"] is None and doc["seconds_not_finite"] == what
        assert doc["results"][0]["observed"] == "up" and doc["ok"] is True


def test_a_finite_validate_report_is_unchanged():
    results = [CheckResult("interface", "leaf1", "swp1", "up", "down", False)]
    doc = _strict(report.as_json(results, 1.234))
    assert doc["seconds"] == 1.23 and "seconds_not_finite" not in doc


def test_non_finite_values_become_null_with_a_field_saying_why():
    doc = {"rate": math.nan, "peak": math.inf, "series": [1.5, -math.inf], "nested": {"x": math.nan}, "n": 3}
    out = _strict(json_dumps(doc, indent=2))
    assert out == {
        "rate": None,
        "rate_not_finite": "nan",
        "peak": None,
        "peak_not_finite": "inf",
        "series": [1.5, None],
        "nested": {"x": None, "x_not_finite": "nan"},
        "n": 3,
    }
    assert json_dumps({"a": [1, 2.5, "x"]}, sort_keys=True) == json.dumps({"a": [1, 2.5, "x"]}, sort_keys=True)


def _results_with_a_nan(tmp_path: Path) -> tuple[Path, str]:
    """Every job's output passes, but one ib_write_bw printed `nan` as its average (a counter that wrapped)."""
    from incast_evidence import lossless_results

    plan = build_plan(load_intent(str(INVENTORY / "fabric.yml")))
    suite = build_suite(plan)

    folder = tmp_path / "results"
    folder.mkdir()
    bw, lat, nccl = ((OUTPUTS / f"{n}.txt").read_text() for n in ("ib_write_bw", "ib_write_lat", "nccl"))
    for j in suite.perf:
        text = bw.replace("{BW}", f"{j.threshold * 1.05:.2f}") if j.tool == "ib_write_bw" else lat
        text = text.replace("{LAT}", "2.00").replace("{MIN}", "1.95").replace("{AVG}", "2.02")
        (folder / f"{j.id}.txt").write_text(text)
    for n in suite.nccl:
        text = nccl.replace("{BUSBW}", f"{n.expected:.2f}").replace("{WRONG}", "0").replace("{OOB}", "0 OK")
        (folder / f"{n.id}.txt").write_text(text)
    lossless_results(plan, suite, folder)
    nan_job = next(j for j in suite.perf if j.tool == "ib_write_bw")
    (folder / f"{nan_job.id}.txt").write_text(bw.replace("{BW}", "nan"))
    return folder, nan_job.id


def test_the_acceptance_report_json_holds_no_nan(tmp_path):
    folder, nan_job = _results_with_a_nan(tmp_path)
    done = run_in_process(
        "gpufabric", "acceptance", "report", "--results", str(folder), "--json", "--junit", str(tmp_path / "j.xml")
    )
    assert done.returncode == 4, done.stderr  # the NaN job does not pass
    doc = _strict(done.stdout)
    job = next(j for j in doc["jobs"] if j["id"] == nan_job)
    # A figure no link can produce is no evidence: the job is invalid, with no figure to write.
    assert job["observed"] is None and job["status"] == "invalid" and "nan" in job["detail"], job
    ET.parse(tmp_path / "j.xml")  # and the JUnit file of the same run reads


# Writers allowed to call json.dumps themselves, and why; every other goes through gpufabric.outputs.
_OWN_JSON = {
    "gpufabric/outputs.py": "the helper itself",
    "gpufabric/validate/report.py": "writes a result at a time, its seconds through outputs.json_number",
    "gpufabric/docsite/pages.py": "quotes a page title (text only) as a YAML scalar",
    "gpufabric/nos/sonic/yang.py": "hands the document to libyang in memory, which judges it",
}


def test_every_json_writer_goes_through_the_strict_helper():
    found = []
    for path in sorted((ROOT / "gpufabric").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        if rel not in _OWN_JSON and re.search(r"\bjson\.dumps?\(", text):
            found.append(rel)
    assert found == [], "call gpufabric.outputs.json_dumps: " + ", ".join(found)


# -- JUnit XML --------------------------------------------------------------------------------------


def _hostile_results() -> list[CheckResult]:
    return [
        CheckResult("bgp-session", f"leaf{i}", f"swp{i} {bad}", "Established", f"down {bad} here", False)
        for i, bad in enumerate(HOSTILE)
    ] + [CheckResult("interface", "leaf1", "swp1", "up", "up", True)]


def _parsers() -> list:
    parsers = [lambda text: ET.fromstring(text.encode("utf-8"))]
    try:
        from lxml import etree
    except ImportError:
        return parsers
    return [*parsers, lambda text: etree.fromstring(text.encode("utf-8"), etree.XMLParser(recover=False))]


def test_a_validate_junit_report_of_hostile_switch_text_is_well_formed_xml():
    text = report.as_junit(_hostile_results(), 1.0)
    text.encode("utf-8")  # a lone surrogate would make the file unwritable
    for parse in _parsers():
        parse(text)
    root = ET.fromstring(text.encode("utf-8"))
    failures = [f for f in root.iter("failure")]
    assert len(failures) == len(HOSTILE)
    messages = [f.get("message") for f in failures]
    # Markup comes back exactly; what XML cannot carry comes back as a visible escape.
    assert "observed down ]]> here" in messages[2] and "observed down <script> here" in messages[3]
    assert "observed down & here" in messages[4]
    assert "observed down \\x00 here" in messages[0] and "observed down \\x1b[31m here" in messages[1]
    assert "\\ud800" in messages[5] and "\\ufffe" in messages[6]
    assert failures[0].text.startswith("leaf0 swp0 \\x00: expected Established")
    assert [c.get("name") for c in root.iter("testcase")][:2] == ["swp0 \\x00", "swp1 \\x1b[31m"]


def test_a_junit_report_is_read_by_a_junit_reader(tmp_path):
    import junitparser  # a test dependency: a JUnit reader no one here wrote

    path = tmp_path / "validate.xml"
    path.write_text(report.as_junit(_hostile_results(), 1.0), encoding="utf-8")
    xml = junitparser.JUnitXml.fromfile(str(path))
    assert sum(suite.failures for suite in xml) == len(HOSTILE)


def test_an_acceptance_junit_report_of_hostile_tool_text_is_well_formed_xml():
    suite = build_suite(build_plan(load_intent(str(INVENTORY / "fabric.yml"))))
    verdicts = [
        Verdict(job, "unreadable", None, f"no iperf3 result: {bad}")
        for job, bad in zip(suite.perf, HOSTILE, strict=False)
    ]
    text = junit(Report(verdicts))
    for parse in _parsers():
        parse(text)
    errors = [e.get("message") for e in ET.fromstring(text.encode("utf-8")).iter("error")]
    assert errors[:5] == [
        "no iperf3 result: \\x00",
        "no iperf3 result: \\x1b[31m",
        "no iperf3 result: ]]>",
        "no iperf3 result: <script>",
        "no iperf3 result: &",
    ]


def test_xml_text_keeps_what_xml_allows():
    allowed = "tab\tLF\nCR\r é 漢 \U0001f600 \ue000 \ufffd"
    assert xml_text(allowed) == allowed
    assert xml_text("a\x01b\x7fc\x85d\ud800\uffff") == "a\\x01b\x7fc\x85d\\ud800\\uffff"
