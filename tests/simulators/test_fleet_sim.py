"""The fleet simulator the rollout benchmark measures against (bench/fleet_sim): its shell, its NVUE
state, and the real Cumulus driver (as NAPALM loads it) driving it over SSH through a push's steps."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import napalm
import pytest
from napalm.base.exceptions import CommitError

from gpufabric.config.context import LinkIndex
from gpufabric.config.secrets import PasswordHasher
from gpufabric.fleet.candidates import candidate
from gpufabric.intent import load_intent
from gpufabric.nos.cumulus import nvue
from gpufabric.plan import build_plan

asyncssh = pytest.importorskip("asyncssh")  # the `test` extra installs it
ROOT = Path(__file__).resolve().parents[2]

from bench.fleet_sim.cumulus import CumulusSwitch, Event  # noqa: E402 (after the importorskip: it needs asyncssh)
from bench.fleet_sim.events import max_domains_down  # noqa: E402
from bench.fleet_sim.server import Fleet  # noqa: E402
from bench.fleet_sim.shell import parse, run_line  # noqa: E402

PASSWORD = "sim-not-a-secret"  # the simulated switch's own


def test_shell_parses_the_drivers_command_lines() -> None:
    steps = parse("umask 077 && cat > .x/c.tmp && mv -f .x/c.tmp .x/c")
    assert [(s.op, s.command.argv, s.command.stdout_to) for s in steps] == [
        (";", ["umask", "077"], None),
        ("&&", ["cat"], ".x/c.tmp"),
        ("&&", ["mv", "-f", ".x/c.tmp", ".x/c"], None),
    ]
    quiet = parse("cat .x/pending 2>/dev/null || true")
    assert quiet[0].command.argv == ["cat", ".x/pending"] and quiet[0].command.stderr_to == "/dev/null"
    assert [s.op for s in quiet] == [";", "||"]
    assert parse("sudo -S -p '' vtysh -c 'show bgp vrf all summary json'")[0].command.argv[3:] == [
        "",
        "vtysh",
        "-c",
        "show bgp vrf all summary json",
    ]


def _switch(events: list[Event]) -> CumulusSwitch:
    return CumulusSwitch("sw1", "cumulus", PASSWORD, events.append, scale=0.0)


CONFIG = "- set:\n    system:\n      aaa:\n        user:\n          cumulus: {role: system-admin}\n    interface:\n      swp1: {type: swp}\n"  # noqa: E501


def test_nvue_state_diff_apply_confirm_and_abort() -> None:
    async def scenario() -> list[str]:
        events: list[Event] = []
        sw = _switch(events)

        async def sh(line: str, stdin: str | None = None) -> str:
            result = await run_line(line, stdin, sw.run, sw.write)
            assert result.rc == 0, (line, result)
            return result.stdout

        await sh("cat > c.tmp && mv -f c.tmp c.yaml", CONFIG)
        await sh("nv config detach && nv config replace c.yaml")
        assert await sh("nv config diff -o commands") == "nv set interface swp1 type swp\n"
        await sh("nv config apply --confirm 60s -y")
        assert "60 seconds" in await sh("nv config apply --confirm-status")
        await sh("nv config apply --confirm-yes")
        assert "No apply" in await sh("nv config apply --confirm-status")
        # The same candidate again: nothing to change.
        await sh("nv config detach && nv config replace c.yaml")
        assert await sh("nv config diff -o commands") == ""
        # A change rolled back with --confirm-no returns to the confirmed configuration.
        await sh("cat > c.yaml", CONFIG.replace("swp1", "swp2"))
        await sh("nv config detach && nv config replace c.yaml")
        await sh("nv config apply --confirm 60s -y")
        await sh("nv config apply --confirm-no")
        assert "swp1" in sw.applied and "swp2" not in sw.applied
        refused = await run_line("nv config apply --confirm-yes", None, sw.run, sw.write)
        assert refused.rc == 1
        return [e.event for e in events]

    assert asyncio.run(scenario()) == ["commit", "confirm", "commit", "abort"]


@pytest.mark.slow
def test_the_confirm_timer_reverts_by_itself() -> None:
    async def scenario() -> tuple[str, list[str]]:
        events: list[Event] = []
        sw = _switch(events)
        sw.write("c.yaml", CONFIG)
        await sw.run(["nv", "config", "replace", "c.yaml"], None)
        await sw.run(["nv", "config", "apply", "--confirm", "1s", "-y"], None)
        await asyncio.sleep(1.1)
        return sw.applied, [e.event for e in events]

    applied, events = asyncio.run(scenario())
    assert events == ["commit", "revert"] and "swp1" not in applied


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


def _rendered_leaf() -> str:
    """A Cumulus leaf's candidate as a push renders it (the multi-vendor example's compute leaf)."""
    plan = build_plan(load_intent(str(ROOT / "inventory" / "examples" / "multi-vendor.yml")))
    names = ("GPUFABRIC_SWITCH_PASSWORD", "GPUFABRIC_SALT_KEY", "GPUFABRIC_SNMP_COMMUNITY")
    secrets = dict.fromkeys(names, PASSWORD)
    index = LinkIndex(plan, PasswordHasher.for_intent(plan.intent, secrets))
    name = next(d.name for d in plan.devices() if d.platform == "cumulus" and d.role == "leaf")
    return candidate(plan, index, name, secrets).replace("username: admin", "username: cumulus")


def test_the_real_driver_pushes_to_the_simulator_and_a_second_push_is_empty(served: dict[str, Any]) -> None:
    text = _rendered_leaf()
    args = {"port": served["port"], "known_hosts": served["known_hosts"], "push_id": "gf-20260101T000000Z-abcdef"}
    driver = napalm.get_network_driver("cumulus")("127.0.0.1", "cumulus", PASSWORD, timeout=30, optional_args=args)
    driver.open()
    try:
        assert driver.pending_push() is None
        driver.load_replace_candidate(config=text)
        diff = driver.compare_config()
        assert "nv set interface" in diff
        driver.commit_config(revert_in=120)
        assert driver.pending_push() == {
            "push_id": "gf-20260101T000000Z-abcdef",
            "started": "2026-01-01T00:00:00Z",
            "controller": "unknown",
        }
        ports = driver.get_interfaces()
        assert ports and all(p["is_up"] for p in ports.values())
        driver.confirm_commit()
        assert driver.pending_push() is None
        driver.load_replace_candidate(config=text)
        assert driver.compare_config() == ""
        driver.discard_config()
    finally:
        driver.close()
    assert [e.event for e in served["fleet"].events] == ["commit", "confirm"]
    assert served["fleet"].logins == 1


def test_the_real_driver_reads_the_rollback_point_beside_the_confirm_status_and_keeps_it_only_when_free(
    served: dict[str, Any],
) -> None:
    """Over SSH the commit reads NVUE's confirm status and the applied configuration at once; the rollback point
    is what was applied before the commit, and a commit refused because one is pending leaves it as it was."""
    switch, fleet = served["switch"], served["fleet"]
    fleet.trace = []
    factory = switch.applied
    args = {"port": served["port"], "known_hosts": served["known_hosts"]}
    driver = napalm.get_network_driver("cumulus")("127.0.0.1", "cumulus", PASSWORD, timeout=30, optional_args=args)
    driver.open()
    try:
        assert driver.concurrent_reads
        driver.load_replace_candidate(config=_rendered_leaf())
        driver.compare_config()
        driver.commit_config(revert_in=120)
        rollback, new = switch.path(nvue.ROLLBACK), switch.path(nvue.ROLLBACK + ".new")
        assert switch.files[rollback] == factory and new not in switch.files
        switch.scale = 0.5  # NVUE's reads take half their simulated time (0.25 s, 0.5 s): long enough to overlap
        seen = len(fleet.trace)
        with pytest.raises(CommitError, match="pending confirmation"):
            driver.commit_config(revert_in=120)
        switch.scale = 0.0
        during = {kind: (start, end) for start, end, _name, kind, _rc in fleet.trace[seen:]}
        assert switch.files[rollback] == factory and new not in switch.files  # the pending commit's point kept
        driver.rollback()
    finally:
        driver.close()
    status, save = during["nv config apply --confirm-status"], during["nv config show -r"]
    assert status[0] < save[1] and save[0] < status[1]  # the two reads ran at the same time


def test_the_benchmark_counts_failure_domains_down_at_once() -> None:
    domains = {"a1": ("compute", "A"), "a2": ("compute", "A"), "b1": ("compute", "B"), "o1": ("oob", "O")}

    def ev(t: float, switch: str, event: str) -> dict[str, Any]:
        return {"time": t, "switch": switch, "event": event}

    one_at_a_time = [
        *(ev(0, "a1", "commit"), ev(1, "a2", "commit"), ev(2, "a1", "confirm"), ev(2, "a2", "confirm")),
        *(ev(2, "b1", "commit"), ev(3, "o1", "commit"), ev(4, "b1", "revert"), ev(4, "o1", "confirm")),
    ]
    assert max_domains_down(one_at_a_time, domains) == 1
    overlapping = [ev(0, "a1", "commit"), ev(1, "b1", "commit"), ev(2, "a1", "confirm"), ev(3, "b1", "confirm")]
    assert max_domains_down(overlapping, domains) == 2


def _driver_class(platform_name: str) -> Any:
    """The class a push opens for this platform (gpufabric's own for EOS: verified TLS, the commit timer)."""
    import importlib

    from gpufabric.platforms import platform

    module, cls = str(platform(platform_name).facts.driver_class).split(":")
    return getattr(importlib.import_module(module), cls)


def test_the_real_eos_driver_pushes_to_the_simulator_over_verified_https(tmp_path: Path) -> None:
    from bench.fleet_sim.eapi import Ca, serve
    from bench.fleet_sim.eos import EosSwitch

    events: list[Event] = []
    switch = EosSwitch("spine1", "admin", PASSWORD, events.append, scale=0.0)
    ca = Ca(tmp_path)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(
        serve(switch, "127.0.0.1", 0, ca.server_context("spine1", "127.0.0.1")), loop
    ).result(10)
    port = server.sockets[0].getsockname()[1]
    text = "hostname spine1\nusername admin privilege 15 role network-admin\ninterface Ethernet1\n   mtu 9214\n"
    args = {"port": port, "tls_ca_file": str(ca.ca_file), "push_id": "gf-20260101T000000Z-abcdef"}
    try:
        driver = _driver_class("eos")("127.0.0.1", "admin", PASSWORD, timeout=30, optional_args=args)
        driver.open()
        assert driver.pending_push() is None
        driver.load_replace_candidate(config=text)
        assert "+interface Ethernet1" in driver.compare_config()
        driver.commit_config(revert_in=120)
        assert driver.pending_push() is not None and driver.get_interfaces()["Ethernet1"]["is_up"]
        driver.confirm_commit()
        assert driver.pending_push() is None
        driver.load_replace_candidate(config=text)
        assert driver.compare_config() == ""
        driver.discard_config()
        driver.close()
    finally:
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
    assert [e.event for e in events] == ["commit", "confirm"]
