"""Every NX-OS configuration gpufabric renders, read back by Cisco's parsers, equals the plan.

The `cisco.nxos` collection's resource modules (tests/oracles/nxos.py) read interfaces, L3
addresses, BGP (global, address family, per neighbor), ACLs and where they are applied, prefix
lists, route maps and static routes; each is compared with the plan's facts for the switch. The
line families no parser reads are measured (tests/oracles/nxos.py) and must be the ones
docs/configs.md lists under "What no oracle covers".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gpufabric.config.context import DeviceContext, LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.plan.model import Plan, ip
from tests.conftest import ALL_INTENTS, example_plan
from tests.oracles import nxos
from tests.vendor_variants import converged, variants


def _plans() -> dict[str, Plan]:
    # Planned once per test process, shared with the other files' per-example tests (conftest).
    plans = {p.stem: example_plan(p) for p in ALL_INTENTS if "32k" not in p.name}
    plans = {k: v for k, v in plans.items() if any(d.platform == "nxos" for d in v.devices())}
    return plans | variants("nxos") | converged("nxos")


PLANS = _plans()


def _expected_l3(ctx: DeviceContext) -> dict[str, str]:
    d = ctx.device
    out = {p.name: p.address for p in ctx.ports if p.address}
    if d.loopback is not None:
        out["loopback0"] = f"{ip(d.loopback)}/32"
    if ctx.mgmt.address:
        out[d.mgmt_port] = ctx.mgmt.address
    if ctx.mlag:
        out[f"Vlan{ctx.mlag.vlan}"] = ctx.mlag.svi
        if ctx.mlag.l3_vlan:
            out[f"Vlan{ctx.mlag.l3_vlan}"] = ctx.mlag.l3_local
    for v in ctx.converged.vrfs if ctx.converged else []:
        out |= {sub.name: sub.address for sub in v.ports if sub.address}
    return out


def _expected_acl_interfaces(ctx: DeviceContext) -> dict[str, str]:
    base = {ctx.device.mgmt_port: "MGMT0-IN"}  # NX-API, SSH, gNMI and SNMP guarded on the management port
    acl = ctx.acl
    if acl is None:
        return base
    out = {p.name: "BIZ-HOST-IN" for p in ctx.ports if p.kind == "host" and p.address}
    out |= {p.name: "BIZ-EDGE-IN" for p in ctx.ports if p.kind == "edge"}
    if ctx.mlag and acl.host_ports:
        out[f"Vlan{ctx.mlag.vlan}"] = "BIZ-HOST-IN"
    return out | base


def _read(text: str) -> dict[str, Any]:
    return {r: nxos.parsed(r, text) for r in nxos.RESOURCES}


def _problems(ctx: DeviceContext, text: str) -> list[str]:
    got = _read(text)
    problems: list[str] = []

    def same(what: str, found: object, expected: object) -> None:
        if found != expected:
            problems.append(f"{what}: parsed {found!r}, planned {expected!r}")

    l3 = {i["name"]: i["ipv4"][0]["address"] for i in got["l3_interfaces"] or [] if i.get("ipv4")}
    same("L3 addresses", l3, _expected_l3(ctx))
    ifaces = {i["name"]: i for i in got["interfaces"] or []}
    for p in ctx.ports:
        same(f"{p.name} MTU", ifaces.get(p.name, {}).get("mtu"), str(p.mtu))
        same(f"{p.name} enabled", ifaces.get(p.name, {}).get("enabled"), True)
    applied = {
        i["name"]: acl["name"]
        for i in got["acl_interfaces"] or []
        for group in i.get("access_groups", [])
        for acl in group["acls"]
        if acl["direction"] == "in"
    }
    same("ACLs applied inbound", applied, _expected_acl_interfaces(ctx))
    defined = {a["name"] for afi in got["acls"] or [] for a in afi.get("acls", [])}
    used = set(applied.values()) | {"MGMT-IN"}
    same("ACLs defined", defined, used)
    if ctx.acl:
        for name in used - {"MGMT-IN", "MGMT0-IN"}:
            aces = next(a["aces"] for afi in got["acls"] for a in afi["acls"] if a["name"] == name)
            denied = {a["destination"].get("prefix") for a in aces if a["grant"] == "deny" and a["protocol"] == "ip"}
            same(f"{name} protects", denied, set(ctx.acl.protected))
    _bgp(ctx, got, same)
    _carried(ctx, got, same)
    _routes(ctx, got, same)
    _services(ctx, got, same)
    return problems


def _services(ctx: DeviceContext, got: dict[str, Any], same: Any) -> None:
    m = ctx.mgmt
    same("hostname", got["hostname"], {"hostname": ctx.device.name})
    ntp = [(s["server"], s.get("vrf")) for s in (got["ntp_global"] or {}).get("servers", [])]
    same("NTP servers", ntp, [(s, m.vrf) for s in m.ntp])
    logging = [(h["host"], h.get("use_vrf")) for h in (got["logging_global"] or {}).get("hosts", [])]
    same("syslog servers", logging, [(s, m.vrf) for s in m.syslog])
    if m.snmp_community:
        communities = (got["snmp_server"] or {}).get("communities", [])
        same("SNMP community", {c["name"] for c in communities}, {m.snmp_community})
        same("SNMP ACL", {c["use_ipv4acl"] for c in communities if "use_ipv4acl" in c}, {"MGMT-IN"})


def _bgp(ctx: DeviceContext, got: dict[str, Any], same: Any) -> None:
    d = ctx.device
    if d.asn is None:
        same("BGP", got["bgp_global"], None)
        return
    g = got["bgp_global"]
    same("ASN", g["as_number"], str(d.asn))
    same("router id", g["router_id"], ip(d.loopback))
    same("multipath-relax", g["bestpath"]["as_path"]["multipath_relax"], True)
    sessions = {n["neighbor_address"]: (n["remote_as"], n["description"]) for n in g["neighbors"]}
    same("neighbors", sessions, {n.address: (str(n.remote_asn), n.peer) for n in ctx.neighbors})
    af = next(a for a in got["bgp_address_family"]["address_family"] if "vrf" not in a)
    same("networks", sorted(n["prefix"] for n in af["networks"]), sorted(ctx.networks))
    same("maximum-paths", af["maximum_paths"]["parallel_paths"], ctx.ecmp)
    per_neighbor = {
        n["neighbor_address"]: n["address_family"][0]
        for n in (got["bgp_neighbor_address_family"] or {}).get("neighbors", [])
    }
    border = ctx.border
    for n in ctx.neighbors:
        fam = per_neighbor.get(n.address, {})
        if n.kind == "edge":
            same(f"{n.address} route maps", fam.get("route_map"), {"inbound": "EDGE-IN", "outbound": "EDGE-OUT"})
        elif border and border.default_route == "originate":
            same(f"{n.address} default-originate", fam.get("default_originate"), {"set": True})
    if border:
        lists = {p["name"]: p["entries"] for afi in got["prefix_lists"] or [] for p in afi["prefix_lists"]}
        same("EDGE-OUT", [(e["prefix"], e.get("le")) for e in lists["EDGE-OUT"]], [(n, 32) for n in border.announce])
        same("EDGE-IN", [e["prefix"] for e in lists.get("EDGE-IN", [])], border.accept)
        maps = {m["route_map"]: m["entries"] for m in got["route_maps"]}
        same("EDGE-IN action", maps["EDGE-IN"][0]["action"], "permit" if border.accept else "deny")


def _carried(ctx: DeviceContext, got: dict[str, Any], same: Any) -> None:
    """A converged plane's carried planes: each VRF defined, each subinterface's tag and VRF, each VRF's BGP
    (router id, multipath-relax, sessions, networks, maximum-paths)."""
    conv = ctx.converged
    vrfs = {v["name"] for v in (got["vrf_global"] or {}).get("vrfs", [])} - {ctx.mgmt.vrf}
    same("VRFs", vrfs, {v.vrf for v in conv.vrfs} if conv else set())
    members = {i["name"]: i["vrf_name"] for i in got["vrf_interfaces"] or [] if i.get("vrf_name") and "." in i["name"]}
    tags = {i["name"]: i["dot1q"] for i in got["l3_interfaces"] or [] if "dot1q" in i}
    subs = [(s, v.vrf) for v in conv.vrfs for s in v.ports] if conv else []
    same("subinterface VRFs", members, {s.name: vrf for s, vrf in subs})
    same("subinterface tags", tags, {s.name: s.vlan for s, _ in subs})
    mtus = {i["name"]: i.get("mtu") for i in got["interfaces"] or [] if "." in i["name"]}
    same("subinterface MTUs", mtus, {s.name: str(s.mtu) for s, _ in subs})
    by_vrf = {v["vrf"]: v for v in (got["bgp_global"] or {}).get("vrfs", [])}
    families = {a["vrf"]: a for a in (got["bgp_address_family"] or {}).get("address_family", []) if "vrf" in a}
    same("BGP VRFs", set(by_vrf), {v.vrf for v in conv.vrfs} if conv else set())
    for v in conv.vrfs if conv else []:
        g = by_vrf.get(v.vrf, {})
        same(f"{v.vrf} router id", g.get("router_id"), ip(ctx.device.loopback))
        same(f"{v.vrf} multipath-relax", g.get("bestpath", {}).get("as_path", {}).get("multipath_relax"), True)
        sessions = {n["neighbor_address"]: (n["remote_as"], n["description"]) for n in g.get("neighbors", [])}
        same(f"{v.vrf} neighbors", sessions, {n.address: (str(n.remote_asn), n.peer) for n in v.neighbors})
        af = families.get(v.vrf, {})
        same(f"{v.vrf} networks", sorted(n["prefix"] for n in af.get("networks", [])), sorted(v.networks))
        same(f"{v.vrf} maximum-paths", af.get("maximum_paths", {}).get("parallel_paths"), ctx.ecmp)


def _routes(ctx: DeviceContext, got: dict[str, Any], same: Any) -> None:
    routes = {
        (vrf.get("vrf"), r["dest"]): sorted(h["forward_router_address"] for h in r["next_hops"])
        for vrf in got["static_routes"] or []
        for fam in vrf["address_families"]
        for r in fam["routes"]
    }
    expected = {(ctx.mgmt.vrf, "0.0.0.0/0"): [ctx.mgmt.gateway]}
    if ctx.border and ctx.border.default_next_hops:
        expected[(None, "0.0.0.0/0")] = sorted(ctx.border.default_next_hops)
    same("static routes", routes, expected)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLANS))
def test_cisco_parsers_read_back_the_plan(name):
    plan = PLANS[name]
    index = LinkIndex(plan)
    problems = {}
    for device in plan.devices():
        if device.platform != "nxos":
            continue
        ctx = build(plan, device, index)
        found = _problems(ctx, render_context(ctx)[f"{device.name}.cfg"])
        if found:
            problems[device.name] = found
    assert problems == {}


def test_every_role_is_covered():
    roles = {d.role for plan in PLANS.values() for d in plan.devices() if d.platform == "nxos"}
    assert roles == {"leaf", "spine", "border", "mgmt"}


def _border(name: str) -> tuple[DeviceContext, str]:
    plan = PLANS[name]
    device = next(d for d in plan.devices() if d.role == "border")
    ctx = build(plan, device, LinkIndex(plan))
    return ctx, render_context(ctx)[f"{device.name}.cfg"]


def test_planted_errors_are_caught():
    ctx, text = _border("all-nxos-originate")
    assert _problems(ctx, text) == []
    edge = next(p for p in ctx.ports if p.kind == "edge")
    planted = text.replace(f"  ip address {edge.address}\n", "  ip address 192.0.2.1/31\n")  # wrong value
    planted = planted.replace("  ip access-group BIZ-EDGE-IN in\n", "", 1)  # an ACL no longer applied
    found = _problems(ctx, planted)
    assert any(f.startswith("L3 addresses") and "192.0.2.1/31" in f for f in found)
    assert any(f.startswith("ACLs applied inbound") for f in found)


def test_a_planted_error_in_a_carried_plane_is_caught():
    plan = PLANS["converged-nxos"]
    device = next(d for d in plan.devices() if d.platform == "nxos" and d.role == "leaf")
    ctx = build(plan, device, LinkIndex(plan))
    text = render_context(ctx)[f"{device.name}.cfg"]
    assert ctx.converged is not None and _problems(ctx, text) == []
    planted = text.replace(
        "  encapsulation dot1q 20\n  vrf member STORAGE\n", "  encapsulation dot1q 21\n  vrf member INBAND\n", 1
    )
    planted = planted.replace("      network 10.11.0.0/31\n", "", 1)
    found = _problems(ctx, planted)
    assert any(f.startswith("subinterface VRFs") and "INBAND" in f for f in found)
    assert any(f.startswith("subinterface tags") and "21" in f for f in found)
    assert any(f.startswith("STORAGE networks") for f in found)


def test_a_route_after_a_vrf_context_lands_in_that_vrf():
    """Why global routes come first: NX-OS (and its parser) keep a following `ip route` in the VRF."""
    ctx, text = _border("all-nxos-originate")
    hop = ctx.border.default_next_hops[0]
    moved = text.replace(f"ip route 0.0.0.0/0 {hop}\n", "") + f"vrf context management\nip route 0.0.0.0/0 {hop}\n"
    assert any(f.startswith("static routes") for f in _problems(ctx, moved))


DOCS = Path(__file__).resolve().parents[2] / "docs" / "configs.md"


def _documented() -> tuple[set[str], tuple[int, int]]:
    """The unjudged families docs/configs.md lists, and the figure it gives (unjudged, all lines)."""
    text = DOCS.read_text()
    listed = text.split("<!-- nxos-unjudged:start -->\n", 1)[1].split("<!-- nxos-unjudged:end -->", 1)[0]
    figure = re.search(r"where they are\s+([\d,]+) of ([\d,]+) lines", text)
    assert figure is not None
    counts = tuple(int(g.replace(",", "")) for g in figure.groups())
    return {line[3:-1] for line in listed.splitlines()}, (counts[0], counts[1])


@pytest.mark.slow
def test_the_lines_no_cisco_parser_reads_are_exactly_the_documented_ones():
    """Every rendered NX-OS line family that no `cisco.nxos` parser reads (deleting it changes no
    parser's result) is listed under "What no oracle covers", and nothing else is."""
    texts = [
        render_context(build(plan, d, index))[f"{d.name}.cfg"]
        for plan in PLANS.values()
        for index in [LinkIndex(plan)]
        for d in plan.devices()
        if d.platform == "nxos"
    ]
    every, unread, counts = nxos.unjudged_families(texts)
    listed, (unjudged_lines, all_lines) = _documented()
    assert unread == listed
    assert (sum(counts[f] for f in unread), sum(counts.values())) == (unjudged_lines, all_lines)
    # the measure tells the two apart: the RoCE QoS policy is unread, a port's MTU and BGP sessions are read
    assert "system qos > service-policy type queuing output <v>" in unread
    assert {"interface <v> > mtu <v>", "router bgp <v> > neighbor <v> > remote-as <v>"} <= every - unread


def test_a_line_family_is_judged_only_when_a_parser_reads_it():
    text = "interface breakout module 1 port 1 map 100g-4x\ninterface Ethernet1/1/1\n  mtu 9216\n  no shutdown\n"
    every, unread, _ = nxos.unjudged_families([text])
    # acl_interfaces lists the breakout line as an interface name without reading it
    assert unread == {"interface breakout module <v> port <v> map <v>"}
    assert every - unread == {"interface <v>", "interface <v> > mtu <v>", "interface <v> > no shutdown"}
