"""Drain and undrain against the lab's real FRR (root only): `gpufabric maintenance on|off|status`.

One lab of the default fabric, its compute plane pushed. A compute spine is drained through the
command line: every leaf stops routing the other leaves' loopbacks through it (read here with vtysh,
not through gpufabric), the switch says so itself (its marker and FRR's running configuration), and a
new process finds the drain as a controller that crashed would. A controller killed in the middle of
a drain leaves the switch drained and `status` says so. A push meanwhile keeps the drain. `off`
restores the plan's ECMP widths (nornir validate passes). UDP streams between two leaves across the
spines then measure what a drain buys when the spine's FRR daemons are killed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import INVENTORY, cli_env, run
from lab_slot import fabric, ns, up_args

from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent

pytestmark = [
    pytest.mark.own_lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)"),
]

PLAN = topology(load_intent(str(INVENTORY / "fabric.yml"))).plan  # the lab's plan: every switch as frr
LEAVES = ("cmp-su1-leaf1", "cmp-su1-leaf2", "cmp-su2-leaf1", "cmp-su2-leaf2")
LOOPBACK = {d.name: f"{d.loopback >> 24 & 255}.{d.loopback >> 16 & 255}.{d.loopback >> 8 & 255}.{d.loopback & 255}/32"
            for d in PLAN.devices() if d.loopback is not None}  # fmt: skip


def facing(spine: str) -> dict[str, str]:
    """leaf -> its port cabled to `spine`."""
    return {
        link.a: link.a_port for link in PLAN.links() if link.kind == "fabric" and link.b == spine and link.a in LEAVES
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    state = tmp_path_factory.mktemp("lab") / "state"
    up = run("gpufabric", "lab", "up", str(fabric()), "--no-hosts", *up_args(), "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    pushed = run("nornir", "push", "--plane", "compute", "--state-dir", str(state), "--json")
    assert pushed.returncode == 0, pushed.stderr
    yield state
    run("gpufabric", "lab", "down", "--state-dir", str(state))


def maintenance(state: Path, action: str, *args: str) -> tuple[int, dict]:
    done = run("gpufabric", "maintenance", action, "--state-dir", str(state), "--json", *args)
    assert done.returncode in (0, 4), done.stderr
    return done.returncode, json.loads(done.stdout)


def routes(leaf: str) -> dict[str, set[str]]:
    """prefix -> the ports a leaf's kernel-installed BGP route goes out of, as FRR says (read without gpufabric)."""
    text = subprocess.run(["vtysh", "-N", ns(leaf), "-c", "show ip route bgp json"], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    out: dict[str, set[str]] = {}
    for prefix, entries in json.loads(text).items():
        for entry in entries:
            if entry.get("selected"):
                out[prefix] = {h.get("interfaceName", "") for h in entry.get("nexthops", []) if h.get("fib")}
    return out


def remote_leaf_routes(spine: str) -> dict[str, dict[str, set[str]]]:
    """Per leaf, its routes to the other leaves' loopbacks, and which of them still use `spine`."""
    ports = facing(spine)
    found = {}
    for leaf in LEAVES:
        mine = routes(leaf)
        found[leaf] = {p: hops for p, hops in mine.items() if p in {LOOPBACK[o] for o in LEAVES if o != leaf}}
        assert set(found[leaf]) == {LOOPBACK[o] for o in LEAVES if o != leaf}, (leaf, mine)
        found[leaf] = {p: hops & {ports[leaf]} for p, hops in found[leaf].items()}
    return found


def _until(check, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(1)


def test_a_drained_spine_leaves_every_leaf_s_ecmp_and_says_so_itself(lab):
    rc, found = maintenance(lab, "on", "--device", "cmp-spine1", "--reason", "lab drain test")
    assert rc == 0 and found["ok"], found
    (switch,) = found["switches"]
    assert switch["device"] == "cmp-spine1" and switch["changed"] and switch["state"]["drained"]
    assert found["wait"]["done"] and found["wait"]["waiting_for"] == []
    assert all(rate < 1e6 for rate in found["wait"]["rates"].values()) and len(found["wait"]["rates"]) == 4
    # Read without gpufabric: no leaf routes another leaf's loopback through the drained spine.
    assert all(not hops for per_leaf in remote_leaf_routes("cmp-spine1").values() for hops in per_leaf.values())
    marker = json.loads(Path(f"/etc/frr/{ns('cmp-spine1')}/gpufabric.drained").read_text())
    assert marker["push_id"] == found["push_id"] and marker["reason"] == "lab drain test"
    shown = running("cmp-spine1")
    assert "bgp graceful-shutdown" in shown and "route-map GF-DRAIN permit 10" in shown
    saved = Path(f"/etc/frr/{ns('cmp-spine1')}/frr.conf").read_text()
    assert "route-map GF-DRAIN" in saved  # a restart of FRR comes back drained
    trail = [json.loads(line) for line in Path(os.environ["GPUFABRIC_AUDIT_LOG"]).read_text().splitlines()]
    assert any(r["push_id"] == found["push_id"] and r["status"] == "drained" for r in trail)


def test_a_new_process_finds_the_drain_and_a_push_meanwhile_keeps_it(lab):
    rc, found = maintenance(lab, "status", "--plane", "compute")
    assert rc == 0
    drained = {s["device"]: s["state"] for s in found["switches"] if s["state"]["drained"]}
    assert set(drained) == {"cmp-spine1"} and drained["cmp-spine1"]["reason"] == "lab drain test"
    assert drained["cmp-spine1"]["applied"] is True
    pushed = run("nornir", "push", "--plane", "compute", "--state-dir", str(lab), "--json")
    assert pushed.returncode == 0, pushed.stderr
    statuses = {d["device"]: d["status"] for d in json.loads(pushed.stdout)["devices"]}
    assert statuses["cmp-spine1"] == "unchanged", statuses  # the drain is part of what a drained switch runs
    assert all(not hops for per_leaf in remote_leaf_routes("cmp-spine1").values() for hops in per_leaf.values())


def running(node: str) -> str:
    done = subprocess.run(["vtysh", "-N", ns(node), "-c", "show running-config"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    return done.stdout


def test_a_controller_killed_mid_drain_leaves_the_switch_drained_and_status_says_so(lab):
    marker = Path(f"/etc/frr/{ns('cmp-spine2')}/gpufabric.drained")
    command = ["gpufabric", "maintenance", "on", "--device", "cmp-spine2", "--state-dir", str(lab),
               "--reason", "crash", "--drain-timeout", "600"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=cli_env())
    try:
        _until(marker.exists, 120, "the drain's marker on cmp-spine2")
    finally:
        proc.send_signal(signal.SIGKILL)  # the controller dies: no wait, no audit record after this
        proc.wait()
    rc, found = maintenance(lab, "status", "--device", "cmp-spine2")
    (state,) = [s["state"] for s in found["switches"]]
    assert rc == 0 and state["drained"] and state["reason"] == "crash" and re.fullmatch(r"gf-\S+", state["push_id"])
    rc, off = maintenance(lab, "off", "--device", "cmp-spine2")
    assert rc == 0 and off["ok"] and not off["switches"][0]["state"]["drained"] and not marker.exists()
    assert "GF-DRAIN" not in running("cmp-spine2")


def test_maintenance_off_restores_the_planned_ecmp_widths(lab):
    rc, found = maintenance(lab, "off", "--device", "cmp-spine1")
    assert rc == 0 and found["ok"] and found["wait"]["done"], found
    assert not Path(f"/etc/frr/{ns('cmp-spine1')}/gpufabric.drained").exists()
    assert all(hops for per_leaf in remote_leaf_routes("cmp-spine1").values() for hops in per_leaf.values())
    checked = run("nornir", "validate", "--plane", "compute", "--state-dir", str(lab), "--format", "json")
    results = json.loads(checked.stdout)["results"]
    ecmp = [r for r in results if r["check"] == "ecmp-width"]
    assert checked.returncode == 0 and ecmp and all(r["verdict"] == "pass" for r in ecmp), checked.stdout[-2000:]


# -- what a drain buys: UDP streams across the spines while one spine's FRR daemons are killed -------------------

SENDER, RECEIVER = "cmp-su1-leaf1", "cmp-su2-leaf1"
STREAMS, RATE, SECONDS = 8, "5M", 20  # 8 x 5 Mb/s of 1,000-byte datagrams for 20 s: 100,000 datagrams
# Each stream's socket buffers (the server takes the client's): a receiver starved of CPU on a loaded machine
# drops what overflows its socket, which is the host's loss, not the fabric's. 4 MiB (net.core.rmem_max here)
# holds seconds of a stream; a datagram the fabric dropped never arrives, whatever the buffer.
SOCKET_BUFFER = "4M"


def _address(node: str) -> str:
    return LOOPBACK[node].split("/")[0]


def _kill_frr(node: str) -> None:
    """A reboot's effect on the switch: every FRR daemon of it told to stop (SIGTERM), watchfrr first (it
    would restart the others). zebra takes the routes it installed out of the kernel as it exits, so the
    switch stops forwarding, as a rebooting switch does. With SIGKILL the kernel kept forwarding on stale
    routes and the lab measured no loss either way (0 of 100,000, drained or not): no reboot does that."""
    run_dir = Path("/var/run/frr") / ns(node)
    names = sorted(run_dir.glob("*.pid"), key=lambda p: p.stem != "watchfrr")
    for pid_file in names:
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            continue


def _udp_loss(spine: str) -> tuple[int, int]:
    """(lost, sent) datagrams of STREAMS UDP streams SENDER -> RECEIVER, `spine`'s FRR killed a third in."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", ns(RECEIVER), "iperf3", "-s", "-1", "-B", _address(RECEIVER), "-p", "5299"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(1)  # iperf3 listening (the client retries below if it is not yet)
        client = subprocess.Popen(
            ["ip", "netns", "exec", ns(SENDER), "iperf3", "-c", _address(RECEIVER), "-B", _address(SENDER),
             "-p", "5299", "-u", "-b", RATE, "-l", "1000", "-P", str(STREAMS), "-t", str(SECONDS), "-w", SOCKET_BUFFER,
             "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(SECONDS / 3)
        _kill_frr(spine)
        out, err = client.communicate(timeout=SECONDS + 120)
        assert client.returncode == 0, err + out[-2000:]
    finally:
        server.kill()
        server.wait()
    total = json.loads(out)["end"]["sum"]
    return int(total["lost_packets"]), int(total["packets"])


def _restart(lab: Path, spine: str) -> None:
    """`lab up` again starts the killed switch's FRR (from its saved configuration) and leaves the rest."""
    up = run("gpufabric", "lab", "up", str(fabric()), "--no-hosts", *up_args(), "--state-dir", str(lab))
    assert up.returncode == 0, up.stderr
    _until(lambda: "GF-DRAIN" in running(spine) or "router bgp" in running(spine), 120, f"{spine}'s FRR back")


def test_draining_a_spine_before_its_frr_dies_loses_no_datagram(lab, capsys):
    spine = "cmp-spine1"
    rc, found = maintenance(lab, "off", "--plane", "compute", "--device", spine)  # from a healthy fabric
    assert rc == 0
    rc, found = maintenance(lab, "on", "--device", spine, "--reason", "udp drain test")
    assert rc == 0 and found["ok"], found
    drained_lost, drained_sent = _udp_loss(spine)
    _restart(lab, spine)
    assert "GF-DRAIN" in running(spine)  # it came back drained: its saved configuration holds the drain
    rc, found = maintenance(lab, "off", "--device", spine)
    assert rc == 0 and found["ok"], found
    plain_lost, plain_sent = _udp_loss(spine)
    _restart(lab, spine)
    rc, found = maintenance(lab, "off", "--device", spine)  # waits for the planned ECMP widths again
    assert rc == 0 and found["ok"], found
    policy = subprocess.run(["ip", "netns", "exec", ns(SENDER), "sysctl", "-n", "net.ipv4.fib_multipath_hash_policy"],
                            capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    with capsys.disabled():
        print(f"\nUDP {STREAMS} streams of {RATE}b/s {SENDER} -> {RECEIVER} (ECMP hash policy {policy}), "
              f"{spine}'s FRR killed: drained first {drained_lost} of {drained_sent} lost; "
              f"not drained {plain_lost} of {plain_sent} lost")  # fmt: skip
    assert drained_sent > 80_000 and plain_sent > 80_000
    assert drained_lost == 0
