"""gpufabric's part of a SONiC switch's CONFIG_DB (`/etc/sonic/config_db.json`). A push merges it into the
switch's running CONFIG_DB and hands the merge to `config replace` (gpufabric.nos.sonic.owned says which tables,
rows and fields are gpufabric's: a table, row or field rendered here must be covered there).

Built as tables of keys of fields, every value a string as CONFIG_DB stores it (lists stay lists: the
`@` fields), written once as sorted JSON so the same plan always gives the same bytes. BGP is not
here: the switch runs FRR in split-unified mode (`docker_routing_config_mode: split-unified`): FRR reads one
frr.conf of its own, rendered by the FRR platform's BGP template, which frr-reload can reload.
"""

from __future__ import annotations

from typing import Any

from gpufabric.config.context import DeviceContext
from gpufabric.config.context_types import Port
from gpufabric.config.converged import Converged
from gpufabric.intent.model import QosProfile
from gpufabric.nos.sonic.hwsku import LANES_PER_CAGE, Sku, UnknownSkuError, alias, port_name, sku
from gpufabric.outputs import json_dumps
from gpufabric.plan.model import ip
from gpufabric.platforms.spec import ROCE_HASH

Tables = dict[str, dict[str, dict[str, Any]]]

MAP = "ROCE"  # the name every QoS map, profile and binding of the RoCE contract goes by
MGMT_VRF = "mgmt"
LOOPBACK = "Loopback0"
# SONiC's device roles (DEVICE_METADATA type): T0 is a ToR, T1 a leaf router, T2 a spine router.
DEVICE_TYPE = {
    "leaf": "ToRRouter",
    "spine": "LeafRouter",
    "superspine": "SpineRouter",
    "border": "LeafRouter",
    "mgmt": "MgmtToRRouter",
}

# FRR's configuration is not generated from CONFIG_DB (which holds no BGP tables) and is one integrated
# frr.conf: the bgp container keeps it at start and loads it with `vtysh -b`, and frr-reload takes it.
ROUTING_CONFIG_MODE = "split-unified"

PFC_WD_MS = "200"  # detection and restoration time: SONiC's defaults
PFC_WD_POLL_MS = "200"
GNMI_PORT = "9339"


def text(ctx: DeviceContext) -> str:
    return json_dumps(tables(ctx), indent=4, sort_keys=True) + "\n"


def tables(ctx: DeviceContext) -> Tables:
    hw = sku(ctx.device.model)
    out: Tables = {"DEVICE_METADATA": {"localhost": _metadata(ctx, hw)}}
    out.update(_ports(ctx, hw))
    out.update(_interfaces(ctx))
    out.update(_management(ctx))
    out.update(_acls(ctx))
    if ctx.qos is not None:
        out.update(_qos(ctx, ctx.qos))
        # The ECMP hash over the five-tuple: each RoCE queue pair's UDP source port takes its own path.
        out["SWITCH_HASH"] = {"GLOBAL": {"ecmp_hash": [SONIC_HASH[f] for f in ROCE_HASH]}}
    if ctx.converged is not None:
        out.update(_carried(ctx, ctx.converged))
        _classes(ctx, ctx.converged, out)
    if ctx.qos is not None and ctx.qos.lossless:
        out["FLEX_COUNTER_TABLE"] = watermark_counters()
    return {name: table for name, table in out.items() if table}


# The flex counter groups that poll the buffer watermarks (sonic-flex_counter.yang, FLEX_COUNTER_TABLE; SONiC
# Command Reference, "counterpoll watermark"): the unicast queues' and the priority groups' are what `show queue
# watermark unicast` and `show priority-group watermark shared` print, and the buffer telemetry reads
# (gpufabric/nos/sonic/telemetry.py); the pools' is `show buffer_pool watermark`. SONiC fills the watermark tables
# only for a group whose status is enable: without them the switch shows nothing and the lossless-queue alert
# cannot fire. The polling interval stays SONiC's own.
WATERMARK_GROUPS = ("QUEUE_WATERMARK", "PG_WATERMARK", "BUFFER_POOL_WATERMARK")


def watermark_counters() -> dict[str, dict[str, Any]]:
    """FLEX_COUNTER_TABLE's rows gpufabric renders (and owns): each watermark group, polling on."""
    return {group: {"FLEX_COUNTER_STATUS": "enable"} for group in WATERMARK_GROUPS}


def _carried(ctx: DeviceContext, conv: Converged) -> Tables:
    """A converged plane's carried planes: a VRF each (`VRF`), and each tagged subinterface with its VRF and
    address (`VLAN_SUB_INTERFACE`; a long name, `Ethernet0.20`, carries its tag in its name)."""
    vrf: dict[str, dict[str, Any]] = {v.vrf: {} for v in conv.vrfs}
    sub: dict[str, dict[str, Any]] = {}
    for v in conv.vrfs:
        for s in v.ports:
            sub[s.name] = {"admin_status": "up", "vrf_name": v.vrf}
            if s.address:
                sub[f"{s.name}|{s.address}"] = {}
            else:
                sub[s.name]["ipv6_use_link_local_only"] = "enable"
    return {"VRF": vrf, "VLAN_SUB_INTERFACE": sub}


def _classes(ctx: DeviceContext, conv: Converged, out: Tables) -> None:
    """Every class of a converged switch in the QoS tables: each DSCP to its class, a DWRR scheduler with the
    class's share per queue (the RoCE and default ones re-weighted, one per lossy class), CNP strict."""
    ports = _qos_ports(ctx)
    dscp = out.setdefault("DSCP_TO_TC_MAP", {}).setdefault(MAP, {str(d): "0" for d in range(64)})
    for d, tc in conv.dscp_map():
        dscp[str(d)] = str(tc)
    out.setdefault("TC_TO_QUEUE_MAP", {MAP: {str(tc): str(tc) for tc in range(8)}})
    schedulers = out.setdefault("SCHEDULER", {})
    queue_of: dict[int, str] = {}
    for c in conv.classes:
        name = f"SCHEDULER_{c.name.upper()}"
        if ctx.qos is not None and c.priority == ctx.qos.roce_priority:
            name = "SCHEDULER_ROCE"
        elif c.priority == 0:
            name = "SCHEDULER_DEFAULT"
        schedulers[name] = (
            {"type": "STRICT"} if c.bandwidth_percent is None else {"type": "DWRR", "weight": str(c.bandwidth_percent)}
        )
        queue_of[c.priority] = name
    queues = out.setdefault("QUEUE", {})
    bindings = out.setdefault("PORT_QOS_MAP", {"global": {"dscp_to_tc_map": MAP}})
    rest = [i for i in range(8) if i not in queue_of or i == 0]
    for port in ports:
        bindings.setdefault(port, {"dscp_to_tc_map": MAP, "tc_to_queue_map": MAP})
        for key in [k for k in queues if k.startswith(f"{port}|")]:
            del queues[key]  # the profile's default ranges: laid out again around the carried planes' queues
        for tc, name in queue_of.items():
            if tc == 0:
                continue
            queues[f"{port}|{tc}"] = {"scheduler": name}
            if ctx.qos is not None and tc == ctx.qos.roce_priority:
                queues[f"{port}|{tc}"]["wred_profile"] = "ROCE_ECN"
        for r in _ranges(rest):
            queues[f"{port}|{r}"] = {"scheduler": "SCHEDULER_DEFAULT"}


# ROCE_HASH's fields by sonic-hash's names (its `hash-field` enumeration).
SONIC_HASH = {
    "src-ip": "SRC_IP",
    "dst-ip": "DST_IP",
    "ip-protocol": "IP_PROTOCOL",
    "l4-src-port": "L4_SRC_PORT",
    "l4-dst-port": "L4_DST_PORT",
}


def _metadata(ctx: DeviceContext, hw: Sku) -> dict[str, Any]:
    d = ctx.device
    meta: dict[str, Any] = {
        "hostname": d.name,
        "hwsku": hw.hwsku,
        "platform": hw.platform,
        "type": DEVICE_TYPE.get(d.role, "LeafRouter"),
        "docker_routing_config_mode": ROUTING_CONFIG_MODE,
        "buffer_model": "dynamic",  # NVIDIA's default on Spectrum: lossless headroom from speed and cable
    }
    if d.asn is not None:
        meta["bgp_asn"] = str(d.asn)
    if ctx.qos is not None and ctx.qos.lossless and ctx.qos.pfc_watchdog:
        meta["default_pfcwd_status"] = "enable"
    return meta


def _ports(ctx: DeviceContext, hw: Sku) -> Tables:
    """Every cage of the SKU: a replace removes a port CONFIG_DB does not list. Cages the plan leaves
    empty stay whole and down."""
    planned: dict[str, Port] = {p.name: p for p in ctx.ports}
    splits: dict[int, tuple[int, int]] = {}
    for p in ctx.ports:
        if p.cage:
            splits.setdefault(p.cage, (p.split, p.speed))
    if splits and max(splits) > hw.cages:
        raise UnknownSkuError(f"{ctx.device.name}: the plan uses cage {max(splits)}; the {hw.model} has {hw.cages}")
    port: dict[str, dict[str, Any]] = {}
    breakout: dict[str, dict[str, Any]] = {}
    for cage in range(1, hw.cages + 1):
        ways, speed = splits.get(cage, (1, hw.speed))
        breakout[port_name(cage, 0, 1)] = {"brkout_mode": hw.mode(ways)}
        width = LANES_PER_CAGE // ways
        for lane in range(ways):
            name = port_name(cage, lane, ways)
            first = (cage - 1) * LANES_PER_CAGE + lane * width
            used = planned.get(name)
            entry = {
                "alias": alias(cage, lane, ways),
                "index": str(cage),
                "lanes": ",".join(str(n) for n in range(first, first + width)),
                "speed": str(speed * 1000),
                "mtu": str(used.mtu if used else ctx.device.mtu),
                "fec": "rs",  # 50G and 100G PAM4 lanes run Reed-Solomon FEC
                "admin_status": "up" if used else "down",
            }
            if used:
                entry["description"] = f"{used.kind}: {used.peer} {used.peer_port}".rstrip()
            port[name] = entry
    unknown = sorted(set(planned) - set(port))
    if unknown:
        raise UnknownSkuError(f"{ctx.device.name}: ports {', '.join(unknown)} are not ports of the {hw.model}")
    return {"PORT": port, "BREAKOUT_CFG": breakout}


def _interfaces(ctx: DeviceContext) -> Tables:
    """Routed ports: the plan's /31s, or IPv6 link-local only for BGP unnumbered (RFC 5549)."""
    interface: dict[str, dict[str, Any]] = {}
    for p in ctx.ports:
        if p.address:
            interface[p.name] = {}
            interface[f"{p.name}|{p.address}"] = {}
        elif p.unnumbered:
            interface[p.name] = {"ipv6_use_link_local_only": "enable"}
    loopback: dict[str, dict[str, Any]] = {}
    if ctx.device.loopback is not None:
        loopback = {LOOPBACK: {}, f"{LOOPBACK}|{ip(ctx.device.loopback)}/32": {}}
    return {"INTERFACE": interface, "LOOPBACK_INTERFACE": loopback}


def _management(ctx: DeviceContext) -> Tables:
    m, port = ctx.mgmt, ctx.device.mgmt_port
    out: Tables = {
        "MGMT_PORT": {port: {"admin_status": "up", "alias": port, "description": "oob: management"}},
        "MGMT_VRF_CONFIG": {"vrf_global": {"mgmtVrfEnabled": "true"}},
        "LLDP": {"GLOBAL": {"hello_time": "30"}},
    }
    if m.address and m.gateway:
        out["MGMT_INTERFACE"] = {f"{port}|{m.address}": {"gwaddr": m.gateway}}
    if m.ntp:
        out["NTP"] = {"global": {"vrf": MGMT_VRF}}
        out["NTP_SERVER"] = {s: {"association_type": "server", "iburst": "on"} for s in m.ntp}
    out["SYSLOG_SERVER"] = {s: {"vrf": MGMT_VRF} for s in m.syslog}
    out["DNS_NAMESERVER"] = {s: {} for s in m.dns}
    return out


def _acls(ctx: DeviceContext) -> Tables:
    """SSH and SNMP (and gNMI) only from the management prefixes: SONiC's control-plane ACLs, which
    caclmgrd turns into iptables rules that drop every other source of those services."""
    allow = ctx.mgmt.allow
    table: dict[str, dict[str, Any]] = {
        "MGMT-IN": {
            "type": "CTRLPLANE",
            "stage": "ingress",
            "services": ["SNMP", "SSH"],
            "policy_desc": "SSH and SNMP from the management prefixes only",
        }
    }
    rules: dict[str, dict[str, Any]] = {}
    for i, net in enumerate(allow, 1):
        rules[f"MGMT-IN|RULE_{i * 10}"] = {"PRIORITY": str(10000 - i * 10), "PACKET_ACTION": "ACCEPT", "SRC_IP": net}
    if ctx.mgmt.gnmi:
        table["MGMT-GNMI"] = {
            "type": "CTRLPLANE",
            "stage": "ingress",
            "services": ["EXTERNAL_CLIENT"],
            "policy_desc": "gNMI from the management prefixes only",
        }
        for i, net in enumerate(allow, 1):
            rules[f"MGMT-GNMI|RULE_{i * 10}"] = {
                "PRIORITY": str(10000 - i * 10),
                "PACKET_ACTION": "ACCEPT",
                "SRC_IP": net,
                "IP_PROTOCOL": "6",
                "L4_DST_PORT": GNMI_PORT,
            }
    return {"ACL_TABLE": table, "ACL_RULE": rules}


def _qos_ports(ctx: DeviceContext) -> list[str]:
    return [p.name for p in ctx.ports if p.kind in ("fabric", "host", "peer")]


def _ranges(indexes: list[int]) -> list[str]:
    """Queue and PG numbers as CONFIG_DB keys them: runs of consecutive numbers as `a-b`."""
    out: list[str] = []
    start = prev = None
    for i in sorted(indexes):
        if start is None:
            start = prev = i
        elif i == (prev or 0) + 1:
            prev = i
        else:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(str(start) if start == prev else f"{start}-{prev}")
    return out


def _qos(ctx: DeviceContext, q: QosProfile) -> Tables:
    """The RoCE contract in SONiC's QoS tables.

    SONiC's stock `AZURE` DSCP map sends DSCP 24-26 to TC 1 (lossy): this map replaces it, every
    other DSCP in TC 0, so only RoCE reaches the lossless class and only CNPs the strict one.
    """
    roce, cnp = q.roce_priority, q.cnp_priority
    dscp = {str(d): "0" for d in range(64)}
    dscp[str(q.roce_dscp)] = str(roce)
    dscp[str(q.cnp_dscp)] = str(cnp)
    lossless = [roce] if q.lossless else []
    ports = _qos_ports(ctx)
    hw = sku(ctx.device.model)
    out: Tables = {
        "DSCP_TO_TC_MAP": {MAP: dscp},
        "TC_TO_QUEUE_MAP": {MAP: {str(tc): str(tc) for tc in range(8)}},
        # Lossless traffic gets a priority group of its own (headroom for PFC); the rest shares PG 0.
        "TC_TO_PRIORITY_GROUP_MAP": {MAP: {str(tc): str(tc if tc in lossless else 0) for tc in range(8)}},
        "MAP_PFC_PRIORITY_TO_QUEUE": {MAP: {str(p): str(p) for p in range(8)}},
        "SCHEDULER": {
            "SCHEDULER_CNP": {"type": "STRICT"},
            "SCHEDULER_ROCE": {"type": "DWRR", "weight": str(q.roce_bandwidth_percent)},
            "SCHEDULER_DEFAULT": {"type": "DWRR", "weight": str(100 - q.roce_bandwidth_percent)},
        },
        "WRED_PROFILE": {
            "ROCE_ECN": {
                "ecn": "ecn_all",
                "wred_green_enable": "true",
                "wred_yellow_enable": "true",
                "wred_red_enable": "true",
                "green_min_threshold": str(q.ecn_min_bytes),
                "green_max_threshold": str(q.ecn_max_bytes),
                "green_drop_probability": str(q.ecn_probability),
                "yellow_min_threshold": str(q.ecn_min_bytes),
                "yellow_max_threshold": str(q.ecn_max_bytes),
                "yellow_drop_probability": str(q.ecn_probability),
                "red_min_threshold": str(q.ecn_min_bytes),
                "red_max_threshold": str(q.ecn_max_bytes),
                "red_drop_probability": str(q.ecn_probability),
            }
        },
        "PORT_QOS_MAP": {"global": {"dscp_to_tc_map": MAP}},
        "QUEUE": {},
        "CABLE_LENGTH": {"AZURE": {p: ctx.cable_length for p in ports}},  # the dynamic model sizes headroom from it
    }
    pfc = ",".join(str(p) for p in lossless)
    for name in ports:
        binding = {
            "dscp_to_tc_map": MAP,
            "tc_to_queue_map": MAP,
            "tc_to_pg_map": MAP,
            "pfc_to_queue_map": MAP,
            "pfc_enable": pfc,
        }
        if q.pfc_watchdog and lossless:
            binding["pfcwd_sw_enable"] = pfc
        out["PORT_QOS_MAP"][name] = binding
        out["QUEUE"][f"{name}|{roce}"] = {"scheduler": "SCHEDULER_ROCE", "wred_profile": "ROCE_ECN"}
        out["QUEUE"][f"{name}|{cnp}"] = {"scheduler": "SCHEDULER_CNP"}
        for r in _ranges([i for i in range(8) if i not in (roce, cnp)]):
            out["QUEUE"][f"{name}|{r}"] = {"scheduler": "SCHEDULER_DEFAULT"}
    out.update(_buffers(ports, lossless, hw))
    if q.pfc_watchdog and lossless:
        wd = {"action": "drop", "detection_time": PFC_WD_MS, "restoration_time": PFC_WD_MS}
        out["PFC_WD"] = {"GLOBAL": {"POLL_INTERVAL": PFC_WD_POLL_MS}, **{p: dict(wd) for p in ports}}
    return out


def _buffers(ports: list[str], lossless: list[int], hw: Sku) -> Tables:
    """NVIDIA's dynamic buffer model: the pools and profiles its Spectrum SKUs define, the lossless
    priority group's headroom (`NULL` profile) computed by the switch from port speed and cable length."""
    profiles = {
        "ingress_lossless_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "7"},
        "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "3"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "dynamic_th": "7"},
        "egress_lossy_profile": {"pool": "egress_lossy_pool", "size": "9216", "dynamic_th": "7"},
        "q_lossy_profile": {"pool": "egress_lossy_pool", "size": "0", "dynamic_th": "3"},
    }
    pg: dict[str, dict[str, Any]] = {}
    queue: dict[str, dict[str, Any]] = {}
    lossy = [i for i in range(8) if i not in lossless]
    for name in ports:
        pg[f"{name}|0"] = {"profile": "ingress_lossy_profile"}
        for r in _ranges(lossless):
            pg[f"{name}|{r}"] = {"profile": "NULL"}
            queue[f"{name}|{r}"] = {"profile": "egress_lossless_profile"}
        for r in _ranges(lossy):
            queue[f"{name}|{r}"] = {"profile": "q_lossy_profile"}
    return {
        "BUFFER_POOL": {
            "ingress_lossless_pool": {"type": "ingress", "mode": "dynamic"},
            "egress_lossless_pool": {"type": "egress", "mode": "dynamic", "size": str(hw.egress_lossless_pool)},
            "egress_lossy_pool": {"type": "egress", "mode": "dynamic"},
        },
        "BUFFER_PROFILE": profiles,
        "BUFFER_PG": pg,
        "BUFFER_QUEUE": queue,
        "DEFAULT_LOSSLESS_BUFFER_PARAMETER": {"AZURE": {"default_dynamic_th": "0"}},
        "LOSSLESS_TRAFFIC_PATTERN": {"AZURE": {"mtu": "1024", "small_packet_percentage": "100"}},
    }
