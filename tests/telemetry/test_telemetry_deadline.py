"""One slow switch does not hold a shard's scrape: each switch's read has a deadline inside the scrape's
budget; a switch past it is `gpufabric_scrape_ok 0` for that scrape and the others are served in time.

No switch runs here: `connect` opens a stand-in driver whose getters answer at once, except for the
switch told to hang (it waits on an event the test releases at its end, at most 60 s)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from gpufabric.telemetry.exporter import BudgetError, FabricCollector
from gpufabric.telemetry.read import Sample
from gpufabric.telemetry.targets import SwitchTarget

NAMES = ("leaf1", "leaf2", "slow1", "leaf3", "leaf4")


def _target(name: str) -> SwitchTarget:
    port = {"port": "swp1", "peer": "spine1", "peer_port": f"swp{name[-1]}", "rail": "0", "unit": "1"}
    return SwitchTarget(name, "compute", "leaf", "frr", f"192.0.2.{name[-1]}", {"swp1": port})


class StandIn:
    """A switch's driver: link up on swp1, one counter; the slow one hangs in its first getter."""

    def __init__(self, name: str, release: threading.Event, calls: list[str]) -> None:
        self.name, self.release, self.calls = name, release, calls

    def get_interfaces(self) -> dict[str, Any]:
        self.calls.append(self.name)
        if self.name.startswith("slow"):
            self.release.wait(60)
        return {"swp1": {"is_up": True}}

    def get_interfaces_counters(self) -> dict[str, Any]:
        return {"swp1": {f"{d}_{k}": 7 for d in ("rx", "tx") for k in ("octets", "errors", "discards")}}

    def get_bgp_neighbors(self) -> dict[str, Any]:
        return {"global": {"peers": {}}}

    def close(self) -> None:
        pass


@pytest.fixture
def fabric():
    release = threading.Event()
    calls: list[str] = []

    def make(workers: int = 16, deadline: float = 2.0, budget: float = 15.0) -> FabricCollector:
        targets = [_target(n) for n in NAMES]
        return FabricCollector(targets, lambda t: StandIn(t.device, release, calls), workers=workers,
                               deadline=deadline, budget=budget)  # fmt: skip

    make.calls = calls  # type: ignore[attr-defined]
    yield make
    release.set()  # the hung read ends; its daemon thread goes


def _ok(samples: list[Sample]) -> dict[str, float]:
    return {s.labels["device"]: s.value for s in samples if s.metric == "gpufabric_scrape_ok"}


@pytest.mark.slow  # waits out a deadline: seconds; in the whole suite
def test_a_hanging_switch_is_reported_not_read_and_the_others_are_served_in_time(fabric):
    """The switch hangs for 60 s; its deadline is 2 s: the scrape is served well within the budget, the
    others' samples in it. The next scrape does not ask it again while its read hangs, and Prometheus's
    text format says which switch was not read."""
    collector = fabric()
    began = time.monotonic()
    samples = collector.scrape()
    took = time.monotonic() - began
    assert took < 20, f"the scrape took {took:.0f} s"
    assert _ok(samples) == {"leaf1": 1.0, "leaf2": 1.0, "slow1": 0.0, "leaf3": 1.0, "leaf4": 1.0}
    up = {s.labels["device"] for s in samples if s.metric == "gpufabric_link_up" and s.value == 1.0}
    assert up == {"leaf1", "leaf2", "leaf3", "leaf4"}
    octets = [s for s in samples if s.metric == "gpufabric_interface_octets_total"]
    assert {s.labels["device"] for s in octets} == up and {s.value for s in octets} == {7}
    registry = CollectorRegistry()
    registry.register(collector)
    began = time.monotonic()
    text = generate_latest(registry).decode()  # the next scrape, as Prometheus gets it
    assert time.monotonic() - began < 20
    assert 'gpufabric_scrape_ok{device="slow1",plane="compute",role="leaf"} 0.0' in text
    assert 'gpufabric_scrape_ok{device="leaf4",plane="compute",role="leaf"} 1.0' in text
    assert fabric.calls.count("slow1") == 1  # its first read still hangs: never a second one beside it
    assert fabric.calls.count("leaf1") == 2


@pytest.mark.slow
def test_a_pool_of_one_worker_held_by_the_hanging_switch_still_serves_the_others(fabric):
    """The only worker is held by the hanging read (it goes first): at its deadline a worker replaces it."""
    collector = fabric(workers=1)
    collector.switches.sort(key=lambda t: not t.device.startswith("slow"))
    began = time.monotonic()
    samples = collector.scrape()
    assert time.monotonic() - began < 20
    assert _ok(samples) == {"slow1": 0.0, "leaf1": 1.0, "leaf2": 1.0, "leaf3": 1.0, "leaf4": 1.0}


def test_a_deadline_that_does_not_fit_the_budget_is_refused():
    with pytest.raises(BudgetError, match=r"deadline \(30 s\) must be positive and fit the scrape's budget \(25 s\)"):
        FabricCollector([], lambda t: None, deadline=30, budget=25)


def test_the_cli_refuses_a_deadline_past_the_budget_before_any_login():
    from conftest import run_in_process

    done = run_in_process(
        "gpufabric", "telemetry", "scrape", "--lab", "--switch-deadline", "30", "--scrape-budget", "25"
    )
    assert done.returncode == 2
    assert "--switch-deadline" in done.stderr and "30 s does not fit a scrape budget of 25 s" in done.stderr
