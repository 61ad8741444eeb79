"""The fleet simulator's drain and undrain (bench/fleet_sim/drain.py): NVUE's maintenance unit takes a
switch out of service and back, with the latencies stated there, and logs when for the budget's proof."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("asyncssh")  # the `test` extra installs it

from bench.fleet_sim import drain  # after the importorskip: the package needs asyncssh
from bench.fleet_sim.cumulus import CumulusSwitch, Event
from bench.fleet_sim.shell import run_line
from gpufabric.push.proof import from_events


def _state(text: str) -> str:
    return str(json.loads(text)["unit"]["all-protocols"]["state"])


def test_a_drain_takes_its_stated_time_then_an_undrain_brings_the_switch_back() -> None:
    scale = 0.02  # every latency a fiftieth: the order and the shares are what is checked

    async def scenario() -> tuple[list[tuple[str, float]], list[str]]:
        events: list[Event] = []
        sw = CumulusSwitch("leaf1", "cumulus", "pw", events.append, scale=scale)
        loop = asyncio.get_running_loop()

        async def sh(line: str) -> str:
            result = await run_line(line, None, sw.run, sw.write)
            assert result.rc == 0, (line, result)
            return result.stdout

        states = [_state(await sh("nv show maintenance -o json"))]
        start = loop.time()
        await sh("nv set maintenance unit all-protocols mode enabled")
        assert _state(await sh("nv show maintenance -o json")) == "production"  # pending until applied
        await sh("nv config apply -y")
        states.append(_state(await sh("nv show maintenance -o json")))
        while _state(await sh("nv show maintenance -o json")) != "maintenance":
            await asyncio.sleep(0.005)
        states.append("maintenance")
        await sh("nv action disable system maintenance mode")  # the form before 5.13
        states.append(_state(await sh("nv show maintenance -o json")))
        while _state(await sh("nv show maintenance -o json")) != "production":
            await asyncio.sleep(0.005)
        return [(e.event, e.time - start) for e in events], states

    timeline, states = asyncio.run(scenario())
    assert states == ["production", "draining", "maintenance", "returning"]
    assert [name for name, _ in timeline] == ["drain", "drained", "undrain", "undrained"]
    at = dict(timeline)
    lat = drain.LATENCY
    assert at["drain"] >= scale * (lat[drain.NV_SET] + lat[drain.DRAIN_APPLY]) - 1e-3
    assert at["drained"] - at["drain"] >= scale * lat[drain.DRAIN_SETTLE] - 1e-3
    assert at["undrained"] - at["undrain"] >= scale * lat[drain.UNDRAIN_SETTLE] - 1e-3
    # The proof reads the switch as out of service from its drain until it is back.
    events = [{"time": t, "switch": "leaf1", "event": e} for e, t in timeline]
    assert [set(o.switches) for o in from_events(events)] == [{"leaf1"}]


def test_the_bound_counts_the_drain_and_the_undrain_less_what_may_overlap() -> None:
    full = drain.drain_and_undrain(1.0)
    assert full == pytest.approx(2 * 0.5 + 4 * 0.05 + 3.0 + 5.0 + 3.0 + 3.0)
    assert drain.drain_and_undrain(1.0, overlap=2.1) == pytest.approx(full - 2.1)
    assert drain.drain_and_undrain(1.0, overlap=60) == pytest.approx(full - 5.0)  # never more than the settle
    assert drain.drain_and_undrain(0.5) == pytest.approx(full / 2)
