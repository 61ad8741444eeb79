"""The lab (root only): roce_qos's software RoCE marking on real hosts. The lab has no ConnectX NIC, so the hosts mark
RoCEv2 the way the role does for software RoCE: `roce_qos_software_marking: true` makes the role install nftables
in each booted host and load its rule (UDP 4791 leaving a RoCE NIC gets the plan's RoCE DSCP). Traffic from one GPU
host to another across the compute spine is then counted by DSCP on the far leaf, the switch's classification
standing in for a Spectrum's DSCP trust, and the role's own read-back (site.yml ends with validate.yml) shows the
rule as nftables lists it.

Real: FRR switches in namespaces pushed by `nornir push --lab`, booted Debian hosts configured over SSH by
`ansible-playbook site.yml`, the kernel's nftables on both ends. Not here: a NIC's own marking (roce_qos sets it on
ConnectX NICs; see tests/ansible/test_roce_qos_role.py, against stand-ins).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gpufabric.demo.measure import _ns, gpu_hosts, host_ns
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.plan.model import ip
from tests.conftest import run

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces, systemd-nspawn)"),
]

ROOT = Path(__file__).resolve().parents[2]
INTENT = ROOT / "inventory" / "fabric.yml"
PLAN = build_plan(load_intent(str(INTENT)))
TABLE = "gpufabric_test_roce"  # the far leaf's counters, removed after the test
SENT = {4791: 20, 4792: 10}  # RoCEv2, and UDP to another port that must stay unmarked


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The default fabric up, its compute plane pushed, site.yml run with the software marking on."""
    out = tmp_path_factory.mktemp("roce-marking")
    state = out / "state"
    sd = ["--state-dir", str(state)]
    up = run("gpufabric", "lab", "up", str(INTENT), *sd)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        pushed = run("nornir", "push", str(INTENT), "--lab", "--plane", "compute", *sd, "--json")
        assert pushed.returncode == 0, pushed.stderr[-3000:]
        inventory = out / "inventory"
        (inventory / "group_vars").mkdir(parents=True)
        (inventory / "gpufabric.yml").write_text(f"plugin: gpufabric\nintent: {INTENT}\nlab_state: {state}\n")
        (inventory / "group_vars" / "all.yml").write_text(
            "gpu_operator_deploy: false\nroce_qos_software_marking: true\n"
        )
        done = run(
            "ansible-playbook", "-i", str(inventory), "site.yml", cwd=ROOT,
            ANSIBLE_HOME=str(out / "ansible"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:]
        yield " ".join(done.stdout.split())
    finally:
        run("gpufabric", "lab", "down", *sd)


def _counters(leaf: str) -> dict[str, int]:
    listed = _ns(leaf, "nft", "-n", "-j", "list", "table", "inet", TABLE)
    assert listed.returncode == 0, listed.stderr
    counts = {}
    for item in json.loads(listed.stdout)["nftables"]:
        if "rule" in item:
            expr = item["rule"]["expr"]
            port = next(e["match"]["right"] for e in expr if "match" in e and "payload" in e["match"]["left"]
                        and e["match"]["left"]["payload"]["field"] == "dport")  # fmt: skip
            dscp = next(e["match"]["right"] for e in expr if "match" in e and "payload" in e["match"]["left"]
                        and e["match"]["left"]["payload"]["field"] == "dscp")  # fmt: skip
            counts[f"{port} dscp {dscp}"] = next(e["counter"]["packets"] for e in expr if "counter" in e)
    return counts


def test_the_roles_marking_reaches_the_far_leaf_and_validate_reads_it_back(lab: str) -> None:
    hosts = gpu_hosts(PLAN)
    a = hosts[0]
    b = next((h for h in hosts[1:] if h.units.get("compute") != a.units.get("compute")), hosts[-1])
    rail = min(n.rail for n in a.nics if n.plane == "compute" and n.rail)
    src = ip(next(n for n in a.nics if n.plane == "compute" and n.rail == rail).address)
    far = next(n for n in b.nics if n.plane == "compute" and n.rail == rail)
    dst = ip(far.address)
    want = PLAN.intent.qos_profiles[PLAN.planes["compute"].qos or ""].roce_dscp
    count = (
        f"table inet {TABLE} {{\n chain count {{\n  type filter hook forward priority -10;\n"
        f'  oifname "{far.leaf_port}" udp dport 4791 ip dscp {want} counter\n'
        f'  oifname "{far.leaf_port}" udp dport 4792 ip dscp 0 counter\n }}\n}}\n'
    )
    assert _ns(far.leaf, "nft", "-f", "-", stdin=count).returncode == 0
    try:
        # BGP on the pushed plane converges in seconds; wait until the far host answers on this rail.
        deadline = time.monotonic() + 120
        while _ns(host_ns(a.name), "ping", "-c", "1", "-W", "1", "-I", src, dst).returncode != 0:
            assert time.monotonic() < deadline, f"{a.name} {src} never reached {b.name} {dst}"
        send = f"import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.bind(('{src}', 0))\n" + "".join(
            f"for _ in range({n}): s.sendto(b'x' * 64, ('{dst}', {port}))\n" for port, n in SENT.items()
        )
        assert _ns(host_ns(a.name), "python3", "-c", send).returncode == 0
        assert _counters(far.leaf) == {f"4791 dscp {want}": SENT[4791], "4792 dscp 0": SENT[4792]}
    finally:
        _ns(far.leaf, "nft", "delete", "table", "inet", TABLE)
    # site.yml's closing read-back listed the rule on every GPU host, as nftables lists it.
    assert "RoCE DSCP set by nftables on UDP 4791 (IPv4, IPv6)" in lab
    assert "settings equal the plan" in lab
