"""`nornir push` and `nornir validate` against the lab: real FRR, sshd and lldpd in namespaces (root only).

The module brings one lab of the default fabric up, pushes the compute plane, and then plants
faults one at a time, each test asserting the exact finding and putting things back.
The bgpd fault is last: FRR's watchfrr does not bring bgpd back by itself in time.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import revert_timer
from conftest import INVENTORY, cli_env, run, run_in_process

from gpufabric.drivers.switch_paths import CANDIDATE_FOLDER
from gpufabric.fleet.lab.names import DEFAULT_LAB, owner_of
from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)")

PLANE = ("--plane", "compute")
NODES = {n.name: n for n in topology(load_intent(str(INVENTORY / "fabric.yml"))).nodes}
PLAN = topology(load_intent(str(INVENTORY / "fabric.yml"))).plan  # the lab's plan: every switch as frr


def mgmt(name: str) -> str:
    return str(NODES[name].mgmt_ip).split("/")[0]


def loopback(name: str) -> str:
    return str(NODES[name].loopback)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    state = tmp_path_factory.mktemp("lab") / "state"
    up = run("gpufabric", "lab", "up", "--no-hosts", "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    yield state
    run("gpufabric", "lab", "down", "--state-dir", str(state))


# The module's pushes and validations run in this process (conftest.run_in_process): the tests below push and
# validate 35 times (validating again until the lab has settled), and a `nornir` process spends about 1.5 s of
# CPU importing NAPALM's drivers before it reads a switch. The tests of the process itself (killed
# mid-commit, a second push beside a first, the human output) start one.
def push(state: Path, *args: str) -> tuple[int, dict]:
    done = run_in_process("nornir", "push", *PLANE, "--state-dir", str(state), "--json", *args)
    assert done.returncode in (0, 4), done.stderr
    return done.returncode, json.loads(done.stdout)


def validate(state: Path, *args: str) -> tuple[int, list[dict]]:
    done = run_in_process("nornir", "validate", *PLANE, "--state-dir", str(state), "--format", "json", *args)
    assert done.returncode in (0, 4), done.stderr
    return done.returncode, json.loads(done.stdout)["results"]


def failures(results: list[dict]) -> list[tuple[str, str, str, str, str]]:
    return [
        (r["check"], r["device"], r["item"], r["expected"], r["observed"]) for r in results if r["verdict"] == "fail"
    ]


def wait_for(state: Path, condition: Callable[[list[dict]], bool], timeout: float = 120.0) -> list[dict]:
    """Validate until `condition` holds (BGP and LLDP take a few seconds to notice a change; a loaded
    machine more: the deadline only bounds a lab that never gets there)."""
    deadline = time.monotonic() + timeout
    while True:
        _, results = validate(state)
        if condition(results) or time.monotonic() > deadline:
            return results
        time.sleep(1)


def healthy(state: Path) -> None:
    results = wait_for(state, lambda r: not failures(r))
    assert failures(results) == []


def ns(node: str, *args: str) -> None:
    subprocess.run(["ip", "-n", node, *args], check=True)


@pytest.fixture(scope="module")
def pushed(lab):
    rc, first = push(lab)
    assert rc == 0, first
    return first


def _revert_timers() -> list[str]:
    """Revert timers still armed on any switch of the default lab: a confirmed push must leave none (another
    worker's lab, named, arms and clears its own)."""
    return [str(p) for p in Path("/etc/frr").glob("*/gpufabric.pending") if owner_of(p.parent.name) == DEFAULT_LAB]


def _pending(name: str) -> Path:
    """The switch's pending marker: it names the revert timer armed by an unconfirmed commit."""
    return Path("/etc/frr") / name / "gpufabric.pending"


def test_push_converges_and_a_second_push_changes_nothing(lab, pushed):
    assert pushed["converged"] and pushed["target"] == "lab"
    assert _revert_timers() == []
    for node in (d["device"] for d in pushed["devices"]):
        pids = subprocess.run(["ip", "netns", "pids", node], capture_output=True, text=True, check=True).stdout.split()
        cmdlines = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids if Path(f"/proc/{pid}").exists()]
        assert not [c for c in cmdlines if b"gpufabric.revert.sh" in c], (
            f"{node}: a confirmed commit's timer still runs"
        )
    assert {d["device"]: d["status"] for d in pushed["devices"]} == {
        d: "changed"
        for d in ("cmp-su1-leaf1", "cmp-su1-leaf2", "cmp-su2-leaf1", "cmp-su2-leaf2", "cmp-spine1", "cmp-spine2")
    }
    assert pushed["batches"][0]["domain"].startswith("canary") and len(pushed["batches"][0]["devices"]) == 1
    assert all("router bgp" in d["diff"] for d in pushed["devices"])
    rc, second = push(lab)
    assert rc == 0 and {d["status"] for d in second["devices"]} == {"unchanged"}
    human = run("nornir", "push", *PLANE, "--state-dir", str(lab))
    assert human.returncode == 0 and "no changes" in human.stderr


def _driver(lab: Path, name: str):
    """An FRR driver for one lab switch, with the host keys `lab up` recorded (unknown keys are refused)."""
    from napalm import get_network_driver

    login = json.loads((lab / "login.json").read_text())
    known = {"known_hosts": str(lab / "known_hosts")}
    return get_network_driver("frr")(mgmt(name), login["username"], login["password"], timeout=30, optional_args=known)


def _switch(lab: Path, name: str):
    dev = _driver(lab, name)
    dev.open()
    return dev


def _host_files(dev) -> dict[str, str]:
    files = ("/etc/chrony/sources.d/gpufabric.sources", "/etc/rsyslog.d/90-gpufabric.conf", "/etc/resolv.conf")
    found = {f: dev._try(f"cat {f}").stdout for f in files}
    found["hostname"] = dev._run("hostname").strip()
    found["timezone"] = dev._run("cat /etc/timezone").strip()
    found["admin"] = dev._run("getent shadow admin | cut -d: -f2").strip()
    return found


def test_push_applies_each_switch_host_settings_in_its_own_etc(lab, pushed):
    """Users, time zone, NTP, syslog and DNS reach the switch (each lab switch has its own /etc); the
    machine's /etc is untouched."""
    m = load_intent(str(INVENTORY / "fabric.yml")).intent.management
    dev = _switch(lab, "cmp-su1-leaf1")
    try:
        found = _host_files(dev)
    finally:
        dev.close()
    assert found["/etc/chrony/sources.d/gpufabric.sources"] == "".join(f"server {s} iburst\n" for s in m.ntp_servers)
    assert found["/etc/rsyslog.d/90-gpufabric.conf"] == "".join(f"*.* @{s}:514\n" for s in m.syslog_servers)
    assert found["/etc/resolv.conf"].startswith(f"search {m.domain}\n")
    assert found["hostname"] == "cmp-su1-leaf1" and found["timezone"] == m.timezone
    assert found["admin"].startswith("$6$")  # the rendered hash of the switch password, set by usermod
    assert not Path("/etc/chrony/sources.d/gpufabric.sources").exists()
    assert m.domain not in Path("/etc/resolv.conf").read_text()
    assert "gpufabric lab admin" not in Path("/etc/passwd").read_text()
    assert all("system candidate" in d["diff"] for d in pushed["devices"])
    assert not any("$6$" in d["diff"] for d in pushed["devices"])  # password hashes are hidden in diffs


def test_an_unconfirmed_host_settings_change_reverts_with_the_routing(lab, pushed, tmp_path):
    """The revert timer puts the host files back too: NTP changed, not confirmed, restored by the switch
    (its timer armed for minutes, then its wait ended: see tests/revert_timer.py)."""
    from gpufabric.nos.frr.files import join_candidate

    login = json.loads((lab / "login.json").read_text())
    env = {"GPUFABRIC_SWITCH_PASSWORD": login["password"]}
    done = run("gpufabric", "render", "--device", "cmp-su2-leaf2", "-o", str(tmp_path), **env)
    assert done.returncode == 0, done.stderr
    files = {p.suffix: p.read_text() for p in tmp_path.iterdir()}
    system = files[".yaml"].replace("ntp_servers: [", "ntp_servers: ['192.0.2.123', ")
    dev = _switch(lab, "cmp-su2-leaf2")
    try:
        before = _host_files(dev)
        running = dev.get_config(retrieve="running")["running"]
        frr, _, nft = running.partition("! gpufabric: nftables\n")
        dev.load_replace_candidate(config=join_candidate(frr, nft or None, system, files[".interfaces"]))
        diff = dev.compare_config()
        assert "+ntp_servers: ['192.0.2.123', " in diff and login["password"] not in diff
        assert "$6$" not in diff
        dev.commit_config(revert_in=revert_timer.LONG)
        assert dev.has_pending_commit()
        assert "server 192.0.2.123 iburst" in _host_files(dev)["/etc/chrony/sources.d/gpufabric.sources"]
        dev.close()  # the session ends: the timer runs on the switch, not in this process
        revert_timer.fire_and_wait(_pending("cmp-su2-leaf2"))
        dev.open()
        assert not dev.has_pending_commit()
        assert _host_files(dev) == before
    finally:
        dev.close()
        revert_timer.end_left_over(_pending("cmp-su2-leaf2"))


def test_validate_proves_the_plan_and_never_prints_a_secret(lab, pushed):
    results = wait_for(lab, lambda r: not failures(r))
    assert failures(results) == []
    checks = {r["check"] for r in results}
    assert checks == {
        "reachable",
        "config-drift",
        "bgp-session",
        "lldp-neighbor",
        "interface",
        "ecmp-width",
        "qos-dscp-map",
        "load-balancing",
        "bgp-timers",
        "bgp-max-med",  # the plan sets none: the switch is held to having none
        "oob-isolation",
        "release",
    }
    widths = {(r["device"], r["item"]): r["observed"] for r in results if r["check"] == "ecmp-width"}
    assert (
        widths[("cmp-su1-leaf1", f"{loopback('cmp-su2-leaf1')}/32")] == "2 paths"
    )  # a remote leaf, through both spines
    junit = run("nornir", "validate", *PLANE, "--state-dir", str(lab), "--format", "junit")
    assert junit.returncode == 0 and 'failures="0"' in junit.stdout and '<testsuite name="bgp-session"' in junit.stdout
    password = json.loads((lab / "login.json").read_text())["password"]
    for args in (("push",), ("validate",), ("push", "--json"), ("validate", "--format", "json")):
        done = run("nornir", *args, *PLANE, "--state-dir", str(lab))
        assert password not in done.stdout + done.stderr


def test_an_incasts_switch_counters_are_read_from_the_lab(lab, tmp_path):
    """`acceptance counters --lab` reads every switch port an incast crosses through the FRR driver: the
    lab's veths report no PFC or queue counter, so what it proves is the reach and the ports read."""
    from gpufabric.acceptance.suite import build_suite

    job = next(j for j in build_suite(PLAN).incast if j.rail == 1)
    done = run("gpufabric", "acceptance", "counters", "--lab", "--state-dir", str(lab), "--job", job.id,
               "--phase", "before", "--results", str(tmp_path), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["errors"] == {}
    snapshot = json.loads((tmp_path / job.id / "switches.before.json").read_text())
    assert set(snapshot) == set(job.crosses)
    for switch, port in job.ports:
        assert {"discards.rx", "discards.tx"} <= set(snapshot[switch][port]), (switch, port)


def test_frr_driver_getters_match_napalm_models(lab, pushed):
    from napalm.base import models
    from napalm.base.test.helpers import test_model as complies

    dev = _driver(lab, "cmp-su1-leaf1")
    dev.open()
    try:
        facts = dev.get_facts()
        assert complies(models.FactsDict, facts) and facts["hostname"] == "cmp-su1-leaf1"
        ifaces = dev.get_interfaces()
        assert all(complies(models.InterfaceDict, i) for i in ifaces.values()) and ifaces["swp3"]["mtu"] == 9216
        assert dev.get_interfaces_ip()["lo"]["ipv4"][loopback("cmp-su1-leaf1")] == {"prefix_length": 32}
        bgp = dev.get_bgp_neighbors()["global"]
        assert set(bgp) == set(models.BGPStateNeighborsPerVRFDict.__annotations__) and bgp["router_id"] == loopback(
            "cmp-su1-leaf1"
        )
        for peer in bgp["peers"].values():  # napalm's checker cannot test the nested Dict[...] field itself
            assert set(peer) == set(models.BGPStateNeighborDict.__annotations__)
            assert all(complies(models.BGPStateAddressFamilyDict, af) for af in peer["address_family"].values())
        assert bgp["peers"]["swp3"]["remote_as"] == 4200000000 and bgp["peers"]["swp3"]["description"] == "cmp-spine1"
        # The health poll's one-command getters read real FRR and iproute2 as the full getters do.
        sessions = dev.get_bgp_sessions()["global"]
        assert sessions["peers"].keys() == bgp["peers"].keys() and sessions["router_id"] == ""
        assert {k: (p["is_up"], p["remote_as"]) for k, p in sessions["peers"].items()} == {
            k: (p["is_up"], p["remote_as"]) for k, p in bgp["peers"].items()
        }
        states = {k: {"is_up": i["is_up"], "is_enabled": i["is_enabled"], "mtu": i["mtu"]} for k, i in ifaces.items()}
        assert dev.get_port_states() == states
        lldp = dev.get_lldp_neighbors()
        assert lldp["swp3"] == [{"hostname": "cmp-spine1", "port": "swp1"}]
        assert all(complies(models.LLDPNeighborDict, n) for ns_ in lldp.values() for n in ns_)
        assert "router bgp 4200000001" in dev.get_config(retrieve="running")["running"]
        assert f"bgp router-id {loopback('cmp-su1-leaf1')}" in dev.cli(["show running-config"])["show running-config"]
        assert not dev.has_pending_commit()
    finally:
        dev.close()


def test_an_unconfirmed_commit_reverts_on_the_switch_by_itself(lab, pushed):
    """The commit arms the switch's timer for ten minutes (what the pending state shows is read first, however
    slow the machine); the session ends; the timer's wait is then ended and the switch's own timer shell
    reverts, with no controller connected (tests/revert_timer.py). A timer left to run out by itself:
    test_a_session_cut_during_the_commit_leaves_the_switch_reverting."""
    name = "cmp-su2-leaf1"
    dev = _driver(lab, name)
    dev.open()
    try:
        running = dev.get_config(retrieve="running")["running"]
        dev.load_replace_candidate(config=running.replace("description fabric: cmp-spine1", "description timer test"))
        assert "+  description timer test" in dev.compare_config()
        dev.commit_config(revert_in=revert_timer.LONG)
        assert dev.has_pending_commit() and "timer test" in dev.get_config(retrieve="running")["running"]
        dev.close()  # the session ends: the timer runs on the switch, not in this process
        revert_timer.fire_and_wait(_pending(name))  # asserts it was armed for LONG seconds
        dev.open()
        assert not dev.has_pending_commit()
        assert "timer test" not in dev.get_config(retrieve="running")["running"]
    finally:
        dev.close()
        revert_timer.end_left_over(_pending(name))
    healthy(lab)


def test_a_lowered_mtu_is_found_on_that_link_end(lab, pushed):
    ns("cmp-spine1", "link", "set", "swp2", "mtu", "1500")
    try:
        _, results = validate(lab)
        assert ("interface", "cmp-spine1", "swp2", "up, MTU 9216", "up, MTU 1500") in failures(results)
        assert not [f for f in failures(results) if f[0] == "interface" and f[1] != "cmp-spine1"]
    finally:
        ns("cmp-spine1", "link", "set", "swp2", "mtu", "9216")
    healthy(lab)


def _swap(node: str, a: str, b: str) -> None:
    for cmd in (
        ("link", "set", a, "down"),
        ("link", "set", b, "down"),
        ("link", "set", a, "name", "gfswap"),
        ("link", "set", b, "name", a),
        ("link", "set", "gfswap", "name", b),
        ("link", "set", a, "up"),
        ("link", "set", b, "up"),
    ):
        ns(node, *cmd)


def test_two_swapped_cables_show_as_lldp_mismatches_naming_both_ports(lab, pushed):
    _swap("cmp-spine1", "swp1", "swp2")
    try:
        expected = {
            ("lldp-neighbor", "cmp-spine1", "swp1", "cmp-su1-leaf1 swp3", "cmp-su1-leaf2 swp3"),
            ("lldp-neighbor", "cmp-spine1", "swp2", "cmp-su1-leaf2 swp3", "cmp-su1-leaf1 swp3"),
            ("lldp-neighbor", "cmp-su1-leaf1", "swp3", "cmp-spine1 swp1", "cmp-spine1 swp2"),
            ("lldp-neighbor", "cmp-su1-leaf2", "swp3", "cmp-spine1 swp2", "cmp-spine1 swp1"),
        }
        # The old neighbours linger until their LLDP TTL (4 s in the lab) runs out.
        results = wait_for(lab, lambda r: expected <= set(failures(r)))
        assert {f for f in failures(results) if f[0] == "lldp-neighbor"} == expected
    finally:
        _swap("cmp-spine1", "swp1", "swp2")
    try:
        healthy(lab)
    except AssertionError as exc:
        # Renaming ports under a running zebra is the lab's stand-in for moving cables (a switch never renames
        # its ports). Once in many runs the spine kept its sessions but installed none of some routes: what
        # its zebra held then names the cause next time.
        raise AssertionError(f"{exc}\n{_zebra_state('cmp-spine1')}") from None


def _zebra_state(node: str) -> str:
    shows = ("show interface brief", "show ip route", "show nexthop-group rib")
    commands = [["vtysh", "-N", node, "-c", s] for s in shows]
    return "\n".join(_shown(c) for c in [*commands, ["ip", "-n", node, "-br", "link"]])


def _shown(command: list[str]) -> str:
    """A command's output for a failure's message; bounded, so a hung daemon cannot hide the failure itself."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=30)
    except subprocess.TimeoutExpired:
        return f"--- {' '.join(command)}: no answer in 30 s"
    return f"--- {' '.join(command)}\n{done.stdout[-6000:]}{done.stderr[-500:]}"


def test_a_manual_vtysh_change_is_drift_with_its_diff_and_push_repairs_it(lab, pushed):
    subprocess.run(
        ["vtysh", "-N", "cmp-su2-leaf1", "-c", "conf t", "-c", "interface swp3", "-c", "description changed by hand"],
        check=True,
    )
    _, results = validate(lab)
    drift = [f for f in failures(results) if f[0] == "config-drift"]
    assert [f[1] for f in drift] == ["cmp-su2-leaf1"]
    assert "description fabric: cmp-spine1" in drift[0][4] and "description changed by hand" in drift[0][4]
    rc, repaired = push(lab, "--device", "cmp-su2-leaf1")
    assert rc == 0 and repaired["devices"][0]["status"] == "changed"
    healthy(lab)


def test_the_push_prints_each_diff_once_before_its_commit_with_each_frr_block_once(lab, pushed):
    """Two neighbors added by hand under one `router bgp`: the push shows the switch's diff before the
    batch that commits it, once, and `router bgp` once (frr-reload prints it before every line)."""
    name = "cmp-su2-leaf1"
    running = subprocess.run(
        ["vtysh", "-N", name, "-c", "show running-config"], capture_output=True, text=True, check=True
    ).stdout
    router = next(line for line in running.splitlines() if line.startswith("router bgp "))
    by_hand = [f"neighbor 192.0.2.{i} remote-as 65500" for i in (1, 2)]
    subprocess.run(
        ["vtysh", "-N", name, "-c", "conf t", "-c", router, *(a for line in by_hand for a in ("-c", line))], check=True
    )
    # As on a terminal: both streams in one, in the order they were written.
    done = subprocess.run(
        ["nornir", "push", *PLANE, "--state-dir", str(lab), "--device", name],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=cli_env(),
        check=False,
    )
    text = done.stdout
    assert done.returncode == 0, text
    header = f"--- {name} (batch 1, canary"
    found = re.findall(rf"^batch 1/1 \(canary \(.+\)\): committed, checked and confirmed: {name}$", text, re.M)
    assert text.count(header) == 1 and len(found) == 1, text
    committed = found[0]
    assert text.index(header) < text.index(committed), text
    diff = text[text.index(header) : text.index(committed)]
    shown = [line for line in diff.splitlines()[1:] if line.strip()]
    lines = list(itertools.takewhile(lambda line: line.startswith(("- ", "+ ")), shown))
    assert lines == [f"- {router}", *(f"-  no {line}" for line in by_hand)], text
    # Then, before the commit, the drain around it says what it does (the leaf's servers, the wait).
    assert all(not line.startswith(("- ", "+ ")) for line in shown[len(lines) :]), text
    assert any(line.startswith(f"the traffic left {name} in ") for line in shown[len(lines) :]), text
    # Removing a neighbour resets BGP: the switch was drained around its change, and the drain's summary (last)
    # quotes that line as its reason; before it, the diff appears once, not again after the commit.
    before_drains, drains = text.split("switches drained around their change")
    assert before_drains.count("no neighbor 192.0.2.1") == 1 and f"{name}  bgp-reset" in drains, text
    healthy(lab)


def test_a_leaf_that_cannot_reestablish_bgp_is_rolled_back_and_the_others_untouched(lab, pushed, tmp_path):
    rendered = tmp_path / "configs"
    # Rendered with the lab's switch password, as push renders: its hash is what the switches already have.
    password = json.loads((lab / "login.json").read_text())["password"]
    done = run("gpufabric", "render", "-o", str(rendered), "--plane", "compute", GPUFABRIC_SWITCH_PASSWORD=password)
    assert done.returncode == 0, done.stderr
    conf = rendered / "cmp-su1-leaf2.frr.conf"
    # After planning, both fabric sessions shut: a BGP reset (the leaf is drained around it) that cannot come
    # back. (Not a changed remote-as: frr-reload deletes and re-creates the peer for that, and FRR 8.4's bgpd
    # was seen to crash re-creating an interface peer of a drained switch, in peer_create.)
    conf.write_text(
        re.sub(
            r"^( neighbor (swp\d+) interface remote-as \d+)$",
            r"\1\n neighbor \2 shutdown",
            conf.read_text(),
            flags=re.M,
        )
    )
    assert conf.read_text().count(" shutdown\n") == 2
    before = subprocess.run(
        ["vtysh", "-N", "cmp-su1-leaf2", "-c", "show running-config"], capture_output=True, text=True, check=True
    ).stdout
    # The session cannot come back: the push waits --check-timeout for nothing, then rolls back.
    rc, out = push(lab, "--from", str(rendered), "--check-timeout", "8", "--confirm-timeout", "120")
    assert rc == 4 and not out["converged"]
    status = {d["device"]: d for d in out["devices"]}
    assert status["cmp-su1-leaf2"]["status"] == "rolled back", status["cmp-su1-leaf2"]
    assert "BGP session swp3 (AS 4200000000) did not re-establish" in status["cmp-su1-leaf2"]["reason"]
    others = ("cmp-su1-leaf1", "cmp-su2-leaf1", "cmp-su2-leaf2", "cmp-spine1", "cmp-spine2")
    assert {status[d]["status"] for d in others} == {"unchanged"}
    assert [b["devices"] for b in out["batches"]] == [["cmp-su1-leaf2"]]  # the one that changes, as the canary
    after = subprocess.run(
        ["vtysh", "-N", "cmp-su1-leaf2", "-c", "show running-config"], capture_output=True, text=True, check=True
    ).stdout
    assert after == before
    healthy(lab)


def test_an_unreachable_switch_fails_the_push_and_stops_the_rollout(lab, pushed):
    ns("cmp-su2-leaf2", "link", "set", "eth0", "down")
    try:
        # The SSH timeout bounds every switch's handshake, the reachable ones' too: a loaded machine's sshd
        # answers late. Only the unreachable switch waits it out.
        rc, out = push(lab, "--timeout", "10")
    finally:
        ns("cmp-su2-leaf2", "link", "set", "eth0", "up")
    status = {d["device"]: d for d in out["devices"]}
    assert rc == 4 and not out["converged"] and status["cmp-su2-leaf2"]["status"] == "failed"
    assert "cannot connect" in status["cmp-su2-leaf2"]["reason"]
    # Every switch is read before any changes: the others were read (already as planned), none committed.
    assert {d["status"] for d in out["devices"] if d["device"] != "cmp-su2-leaf2"} == {"unchanged"}
    assert out["batches"] == []
    healthy(lab)


def test_a_switch_that_cannot_be_read_stops_the_push_before_any_switch_changes(lab, pushed, tmp_path):
    """One leaf unreachable, every other switch with a change to make: none of them is committed."""
    password = json.loads((lab / "login.json").read_text())["password"]
    done = run("gpufabric", "render", "-o", str(tmp_path), "--plane", "compute", GPUFABRIC_SWITCH_PASSWORD=password)
    assert done.returncode == 0, done.stderr
    for conf in tmp_path.glob("*.frr.conf"):
        conf.write_text(conf.read_text().replace("description fabric: ", "description fabric to "))
    before = {name: _switch_files(name) for name in ("cmp-su1-leaf1", "cmp-spine1")}
    ns("cmp-su2-leaf2", "link", "set", "eth0", "down")
    try:
        rc, out = push(lab, "--from", str(tmp_path), "--timeout", "10")  # see the test above
    finally:
        ns("cmp-su2-leaf2", "link", "set", "eth0", "up")
    status = {d["device"]: d for d in out["devices"]}
    assert rc == 4 and status["cmp-su2-leaf2"]["status"] == "failed"
    others = {d["status"] for name, d in status.items() if name != "cmp-su2-leaf2"}
    assert others == {"skipped"}, status
    assert all("cmp-su2-leaf2 could not be read" in d["reason"] for n, d in status.items() if n != "cmp-su2-leaf2")
    assert {name: _switch_files(name) for name in before} == before
    healthy(lab)


def test_a_bad_password_is_reported_and_nothing_changes(lab, pushed, tmp_path):
    login = lab / "login.json"
    saved = tmp_path / "login.json"
    shutil.copy(login, saved)
    data = json.loads(login.read_text())
    data["password"] = "wrong-Password-canary-51"
    login.write_text(json.dumps(data))
    try:
        done = run("nornir", "push", *PLANE, "--state-dir", str(lab), "--json")
    finally:
        shutil.copy(saved, login)
    out = json.loads(done.stdout)
    assert done.returncode == 4 and out["batches"] == []
    # Every switch is read before any changes: each refuses the login, none is committed.
    assert {d["status"] for d in out["devices"]} == {"failed"}
    assert all("authentication failed" in d["reason"] for d in out["devices"])
    assert "wrong-Password-canary-51" not in done.stdout + done.stderr
    healthy(lab)


def _switch_files(name: str) -> dict[str, str]:
    """Every file of a lab switch's configuration (its FRR dir and its /etc overlay), by path."""
    out = {}
    for root in (Path("/etc/frr") / name,):
        for f in sorted(root.rglob("*")):
            if f.is_file() and not f.name.endswith((".log", ".sock", ".pid")):
                out[str(f)] = f.read_text(errors="replace")
    return out


def _timer_test_candidate(lab: Path, name: str, text: str) -> str:
    dev = _switch(lab, name)
    try:
        running = dev.get_config(retrieve="running")["running"]
    finally:
        dev.close()
    assert "description fabric: cmp-spine1" in running
    return running.replace("description fabric: cmp-spine1", f"description {text}", 1)


def _running(lab: Path, name: str) -> str:
    dev = _switch(lab, name)
    try:
        return dev.get_config(retrieve="running")["running"]
    finally:
        dev.close()


def _commit_in_a_child(lab: Path, name: str, candidate: str, revert_in: int) -> subprocess.Popen:
    """A process that commits with a revert timer and then waits forever (to be killed)."""
    login = json.loads((lab / "login.json").read_text())
    code = (
        "import json, sys, time\n"
        "from napalm import get_network_driver\n"
        "a = json.loads(sys.stdin.readline())\n"
        "dev = get_network_driver('frr')(a['host'], a['user'], a['password'], timeout=30,\n"
        "    optional_args={'known_hosts': a['known_hosts']})\n"
        "dev.open()\n"
        "dev.load_replace_candidate(config=a['candidate'])\n"
        "dev.commit_config(revert_in=a['revert_in'])\n"
        "print('committed', flush=True)\n"
        "time.sleep(600)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert child.stdin is not None
    child.stdin.write(
        json.dumps(
            {
                "host": mgmt(name),
                "user": login["username"],
                "password": login["password"],
                "known_hosts": str(lab / "known_hosts"),
                "candidate": candidate,
                "revert_in": revert_in,
            }
        )
        + "\n"
    )
    child.stdin.flush()
    return child


def test_a_push_killed_between_commit_and_confirm_leaves_the_switch_reverting(lab, pushed):
    """The pushing process dies after its commit (armed for minutes, so the change is seen applied first);
    the timer's wait is then ended and the switch reverts by itself (tests/revert_timer.py)."""
    name = "cmp-su1-leaf2"
    child = _commit_in_a_child(lab, name, _timer_test_candidate(lab, name, "killed push"), revert_in=revert_timer.LONG)
    try:
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "committed"
            assert "killed push" in _running(lab, name)
        finally:
            os.killpg(child.pid, 9)  # the push dies: no confirm, no rollback from this side
            child.wait(timeout=30)
        revert_timer.fire_and_wait(_pending(name))
        assert "killed push" not in _running(lab, name)
        assert _revert_timers() == []
    finally:
        revert_timer.end_left_over(_pending(name))
    healthy(lab)


def _candidates() -> set[Path]:
    """This lab's candidate folders in the machine's /tmp (named after their switch's pathspace): another
    worker's lab, on the same machine, makes and removes its own meanwhile."""
    tmp, prefix = Path(CANDIDATE_FOLDER).parent, Path(CANDIDATE_FOLDER).name
    return {folder for name in NODES for folder in tmp.glob(f"{prefix}{name}.*")}


# The one timer the tests leave to run out by itself. Long enough that the apply it guards is done first,
# and that the test sees the marker before it fires, however loaded the machine; the test then only waits.
RUN_OUT = 30


def test_a_session_cut_during_the_commit_leaves_the_switch_reverting(lab, pushed):
    """The client dies as soon as the timer is armed, while the apply runs: the switch reverts alone,
    when the timer's own seconds run out (nothing ends its wait)."""
    name = "cmp-su2-leaf2"
    pending = _pending(name)
    folders = _candidates()
    child = _commit_in_a_child(lab, name, _timer_test_candidate(lab, name, "cut session"), revert_in=RUN_OUT)
    try:
        revert_timer.until(pending.exists, "the revert timer armed", seconds=60)
    finally:
        os.killpg(child.pid, 9)  # the SSH session drops mid-commit
        child.wait(timeout=30)
    revert_timer.until(lambda: revert_timer.reverted(pending), "the timer running out", seconds=RUN_OUT + 120)
    assert "cut session" not in _running(lab, name)
    assert _revert_timers() == []
    # The cut session never removed its candidate folder (a switch clears /tmp at boot; the lab
    # shares this machine's): the test removes what its own session made.
    for left in _candidates() - folders:
        shutil.rmtree(left)
    healthy(lab)


def test_a_dry_run_leaves_the_switch_byte_identical(lab, pushed, tmp_path):
    login = json.loads((lab / "login.json").read_text())
    env = {"GPUFABRIC_SWITCH_PASSWORD": login["password"]}
    done = run("gpufabric", "render", "-o", str(tmp_path), **env)
    assert done.returncode == 0, done.stderr
    conf = tmp_path / "cmp-su1-leaf1.frr.conf"
    conf.write_text(conf.read_text().replace("description fabric: cmp-spine1", "description dry run"))
    before = _switch_files("cmp-su1-leaf1")
    candidates = _candidates()
    rc, out = push(lab, "--from", str(tmp_path), "--dry-run")
    status = {d["device"]: d for d in out["devices"]}
    assert rc == 0 and out["dry_run"]
    assert status["cmp-su1-leaf1"]["status"] == "would change" and "dry run" in status["cmp-su1-leaf1"]["diff"]
    assert _switch_files("cmp-su1-leaf1") == before
    assert _candidates() == candidates  # the dry run removed its own


def test_validate_changes_nothing_on_a_switch(lab, pushed):
    before = {name: _switch_files(name) for name in ("cmp-spine1", "cmp-su1-leaf1")}
    rc, _ = validate(lab)
    assert rc == 0
    assert {name: _switch_files(name) for name in before} == before


def test_a_second_push_while_one_runs_is_refused(lab, pushed):
    from gpufabric.push.lock import fabric_lock

    with fabric_lock("lab", target="lab-default"):  # what a running push to this lab holds
        done = run("nornir", "push", *PLANE, "--state-dir", str(lab), "--json")
    assert done.returncode == 2 and "another push of fabric 'lab' to lab-default is running" in done.stderr


def test_an_unknown_host_key_is_refused(lab, pushed, tmp_path):
    known = lab / "known_hosts"
    saved = tmp_path / "known_hosts"
    shutil.copy(known, saved)
    lines = known.read_text().splitlines()
    other = next(line for line in lines if not line.startswith(mgmt("cmp-spine1") + " "))
    # cmp-spine1's recorded key replaced by another switch's: what a man in the middle would present.
    known.write_text(
        "\n".join(
            f"{mgmt('cmp-spine1')} {' '.join(other.split()[1:])}" if line.startswith(mgmt("cmp-spine1") + " ") else line
            for line in lines
        )
        + "\n"
    )
    try:
        done = run("nornir", "validate", *PLANE, "--device", "cmp-spine1", "--state-dir", str(lab), "--format", "json")
    finally:
        shutil.copy(saved, known)
    assert done.returncode != 0
    assert "host key is not the one" in done.stdout + done.stderr


def test_a_switch_login_with_an_ssh_key_and_no_password(lab, pushed, tmp_path):
    """The key's text, handed over as the intent's ssh_key reference would be, logs in through real sshd
    (after the push replaced the admin's password hash); another key is refused."""
    from napalm import get_network_driver
    from napalm.base.exceptions import ConnectionException

    from gpufabric.hidden import Hidden

    login = json.loads((lab / "login.json").read_text())

    def driver(key_text: str):
        options = {"known_hosts": str(lab / "known_hosts"), "private_key": Hidden(key_text)}
        return get_network_driver("frr")(mgmt("cmp-spine1"), login["username"], "", timeout=5, optional_args=options)

    dev = driver(Path(login["key_file"]).read_text())
    dev.open()
    try:
        assert dev._run("hostname").strip() == "cmp-spine1"
    finally:
        dev.close()
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    with pytest.raises(ConnectionException, match="authentication failed"):
        driver(other.read_text()).open()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _prom(port: int, path: str, **params: str) -> dict:
    import urllib.parse
    import urllib.request

    url = f"http://127.0.0.1:{port}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


def _until(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(1)
    raise AssertionError(f"not within {seconds:g} s: {what}")


def test_prometheus_scrapes_the_exporter_and_a_cut_link_fires_its_alerts(lab, pushed, tmp_path):
    """A real Prometheus (Debian's) scrapes `gpufabric telemetry serve --lab`: every dashboard query of the
    compute plane returns series from the lab, except the lossless counters and the optics (no PFC/ECN
    hardware, no transceivers here); cutting a leaf's uplink fires the flap and the ECMP alerts."""
    from gpufabric.plan import build_plan
    from gpufabric.telemetry.dashboard import dashboard, queries

    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.fail("prometheus is missing: scripts/test.sh unpacks Debian's package into .cache/prometheus")
    exporter_port, prom_port = _free_port(), _free_port()
    rules = tmp_path / "rules.yml"
    rules.write_text(run("gpufabric", "telemetry", "rules", "--for", "0s", check=True).stdout)
    config = {
        # A scrape reads every switch over SSH: on a loaded machine a tight timeout fails scrapes (and so
        # empties the series); the waits below are on what Prometheus holds, not on a number of seconds.
        "global": {"scrape_interval": "6s", "scrape_timeout": "6s", "evaluation_interval": "2s"},
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": "gpufabric", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
    }
    (tmp_path / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    logs = [open(tmp_path / name, "w") for name in ("exporter.log", "prometheus.log")]  # noqa: SIM115 (closed below)
    listen = f"127.0.0.1:{exporter_port}"
    exporter = subprocess.Popen(
        ["gpufabric", "telemetry", "serve", "--lab", "--state-dir", str(lab), *PLANE, "--listen", listen],
        stdout=logs[0], stderr=logs[0], env=cli_env(),
    )  # fmt: skip
    server = subprocess.Popen(
        [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{prom_port}"],
        stdout=logs[1], stderr=logs[1],
    )  # fmt: skip
    cut = False
    try:

        def series(expr: str) -> list:
            return _prom(prom_port, "/api/v1/query", query=expr)["data"]["result"]

        _until(lambda: len(series('gpufabric_link_up{plane="compute"}')) > 0, 180, "the exporter's first scrape")
        board = dashboard(build_plan(load_intent(str(INVENTORY / "fabric.yml"))))
        compute = [(t, e) for t, e in queries(board) if t.startswith("compute:")]
        # No PFC/ECN hardware and no transceivers behind the lab's veths: those panels stay empty.
        lossless = [(t, e) for t, e in compute if any(w in t for w in ("PFC", "ECN", "optics", "pre-FEC"))]
        empty: list[str] = []

        def every_panel_has_series() -> bool:  # rate() over [1m] needs two scrapes of each counter
            empty[:] = [t for t, e in compute if (t, e) not in lossless and not series(e)]
            return not empty

        try:
            _until(every_panel_has_series, 120, "a series for every panel")
        except AssertionError:
            pytest.fail(f"panels without series: {empty}")
        assert lossless and all(not series(e) for _, e in lossless)  # no such counters in the lab: nothing faked
        assert {r["metric"]["rail"] for r in series('gpufabric_link_up{plane="compute",role="leaf"}')} == {"1", "2"}

        ns("cmp-su1-leaf1", "link", "set", "swp3", "down")
        cut = True

        def firing() -> set[tuple[str, str]]:
            alerts = _prom(prom_port, "/api/v1/alerts")["data"]["alerts"]
            return {(a["labels"]["alertname"], a["labels"].get("device", "")) for a in alerts if a["state"] == "firing"}

        _until(lambda: ("GpufabricLinkFlapped", "cmp-su1-leaf1") in firing(), 180, "the flap alert")
        _until(lambda: ("GpufabricEcmpNarrowerThanPlanned", "cmp-su1-leaf1") in firing(), 180, "the ECMP alert")
        _until(lambda: any(a == "GpufabricLinkDown" for a, _ in firing()), 180, "the link-down alert")
    finally:
        if cut:
            ns("cmp-su1-leaf1", "link", "set", "swp3", "up")
        for proc in (server, exporter):
            proc.terminate()
        for proc in (server, exporter):
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for log in logs:
            log.close()
    healthy(lab)


def test_a_link_that_flaps_inside_the_counter_window_fails_validate(lab, pushed):
    """The counter window catches what a snapshot misses: a link down and up again between two reads."""
    import threading

    rc, results = validate(lab, "--device", "cmp-su2-leaf1", "--counter-window", "3")
    assert rc == 0, failures(results)
    checks = {r["check"] for r in results}
    assert {"link-flaps", "port-errors", "port-discards"} <= checks

    # The far end goes down and up, as a cable or optic fails: the leaf's port loses its carrier twice.
    far, far_port = next((x.b, x.b_port) for x in PLAN.links() if (x.a, x.a_port) == ("cmp-su2-leaf1", "swp3"))

    stop = threading.Event()

    def flap() -> None:  # every second until validate is done, so some flaps fall inside its window
        while not stop.is_set():
            ns(far, "link", "set", far_port, "down")
            time.sleep(0.3)
            ns(far, "link", "set", far_port, "up")
            stop.wait(1.0)

    flapper = threading.Thread(target=flap)
    flapper.start()
    try:
        rc, results = validate(lab, "--device", "cmp-su2-leaf1", "--counter-window", "4", "--no-drift")
    finally:
        stop.set()
        flapper.join()
    flapped = [f for f in failures(results) if f[0] == "link-flaps"]
    assert rc == 4 and [(f[1], f[2]) for f in flapped] == [("cmp-su2-leaf1", "swp3")], failures(results)
    assert flapped[0][4] != flapped[0][3] and int(flapped[0][4].split()[0]) >= 2
    healthy(lab)


def test_bgpd_killed_on_a_spine_downs_its_sessions_and_narrows_ecmp_on_every_leaf(lab, pushed):
    subprocess.run(["vtysh", "-N", "cmp-spine2", "-c", "watchfrr ignore bgpd"], check=True, capture_output=True)
    pid = int(Path("/var/run/frr/cmp-spine2/bgpd.pid").read_text())
    os.kill(pid, 9)
    results = wait_for(lab, lambda r: sum(f[0] == "ecmp-width" for f in failures(r)) >= 12)
    found = failures(results)
    spine = {f[2] for f in found if f[0] == "bgp-session" and f[1] == "cmp-spine2"}
    assert spine == {"swp1 (cmp-su1-leaf1)", "swp2 (cmp-su1-leaf2)", "swp3 (cmp-su2-leaf1)", "swp4 (cmp-su2-leaf2)"}
    narrowed = {(f[1], f[2]) for f in found if f[0] == "ecmp-width" and f[3] == "2 paths" and f[4] == "1 paths"}
    leaves = {"cmp-su1-leaf1", "cmp-su1-leaf2", "cmp-su2-leaf1", "cmp-su2-leaf2"}
    assert {device for device, _ in narrowed} == leaves and len(narrowed) == 12  # 3 remote leaves each
