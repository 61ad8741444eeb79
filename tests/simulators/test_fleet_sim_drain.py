"""The fleet simulator's drain and undrain (bench/fleet_sim/drain.py): the commands the real Cumulus driver
sends for drain, undrain and maintenance_status (NVUE's maintenance unit, Cumulus Linux 5.13 on) are
answered as NVIDIA documents them, with the latencies stated there, and logged for the budget's proof; and
the round trips the driver takes for a drain and for a push's health poll."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import napalm
import pytest

asyncssh = pytest.importorskip("asyncssh")  # the `test` extra installs it

from bench.fleet_sim import drain, script  # noqa: E402 (after the importorskip: the package needs asyncssh)
from bench.fleet_sim.cumulus import CumulusSwitch, Event  # noqa: E402
from bench.fleet_sim.server import Fleet  # noqa: E402
from bench.fleet_sim.upgrade import Lifecycle  # noqa: E402
from gpufabric.drivers.maintenance import DrainRefusedError, change_script  # noqa: E402
from gpufabric.drivers.transport import Output, put_files, read_many  # noqa: E402
from gpufabric.push.proof import from_events  # noqa: E402

PASSWORD = "sim-not-a-secret"  # the simulated switch's own
PUSH = "gf-20260101T000000Z-abcdef"


class _Local:
    """A transport straight into one simulated switch's shell (no SSH): the commands as a driver sends them."""

    def __init__(self, switch: CumulusSwitch, loop: asyncio.AbstractEventLoop) -> None:
        self.switch, self.loop, self.sent = switch, loop, []  # type: ignore[var-annotated]

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append(command)
        result = self.loop.run_until_complete(script.run(command, stdin, self.switch.run, self.switch.write))
        return Output(result.rc, result.stdout, result.stderr)


def _unit_state(table: str) -> str:
    """The all-protocols row's state in `nv show maintenance` (as the driver reads it)."""
    rows = [line.split() for line in table.splitlines()]
    return next(words[1] for words in rows if words and words[0] == "all-protocols")


def _sh(sw: CumulusSwitch, line: str, stdin: str | None = None) -> str:
    async def go() -> str:
        result = await script.run(line, stdin, sw.run, sw.write)
        assert result.rc == 0, (line, result)
        return result.stdout

    return asyncio.run(go())


def test_the_switch_reports_a_release_the_driver_drains_with_units() -> None:
    sw = CumulusSwitch("leaf1", "cumulus", PASSWORD, lambda e: None, scale=0.0)
    text = _sh(sw, "cat /etc/lsb-release")
    release = next(ln.split("=", 1)[1] for ln in text.splitlines() if ln.startswith("DISTRIB_RELEASE="))
    assert release == "5.14.0" and drain.has_units(release)
    assert 'DISTRIB_ID="Cumulus Linux"' in text


def test_nv_show_maintenance_is_nvidias_table_following_the_applied_mode() -> None:
    sw = CumulusSwitch("leaf1", "cumulus", PASSWORD, lambda e: None, scale=0.0)
    table = _sh(sw, "nv show maintenance")
    assert table.startswith("Maintenance Info\n")
    assert [ln.split() for ln in table.splitlines()[2:3]] == [["Unit", "State"]]
    assert _unit_state(table) == "production"
    _sh(sw, "nv set maintenance unit all-protocols mode enabled")
    assert _unit_state(_sh(sw, "nv show maintenance")) == "production"  # pending until applied
    _sh(sw, "nv config apply -y")
    table = _sh(sw, "nv show maintenance")
    assert _unit_state(table) == "maintenance"
    assert "all-interfaces                       production\n" in table  # the ports' unit is never drained
    # A detach drops the pending `nv set` too: nothing is left to apply.
    _sh(sw, "nv set maintenance unit all-protocols mode disabled")
    _sh(sw, "nv config detach")
    assert sw.pending is None
    assert _unit_state(_sh(sw, "nv show maintenance")) == "maintenance"


def test_a_release_before_5_13_has_no_maintenance_unit() -> None:
    sw = CumulusSwitch("leaf1", "cumulus", PASSWORD, lambda e: None, scale=0.0)
    sw.lifecycle = Lifecycle("leaf1", release="5.12.1", scale=0.0)

    async def go() -> int:
        return (await script.run("nv set maintenance unit all-protocols mode enabled", None, sw.run, sw.write)).rc

    assert asyncio.run(go()) != 0
    assert "DISTRIB_RELEASE=5.12.1" in _sh(sw, "cat /etc/lsb-release")


def test_scripts_on_stdin_and_framed_reads_run_as_the_drivers_send_them() -> None:
    """put_files' here-documents, change_script's `set -e` and read_many's frames, on the switch's files."""
    sw = CumulusSwitch("leaf1", "cumulus", PASSWORD, lambda e: None, scale=0.0)
    loop = asyncio.new_event_loop()
    try:
        local = _Local(sw, loop)
        put_files(local, {".gpufabric/a": ("one\ntwo\n", 0o600), ".gpufabric/b": ("x" * 200 + "\n", None)})  # type: ignore[arg-type]
        assert sw.read(".gpufabric/a") == "one\ntwo\n" and sw.read(".gpufabric/b") == "x" * 200 + "\n"
        assert sw.read(".gpufabric/a.tmp") is None
        found = read_many(
            local, {"a": "cat .gpufabric/a", "gone": "cat .gpufabric/none", "rel": "cat /etc/lsb-release"}
        )  # type: ignore[arg-type]
        assert found["a"] == "one\ntwo\n" and found["gone"] == "" and "DISTRIB_RELEASE=5.14.0" in found["rel"]
        stops = change_script("false\nrm -f .gpufabric/a\n", marker_new=None, marker=".gpufabric/b", remove=True)
        assert local.run("sh -s", stops).rc != 0
        assert sw.read(".gpufabric/a") is not None and sw.read(".gpufabric/b") is not None  # stopped at `false`
    finally:
        loop.close()


@pytest.fixture
def on_shell() -> Iterator[tuple[CumulusSwitch, asyncio.AbstractEventLoop, _Local, Any]]:
    """One simulated switch, the shell a driver's commands reach (every command kept), and the real Cumulus
    driver opened on it."""
    sw = CumulusSwitch("leaf1", "cumulus", PASSWORD, lambda e: None, scale=0.0)
    loop = asyncio.new_event_loop()
    try:
        local = _Local(sw, loop)
        driver = napalm.get_network_driver("cumulus")("leaf1", "cumulus", PASSWORD, optional_args={"transport": local})
        driver.open()
        yield sw, loop, local, driver
    finally:
        loop.close()


def test_a_drain_and_an_undrain_each_take_three_round_trips_and_refuse_while_a_commit_is_pending(on_shell) -> None:
    """The real driver on a simulated switch's shell: a drain reads the release, the marker and NVUE's confirm
    status in one round trip, writes the marker and applies the unit in a second, and reads the state back in
    a third; the undrain likewise. With an apply awaiting confirmation, a drain changes nothing."""
    sw, loop, local, driver = on_shell
    driver.drain(PUSH, "a disruptive change")
    assert len(local.sent) == 2 and PUSH in (sw.read(".gpufabric/drained") or "")
    assert sw.maintenance is not None and sw.maintenance.mode == "enabled"
    status = driver.maintenance_status()
    assert status["drained"] is True and status["applied"] is True and len(local.sent) == 3
    driver.undrain(PUSH)
    assert len(local.sent) == 5 and sw.read(".gpufabric/drained") is None and sw.maintenance.mode == "disabled"
    sw.timer, sw.deadline = loop.call_later(3600, lambda: None), loop.time() + 3600  # someone's apply pending
    with pytest.raises(DrainRefusedError, match="pending confirmation"):
        driver.drain(PUSH, "a disruptive change")
    assert len(local.sent) == 6 and sw.read(".gpufabric/drained") is None and sw.maintenance.mode == "disabled"
    sw.timer.cancel()


def test_a_health_poll_reads_the_running_configuration_and_the_ports_in_one_round_trip(on_shell) -> None:
    """The real driver's combined read, on a simulated switch's shell, finds what its two getters find."""
    sw, _loop, local, driver = on_shell
    running, ports = driver.get_running_and_port_states()
    assert len(local.sent) == 1 and running == sw.applied
    assert running == driver.get_config(retrieve="running")["running"] and ports == driver.get_port_states()
    assert ports and all(state["is_up"] for state in ports.values())


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """One simulated switch on 127.0.0.1, a free port, served from a thread of its own."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    fleet = Fleet({})
    switch = CumulusSwitch("leaf1", "cumulus", PASSWORD, fleet.log, scale=0.0)
    fleet.switches["127.0.0.1"] = ("cumulus", switch)
    key = asyncssh.generate_private_key("ssh-ed25519")
    servers = asyncio.run_coroutine_threadsafe(fleet.serve({"127.0.0.1": key}, port=0), loop).result(10)
    port = servers[0].sockets[0].getsockname()[1]
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {key.export_public_key('openssh').decode().strip()}\n")
    yield {"port": port, "known_hosts": str(known_hosts), "fleet": fleet, "switch": switch}
    for server in servers:
        loop.call_soon_threadsafe(server.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def test_the_real_cumulus_driver_drains_and_undrains_a_simulated_switch(served: dict[str, Any]) -> None:
    args = {"port": served["port"], "known_hosts": served["known_hosts"]}
    driver = napalm.get_network_driver("cumulus")("127.0.0.1", "cumulus", PASSWORD, timeout=30, optional_args=args)
    switch: CumulusSwitch = served["switch"]
    driver.open()
    try:
        assert driver.maintenance_status()["drained"] is False
        driver.drain(PUSH, "a disruptive change")
        status = driver.maintenance_status()
        assert status["drained"] is True and status["applied"] is True and status["push_id"] == PUSH
        assert status["mechanism"] == "maintenance unit all-protocols"
        assert switch.maintenance is not None and switch.maintenance.mode == "enabled"
        assert PUSH in (switch.read(".gpufabric/drained") or "")
        driver.undrain(PUSH)
        status = driver.maintenance_status()
        assert status["drained"] is False and status["applied"] is False
        assert switch.maintenance.mode == "disabled" and switch.read(".gpufabric/drained") is None
    finally:
        driver.close()
    assert [e.event for e in served["fleet"].events] == ["drain", "drained", "undrain", "undrained"]


def test_a_drain_takes_its_stated_time_then_an_undrain_brings_the_switch_back() -> None:
    scale = 0.02  # every latency a fiftieth: the order and the shares are what is checked

    async def scenario() -> tuple[list[tuple[str, float]], list[str]]:
        events: list[Event] = []
        sw = CumulusSwitch("leaf1", "cumulus", PASSWORD, events.append, scale=scale)
        assert sw.maintenance is not None
        unit = sw.maintenance
        loop = asyncio.get_running_loop()

        async def sh(line: str) -> str:
            result = await script.run(line, None, sw.run, sw.write)
            assert result.rc == 0, (line, result)
            return result.stdout

        states = [unit.state]
        start = loop.time()
        await sh("nv set maintenance unit all-protocols mode enabled")
        assert unit.state == "production"
        await sh("nv config apply -y")
        states.append(unit.state)
        assert _unit_state(await sh("nv show maintenance")) == "maintenance"
        deadline = loop.time() + 30
        while unit.state != "maintenance" and loop.time() < deadline:
            await asyncio.sleep(0.005)
        states.append(unit.state)
        await sh("nv set maintenance unit all-protocols mode disabled")
        await sh("nv config apply -y")
        states.append(unit.state)
        assert _unit_state(await sh("nv show maintenance")) == "production"
        deadline = loop.time() + 30
        while unit.state != "production" and loop.time() < deadline:
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


def test_the_bound_counts_the_drain_and_the_undrain_the_push_waits_for() -> None:
    full = drain.drain_and_undrain(1.0)
    # each: confirm status 0.5, detach 0.5, nv set 0.5, apply 3.0; four exec channels; no settle; then the
    # undrain's removal of the unit: nv unset 0.5, its apply 1.0
    assert full == pytest.approx(2 * (0.5 + 0.5 + 0.5) + 4 * 0.05 + 3.0 + 3.0 + 0.5 + 1.0)
    assert drain.drain_and_undrain(0.5) == pytest.approx(full / 2)


def test_base64_of_a_file_survives_the_simulated_shell() -> None:
    sw = CumulusSwitch("leaf1", "cumulus", PASSWORD, lambda e: None, scale=0.0)
    text = '{"push_id": "x", "reason": "a b"}\n'
    _sh(sw, "base64 -d > .gpufabric/m", base64.encodebytes(text.encode()).decode())
    assert sw.read(".gpufabric/m") == text


def _rendered(release: str) -> str:
    """A Cumulus leaf's candidate as a push renders it for `release` (the multi-vendor example's compute leaf)."""
    import yaml

    from gpufabric.config.context import LinkIndex
    from gpufabric.config.secrets import PasswordHasher
    from gpufabric.fleet.candidates import candidate
    from tests.conftest import INVENTORY, plan_doc

    doc = yaml.safe_load((INVENTORY / "examples" / "multi-vendor.yml").read_text())
    doc["platforms"] = {**(doc.get("platforms") or {}), "cumulus": {"release": release}}
    plan = plan_doc(doc, "multi-vendor.yml")
    names = ("GPUFABRIC_SWITCH_PASSWORD", "GPUFABRIC_SALT_KEY", "GPUFABRIC_SNMP_COMMUNITY")
    secrets = dict.fromkeys(names, PASSWORD)
    index = LinkIndex(plan, PasswordHasher.for_intent(plan.intent, secrets))
    name = next(d.name for d in plan.devices() if d.platform == "cumulus" and d.role == "leaf")
    return candidate(plan, index, name, secrets).replace("username: admin", "username: cumulus")


def _push(driver: Any, text: str) -> str:
    """One switch's push as the rollout makes it: replace, diff, commit with NVUE's timer, confirm."""
    driver.load_replace_candidate(config=text)
    diff = str(driver.compare_config())
    if diff:
        driver.commit_config(revert_in=120)
        driver.confirm_commit()
    else:
        driver.discard_config()
    return diff


@pytest.mark.parametrize(("release", "running"), [("5.14", "5.14.0"), ("5.12", "5.12.1")])
def test_a_push_keeps_the_drain_and_the_push_after_the_undrain_finds_nothing(
    served: dict[str, Any], release: str, running: str
) -> None:
    """NVUE's `nv config replace` takes the whole configuration: from 5.13 a drained switch's candidate carries
    the maintenance unit (or the push would put the switch back into service halfway), and the undrain leaves
    the unit out of the configuration (or every later push would show it). Before 5.13 the maintenance
    action is no configuration: a push leaves it alone, and the undrain leaves nothing behind."""
    switch: CumulusSwitch = served["switch"]
    switch.release = running
    planned = _rendered(release)
    changed = planned.replace("hostname: cmp-su1-leaf1", "hostname: cmp-su1-leaf1-x")
    assert changed != planned
    args = {"port": served["port"], "known_hosts": served["known_hosts"], "push_id": PUSH}
    driver = napalm.get_network_driver("cumulus")("127.0.0.1", "cumulus", PASSWORD, timeout=30, optional_args=args)
    driver.open()
    try:
        assert _push(driver, planned)
        driver.drain(PUSH, "a disruptive change")
        assert switch.maintenance is not None and switch.maintenance.mode == "enabled"
        # The same plan again while drained: nothing to change (the drain is not in the diff).
        assert _push(driver, planned) == ""
        # A change made while drained goes in, and the switch stays drained through it.
        diff = _push(driver, changed)
        assert "hostname" in diff and "maintenance" not in diff, diff
        assert switch.maintenance.mode == "enabled"
        if release == "5.14":  # (5.12's `nv show system maintenance` is not simulated: its layout is not known)
            assert driver.maintenance_status()["applied"] is True
            unit = switch.applied_tree["maintenance"]["unit"]["all-protocols"]
            assert unit == {"mode": "enabled"}
        events = [e.event for e in served["fleet"].events]
        assert "undrain" not in events, events
        driver.undrain(PUSH)
        assert switch.maintenance.mode == "disabled" and "maintenance" not in switch.applied_tree
        # Back in service as planned: the next push of the same plan finds nothing to change.
        assert _push(driver, changed) == ""
    finally:
        driver.close()
    events = [e.event for e in served["fleet"].events]
    assert events.count("undrain") == 1 and events.index("undrain") > events.index("drain"), events
