"""What the lab would build for a plan (no root needed): every switch as frr, cables, management."""

from __future__ import annotations

import pytest
import yaml
from conftest import INVENTORY, default_doc, set_path

from gpufabric.fleet.lab.topology import as_frr, topology
from gpufabric.intent import IntentError, load_intent, load_intent_text
from gpufabric.plan import build_plan


def test_default_fabric_topology_matches_the_plan():
    loaded = load_intent(str(INVENTORY / "fabric.yml"))
    plan = build_plan(loaded)
    topo = topology(loaded)
    assert [n.name for n in topo.nodes] == [d.name for d in plan.devices()]
    fabric_links = [link for link in plan.links() if link.kind == "fabric"]
    assert len(topo.cables) == len(fabric_links) == 28
    assert {(c.a, c.a_port, c.b, c.b_port, c.mtu) for c in topo.cables} == {
        (link.a, link.a_port, link.b, link.b_port, link.mtu) for link in fabric_links
    }
    assert topo.gateway == "172.20.0.1/24"
    assert len({m.root_end for m in topo.mgmt}) == 16 and all(len(m.root_end) <= 15 for m in topo.mgmt)
    assert all(n.mgmt_ip and n.mgmt_ip.endswith("/24") and n.mgmt_ip != topo.gateway for n in topo.nodes)


def test_other_platforms_run_as_frr_with_linux_port_names():
    doc = default_doc()
    for role in ("leaf", "spine"):
        doc = set_path(doc, ("planes", "compute", "switches", role, "platform"), "eos")
    doc = set_path(doc, ("planes", "compute", "routing", "addressing"), "p2p31")
    doc = set_path(doc, ("planes", "compute", "addressing", "p2p"), "10.20.0.0/24")
    doc = set_path(doc, ("planes", "compute", "load_balancing"), "adaptive")  # EOS on a model of neither EOS family
    loaded = load_intent_text(yaml.safe_dump(doc), "eos-compute.yml")
    assert {d.platform for d in build_plan(loaded).planes["compute"].devices} == {"eos"}
    topo = topology(loaded)
    assert {n.platform for n in topo.nodes if n.name.startswith("cmp-")} == {"eos"}
    assert {n.platform for n in topo.nodes if not n.name.startswith("cmp-")} == {"frr"}
    assert {d.platform for d in topo.plan.devices()} == {"frr"}
    assert all(c.a_port.startswith("swp") and c.b_port.startswith("swp") for c in topo.cables)
    assert len(topo.cables) == 28


def test_lacp_planes_are_refused_with_a_located_reason():
    loaded = load_intent(str(INVENTORY / "examples" / "multi-vendor.yml"))
    with pytest.raises(IntentError) as caught:
        as_frr(loaded)
    (problem,) = caught.value.problems
    assert problem.field == "planes.storage.host_links"
    assert "bonding" in problem.message and "routed" in problem.hint
    assert caught.value.line_of(problem.path) is not None


@pytest.mark.parametrize(
    ("stderr", "gone"),
    [
        ('Cannot find device "vh-gpu01"', True),
        ("RTNETLINK answers: No such device", True),  # went between looking and deleting
        ("RTNETLINK answers: Operation not permitted", None),
    ],
)
def test_a_teardown_counts_what_is_already_gone_as_removed_and_nothing_else(stderr, gone):
    from gpufabric.lab import netlink

    failing = ("sh", "-c", f"echo '{stderr}' >&2; exit 2")
    if gone is None:
        with pytest.raises(netlink.LabCommandError, match="Operation not permitted"):
            netlink.remove(*failing)
    else:
        assert netlink.remove(*failing) is False
    assert netlink.remove("true") is True
