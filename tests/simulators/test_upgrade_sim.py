"""`nornir upgrade`'s steps (the real Cumulus driver, the real Nornir tasks and rollout) against the fleet
simulator's image slots and reboots (bench/fleet_sim/upgrade.py): every switch ends on the new release,
batch by batch, drained while it reboots; a switch planted to hang on the new image does not come back
within the bound, comes back on its previous image by its watchdog, and the rollout stops there."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from nornir.core import Nornir
from nornir.core.inventory import ConnectionOptions, Defaults, Groups, Host, Hosts, Inventory
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.plugins.runners import ThreadedRunner
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.fleet.expect import Expectation
from gpufabric.push.targets import Batch
from gpufabric.upgrade.roll import Job, State, roll
from gpufabric.upgrade.steps import NornirSteps
from nornir_tasks.lifecycle import Image

asyncssh = pytest.importorskip("asyncssh")

from bench.fleet_sim import upgrade as sim_upgrade  # noqa: E402 (after the importorskip: it needs asyncssh)
from bench.fleet_sim.cumulus import CumulusSwitch  # noqa: E402
from bench.fleet_sim.server import Fleet  # noqa: E402
from bench.fleet_sim.upgrade import Lifecycle  # noqa: E402

pytestmark = pytest.mark.slow  # the simulated boots take seconds

PASSWORD = "sim-not-a-secret"
NAMES = ("leaf1", "leaf2", "leaf3", "leaf4")
NEW = "cumulus-linux-5.14.0-mlx-amd64.bin"
SCALE = 0.01  # a warm reboot 0.9 s, an install 2.4 s


class RecordingDrainer:
    """A test double of the drain: what was drained and undrained, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.drained: set[str] = set()
        self.most_at_once = 0

    def drain(self, devices: Sequence[str], push_id: str, reason: str) -> dict[str, str | None]:
        self.calls.append(("drain", tuple(devices)))
        self.drained |= set(devices)
        self.most_at_once = max(self.most_at_once, len(self.drained))
        return dict.fromkeys(devices)

    def undrain(self, devices: Sequence[str], push_id: str) -> dict[str, str | None]:
        self.calls.append(("undrain", tuple(devices)))
        self.drained -= set(devices)
        return dict.fromkeys(devices)


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Four simulated Cumulus switches on 127.0.1.1-4 running 5.9.2; leaf3 hangs booting 5.14.0, and its
    watchdog (30 s here) brings it back on the previous partition well after the 20 s bound."""
    monkeypatch.setitem(sim_upgrade.SECONDS, sim_upgrade.WATCHDOG, 3000.0)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    served = Fleet({})
    keys = {}
    switches = {}
    for i, name in enumerate(NAMES, 1):
        sw = CumulusSwitch(name, "cumulus", PASSWORD, served.log, scale=0.0)
        hang = frozenset({"5.14.0"}) if name == "leaf3" else frozenset()
        sw.lifecycle = Lifecycle(name, release="5.9.2", scale=SCALE, hang_on=hang)
        served.switches[f"127.0.1.{i}"] = ("cumulus", sw)
        keys[f"127.0.1.{i}"] = asyncssh.generate_private_key("ssh-ed25519")
        switches[name] = sw
    servers = asyncio.run_coroutine_threadsafe(served.serve(keys, port=0), loop).result(10)
    known = tmp_path / "known_hosts"
    ports = {}
    lines = []
    for server, (address, key) in zip(servers, keys.items(), strict=True):
        port = server.sockets[0].getsockname()[1]
        ports[address] = port
        lines.append(f"[{address}]:{port} {key.export_public_key('openssh').decode().strip()}\n")
    known.write_text("".join(lines))
    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)
    hosts = Hosts()
    for i, name in enumerate(NAMES, 1):
        address = f"127.0.1.{i}"
        hosts[name] = Host(name=name, hostname=address, username="cumulus", password=PASSWORD, platform="cumulus")
        extras = {"optional_args": {"port": ports[address], "known_hosts": str(known)}, "timeout": 10}
        hosts[name].connection_options["napalm"] = ConnectionOptions(extras=extras)
    nr = Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(8))
    yield {"nr": nr, "switches": switches, "loop": loop}
    nr.close_connections()
    for server in servers:
        loop.call_soon_threadsafe(server.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def _steps(nr: Nornir) -> NornirSteps:
    expects = {n: Expectation(n, {}, ()) for n in NAMES}
    return NornirSteps(nr, expects, dict.fromkeys(NAMES), dict.fromkeys(NAMES, "cumulus"), poll=0.5, settle=0.5)


def _job(image: Image | None) -> Job:
    return Job("gf-20260101T000000Z-abcdef", "test", dict.fromkeys(NAMES, "warm"), 20.0, 60.0, image)


BATCHES = [Batch(i, f"domain {i}", (name,)) for i, name in enumerate(NAMES, 1)]


def test_an_upgrade_stops_where_a_switch_falls_back_to_its_previous_image(fleet: dict[str, Any]) -> None:
    image = Image("5.14", NEW, f"http://192.0.2.1/images/{NEW}", sim_upgrade.image_sha512(NEW))
    drainer = RecordingDrainer()
    rolled = roll(BATCHES, _steps(fleet["nr"]), drainer, _job(image), None)
    out = rolled.outcomes
    switches = fleet["switches"]
    assert [out[n].state for n in NAMES] == [State.DONE, State.DONE, State.FELL_BACK, State.SKIPPED]
    assert rolled.stopped_at == 3 and not rolled.ok
    # The first two run the new release, from the partition the install wrote; leaf3 is back on 5.9.2 by its
    # watchdog, and leaf4 was never touched (nothing fetched, still one release in both partitions).
    assert switches["leaf1"].lifecycle.running == "5.14.0" and switches["leaf2"].lifecycle.running == "5.14.0"
    assert switches["leaf3"].lifecycle.running == "5.9.2"
    assert [b[2] for b in switches["leaf3"].lifecycle.boots] == ["hang", "watchdog boot"]
    assert switches["leaf4"].lifecycle.images == {} and switches["leaf4"].lifecycle.boots == []
    assert out["leaf1"].after == "Cumulus Linux 5.14.0" and out["leaf1"].before == "Cumulus Linux 5.9.2"
    assert "did not come back within 20 s; came back on its previous image (Cumulus Linux 5.9.2)" in out["leaf3"].reason
    assert out["leaf4"].reason == "not attempted: the rollout stopped at batch 3"
    # One failure domain drained at a time; the switch that fell back stays drained, the others undrained.
    assert drainer.calls == [
        ("drain", ("leaf1",)), ("undrain", ("leaf1",)), ("drain", ("leaf2",)), ("undrain", ("leaf2",)),
        ("drain", ("leaf3",)),
    ]  # fmt: skip
    assert drainer.most_at_once == 1 and drainer.drained == {"leaf3"} and out["leaf3"].drained


def test_a_damaged_image_is_refused_before_anything_is_drained(fleet: dict[str, Any]) -> None:
    fleet["switches"]["leaf1"].lifecycle.corrupt = True
    image = Image("5.14", NEW, f"http://192.0.2.1/images/{NEW}", sim_upgrade.image_sha512(NEW))
    drainer = RecordingDrainer()
    rolled = roll(BATCHES, _steps(fleet["nr"]), drainer, _job(image), None)
    assert rolled.outcomes["leaf1"].state == State.FAILED and rolled.stopped_at == 1
    assert (
        "has SHA-512" in rolled.outcomes["leaf1"].reason and "nothing was installed" in rolled.outcomes["leaf1"].reason
    )
    assert drainer.calls == [] and fleet["switches"]["leaf1"].lifecycle.running == "5.9.2"
    assert fleet["switches"]["leaf1"].lifecycle.partitions == {1: "5.9.2", 2: "5.9.2"}


def test_a_rolling_restart_reboots_each_switch_and_waits_for_it(fleet: dict[str, Any]) -> None:
    drainer = RecordingDrainer()
    rolled = roll(BATCHES, _steps(fleet["nr"]), drainer, _job(None), None)
    assert rolled.ok and all(o.state == State.DONE for o in rolled.outcomes.values())
    for name in NAMES:
        boots = fleet["switches"][name].lifecycle.boots
        assert [(rel, how) for _t, rel, how in boots] == [("5.9.2", "warm boot")]
        back = rolled.outcomes[name].back_s
        assert back is not None and back >= 0.9  # not before the simulated warm boot (90 s x 0.01) was over
    assert drainer.most_at_once == 1 and drainer.drained == set()
