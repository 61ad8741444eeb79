"""gpufabric's EOS driver drains, pushes during the drain and undrains the fleet simulator's EOS switch
(bench/fleet_sim/eos.py) over verified HTTPS: maintenance mode is configuration, so a push replacing the
running configuration keeps the quiesced unit on a drained switch (Eos.keep_drain), and after the undrain the
same plan finds nothing to change. The simulator's reading of `no quiesce` (a default, shown by no line) is
an assumption (docs/not-shown.md)."""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("asyncssh")  # the simulator package needs it (the `test` extra installs it)

from bench.fleet_sim.cumulus import Event
from bench.fleet_sim.eapi import Ca, serve
from bench.fleet_sim.eos import EosSwitch
from gpufabric.platforms import platform

PASSWORD = "sim-not-a-secret"  # the simulated switch's own
PUSH = "gf-20260101T000000Z-abcdef"
PLANNED = "hostname spine1\nusername admin privilege 15 role network-admin\ninterface Ethernet1\n   mtu 9214\n"


@pytest.fixture
def eos(tmp_path: Path) -> Iterator[tuple[Any, EosSwitch, list[Event]]]:
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
    module, cls = str(platform("eos").facts.driver_class).split(":")
    args = {"port": port, "tls_ca_file": str(ca.ca_file), "push_id": PUSH}
    driver = getattr(importlib.import_module(module), cls)(
        "127.0.0.1", "admin", PASSWORD, timeout=30, optional_args=args
    )
    driver.open()
    try:
        yield driver, switch, events
    finally:
        driver.close()
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def _push(driver: Any, text: str) -> str:
    driver.load_replace_candidate(config=text)
    diff = str(driver.compare_config())
    if diff:
        driver.commit_config(revert_in=120)
        driver.confirm_commit()
    else:
        driver.discard_config()
    return diff


def test_a_push_keeps_maintenance_mode_and_the_push_after_the_undrain_finds_nothing(eos) -> None:
    driver, switch, _ = eos
    assert _push(driver, PLANNED)
    driver.drain(PUSH, "a disruptive change")
    assert driver.maintenance_status()["applied"] is True
    assert _push(driver, PLANNED) == ""  # the drain is not in the diff
    changed = PLANNED.replace("mtu 9214", "mtu 9100")
    diff = _push(driver, changed)
    lines = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert lines == ["-mtu 9214", "+mtu 9100"], diff  # the change only: the drain neither added nor removed
    status = driver.maintenance_status()
    assert status["drained"] and status["applied"] is True and status["push_id"] == PUSH
    assert switch.startup[-3:] == ["maintenance", "unit System", "quiesce"]  # saved at the confirm too
    driver.undrain(PUSH)
    assert driver.maintenance_status() | {"applied": None} == dict.fromkeys(
        ("drained", "since", "by", "push_id", "reason", "mechanism", "applied")
    ) | {"drained": False}
    assert _push(driver, changed) == ""
