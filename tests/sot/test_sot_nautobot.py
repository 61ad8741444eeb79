"""`gpufabric sot` against a real Nautobot on loopback (PostgreSQL and Redis of the test's own).

Beside the lab: no namespace, but minutes of set-up the first time (scripts/sot_server.sh migrates an
empty database once and keeps it), so the server is started once for this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from sot_fabric import sot_intent, write_intent

from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.plan.model import ip
from gpufabric.sot.client import Nautobot
from gpufabric.sot.records import desired

pytestmark = [pytest.mark.lab, pytest.mark.beside_lab]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "sot_server.sh"
OWNED = [
    "locations",
    "racks",
    "vlans",
    "devices",
    "interfaces",
    "prefixes",
    "ip-addresses",
    "ip-address-to-interface",
    "cables",
    "primary-ips",
]


@dataclass
class Server:
    url: str
    token: str
    started_in: float

    def api(self) -> Nautobot:
        return Nautobot(self.url, self.token)


@pytest.fixture(scope="module")
def nautobot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # Where the script keeps Nautobot: the machine's cache (scripts/lib.sh machine_cache) or GPUFABRIC_CACHE.
    where = subprocess.run(["bash", str(SCRIPT), "where"], capture_output=True, text=True, check=True, timeout=30)
    venv = Path(where.stdout.strip())
    if not (venv / "bin" / "nautobot-server").exists():
        missing = f"Nautobot is not installed in {venv}: scripts/sot_server.sh install"
        if os.environ.get("CI"):  # scripts/test.sh installs it: in CI its absence is a failure, not a skip
            pytest.fail(missing)
        pytest.skip(missing)
    folder = tmp_path_factory.mktemp("nautobot")
    began = time.monotonic()
    try:
        _start(folder, venv)
        settings = dict(line.split("=", 1) for line in (folder / "server.env").read_text().splitlines())
        token = Path(settings["GPUFABRIC_SOT_TOKEN_FILE"]).read_text().strip()
        server = Server(settings["GPUFABRIC_SOT_URL"], token, time.monotonic() - began)
        print(f"Nautobot started in {server.started_in:.0f} s", file=sys.stderr)
        yield server
    finally:
        pids = [int(p.read_text()) for p in folder.glob("*.pid")]
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], check=True, timeout=120)
        for pid in pids:
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text(), pid


# The start's bound: minutes with no sign of progress. Not a bound on the whole start: on a new machine it waits
# for the first migration (scripts/test.sh's `prepare`, niced beside every lane), which took over 37 minutes
# on a slow one, where a warm machine's start takes seconds.
STALLED_AFTER = 600.0


def _progress(folder: Path, venv: Path) -> float:
    """When the start last wrote anything: its own logs, or the migration's log it may be waiting for."""
    times = [0.0]
    for f in [*folder.iterdir(), venv / "migrate.log"]:
        with contextlib.suppress(FileNotFoundError):  # a PID file the start removes as a step ends, say
            times.append(f.stat().st_mtime)
    return max(times)


def _start(folder: Path, venv: Path) -> None:
    """`sot_server.sh start`, waited for while it or the migration it waits for makes progress."""
    start = subprocess.Popen(["bash", str(SCRIPT), "start", str(folder)])
    seen, since = _progress(folder, venv), time.monotonic()
    while start.poll() is None:
        mark = _progress(folder, venv)
        if mark != seen:
            seen, since = mark, time.monotonic()
        elif time.monotonic() - since > STALLED_AFTER:
            start.kill()
            start.wait()
            pytest.fail(f"sot_server.sh start wrote nothing in {STALLED_AFTER:.0f} s: see {folder}, {venv}/migrate.log")
        time.sleep(1)  # a look a second at a start that takes seconds to minutes
    assert start.returncode == 0, f"sot_server.sh start failed ({start.returncode}): see {folder}"


def sot(server: Server, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GPUFABRIC_SOT_URL": server.url,
        "GPUFABRIC_SOT_TOKEN": server.token,
        "PYTHONPATH": str(ROOT),
    }
    began = time.monotonic()
    done = subprocess.run(
        # Nautobot beside the rest of the suite on two cores has taken over a minute over one write.
        [sys.executable, "-m", "gpufabric", "sot", *args, "--timeout", "600"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    print(f"sot {args[0]} {Path(args[1]).name}: {time.monotonic() - began:.1f} s", file=sys.stderr)
    assert done.returncode == code, done.stderr
    assert server.token not in done.stdout + done.stderr
    return done


def push(server: Server, intent: Path, *more: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(sot(server, "push", str(intent), "--json", *more).stdout)
    return doc


def keys(intent: Path) -> dict[str, set[str]]:
    want = desired(build_plan(load_intent(str(intent))))
    return {kind: {r.key for r in want.owned.get(kind, [])} for kind in OWNED}


def made(doc: dict[str, Any], what: str) -> dict[str, int]:
    return {k: v[what] for k, v in doc["kinds"].items() if v[what]}


def plan_doc(intent: Path) -> dict[str, Any]:
    from gpufabric.export.plan_json import full

    doc = full(build_plan(load_intent(str(intent))))
    doc.pop("source")
    return doc


def test_push_twice_grow_shrink_and_pull_round_trip(nautobot: Server, tmp_path: Path) -> None:
    three = write_intent(tmp_path / "three.yml", sot_intent(3))
    four = write_intent(tmp_path / "four.yml", sot_intent(4))
    want3, want4 = keys(three), keys(four)

    dry = push(nautobot, three, "--dry-run")
    first = push(nautobot, three)
    assert made(dry, "created") == made(first, "created")
    for kind in OWNED:  # every record of the plan made, once
        assert first["kinds"].get(kind, {"created": 0})["created"] == len(want3[kind]), kind
    assert first["updated"] == first["deleted"] == 0
    assert push(nautobot, three)["kinds"] == {}  # the second push changes nothing
    assert push(nautobot, three, "--dry-run")["kinds"] == {}

    api = nautobot.api()
    devices = {d["name"]: d for d in api.objects("dcim/devices", tags="gpufabric-lab")}
    plan3 = build_plan(load_intent(str(three)))
    assert set(devices) == {d.name for d in plan3.devices()} | {s.name for s in plan3.servers}
    leaf = plan3.device("cmp-su1-leaf1")
    assert devices[leaf.name]["custom_fields"]["gpufabric_asn"] == leaf.asn
    assert devices[leaf.name]["position"] == 40
    addresses = {a["id"]: a["address"] for a in api.objects("ipam/ip-addresses", tags="gpufabric-lab")}
    assert addresses[devices[leaf.name]["primary_ip4"]["id"]].split("/")[0] == ip(leaf.mgmt_ip)
    assert devices["gpu02"]["serial"] == "SN-GPU02" and devices["gpu02"]["position"] == 10
    cables = {c["label"]: c for c in api.objects("dcim/cables", tags="gpufabric-lab")}
    for plane in plan3.planes.values():
        for link in plane.links:
            if link.kind != "edge":
                assert cables[f"{plane.prefix}-{link.number:06d}"]["length"] == link.length

    grown = push(nautobot, four)  # only what the fourth server adds
    assert grown["updated"] == grown["deleted"] == 0
    assert made(grown, "created") == {k: len(want4[k] - want3[k]) for k in OWNED if want4[k] - want3[k]}
    assert "gpu04" in {d["name"] for d in api.objects("dcim/devices", tags="gpufabric-lab")}
    assert push(nautobot, four)["kinds"] == {}

    pulled = tmp_path / "pulled.yml"
    summary = json.loads(sot(nautobot, "pull", str(four), "-o", str(pulled), "--json").stdout)
    assert summary["servers"] == 6 and summary["racks"] == 3 and summary["measured_cables"] == 0
    data = yaml.safe_load(pulled.read_text())
    assert [h["name"] for h in data["server_groups"][0]["hosts"]] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert data["server_groups"][0]["hosts"][3] == {
        "name": "gpu04",
        "rack": "r02",
        "position": 10,
        "serial": "SN-GPU04",
    }
    assert plan_doc(pulled) == plan_doc(four)  # racks, positions, serials and cable lengths round-trip

    shrunk = push(nautobot, three)  # back to three servers: exactly what the fourth added goes
    assert shrunk["created"] == shrunk["updated"] == 0
    assert made(shrunk, "deleted") == {k: len(want4[k] - want3[k]) for k in OWNED if want4[k] - want3[k]}


def test_measured_cable_length_is_pulled_and_kept(nautobot: Server, tmp_path: Path) -> None:
    intent = write_intent(tmp_path / "fabric.yml", sot_intent(3))
    push(nautobot, intent)
    api = nautobot.api()
    cable = next(c for c in api.objects("dcim/cables", tags="gpufabric-lab") if c["label"] == "cmp-000009")
    api.update("dcim/cables", [{"id": cable["id"], "length": 1234, "length_unit": "cm"}])  # measured: 12.34 m

    pulled = tmp_path / "pulled.yml"
    sot(nautobot, "pull", str(intent), "-o", str(pulled))
    assert yaml.safe_load(pulled.read_text())["site"]["cable_lengths"] == {"cmp-000009": 13}
    links = {
        f"{p.prefix}-{link.number:06d}": link
        for p in build_plan(load_intent(str(pulled))).planes.values()
        for link in p.links
    }
    assert links["cmp-000009"].length == 13
    assert push(nautobot, pulled)["kinds"] == {"cables": {"created": 0, "updated": 1, "deleted": 0}}  # 13 m, in m
    assert push(nautobot, pulled)["kinds"] == {}
    assert push(nautobot, intent)["kinds"] == {"cables": {"created": 0, "updated": 1, "deleted": 0}}  # positions again
