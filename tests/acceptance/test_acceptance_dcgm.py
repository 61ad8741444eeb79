"""DCGM's GPU diagnostic in the acceptance suite: a `dcgmi diag -r 3 -j` job per GPU node, its verdict read from
DCGM's JSON output.

The layout read is DCGM 4's (NVIDIA/DCGM: dcgmi/Diag.cpp writes it, nvvs/include/NvvsJsonStrings.h names its keys,
testing/python3/dcgm_diag_schema.json is the schema DCGM's tests hold it to). No GPU or DCGM runs here: the outputs
are stand-ins (tests/dcgm_outputs.py), checked against DCGM's own schema where GPUFABRIC_DCGM_SCHEMA names a copy
of that file (skipped, and said so, where it does not).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from conftest import INVENTORY, example_plan, run_in_process
from dcgm_outputs import LEVEL1, diag_doc, diag_text

from gpufabric.acceptance.dcgm import MAX_NAMED, MAX_TEXT, judge_diag
from gpufabric.acceptance.model import DiagJob
from gpufabric.acceptance.report import Report, diag_verdict, junit
from gpufabric.acceptance.slurm import scripts
from gpufabric.acceptance.suite import build_suite

FABRIC = INVENTORY / "fabric.yml"
JOB = DiagJob("dcgmi-diag.r3.gpu01", "gpu01", 8)
# DCGM's messages and error ids as its error table has them (NVIDIA/DCGM dcgmlib/dcgm_errors.h: DCGM_FR_XID_ERROR
# 101, DCGM_FR_PCIE_REPLAY_THRESHOLD_VIOLATION 107, DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS 83, with their _MSG texts)
XID_79 = "Detected XID 79 for GPU 3"
DBE = "Pending page retirements together with a DBE were detected on GPU 0."


def _verdict(tmp_path: Path, text: str | bytes) -> Any:
    path = tmp_path / f"{JOB.id}.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return diag_verdict(JOB, path)


def test_every_gpu_node_gets_a_level3_diagnostic() -> None:
    plan = example_plan(FABRIC)
    suite = build_suite(plan)
    gpu_nodes = [s.name for s in plan.servers if s.gpus]
    assert gpu_nodes and [j.server for j in suite.gpu] == gpu_nodes
    assert {tuple(j.command()) for j in suite.gpu} == {("dcgmi", "diag", "-r", "3", "-j")}
    assert suite.jobs()[-len(gpu_nodes) :] == suite.gpu  # beside the network tests, judged by the report
    done = run_in_process("gpufabric", "acceptance", "plan", str(FABRIC), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["counts"]["dcgmi"] == len(gpu_nodes)
    assert [g["id"] for g in doc["gpu"]] == [f"dcgmi-diag.r3.{n}" for n in gpu_nodes]


def test_a_passing_run_passes(tmp_path: Path) -> None:
    v = _verdict(tmp_path, diag_text())
    assert (v.status, v.observed) == ("passed", 0)
    assert v.detail == "passed diagnostic, memory_bandwidth, targeted_power, targeted_stress (DCGM 4.6.0)"


def test_a_failed_test_fails_with_its_error(tmp_path: Path) -> None:
    v = _verdict(tmp_path, diag_text(fail={("targeted_stress", 3): (XID_79, 101)}))
    assert (v.status, v.observed, v.fault) == ("failed", 1, True)
    assert v.detail == f"1 failed: targeted_stress on GPU 3: {XID_79} (DCGM error 101)"
    case = ET.fromstring(junit(Report([v]))).find("testcase")
    assert case is not None and case.get("classname") == "acceptance.gpu.dcgmi"
    failure = case.find("failure")
    assert failure is not None and XID_79 in failure.get("message", "")


def test_a_test_failed_as_a_whole_fails(tmp_path: Path) -> None:
    doc = diag_doc()
    test = doc["DCGM Diagnostic"]["test_categories"][1]["tests"][0]  # pcie
    replays = "Detected 260 PCIe replays for GPU 5 which is above the threshold 250"
    warning = {"warning": replays, "error_id": 107, "error_category": 13, "error_severity": 2}
    test["test_summary"] = {"status": "Fail", "warnings": [warning]}
    v = _verdict(tmp_path, json.dumps(doc))
    assert (v.status, v.detail) == (
        "failed",
        "1 failed: pcie: Detected 260 PCIe replays for GPU 5 which is above the threshold 250 (DCGM error 107)",
    )


def test_no_verdict_without_a_level3_run(tmp_path: Path) -> None:
    assert _verdict(tmp_path, diag_text(tests=LEVEL1)).status == "invalid"  # `-r 1`: software checks only
    skipped = _verdict(tmp_path, diag_text(skip=frozenset({"diagnostic", "memory_bandwidth", "targeted_stress",
                                                            "targeted_power"})))  # fmt: skip
    assert skipped.status == "unstressed" and "every level-3 test was skipped" in skipped.detail
    ran_not = {"DCGM Diagnostic": {"version": "4.6.0", "runtime_error": "Unable to connect to the host engine"}}
    v = _verdict(tmp_path, json.dumps(ran_not))
    assert (v.status, v.detail) == ("unknown", "the diagnostic did not run: Unable to connect to the host engine")


def _one_result(result: dict[str, Any]) -> str:
    category = {"category": "Hardware", "tests": [{"name": "diagnostic", "results": [result]}]}
    return json.dumps({"DCGM Diagnostic": {"test_categories": [category]}})


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (diag_text()[:-40], f"{JOB.id}.json:"),  # cut short: located at its line
        ("[" * 100_000 + "]" * 100_000, "nests deeper than"),  # bounded, not a RecursionError
        ('{"DCGM Diagnostic": {"test_categories": NaN}}', "not valid JSON"),
        ("[]", "the document: is list, not an object"),
        ('{"metadata": {}}', "has no 'DCGM Diagnostic' object"),
        ('{"DCGM Diagnostic": {"test_categories": {}}}', "DCGM Diagnostic.test_categories: is dict, not a list"),
        (
            _one_result({"status": 1}),
            "DCGM Diagnostic.test_categories[0].tests[0].results[0].status: 1 is none of Fail, Pass, Skip, Warn",
        ),
        (
            _one_result({"status": "Fail", "warnings": [{"warning": ["x"]}]}),
            "results[0].warnings[0].warning: is list, not text",
        ),
    ],
    ids=["truncated", "deep", "nan", "list", "not-dcgm", "categories-object", "status-number", "warning-list"],
)
def test_hostile_output_is_unreadable_and_located(tmp_path: Path, text: str, said: str) -> None:
    v = _verdict(tmp_path, text)
    assert v.status == "unreadable" and said in v.detail, v.detail
    assert v.observed is None and not v.passed


def test_dcgm_text_reaches_the_detail_escaped_and_bounded(tmp_path: Path) -> None:
    hostile = "\x1b[2J\x1b]0;owned\x07" + "A" * 10_000
    many = {("targeted_power", g): (hostile, 11) for g in range(8)}
    v = _verdict(tmp_path, diag_text(fail=many))
    assert v.status == "failed" and v.observed == 8
    assert "\x1b" not in v.detail and "\\x1b[2J" in v.detail
    assert v.detail.endswith(f"; and {8 - MAX_NAMED} more")
    assert len(v.detail) < MAX_NAMED * (MAX_TEXT + 60) + 40  # each message cut at MAX_TEXT characters


def test_judge_diag_reads_the_text_it_is_given() -> None:
    assert judge_diag(diag_text(gpus=1), "x.json").status == "passed"


def _results(tmp_path: Path) -> tuple[Any, Path]:
    """Results with every network job left out: only the DCGM jobs are looked at below."""
    suite = build_suite(example_plan(FABRIC))
    folder = tmp_path / "results"
    folder.mkdir()
    for job in suite.gpu:
        (folder / f"{job.id}.json").write_text(diag_text(job.gpus))
    return suite, folder


def _gpu_rows(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    return {j["id"]: j for j in json.loads(done.stdout)["jobs"] if j["tool"] == "dcgmi"}


def test_the_report_command_judges_each_node_and_exits_by_verdict(tmp_path: Path) -> None:
    suite, folder = _results(tmp_path)
    done = run_in_process("gpufabric", "acceptance", "report", str(FABRIC), "--results", str(folder), "--json")
    assert done.returncode == 4  # the network jobs have no results here
    assert {j["status"] for j in _gpu_rows(done).values()} == {"passed"}
    bad = suite.gpu[1]
    (folder / f"{bad.id}.json").write_text(diag_text(bad.gpus, fail={("memory", 0): (DBE, 83)}))
    (folder / f"{suite.gpu[2].id}.json").write_text('{"DCGM Diagnostic": ')
    done = run_in_process("gpufabric", "acceptance", "report", str(FABRIC), "--results", str(folder))
    assert done.returncode == 4 and "Traceback" not in done.stderr
    assert f"{bad.id}: failed: 1 failed: memory on GPU 0: {DBE} (DCGM error 83)" in done.stderr
    assert f"{suite.gpu[2].id}: unreadable: {suite.gpu[2].id}.json:1:" in done.stderr
    (folder / f"{bad.id}.json").write_bytes(b"\xff\xfe not UTF-8")
    done = run_in_process("gpufabric", "acceptance", "report", str(FABRIC), "--results", str(folder))
    assert done.returncode == 2 and "Traceback" not in done.stderr and f"{bad.id}.json" in done.stderr


def test_the_slurm_script_runs_dcgm_alone_on_its_node(tmp_path: Path) -> None:
    suite = build_suite(example_plan(FABRIC))
    files = scripts(suite)
    text = files[f"{JOB.id}.sbatch"]
    (tmp_path / "s.sbatch").write_text(text)
    subprocess.run(["bash", "-n", str(tmp_path / "s.sbatch")], check=True)
    assert "#SBATCH --nodelist=gpu01" in text and "#SBATCH --exclusive" in text and "#SBATCH --time=60" in text
    assert f"srun --nodes=1 --ntasks=1 dcgmi diag -r 3 -j > results/{JOB.id}.json" in text
    assert f"sbatch {JOB.id}.sbatch" in files["submit.sh"]


def test_the_stand_ins_follow_dcgms_published_schema() -> None:
    """The stand-in outputs against testing/python3/dcgm_diag_schema.json of NVIDIA/DCGM (not kept in this
    repository: GPUFABRIC_DCGM_SCHEMA names a copy)."""
    import jsonschema

    name = os.environ.get("GPUFABRIC_DCGM_SCHEMA")
    if not name or not Path(name).is_file():
        pytest.skip("GPUFABRIC_DCGM_SCHEMA does not name NVIDIA/DCGM's testing/python3/dcgm_diag_schema.json")
    schema = json.loads(Path(name).read_text())
    for doc in (diag_doc(), diag_doc(fail={("targeted_stress", 3): (XID_79, 101)}), diag_doc(tests=LEVEL1)):
        assert list(jsonschema.Draft7Validator(schema).iter_errors(doc)) == []
    broken = diag_doc()
    del broken["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["results"][0]["status"]
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))  # the schema can fail
