"""DCGM's GPU diagnostic (`dcgmi diag -r 3 -j`) read back into a verdict.

The layout read is the one DCGM 4's `dcgmi diag --json` writes (NVIDIA/DCGM: dcgmi/Diag.cpp, which builds it,
nvvs/include/NvvsJsonStrings.h, which names its keys, and testing/python3/dcgm_diag_schema.json, the schema DCGM's
own tests hold it to):

    {"DCGM Diagnostic": {
        "test_categories": [{"category": "Hardware", "tests": [{
            "name": "targeted_stress",
            "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Fail",
                         "warnings": [{"warning": "...", "error_id": 0, "error_category": 0, "error_severity": 0}],
                         "info": ["..."]}],
            "test_summary": {"status": "Fail", "warnings": [...]}}]}],
        "runtime_error": "..."},            # instead of results, when the diagnostic could not run
     "entity_groups": [...], "metadata": {"version": "4.x", "Driver Version Detected": "..."}}

A result's status is Pass, Fail, Warn or Skip (Diag.cpp's HelperDisplayDiagResult; tests that did not run are left
out). Level 3 (`long`) adds the `diagnostic`, `memory_bandwidth`, `targeted_stress` and `targeted_power` plugins to
the shorter levels' (nvvs/src/NvidiaValidationSuite.cpp, FillTestVectors). NVIDIA's dcgmi diag reference says the
JSON has no published stable schema: a layout this reader does not know is `unreadable`, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.inputs import InputError, json_text
from gpufabric.outputs import shown

STATUSES = frozenset({"Pass", "Fail", "Warn", "Skip"})
LONG_TESTS = frozenset({"diagnostic", "memory_bandwidth", "targeted_stress", "targeted_power"})
TOP = "DCGM Diagnostic"
MAX_NAMED = 5  # failures named in a verdict's detail; the rest are counted
MAX_TEXT = 300  # characters of one DCGM message carried into a detail


class DiagOutputError(ValueError, GpufabricError):
    """The output is not DCGM's diagnostic result as laid out above: `where` is the JSON path at fault."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(slots=True)
class DiagResult:
    """What one run reports: its failed results (test, GPU, DCGM's message), warnings, skipped tests, and
    which of level 3's tests ran."""

    ran: set[str] = field(default_factory=set)  # test names with a Pass, Fail or Warn result
    skipped: set[str] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    runtime_error: str | None = None
    version: str | None = None


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise DiagOutputError(where, f"is {type(value).__name__}, not text")
    # DCGM's messages span lines: one line each in a detail, control characters escaped, bounded
    return shown(" ".join(value.split()), MAX_TEXT)


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise DiagOutputError(where, f"is {type(value).__name__}, not a list")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DiagOutputError(where, f"is {type(value).__name__}, not an object")
    return value


def _messages(entry: dict[str, Any], where: str) -> list[str]:
    out = []
    for i, w in enumerate(_list(entry.get("warnings", []), f"{where}.warnings")):
        item = _object(w, f"{where}.warnings[{i}]")
        text = _text(item.get("warning"), f"{where}.warnings[{i}].warning")
        code = item.get("error_id")
        out.append(f"{text} (DCGM error {code})" if isinstance(code, int) and not isinstance(code, bool) else text)
    return out


def _status(entry: dict[str, Any], where: str) -> str:
    status = entry.get("status")
    if status not in STATUSES:
        raise DiagOutputError(f"{where}.status", f"{shown(repr(status), 40)} is none of {', '.join(sorted(STATUSES))}")
    return str(status)


def _entity(result: dict[str, Any]) -> str:
    group, ident = result.get("entity_group"), result.get("entity_id")
    if isinstance(group, str) and isinstance(ident, int) and not isinstance(ident, bool):
        return f"{shown(group, 20)} {ident}"
    return "the node"


def _test(test: Any, where: str, out: DiagResult) -> None:
    entry = _object(test, where)
    name = _text(entry.get("name"), f"{where}.name")
    key = name.lower().replace(" ", "_")  # DCGM 3 wrote display names ("Targeted Stress")
    failed_before = len(out.failures)
    for i, r in enumerate(_list(entry.get("results", []), f"{where}.results")):
        result = _object(r, f"{where}.results[{i}]")
        status = _status(result, f"{where}.results[{i}]")
        said = "; ".join(_messages(result, f"{where}.results[{i}]")) or "no message"
        if status == "Skip":
            out.skipped.add(key)
            continue
        out.ran.add(key)
        if status == "Fail":
            out.failures.append(f"{name} on {_entity(result)}: {said}")
        elif status == "Warn":
            out.warnings.append(f"{name} on {_entity(result)}: {said}")
    if "test_summary" in entry:
        summary = _object(entry["test_summary"], f"{where}.test_summary")
        status = _status(summary, f"{where}.test_summary")
        # A test can fail as a whole with no GPU's result failing (a system-wide error): its summary says so.
        if status == "Fail" and len(out.failures) == failed_before:
            said = "; ".join(_messages(summary, f"{where}.test_summary")) or "no message"
            out.failures.append(f"{name}: {said}")
            out.ran.add(key)
        elif status == "Skip" and key not in out.ran:
            out.skipped.add(key)


def read_diag(text: str, file: str | Path) -> DiagResult:
    """DCGM's result from `dcgmi diag -j` output. Raises InputError (not JSON, or nested past the reader's
    bound: located at its line) or DiagOutputError (JSON, but not this layout: located at its JSON path)."""
    doc = _object(json_text(text, file, "dcgmi diag's JSON output"), "the document")
    if TOP not in doc:
        raise DiagOutputError("the document", f"has no {TOP!r} object: not the output of `dcgmi diag -j`")
    top = _object(doc[TOP], TOP)
    out = DiagResult()
    meta = doc.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("version"), str):
        out.version = shown(meta["version"], 40)
    if "runtime_error" in top:
        out.runtime_error = _text(top["runtime_error"], f"{TOP}.runtime_error")
        return out
    categories = _list(top.get("test_categories"), f"{TOP}.test_categories")
    for c, category in enumerate(categories):
        where = f"{TOP}.test_categories[{c}]"
        entry = _object(category, where)
        for t, test in enumerate(_list(entry.get("tests"), f"{where}.tests")):
            _test(test, f"{where}.tests[{t}]", out)
    return out


@dataclass(frozen=True, slots=True)
class DiagVerdict:
    status: str  # passed | failed | unstressed | invalid | unknown | unreadable
    failed: int | None  # failed results, where the output was read
    detail: str


def _named(items: list[str]) -> str:
    more = len(items) - MAX_NAMED
    return "; ".join(items[:MAX_NAMED]) + (f"; and {more} more" if more > 0 else "")


def judge_diag(text: str, file: str | Path) -> DiagVerdict:
    """The verdict of one node's run: failed when a test failed (each named with DCGM's message), `unstressed`
    when every level-3 test was skipped, `invalid` when none is in the output (not a `-r 3` run), `unknown` when
    the diagnostic could not run, `unreadable` when the output is not DCGM's JSON (the place named)."""
    try:
        got = read_diag(text, file)
    except InputError as exc:
        line = exc.line_of(())
        where = f"{Path(file).name}:{line}" if line else Path(file).name
        return DiagVerdict("unreadable", None, f"{where}: {exc.problems[0].message}")
    except DiagOutputError as exc:
        return DiagVerdict("unreadable", None, f"{Path(file).name}: {exc}")
    if got.runtime_error is not None:
        return DiagVerdict("unknown", None, f"the diagnostic did not run: {got.runtime_error}")
    if got.failures:
        return DiagVerdict("failed", len(got.failures), f"{len(got.failures)} failed: {_named(got.failures)}")
    long_ran = sorted(got.ran & LONG_TESTS)
    if not long_ran:
        if got.skipped & LONG_TESTS:
            skipped = ", ".join(sorted(got.skipped & LONG_TESTS))
            return DiagVerdict("unstressed", 0, f"not a pass: every level-3 test was skipped ({skipped})")
        tests = ", ".join(sorted(got.ran)) or "none"
        return DiagVerdict("invalid", None, f"no level-3 test in the output (ran: {tests}): not a `-r 3` run")
    detail = f"passed {', '.join(long_ran)}" + (f" (DCGM {got.version})" if got.version else "")
    if got.warnings:
        detail += f"; warnings: {_named(got.warnings)}"
    return DiagVerdict("passed", 0, detail)
