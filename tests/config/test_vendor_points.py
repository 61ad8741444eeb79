"""Points a switch would have met in earlier rendered configs, each checked on every platform it concerns.

The vendor oracles (test_oracle_*.py) prove that the configs are valid and say what the plan says;
these tests pin behaviour that validity alone does not: a split cage is configured, an ACL that is
referenced is defined, the OOB switches bridge, MLAG and VRR are switched on, every traffic class
keeps a share, management services are locked down, a border that originates 0/0 can forward it.
"""

from __future__ import annotations

import re
from functools import cache

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.nos.cumulus.document import DEFAULT_CONTROL_PLANE_ACLS
from gpufabric.plan.model import Plan
from tests.conftest import INVENTORY, plan_doc
from tests.vendor_variants import one_platform

SUPERPOD = INVENTORY / "examples" / "superpod-1su.yml"


def _plan(doc: dict) -> Plan:
    return plan_doc(doc, "<test>")


def _rendered(plan: Plan, platform: str) -> dict[str, tuple]:
    index = LinkIndex(plan)
    out = {}
    for d in plan.devices():
        if d.platform == platform:
            ctx = build(plan, d, index)
            out[d.name] = (ctx, "".join(render_context(ctx).values()))
    return out


@cache
def cumulus_plan() -> Plan:
    return _plan(yaml.safe_load(SUPERPOD.read_text()))


@cache
def eos_plan() -> Plan:
    return _plan(one_platform("eos"))


@cache
def nxos_plan() -> Plan:
    return _plan(one_platform("nxos"))


@pytest.fixture(scope="module")
def cumulus() -> dict[str, tuple]:
    return _rendered(cumulus_plan(), "cumulus")


@pytest.fixture(scope="module")
def eos() -> dict[str, tuple]:
    return _rendered(eos_plan(), "eos")


@pytest.fixture(scope="module")
def nxos() -> dict[str, tuple]:
    return _rendered(nxos_plan(), "nxos")


def _split_cages(plan: Plan, device: str) -> set[tuple[int, int, int]]:
    """(cage, ways, lane speed) of the device's split cages, read off the plan's cables, not the renderer."""
    cages = set()
    for link in plan.links():
        for end, cage, ways in ((link.a, link.a_cage, link.a_split), (link.b, link.b_cage, link.b_split)):
            if end == device and ways > 1:
                cages.add((cage, ways, link.speed))
    return cages


def test_every_split_cage_is_configured_on_every_platform(cumulus, eos, nxos):
    split = 0
    for plan, rendered in ((cumulus_plan(), cumulus), (eos_plan(), eos), (nxos_plan(), nxos)):
        for name, (ctx, text) in rendered.items():
            for cage, ways, speed in _split_cages(plan, name):
                split += 1
                if ctx.device.platform == "cumulus":
                    tree = nvue.set_tree(text)
                    assert tree["interface"][f"swp{cage}"]["link"]["breakout"] == {f"{ways}x": {}}, name
                elif ctx.device.platform == "eos":
                    for lane in range(ways):  # every lane of the cage carries its speed
                        port = f"Ethernet{cage}/{lane * (8 // ways) + 1}"
                        if f"interface {port}\n" in text:
                            block = text.split(f"interface {port}\n", 1)[1].split("!", 1)[0]
                            assert f"   speed {speed}g-{8 // ways}\n" in block, (name, port)
                else:
                    assert f"interface breakout module 1 port {cage} map {speed}g-{ways}x\n" in text, name
    assert split > 50


def test_every_nvue_switch_defines_the_acls_it_binds(cumulus):
    for ctx, text in cumulus.values():
        tree = nvue.set_tree(text)
        bound = set(tree["system"]["control-plane"]["acl"])
        bound |= {a for spec in tree["interface"].values() for a in spec.get("acl", {})}
        defined = set(tree.get("acl", {})) | set(DEFAULT_CONTROL_PLANE_ACLS)
        assert bound <= defined, ctx.device.name
        assert set(DEFAULT_CONTROL_PLANE_ACLS) <= bound
        rules = tree["acl"]["MGMT-IN"]["rule"].values()
        assert {r["match"]["ip"]["source-ip"] for r in rules if "permit" in r["action"]} == set(ctx.mgmt.allow)
        denied = {
            next(iter(r["match"]["ip"][r["match"]["ip"]["protocol"]]["dest-port"]))
            for r in rules
            if "deny" in r["action"]
        }
        assert denied == {"22", "6030", "9339", "161"}


def test_cumulus_oob_switches_bridge_every_port(cumulus):
    mgmt = [(ctx, nvue.set_tree(t)) for ctx, t in cumulus.values() if ctx.device.plane == "oob"]
    assert mgmt
    for ctx, tree in mgmt:
        for p in ctx.ports:
            assert tree["interface"][p.name]["bridge"] == {"domain": {"br_default": {"access": 1}}}
        assert tree["bridge"]["domain"]["br_default"]["untagged"] == 1


def test_cumulus_mlag_pairs_switch_mlag_and_vrr_on(cumulus):
    pairs = [(ctx, nvue.set_tree(t)) for ctx, t in cumulus.values() if ctx.mlag]
    assert pairs
    for ctx, tree in pairs:
        assert tree["mlag"]["enable"] == "on"
        assert tree["router"]["vrr"] == {"enable": "on"}
        vrr = tree["interface"][f"vlan{ctx.mlag.vlan}"]["ip"]["vrr"]
        assert vrr["enable"] == "on"
        for b in ctx.mlag.bonds:
            assert tree["interface"][f"bond{b.id}"]["bond"]["mlag"] == {"id": b.id, "enable": "on"}


def test_nvue_snmp_listens_on_the_management_address_and_every_class_keeps_a_share(cumulus):
    for ctx, text in cumulus.values():
        tree = nvue.set_tree(text)
        snmp = tree["system"]["snmp-server"]
        assert snmp["listening-address"] == {ctx.mgmt.address.split("/")[0]: {"vrf": "mgmt"}}
        if ctx.qos:
            classes = tree["qos"]["egress-scheduler"]["default-global"]["traffic-class"]
            assert set(classes) == {"0", str(ctx.qos.roce_priority), str(ctx.qos.cnp_priority)}
            assert sum(c.get("bw-percent", 0) for c in classes.values()) == 100


def test_eos_management_is_guarded_by_one_standard_list(eos):
    for ctx, text in eos.values():
        vrf = ctx.mgmt.vrf
        assert "ip access-list standard MGMT-ACCESS\n" in text
        assert f"management ssh\n   ip access-group MGMT-ACCESS vrf {vrf} in\n" in text
        api = text.split("management api http-commands\n", 1)[1].split("!", 1)[0]
        assert "      ip access-group MGMT-ACCESS\n" in api
        assert "ip access-list MGMT-IN" not in text


def test_nxos_classifies_everything_and_queues_the_default_class(nxos):
    qos = [(ctx, t) for ctx, t in nxos.values() if ctx.qos]
    assert qos
    for _, text in qos:
        classification = text.split("policy-map type qos QOS_CLASSIFICATION\n", 1)[1].split("!", 1)[0]
        assert "  class class-default\n    set qos-group 0\n" in classification
        queuing = text.split("policy-map type queuing QOS_EGRESS_PORT\n", 1)[1].split("!", 1)[0]
        assert "class type queuing c-out-8q-q-default" in queuing


@pytest.mark.parametrize("platform", ["cumulus", "eos", "nxos", "frr"])
def test_a_border_that_originates_the_default_route_has_one_toward_the_edge(platform):
    if platform in ("eos", "nxos"):
        doc = one_platform(platform, "originate")
    else:
        doc = yaml.safe_load((SUPERPOD if platform == "cumulus" else INVENTORY / "fabric.yml").read_text())
        doc["planes"]["business"]["border"]["default_route"] = "originate"
    plan = _plan(doc)
    borders = [(c, t) for c, t in _rendered(plan, platform).values() if c.device.role == "border"]
    assert borders
    for ctx, text in borders:
        edge_peers = sorted(n.address for n in ctx.neighbors if n.kind == "edge")
        assert ctx.border.default_next_hops == edge_peers
        if platform == "cumulus":
            static = nvue.set_tree(text)["vrf"]["default"]["router"]["static"]["0.0.0.0/0"]["via"]
            assert sorted(static) == edge_peers
        else:
            assert sorted(re.findall(r"^ip route 0\.0\.0\.0/0 (\S+)$", text, re.M)) == edge_peers


def test_eos_admin_logs_in_to_privileged_exec(eos):
    """EOS applies a local user's privilege 15 at login only under exec authorization; without it the
    admin lands in user exec and NAPALM's `show running-config` would need `enable` first."""
    for ctx, text in eos.values():
        lines = text.splitlines()
        assert "aaa authorization exec default local" in lines, ctx.device.name
        assert any(ln.startswith(f"username {ctx.mgmt.users[0].name} privilege 15 ") for ln in lines)


def _acl_verdict(aces: list[dict], proto: str, src: str, dport: int, sport: int = 40000) -> str:
    """First match of a packet against ACEs as Cisco's `cisco.nxos` parser read them (source prefix or
    any; protocol ip, tcp or udp; destination `eq` port or any; source `eq` port or any)."""
    from ipaddress import ip_address, ip_network

    for ace in aces:
        if ace["protocol"] not in ("ip", proto):
            continue
        s = ace["source"]
        if "prefix" in s and ip_address(src) not in ip_network(s["prefix"]):
            continue
        if "host" in s and src != s["host"]:
            continue
        if int(ace["destination"].get("port_protocol", {}).get("eq", dport)) != dport:
            continue
        if int(s.get("port_protocol", {}).get("eq", sport)) != sport:
            continue
        return ace["grant"]
    return "deny"  # NX-OS's implicit rule


def test_nxos_nxapi_answers_only_the_management_prefixes_as_ssh_does(nxos):
    """NX-API takes no ACL of its own: HTTPS only, in the management VRF, and mgmt0's ACL drops NX-API,
    SSH, gNMI and SNMP from anywhere but the prefixes the VTYs allow. Read back by Cisco's parsers."""
    from tests.oracles import nxos as cisco

    for ctx, text in nxos.values():
        name, lines = ctx.device.name, text.splitlines()
        assert {"feature nxapi", "nxapi https port 443", "no nxapi http", "nxapi use-vrf management"} <= set(lines)
        bound = {
            i["name"]: [a["name"] for g in i.get("access_groups", []) for a in g["acls"] if a["direction"] == "in"]
            for i in cisco.parsed("acl_interfaces", text)
        }
        assert bound[ctx.device.mgmt_port] == ["MGMT0-IN"], name
        acls = {a["name"]: a["aces"] for afi in cisco.parsed("acls", text) for a in afi["acls"]}
        vty = [a["source"]["prefix"] for a in acls["MGMT-IN"] if a["grant"] == "permit"]
        assert vty == ctx.mgmt.allow  # what SSH on the VTYs takes
        guard = acls["MGMT0-IN"]
        for src in ctx.mgmt.allow:
            inside = src.split("/")[0]
            assert _acl_verdict(guard, "tcp", inside, 443) == "permit", (name, src)
        outside = "192.0.2.7"  # TEST-NET-1: in no plan's management prefixes
        for proto, port in (("tcp", 443), ("tcp", 80), ("tcp", 22), ("tcp", 9339), ("tcp", 50051), ("udp", 161)):
            assert _acl_verdict(guard, proto, outside, port) == "deny", (name, proto, port)
        # the switch's own clients still hear their replies, from servers beyond the management prefixes too
        for server in [*ctx.mgmt.ntp, outside]:
            assert _acl_verdict(guard, "udp", server, 40000, sport=123) == "permit"
        for server in [*ctx.mgmt.dns, outside]:
            assert _acl_verdict(guard, "udp", server, 40000, sport=53) == "permit"


def _pairs(plan: Plan) -> list[tuple[str, str, str]]:
    """(plane, first leaf, second leaf) of every MLAG/vPC pair, read off the plan's peer cables, in order."""
    return [(link.plane, link.a, link.b) for link in plan.links() if link.kind == "peer"]


def _block(text: str, header: str) -> list[str]:
    return text.split(f"\n{header}\n", 1)[1].split("\n!", 1)[0].splitlines()


@pytest.mark.parametrize("platform", ["eos", "nxos"])
def test_an_mlag_pair_routes_over_its_peer_link_on_a_planned_31(platform, eos, nxos):
    """Each pair peers in BGP over an SVI carried by the peer link only, on the /31 the plan counts down
    from the top of the plane's p2p pool (pair 1 the last /31, pair 2 the one below): a leaf that loses
    its uplinks still routes through its partner."""
    plan, rendered = (eos_plan(), eos) if platform == "eos" else (nxos_plan(), nxos)
    vlan = 4093 if platform == "eos" else 3967  # NX-OS keeps 3968-4094 for itself
    pairs = _pairs(plan)
    assert len(pairs) == 2
    for number, (plane, first, second) in enumerate(pairs, 1):
        pool = getattr(plan.intent.planes, plane).addressing.p2p
        low = pool.broadcast_address + 1 - 2 * number
        for me, partner, mine, theirs in ((first, second, low, low + 1), (second, first, low + 1, low)):
            _, text = rendered[me]
            assert f"  ip address {mine}/31" in "\n".join(_block(text, f"interface Vlan{vlan}")), me
            partner_asn = next(d.asn for d in plan.devices() if d.name == partner)
            if platform == "eos":
                assert f"   neighbor {theirs} remote-as {partner_asn}\n" in text, me
                assert f"vlan {vlan}\n   name mlag-l3-peer\n   trunk group MLAGPEER\n" in text
            else:
                session = text.split(f"  neighbor {theirs}\n", 1)[1].split("\n  neighbor", 1)[0]
                assert f"    remote-as {partner_asn}" in session, me
    ends = [ctx.mlag.l3_local for ctx, _ in rendered.values() if ctx.mlag]
    assert len(ends) == len(set(ends)) == 4


def test_cumulus_mlag_pairs_peer_over_the_peerlink_and_roce_covers_it(cumulus):
    """Cumulus peers unnumbered over peerlink.4094; `qos roce` is global, so the peerlink's members
    carry it as every switch port does (verify counts them)."""
    from gpufabric.nos.cumulus.verify import nvue_facts

    pairs = [(ctx, text) for ctx, text in cumulus.values() if ctx.mlag]
    assert pairs
    for ctx, text in pairs:
        tree = nvue.set_tree(text)
        session = tree["vrf"]["default"]["router"]["bgp"]["neighbor"]["peerlink.4094"]
        partner = next(d for d in cumulus_plan().devices() if d.name == ctx.mlag.peer)
        assert (session["type"], session["remote-as"]) == ("unnumbered", partner.asn)
        if ctx.qos:
            assert tree["qos"]["roce"]
            members = set(tree["interface"]["peerlink"]["bond"]["member"])
            assert members == {p.name for p in ctx.ports if p.kind == "peer"}
            assert members <= set(nvue_facts(ctx.device.name, text, "x.yaml").qos_ports)


@pytest.mark.parametrize("platform", ["eos", "nxos"])
def test_the_peer_link_carries_the_fabric_s_roce_profile(platform, eos, nxos):
    rendered = eos if platform == "eos" else nxos
    pairs = [(ctx, text) for ctx, text in rendered.values() if ctx.mlag and ctx.qos]
    assert pairs
    for ctx, text in pairs:
        members = [p.name for p in ctx.ports if p.kind == "peer"]
        assert members
        if platform == "eos":
            fabric = next(p.name for p in ctx.ports if p.kind == "fabric")
            assert "   service-profile ROCE" in _block(text, f"interface {fabric}")
            for port in [*members, "Port-Channel2000"]:
                assert "   service-profile ROCE" in _block(text, f"interface {port}"), (ctx.device.name, port)
        else:
            channel = _block(text, "interface port-channel2000")
            assert "  priority-flow-control mode on" in channel
            assert "  service-policy type qos input QOS_CLASSIFICATION" in channel
            for port in members:
                assert "  channel-group 2000 mode active" in _block(text, f"interface {port}")


def test_verify_finds_a_peer_link_member_without_the_roce_profile(tmp_path):
    from gpufabric.verify.runner import verify

    plan = eos_plan()
    folder = tmp_path / "cfg"
    folder.mkdir()
    index = LinkIndex(plan)
    ctxs = {d.name: build(plan, d, index) for d in plan.devices()}
    for ctx in ctxs.values():
        for name, text in render_context(ctx).items():
            (folder / name).write_text(text)
    assert verify(plan, folder, vendor_judges=False).findings == []
    member = next(p.name for p in ctxs["sto-leaf1a"].ports if p.kind == "peer")
    target = folder / "sto-leaf1a.cfg"
    before, after = target.read_text().split(f"interface {member}\n", 1)
    target.write_text(before + f"interface {member}\n" + after.replace("   service-profile ROCE\n", "", 1))
    found = verify(plan, folder, vendor_judges=False).findings
    assert [(f.check, f.device, f.expected) for f in found] == [
        ("qos-port", "sto-leaf1a", f"{member}: RoCE policy applied")
    ]


def test_the_p2p_pool_must_hold_the_pairs_31s_too():
    """8 storage fabric links fill a /28; the two pairs' /31s then need a /27, and take its top."""
    from gpufabric.intent.errors import IntentError
    from gpufabric.plan.model import ip

    doc = one_platform("eos")
    doc["planes"]["storage"]["addressing"]["p2p"] = "10.21.0.0/28"
    with pytest.raises(IntentError, match=r"8 fabric links and 2 MLAG/vPC pairs \(a /31 each\) need 20"):
        _plan(doc)
    doc["planes"]["storage"]["addressing"]["p2p"] = "10.21.0.0/27"
    plan = _plan(doc)
    ends = {d.name: ip(d.peer_l3_ip) for d in plan.devices() if d.peer_l3_ip is not None}
    assert ends == {
        "sto-leaf1a": "10.21.0.30",
        "sto-leaf1b": "10.21.0.31",
        "sto-leaf2a": "10.21.0.28",
        "sto-leaf2b": "10.21.0.29",
    }
    fabric = {ip(a) for link in plan.links() if link.plane == "storage" for a in (link.a_ip, link.b_ip) if a}
    assert fabric.isdisjoint(ends.values())


def test_nxos_bonded_host_ports_are_classified_on_their_port_channel(nxos):
    """Cisco's Nexus 9000 QoS guide: a policy on a port-channel's member port does not take effect, the
    port-channel's does. Every LACP host port-channel carries PFC and the classification; no member does."""
    bonded = [(ctx, text) for ctx, text in nxos.values() if ctx.mlag and ctx.qos and ctx.mlag.bonds]
    assert bonded
    for ctx, text in bonded:
        for bond in ctx.mlag.bonds:
            channel = _block(text, f"interface port-channel{bond.id}")
            assert "  priority-flow-control mode on" in channel, (ctx.device.name, bond.id)
            assert "  service-policy type qos input QOS_CLASSIFICATION" in channel
            for port in bond.members:
                member = _block(text, f"interface {port}")
                assert f"  channel-group {bond.id} mode active" in member
                assert not any("service-policy" in line for line in member), (ctx.device.name, port)
