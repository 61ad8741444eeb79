"""End to end: `gpufabric demo --chaos --json` on the default fabric, asserted on its JSON report.

Real: FRR switches in namespaces, booted Debian hosts (systemd-nspawn) cabled into their leaves,
nornir push/validate over SSH, ansible-playbook site.yml over SSH. Emulated: the hosts' RoCE DSCP
marking (nftables in place of a ConnectX NIC), and every switch platform runs as FRR.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# What the report must show, counted from the default plan rather than typed in.
PLAN = build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))
GPU_HOSTS = [s for s in PLAN.servers if any(n.plane == "compute" for n in s.nics)]
PAIRS = len(GPU_HOSTS) * (len(GPU_HOSTS) - 1)  # ordered pairs per rail
RAILS = {n.rail for s in GPU_HOSTS for n in s.nics if n.plane == "compute"}
COMPUTE_SPINES = sum(d.plane == "compute" and d.role == "spine" for d in PLAN.devices())
MANAGED = sum(d.mgmt_ip is not None for d in PLAN.devices()) + sum(s.mgmt_ip is not None for s in PLAN.servers)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the demo needs root (namespaces, systemd-nspawn)")
    missing = [t for t in ("systemd-nspawn", "debootstrap", "socat", "vtysh", "lldpd") if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install {missing}")
        pytest.skip(f"needs {missing}: scripts/test.sh installs them")
    out = tmp_path_factory.mktemp("demo")
    path = out / "report.json"
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    done = subprocess.run(
        [str(BIN / "gpufabric"), "demo", "--chaos", "--json", str(path), "--build", str(out / "build")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if not path.exists():
        subprocess.run([str(BIN / "gpufabric"), "lab", "down"], check=False)
        pytest.fail(f"no report (exit {done.returncode}):\n{done.stderr[-3000:]}")
    data = json.loads(path.read_text())
    print(f"\ndemo: {data['seconds']} s; steps: {[(s['name'], s['seconds']) for s in data['steps']]}")
    return done.returncode, data


def _facts(data, text):
    return [f for f in data["facts"] if text in f["name"]]


def test_every_fact_passes_and_the_exit_code_says_so(report):
    rc, data = report
    failed = [f for f in data["facts"] + data["chaos"] if not f["passed"]]
    assert not failed, failed
    assert rc == 0 and data["passed"] is True
    for f in data["facts"]:
        assert set(f) >= {"name", "expected", "observed", "passed"}


def test_jumbo_frames_on_every_rail_and_nothing_larger(report):
    _, data = report
    reach = _facts(data, "reaches every other with 9000-byte packets")
    assert len(reach) == len(RAILS) == 2
    assert all(f["observed"] == f"{PAIRS}/{PAIRS} pairs" for f in reach)
    larger = _facts(data, "9001-byte packets")
    assert len(larger) == len(RAILS) and all(f["observed"] == f"0/{PAIRS} pairs" for f in larger)


def test_dscp_counted_at_the_far_leaf_and_the_emulation_is_said(report):
    _, data = report
    (dscp,) = _facts(data, "with DSCP 26")
    assert dscp["observed"] == dscp["expected"] == "20 packets"
    assert "emulated with nftables" in dscp["note"]


def test_ecmp_width_equals_the_spines_per_plane(report):
    _, data = report
    widths = {f["plane"]: f["observed"] for f in _facts(data, "equal-cost next hops")}
    assert widths["compute"] == str(COMPUTE_SPINES)  # one uplink per spine on the compute plane


def test_oob_reaches_everything_and_no_data_plane_reaches_it(report):
    _, data = report
    reach, isolation = _facts(data, "OOB plane reaches"), _facts(data, "reaches the OOB plane")
    assert reach[0]["observed"] == f"{MANAGED}/{MANAGED}"
    assert isolation[0]["observed"].startswith("0/")


def test_second_push_and_second_site_change_nothing(report):
    _, data = report
    assert _facts(data, "second push")[0]["observed"] == "0 switches changed"
    assert _facts(data, "second site.yml")[0]["observed"] == "0 tasks changed, 0 failed"


def test_acceptance_pairs_run_over_ssh_and_pass_with_the_lab_stand_in(report):
    """`acceptance run --lab --stand-in` between the hosts site.yml configured, judged by `report`."""
    from gpufabric.acceptance.suite import build_suite

    _, data = report
    pairs = len(build_suite(PLAN).perf)  # as many stand-in jobs as perftest jobs: the same pairs
    assert _facts(data, "acceptance pairs")[0]["observed"] == f"{pairs}/{pairs} jobs passed"
    junit = ET.parse(data["artifacts"]["acceptance"]).getroot()
    assert junit.get("tests") == str(pairs) and junit.get("failures") == "0" and junit.get("errors") == "0"
    names = {c.get("name") for c in junit.iter("testcase")}
    assert all(n.startswith(("iperf3-stand-in.", "ping-stand-in.")) for n in names)  # named as the stand-in


def test_chaos_shows_the_failure_and_the_recovery(report):
    _, data = report
    chaos = {f["name"]: f for f in data["chaos"]}
    down = next(f for n, f in chaos.items() if "reports" in n)
    assert int(down["observed"].split()[0]) > 0
    assert next(f for n, f in chaos.items() if "drops" in n)["observed"] == str(COMPUTE_SPINES - 1)
    assert next(f for n, f in chaos.items() if "green again" in n)["observed"] == "0 findings"


def test_artifacts_written_and_lab_removed(report):
    _, data = report
    for kind in ("cabling", "bom", "slurm", "junit"):
        assert Path(data["artifacts"][kind]).exists(), kind
    junit = ET.parse(data["artifacts"]["junit"]).getroot()
    checks = sum(p["checks"] for p in data["planes"].values() if "checks" in p)
    assert int(junit.get("tests")) == checks and junit.get("failures") == "0"
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    namespaces = {line.split()[0] for line in listed.splitlines() if line.strip()}  # another lab's carry its name
    assert "cmp-spine1" not in namespaces and "h-gpu01" not in namespaces
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=False).stdout
    assert ": vh-" not in links and ": gf-oob" not in links  # no host's bridge end, no OOB bridge left
