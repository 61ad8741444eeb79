"""The InfiniBand plane's port counters in `gpufabric telemetry serve`: the exporter serves exactly the series
`gpufabric ib metrics` prints, with the same plan labels, from the real diagnostics' answers recorded on ibsim
with OpenSM (tests/recorded/ib/mini-validate.json, replayed by a test double as tests/ib/test_ib_validate.py
does); a subnet that does not answer costs only its own series, and is discovered again on the next scrape."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gpufabric.ib import counters, topology
from gpufabric.ib.design import IbDesign
from gpufabric.ib.errors import IbError
from gpufabric.ib.planner import plan_fabric
from gpufabric.telemetry.exporter import FabricCollector
from gpufabric.telemetry.ib import IbPorts, local_runner
from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.service import _ib_runner
from gpufabric.telemetry.targets import SwitchTarget

RECORDED = json.loads((Path(__file__).parents[1] / "recorded" / "ib" / "mini-validate.json").read_text())
MINI = IbDesign("mini", su_count=2, nodes_per_su=4, rails=2, fabric_manager_ports=2, fabric_manager_ports_per_host=1)


class _Replay:
    """A test double for infiniband-diags: the recorded answer per command line; counts what it ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.broken = False

    def __call__(self, args: Sequence[str]) -> str:
        self.ran.append(" ".join(args))
        if self.broken:
            raise IbError([])
        return RECORDED[" ".join(args)]


def _series(text: str) -> set[tuple[tuple[tuple[str, str], ...], float]]:
    return {
        (tuple(sorted(s.labels.items())), s.value)
        for family in text_string_to_metric_families(text)
        if family.name == "gpufabric_ib_port_counter"
        for s in family.samples
    }


def _served(collector: FabricCollector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_serve_carries_exactly_what_ib_metrics_prints():
    fabric = plan_fabric(MINI)
    replay = _Replay()
    collector = FabricCollector([], lambda t: None, infiniband=IbPorts(fabric, lambda: replay).read)
    served = _series(_served(collector))
    printed = _series(
        counters.metrics(fabric, counters.read(fabric, topology.parse(RECORDED["ibnetdiscover"]), replay))
    )
    assert served == printed and len(served) == (16 + 32) * 6
    one = dict(next(labels for labels, _ in served if dict(labels)["counter"] == "PortXmitWait"))
    assert set(one) == set(METRICS["gpufabric_ib_port_counter"].labels)
    assert one["fabric"] == "mini" and one["tier"] in ("node-leaf", "leaf-spine")


def test_the_subnet_is_discovered_once_then_read_per_scrape_and_again_after_a_failure():
    fabric = plan_fabric(MINI)
    replay = _Replay()
    switch = SwitchTarget("leaf1", "compute", "leaf", "frr", "192.0.2.1")
    collector = FabricCollector([switch], lambda t: None, infiniband=IbPorts(fabric, lambda: replay).read)
    _served(collector)
    _served(collector)
    assert replay.ran.count("ibnetdiscover") == 1 and sum(r.startswith("perfquery") for r in replay.ran) > 2
    replay.broken = True
    before = len(replay.ran)
    text = _served(collector)
    assert not _series(text)  # the subnet's series are gone for this scrape...
    assert 'gpufabric_scrape_ok{device="leaf1"' in text  # ...the switches are still served
    replay.broken = False
    assert _series(_served(collector))
    # The failed scrape's perfquery, then the next scrape discovers the subnet afresh before reading it.
    assert replay.ran[before].startswith("perfquery") and replay.ran[before + 1] == "ibnetdiscover"
    assert replay.ran.count("ibnetdiscover") == 2


def test_the_local_runner_names_a_tool_that_fails_or_is_missing():
    with pytest.raises(IbError, match="exited 3"):
        local_runner(["sh", "-c", "echo no HCA >&2; exit 3"])
    with pytest.raises(IbError, match="not installed"):
        local_runner(["gpufabric-no-such-diagnostic"])
    assert local_runner(["sh", "-c", "printf 'SUBNET UP'"]) == "SUBNET UP"
    assert _ib_runner(None)() is local_runner
