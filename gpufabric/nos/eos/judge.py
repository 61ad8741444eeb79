"""Arista's own renderer as the judge of EOS text (PyPI `pyavd`, AVD's eos_cli_config_gen; optional).

Each EOS switch's planned facts are written as AVD structured config (the schema AVD users write),
validated by pyavd's schema, rendered by pyavd's templates, and compared with the EOS text block by
block, order aside. gpufabric's templates are not involved on this side. The test suite judges
every rendered configuration with it; `verify` judges the files on disk, and where a differing
line carries a value AVD's schema knows (a port's `speed`, its `mtu`), asks the schema about it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufabric.config.context import DeviceContext
from gpufabric.nos.eos import PLATFORM
from gpufabric.nos.eos.hashing import (
    BTH_DEST_QP_BYTES,
    ROCE_PROFILE,
    ROCE_UDP_PORT,
    STRATA_UDF_MASK,
    STRATA_UDF_OFFSETS,
    strata_udf_hash,
)
from gpufabric.plan.model import ip
from gpufabric.verify.facts import Finding, read_rendered

SC = dict[str, Any]

# Arista's lane rule, written out here rather than taken from gpufabric: an OSFP or QSFP-DD cage has 8
# electrical lanes (Arista's Layer 1 Profiles page: an OSFP cage numbered 1 exposes Ethernet1/1 to
# Ethernet1/8), and the forced `speed` of a port on a split cage names its rate and the lanes it takes.
# 400G cages run 50G lanes, 800G cages 100G lanes. (cage rate in Gb/s, ways) -> `speed`.
ARISTA_BREAKOUT = {
    (400, 1): "400g-8",
    (400, 2): "200g-4",
    (400, 4): "100g-2",
    (400, 8): "50g-1",
    (800, 1): "800g-8",
    (800, 2): "400g-4",
    (800, 4): "200g-2",
    (800, 8): "100g-1",
}


def structured_config(ctx: DeviceContext) -> SC:
    d, m = ctx.device, ctx.mgmt
    vrf = m.vrf
    sc: SC = {
        "hostname": d.name,
        "clock": {"timezone": m.timezone},
        "local_users": [
            {"name": u.name, "privilege": 15, "role": "network-admin", "sha512_password": u.hashed} for u in m.users
        ],
        "aaa_authorization": {"exec": {"default": "local"}},
        "vrfs": [{"name": vrf, "ip_routing": False}],
        "ip_routing": True,
        "standard_access_lists": [
            {
                "name": "MGMT-ACCESS",
                "sequence_numbers": [{"sequence": i * 10, "action": f"permit {n}"} for i, n in enumerate(m.allow, 1)],
            }
        ],
        "management_ssh": {"vrfs": [{"name": vrf, "enable": True, "ip_access_group_in": "MGMT-ACCESS"}]},
        "management_api_http": {"enable_https": True, "enable_vrfs": [{"name": vrf, "access_group": "MGMT-ACCESS"}]},
        "management_interfaces": [
            {"name": d.mgmt_port, "description": "oob: management", "vrf": vrf, "ip_address": m.address}
        ],
    }
    if m.domain:
        sc["dns_domain"] = m.domain
    if m.dns:
        sc["ip_name_servers"] = [{"ip_address": s, "vrf": vrf} for s in m.dns]
    if m.ntp:
        sc["ntp"] = {"vrf": vrf, "servers": [{"name": s} for s in m.ntp]}
    if m.syslog:
        sc["logging"] = {"vrfs": [{"name": vrf, "hosts": [{"name": s} for s in m.syslog]}]}
    if m.snmp_community:
        snmp: SC = {
            "communities": [{"name": m.snmp_community, "access": "ro", "access_list_ipv4": {"name": "MGMT-ACCESS"}}],
            "vrfs": [{"name": vrf, "enable": True}],
        }
        if m.snmp_location:
            snmp["location"] = m.snmp_location
        sc["snmp_server"] = snmp
    if m.gnmi:
        sc["management_api_gnmi"] = {
            "transport": {"grpc": [{"name": "default", "vrf": vrf, "ip_access_group": "MGMT-ACCESS"}]}
        }
    if m.gateway:
        sc["static_routes"] = [{"vrf": vrf, "prefix": "0.0.0.0/0", "next_hop": m.gateway}]
    if d.plane == "oob":
        sc["vlans"] = [{"id": 1, "name": "oob"}]
    _qos(ctx, sc)
    _acls(ctx, sc)
    _mlag(ctx, sc)
    _interfaces(ctx, sc)
    _bgp(ctx, sc)
    _carried(ctx, sc)
    if ctx.adaptive:
        sc["ip_hardware"] = {"fib": {"load_balance_distribution": {"dynamic": {"enabled": True}}}}
    if PLATFORM.load_balancing(ctx).hash_fields and strata_udf_hash(ctx.device.model):
        # the queue-pair hash of a Strata switch: one user-defined field a byte of the destination QP
        sc["port_channel"] = {
            "load_balance_trident_udf": [
                {"eth_type": "ipv4", "ip_protocol": "udp", "header": "outer_l4", "offset": o, "mask": STRATA_UDF_MASK}
                for o in STRATA_UDF_OFFSETS
            ]
        }
    elif PLATFORM.load_balancing(ctx).hash_fields:  # the queue-pair hash of a SAND switch
        udp = {"dst_port": ROCE_UDP_PORT, "payload_bytes": BTH_DEST_QP_BYTES}
        sc["load_balance"] = {"policies": {"sand_profiles": [{"name": ROCE_PROFILE, "fields": {"udp": udp}}]}}
        sc["port_channel"] = {"load_balance_sand_profile": ROCE_PROFILE}
        sc.setdefault("platform", {}).setdefault(
            "sand", {}
        )  # AVD writes the port-channel line among the SAND platform settings
    return sc


# Arista's `qos map dscp` takes up to eight DSCP values a line (EOS User Manual, Quality of Service, "qos map
# dscp to traffic-class": `qos map dscp dscp_1 [dscp_2 ... dscp_8] to traffic-class tc`); AVD passes each
# `qos.map.dscp` string through as written.
ARISTA_DSCP_PER_LINE = 8
DEFAULT_CLASS = 0  # the scheduler's default class, every DSCP the plan does not name


def _dscp_map(named: dict[int, int]) -> list[str]:
    """`qos.map.dscp` as AVD writes it: each named DSCP to its class, and every other DSCP (0-63) to the
    default class, eight to a line, so no DSCP is left to the platform's own map."""
    rest = [d for d in range(64) if d not in named]
    lines = [f"{d} to traffic-class {tc}" for d, tc in sorted(named.items())]
    for i in range(0, len(rest), ARISTA_DSCP_PER_LINE):
        chunk = " ".join(str(d) for d in rest[i : i + ARISTA_DSCP_PER_LINE])
        lines.append(f"{chunk} to traffic-class {DEFAULT_CLASS}")
    return lines


def _qos(ctx: DeviceContext, sc: SC) -> None:
    q = ctx.qos
    if q is None:
        return
    sc["qos"] = {"map": {"dscp": _dscp_map({q.roce_dscp: q.roce_priority, q.cnp_dscp: q.cnp_priority})}}
    profile: SC = {
        "name": "ROCE",
        "trust": "dscp",
        "tx_queues": [
            {
                "id": q.roce_priority,
                "bandwidth_guaranteed_percent": q.roce_bandwidth_percent,
                "random_detect": {
                    "ecn": {
                        "threshold": {
                            "units": "kbytes",
                            "min": q.ecn_min_bytes // 1000,
                            "max": q.ecn_max_bytes // 1000,
                            "max_probability": q.ecn_probability,
                        }
                    }
                },
            },
            {"id": q.cnp_priority, "priority": "priority strict"},
        ],
    }
    if q.lossless:
        profile["priority_flow_control"] = {
            "enabled": True,
            "priorities": [{"priority": q.roce_priority, "no_drop": True}],
            "watchdog": {"enabled": q.pfc_watchdog},
        }
    sc["qos_profiles"] = [profile]
    if q.lossless:  # LANZ keeps the lossless queue's congestion records the buffer telemetry reads
        sc["queue_monitor_length"] = {"enabled": True}
    buffer = ctx.lossless_buffer
    if buffer is not None:  # bytes, AVD's default unit
        queue_profile = {"name": "ROCE", "ingress": {"headroom": {"memory": buffer.headroom}}}
        sc["platform"] = {"trident": {"mmu": {"active_profile": "ROCE", "queue_profiles": [queue_profile]}}}


def _vrf_bgp(ctx: DeviceContext, v: Any) -> SC:
    """A carried plane's BGP instance, with the plane's timers and BFD on its fabric sessions."""
    neighbors = []
    for n in v.neighbors:
        nb: SC = {"ip_address": n.address, "remote_as": str(n.remote_asn), "description": n.peer}
        if ctx.bfd is not None and n.kind == "fabric":
            nb["bfd"] = True
        neighbors.append(nb)
    out: SC = {
        "name": v.vrf,
        "router_id": ip(ctx.device.loopback),
        "maximum_paths": {"paths": ctx.ecmp, "ecmp": ctx.ecmp},
        "neighbors": neighbors,
        "networks": [{"prefix": n} for n in v.networks],
    }
    if ctx.bgp_timers is not None:
        out["timers"] = f"{ctx.bgp_timers[0]} {ctx.bgp_timers[1]}"
    return out


def _carried(ctx: DeviceContext, sc: SC) -> None:
    """A converged plane's carried planes: a VRF each, its tagged subinterfaces and its BGP instance."""
    conv = ctx.converged
    if conv is None:
        return
    kinds = {p.name: p.kind for p in ctx.ports}
    sc["vrfs"] += [{"name": v.vrf, "ip_routing": True} for v in conv.vrfs]
    for v in conv.vrfs:
        for sub in v.ports:
            sc["ethernet_interfaces"].append(
                {
                    "name": sub.name,
                    "description": f"{v.plane} {sub.kind}: {sub.peer}",
                    "mtu": sub.mtu,
                    "shutdown": False,
                    "encapsulation_dot1q": {"vlan": sub.vlan},
                    "vrf": v.vrf,
                    "ip_address": sub.address,
                }
            )
    sc["router_bgp"]["vrfs"] = [_vrf_bgp(ctx, v) for v in conv.vrfs]
    sc.setdefault("qos", {})["map"] = {"dscp": _dscp_map(dict(conv.dscp_map()))}
    if "qos_profiles" not in sc:  # a plane without RoCE: the classes' profile alone
        sc["qos_profiles"] = [{"name": "ROCE", "trust": "dscp", "tx_queues": []}]
        for e in sc["ethernet_interfaces"]:
            if e["name"] in kinds and kinds[e["name"]] in ("fabric", "host", "peer"):
                e["service_profile"] = "ROCE"
    queues = {q["id"]: q for q in sc["qos_profiles"][0]["tx_queues"]}
    for c in conv.classes:
        queue = queues.setdefault(c.priority, {"id": c.priority})
        if c.bandwidth_percent is None:
            queue["priority"] = "priority strict"
        else:
            queue["bandwidth_guaranteed_percent"] = c.bandwidth_percent
    sc["qos_profiles"][0]["tx_queues"] = sorted(queues.values(), key=lambda q: q["id"])


def _acls(ctx: DeviceContext, sc: SC) -> None:
    acl = ctx.acl
    if acl is None:
        return
    lists = []
    deny = [{"sequence": i * 10, "action": f"deny ip any {n}"} for i, n in enumerate(acl.protected, 1)]
    if acl.host_ports:
        lists.append(
            {"name": "BIZ-HOST-IN", "sequence_numbers": [*deny, {"sequence": 1000, "action": "permit ip any any"}]}
        )
    if acl.edge_ports:
        seqs = list(deny)
        seq = 500
        for src in acl.api_prefixes:
            for port in acl.api_ports:
                seq += 10
                seqs.append({"sequence": seq, "action": f"permit tcp {src} {acl.business_hosts} eq {port}"})
        for i, port in enumerate(acl.api_ports, 1):
            seqs.append({"sequence": 800 + i * 10, "action": f"deny tcp any any eq {port}"})
        seqs.append({"sequence": 1000, "action": "permit ip any any"})
        lists.append({"name": "BIZ-EDGE-IN", "sequence_numbers": seqs})
    sc["access_lists"] = lists


def _mlag(ctx: DeviceContext, sc: SC) -> None:
    mlag = ctx.mlag
    if mlag is None:
        return
    mtu = ctx.device.mtu
    l3 = [{"id": mlag.l3_vlan, "name": "mlag-l3-peer", "trunk_groups": ["MLAGPEER"]}] if mlag.l3_vlan else []
    sc["vlans"] = [
        {"id": mlag.vlan, "name": "hosts"},
        *l3,
        {"id": 4094, "name": "mlag-peer", "trunk_groups": ["MLAGPEER"]},
    ]
    sc["spanning_tree"] = {"no_spanning_tree_vlan": f"{mlag.l3_vlan},4094" if mlag.l3_vlan else "4094"}
    peer_link: SC = {
        "name": "Port-Channel2000",
        "description": f"mlag peer link: {mlag.peer}",
        "switchport": {"enabled": True, "mode": "trunk", "trunk": {"groups": ["MLAGPEER"]}},
    }
    if ctx.qos:
        peer_link["service_profile"] = "ROCE"
    sc["port_channel_interfaces"] = [
        peer_link,
        *(
            {
                "name": f"Port-Channel{b.id}",
                "description": f"host: {b.host}",
                "mtu": mtu,
                "switchport": {"enabled": True, "access_vlan": mlag.vlan},
                "mlag": b.id,
            }
            for b in mlag.bonds
        ),
    ]
    host_svi: SC = {
        "name": f"Vlan{mlag.vlan}",
        "description": "hosts",
        "mtu": mtu,
        "ip_address": mlag.svi,
        "ip_virtual_router_addresses": [mlag.gateway],
    }
    if ctx.acl and ctx.acl.host_ports:
        host_svi["access_group_in"] = "BIZ-HOST-IN"
    l3_svi = (
        [
            {
                "name": f"Vlan{mlag.l3_vlan}",
                "description": f"mlag l3 peer: {mlag.peer}",
                "mtu": mtu,
                "ip_address": mlag.l3_local,
            }
        ]
        if mlag.l3_vlan
        else []
    )
    sc["vlan_interfaces"] = [
        {"name": "Vlan4094", "description": "mlag peer", "mtu": mtu, "no_autostate": True, "ip_address": mlag.local_ip},
        *l3_svi,
        host_svi,
    ]
    sc["ip_virtual_router_mac_address"] = "00:1c:73:00:00:99"
    mc: SC = {
        "domain_id": str(mlag.domain),
        "local_interface": "Vlan4094",
        "peer_address": mlag.peer_ip,
        "peer_link": "Port-Channel2000",
    }
    if mlag.peer_mgmt_ip:
        mc["peer_address_heartbeat"] = {"peer_ip": mlag.peer_mgmt_ip, "vrf": ctx.mgmt.vrf}
    sc["mlag_configuration"] = mc


def _interfaces(ctx: DeviceContext, sc: SC) -> None:
    d = ctx.device
    if d.loopback is not None:
        sc["loopback_interfaces"] = [{"name": "Loopback0", "ip_address": f"{ip(d.loopback)}/32"}]
    out = []
    for p in ctx.ports:
        e: SC = {
            "name": p.name,
            "description": f"{p.kind}: {p.peer}" + (f" {p.peer_port}" if p.peer_port else ""),
            "mtu": p.mtu,
            "shutdown": False,
        }
        if p.split > 1:
            e["speed"] = ARISTA_BREAKOUT[(p.speed * p.split, p.split)]
        if p.kind == "peer":
            e["channel_group"] = {"id": 2000, "mode": "active"}
        elif p.bond is not None:
            e["channel_group"] = {"id": p.bond, "mode": "active"}
        elif d.plane == "oob":
            e["switchport"] = {"enabled": True, "access_vlan": 1}
        else:
            e["switchport"] = {"enabled": False}
            if p.address:
                e["ip_address"] = p.address
        if ctx.qos and p.kind in ("fabric", "host", "peer"):
            e["service_profile"] = "ROCE"
        if ctx.acl and p.kind == "host" and p.address:
            e["access_group_in"] = "BIZ-HOST-IN"
        elif ctx.acl and p.kind == "edge":
            e["access_group_in"] = "BIZ-EDGE-IN"
        out.append(e)
    sc["ethernet_interfaces"] = out


def _bgp(ctx: DeviceContext, sc: SC) -> None:
    d, border = ctx.device, ctx.border
    if d.asn is None:
        return
    neighbors = []
    for n in ctx.neighbors:
        nb: SC = {"ip_address": n.address, "remote_as": str(n.remote_asn), "description": n.peer}
        if n.kind == "edge":
            nb["route_map_in"] = "EDGE-IN"
            nb["route_map_out"] = "EDGE-OUT"
        elif border and border.default_route == "originate":
            nb["default_originate"] = {"enabled": True, "always": True}
        if ctx.bfd is not None and n.kind == "fabric":
            nb["bfd"] = True
        neighbors.append(nb)
    sc["router_bgp"] = {
        "as": str(d.asn),
        "router_id": ip(d.loopback),
        "maximum_paths": {"paths": ctx.ecmp, "ecmp": ctx.ecmp},
        "bgp_defaults": ["bgp bestpath as-path multipath-relax"],
        "neighbors": neighbors,
        "address_family_ipv4": {"networks": [{"prefix": n} for n in ctx.networks]},
    }
    if ctx.bgp_timers is not None:
        sc["router_bgp"]["timers"] = {"keepalive_time": ctx.bgp_timers[0], "hold_time": ctx.bgp_timers[1]}
    if ctx.bfd is not None:
        sc["router_bfd"] = {"interval": ctx.bfd.interval, "min_rx": ctx.bfd.interval, "multiplier": ctx.bfd.multiplier}
    if border:
        sc["prefix_lists"] = [
            *(
                [
                    {
                        "name": "EDGE-IN",
                        "sequence_numbers": [
                            {"sequence": i * 10, "action": f"permit {n}"} for i, n in enumerate(border.accept, 1)
                        ],
                    }
                ]
                if border.accept
                else []
            ),
            {
                "name": "EDGE-OUT",
                "sequence_numbers": [
                    {"sequence": i * 10, "action": f"permit {n} le 32"} for i, n in enumerate(border.announce, 1)
                ],
            },
        ]
        edge_in: SC = {"sequence": 10, "type": "permit" if border.accept else "deny"}
        if border.accept:
            edge_in["match"] = ["ip address prefix-list EDGE-IN"]
        sc["route_maps"] = [
            {"name": "EDGE-IN", "sequence_numbers": [edge_in]},
            {
                "name": "EDGE-OUT",
                "sequence_numbers": [{"sequence": 10, "type": "permit", "match": ["ip address prefix-list EDGE-OUT"]}],
            },
        ]
        if border.default_next_hops:
            sc.setdefault("static_routes", []).extend(
                {"prefix": "0.0.0.0/0", "next_hop": h} for h in border.default_next_hops
            )


@dataclass(frozen=True)
class AvdResult:
    violations: list[str]
    text: str


@functools.cache
def _device_config() -> Callable[[dict[str, Any]], str]:
    """pyavd's eos_cli_config_gen, its templates loaded once per process. `get_device_config` builds a new
    Templar at every call, which executes all ~200 precompiled template modules again (a fifth of a second
    per switch); this one Templar renders the same templates with the same variables, so the same text.
    A pyavd whose internals differ gets `get_device_config` itself."""
    from pyavd import get_device_config

    try:
        from pyavd.constants import (
            EOS_CLI_CONFIG_GEN_JINJA2_CONFIG_TEMPLATE,
            EOS_CLI_CONFIG_GEN_JINJA2_PRECOMPILED_TEMPLATE_PATH,
        )
        from pyavd.templater import Templar

        templar = Templar(precompiled_templates_path=EOS_CLI_CONFIG_GEN_JINJA2_PRECOMPILED_TEMPLATE_PATH)
    except (ImportError, TypeError):
        return get_device_config

    def render(validated: dict[str, Any]) -> str:
        return templar.render_template_from_file(
            template_file=EOS_CLI_CONFIG_GEN_JINJA2_CONFIG_TEMPLATE, template_vars=validated
        )

    return render


def render(sc: SC) -> AvdResult:
    from pyavd import validate_structured_config

    result = validate_structured_config(sc)
    violations = [f"{'.'.join(str(p) for p in v.path)}: {v.message}" for v in result.validation_result.violations]
    if result.validated_data is None:
        return AvdResult(violations, "")
    return AvdResult(violations, _device_config()(result.validated_data))


_NOISE = re.compile(r"^\s*(!.*)?$")


def blocks(text: str) -> dict[str, list[str]]:
    """Top-level blocks of an EOS configuration: a header line and its indented lines (sub-blocks kept
    as lines, comments and blank lines dropped). A header that stands alone is a block with no lines."""
    out: dict[str, list[str]] = {}
    header: str | None = None
    for line in text.splitlines():
        if _NOISE.match(line) or line.strip() == "end":
            continue
        if not line.startswith(" "):
            header = line.rstrip()
            out.setdefault(header, [])
        elif header is not None:
            out[header].append(line.rstrip())
    return out


def compare(ours: str, arista: str) -> list[str]:
    """Differences, block by block, order aside: what one side says that the other does not."""
    a, b = blocks(ours), blocks(arista)
    diffs = []
    for header in sorted(set(a) | set(b)):
        if header not in b:
            diffs.append(f"only gpufabric: {header}")
        elif header not in a:
            diffs.append(f"only pyavd: {header}")
        elif sorted(a[header]) != sorted(b[header]):
            extra = sorted(set(a[header]) - set(b[header]))
            missing = sorted(set(b[header]) - set(a[header]))
            diffs.append(f"{header}: gpufabric adds {extra}, pyavd adds {missing}")
    return diffs


def numbered_blocks(text: str) -> dict[str, tuple[int, list[tuple[int, str]]]]:
    """`blocks`, with the line of each header and of each line under it."""
    out: dict[str, tuple[int, list[tuple[int, str]]]] = {}
    header: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if _NOISE.match(line) or line.strip() == "end":
            continue
        if not line.startswith(" "):
            header = line.rstrip()
            out.setdefault(header, (number, []))
        elif header is not None:
            out[header][1].append((number, line.rstrip()))
    return out


# Lines whose value AVD's schema holds under a port: (pattern, structured-config key, as a number).
_PORT_VALUES = ((re.compile(r"^\s+speed (.+)$"), "speed", False), (re.compile(r"^\s+mtu (.+)$"), "mtu", True))
_PORT = re.compile(r"^interface (Ethernet\S+)$")


def _schema_says(header: str, line: str) -> str | None:
    """AVD's schema on the value of a port line it models (`speed 100g-3`), or None."""
    port = _PORT.match(header)
    for pattern, key, number in _PORT_VALUES if port else ():
        m = pattern.match(line)
        if m:
            value: object = int(m.group(1)) if number and m.group(1).isdigit() else m.group(1)
            violations = render({"ethernet_interfaces": [{"name": port.group(1), key: value}]}).violations  # type: ignore[union-attr]
            return "; ".join(_short(v, str(value)) for v in violations) or None
    return None


def _short(violation: str, value: str) -> str:
    """AVD lists every valid value (about 90 speeds): keep the ones of the same rate as the value."""
    head, _, valid = violation.partition(" is not among the valid values ")
    if not valid:
        return violation
    rate = value.split("-", maxsplit=1)[0]
    near = [v for v in json.loads(valid.rstrip(".")) if v.split("-")[0] == rate]
    return f"{head} is not among AVD's valid values" + (f"; for {rate}: {', '.join(near)}" if near else "")


def _hashes_from(text: str, sc: SC) -> None:
    """The users' hashes as the file has them: `verify` never holds the password that made them."""
    found = dict(re.findall(r"^username (\S+) .*secret sha512 (\S+)$", text, re.M))
    for user in sc.get("local_users", []):
        user["sha512_password"] = found.get(user["name"], user["sha512_password"])


def judge(ctx: DeviceContext, path: Path) -> list[Finding]:
    """pyavd's rendering of the switch's plan against the file: each line of the file AVD would not
    write, at its line (with the schema's complaint where it has one), and each block AVD writes that
    the file lacks."""
    text, device, file = read_rendered(path), ctx.device.name, path.name
    sc = structured_config(ctx)
    _hashes_from(text, sc)
    result = render(sc)
    out = [
        Finding("vendor-avd", device, file, 1, "structured config AVD's schema accepts", v) for v in result.violations
    ]
    ours, arista = numbered_blocks(text), blocks(result.text)
    for header, (at, lines) in ours.items():
        if header not in arista:
            out.append(Finding("vendor-avd", device, file, at, "a block pyavd renders for this switch", header))
            continue
        expected = arista[header]
        missing = sorted(set(expected) - {line for _, line in lines})
        for number, line in lines:
            if line not in expected:
                said = _schema_says(header, line)
                want = f"pyavd (AVD eos_cli_config_gen) under `{header}`: " + (
                    " | ".join(s.strip() for s in missing) or "no such line"
                )
                out.append(
                    Finding(
                        "vendor-avd", device, file, number, want, f"{line.strip()}" + (f" ({said})" if said else "")
                    )
                )
        if missing and all(line in expected for _, line in lines):
            out.append(
                Finding(
                    "vendor-avd",
                    device,
                    file,
                    at,
                    f"under `{header}`: " + " | ".join(s.strip() for s in missing),
                    "missing",
                )
            )
    for header in arista.keys() - ours.keys():
        out.append(Finding("vendor-avd", device, file, 1, f"a block pyavd renders: {header}", "missing"))
    return out
