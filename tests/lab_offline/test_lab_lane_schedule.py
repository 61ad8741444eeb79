"""The lab lane's scheduler (tests/conftest.py's LabScheduling), driven as pytest-xdist drives it over the lane's
own modules: each worker that comes free takes the unit measured longest of those left (tests/lab_seconds.txt),
whatever its test count; and the measured seconds are read from the lab lane's part of a CI log."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DEFAULT_LAB_GROUP, lab_scope, lab_seconds, pytest_xdist_make_scheduler, unit_seconds

ROOT = Path(__file__).resolve().parents[2]


class _Config:
    def __init__(self, workers: int) -> None:
        self.option = type("Option", (), {"loadscopereorder": True})()  # xdist's default: by test count
        self._values = {"dist": "loadgroup", "tx": [f"{workers}*popen"]}

    def getvalue(self, name: str) -> Any:
        return self._values[name]


@dataclass(eq=False)
class _Worker:
    """A worker as the scheduler sees it: the test indexes it was sent, in order; `journal` is every worker's
    sends in the order they were made."""

    name: str
    journal: list[int]
    sent: list[int] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> Any:  # what xdist names a worker by in its logs
        return type("Gateway", (), {"id": self.name})()

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.extend(indexes)
        self.journal.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


def _collection() -> list[str]:
    """Node ids of the lab lane's measured modules, as many a module as it defines tests (parameters aside)."""
    out = []
    for module in sorted(lab_seconds()):
        if (ROOT / module).exists():
            count = max(1, (ROOT / module).read_text().count("\ndef test_"))
            out += [f"{module}::test_{i}" for i in range(count)]
    return out


def _units_in_the_order_sent(workers: int) -> list[str]:
    """Every test run to its end, a worker at a time; the units in the order the scheduler sent them."""
    scheduler = pytest_xdist_make_scheduler(_Config(workers), None)
    collection = _collection()
    journal: list[int] = []
    nodes = [_Worker(f"gw{i}", journal) for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    done = dict.fromkeys((n.name for n in nodes), 0)
    while any(done[n.name] < len(n.sent) for n in nodes):
        node = min((n for n in nodes if done[n.name] < len(n.sent)), key=lambda n: len(n.sent) - done[n.name])
        scheduler.mark_test_complete(node, node.sent[done[node.name]])
        done[node.name] += 1
    assert sorted(journal) == list(range(len(collection)))
    return list(dict.fromkeys(lab_scope(collection[i]) for i in journal))


@pytest.mark.parametrize("workers", [2, 3])
def test_units_go_out_longest_first_whatever_their_test_count(workers: int) -> None:
    collection = _collection()
    by_unit: dict[str, list[str]] = {}
    for nodeid in collection:
        by_unit.setdefault(lab_scope(nodeid), []).append(nodeid)
    order = _units_in_the_order_sent(workers)
    assert sorted(order) == sorted(by_unit)
    seconds = [unit_seconds(by_unit[u]) for u in order]
    assert seconds == sorted(seconds, reverse=True), list(zip(order, seconds, strict=True))
    # The remediation loop is one long test: by test count it went out last.
    remediation = "tests/lab/test_remediate_loop_lab.py"
    assert len(by_unit[remediation]) == 1
    assert order.index(remediation) < len(order) // 2


def test_the_default_lab_is_one_unit_weighed_as_the_sum_of_its_modules() -> None:
    default = [n for n in _collection() if lab_scope(n) == DEFAULT_LAB_GROUP]
    modules = {n.split("::")[0] for n in default}
    assert len(modules) > 1
    assert unit_seconds(default) == pytest.approx(sum(lab_seconds()[m] for m in modules))
    assert unit_seconds(["tests/lab/test_not_measured_yet.py::test_x"]) == 60.0


def _lab_seconds_script() -> Any:
    spec = importlib.util.spec_from_file_location("lab_seconds_script", ROOT / "scripts" / "lab_seconds.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_the_lab_lane_s_durations_are_read_from_a_ci_log() -> None:
    log = "\n".join([
        "== pytest (lab: namespaces, host containers, the demo)",
        "============================== slowest durations ===============================",
        "476.98s call     tests/lab/test_lab_live_change.py::test_a",
        "73.15s setup    tests/lab/test_lab_live_change.py::test_a",
        "12.50s teardown tests/lab/test_lab_fleet.py::test_b[x]",
        "================== 86 passed, 1 skipped in 1788.48s (0:29:48) ==================",
        "============================= slowest 10 durations =============================",
        "394.72s setup    tests/molecule/test_molecule.py::test_molecule_test_passes_every_step[netplan]",
    ])  # fmt: skip
    spent = _lab_seconds_script().lab_lane_durations(log)
    assert spent == {"tests/lab/test_lab_live_change.py": pytest.approx(550.13), "tests/lab/test_lab_fleet.py": 12.5}
