"""The plan as JSON: the full document (`export plan`) and the summary (`plan --json`).

Keys are stable and documented in docs/plan-json.md; add keys, never rename them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpufabric.export.bom import PlaneBom, ib_transceivers, plane_bom
from gpufabric.outputs import json_dumps
from gpufabric.plan.converged import carried_record
from gpufabric.plan.infiniband import IbPlan
from gpufabric.plan.model import Device, HostNic, Link, Plan, PlanePlan, Server, cable_label, ip
from gpufabric.plan.reach import rail_reach
from gpufabric.plan.storage import flow as storage_flow
from gpufabric.plan.storage import summary as storage_summary

SCHEMA_VERSION = 1
PLACE_KEYS = ("rack", "position", "serial")


def _roles(plane: PlanePlan) -> dict[str, int]:
    order = ("leaf", "spine", "superspine", "border", "mgmt")
    counts = plane.count_by_role()
    return {r: counts[r] for r in order if r in counts}


def _oversubscription(plane: PlanePlan) -> dict[str, dict[str, Any]]:
    return {
        t.tier: {
            "target": round(t.target, 4),
            "planned": round(t.ratio, 4),
            "down_gbps": t.down_gbps,
            "up_gbps": t.up_gbps,
        }
        for t in plane.tier_stats
    }


def _links_by_kind(plane: PlanePlan) -> dict[str, int]:
    return dict(Counter(link.kind for link in plane.links))


def plane_summary(plane: PlanePlan, bom: PlaneBom | None = None) -> dict[str, Any]:
    bom = bom or plane_bom(plane)
    links = _links_by_kind(plane)
    return {
        "topology": plane.topology,
        "tiers": plane.tiers,
        "switches": _roles(plane),
        "switch_total": len(plane.devices),
        "links": links,
        "host_ports": links.get("host", 0),
        "oversubscription": _oversubscription(plane),
        "sizing": plane.sizing,
        "transceivers": bom.transceiver_total,
        "cables": bom.cable_total,
        **_reach(plane),
        **({"carries": [carried_record(c) for c in plane.carried]} if plane.carried else {}),
    }


def _reach(plane: PlanePlan) -> dict[str, Any]:
    reach = rail_reach(plane)
    if reach is None:
        return {}
    return {"rail_reach": {"same_rail_leaf_spine_leaf": reach.same_rail_two_hops, "rail_groups": reach.rail_groups}}


def totals(plan: Plan, boms: list[PlaneBom] | None = None) -> dict[str, int]:
    boms = boms or [plane_bom(p) for p in plan.planes.values()]
    ib = plan.infiniband.fabric if plan.infiniband is not None else None
    ib_switches, ib_cables = (len(ib.switches), len(ib.cables)) if ib is not None else (0, 0)
    ib_modules = ib_transceivers(plan.infiniband) if plan.infiniband is not None else 0
    return {
        "switches": sum(len(p.devices) for p in plan.planes.values()) + ib_switches,
        "servers": len(plan.servers),
        "gpus": sum(s.gpus for s in plan.servers),
        "links": sum(len(p.links) for p in plan.planes.values()) + ib_cables,
        # InfiniBand transceivers are counted where the plane gives its cables' lengths (docs/infiniband.md).
        "transceivers": sum(b.transceiver_total for b in boms) + ib_modules,
        "cables": sum(b.cable_total for b in boms) + ib_cables,
    }


def infiniband_summary(ib: IbPlan) -> dict[str, Any]:
    """The InfiniBand compute plane: counts as NVIDIA's reference tables give them, and the subnet manager."""
    fabric = ib.fabric
    return {
        "plane": ib.plane,
        "transport": "infiniband",
        "tiers": fabric.tiers,
        "switch_model": fabric.design.switch_model,
        "rate": fabric.design.hca_rate,
        "scalable_units": fabric.design.su_count,
        "counts": fabric.counts(),
        "subnet_manager": {"primary": fabric.sm.primary, "standby": fabric.sm.standby},
        "routing_engine": ib.settings.routing_engine,
        "partitions": [
            {"name": p.name, "pkey": f"0x{p.pkey:04x}", "sl": p.sl, "ipoib": p.ipoib, "hosts": len(p.hosts)}
            for p in ib.settings.partitions
        ],
        "management_ports": len(ib.management),  # switches cabled to the OOB plane
    }


def summary(plan: Plan) -> dict[str, Any]:
    boms = {name: plane_bom(p) for name, p in plan.planes.items()}
    return {
        "schema_version": SCHEMA_VERSION,
        "fabric": plan.intent.fabric.name,
        "source": plan.source,
        "planes": {name: plane_summary(p, boms[name]) for name, p in plan.planes.items()},
        **({"infiniband": infiniband_summary(plan.infiniband)} if plan.infiniband is not None else {}),
        **({"storage_path": storage_summary(path)} if (path := storage_flow(plan)) is not None else {}),
        "totals": totals(plan, list(boms.values())),
        "warnings": plan.warnings,
    }


def device_dict(d: Device) -> dict[str, Any]:
    return {
        "name": d.name,
        "plane": d.plane,
        "role": d.role,
        "platform": d.platform,
        "model": d.model,
        "asn": d.asn,
        "loopback": ip(d.loopback),
        "mgmt_ip": ip(d.mgmt_ip),
        "mgmt_port": d.mgmt_port,
        "mtu": d.mtu,
        "unit": d.unit,
        "rail": d.rail,
        "pod": d.pod,
        "failure_domain": d.failure_domain,
        "host_subnet": f"{ip(d.host_subnet)}/{d.host_prefixlen}" if d.host_subnet is not None else None,
        "svi_ip": ip(d.svi_ip),
        "peer_l3_ip": ip(d.peer_l3_ip),
    }


def link_dict(link: Link) -> dict[str, Any]:
    return {
        "plane": link.plane,
        "kind": link.kind,
        "a": link.a,
        "a_port": link.a_port,
        "b": link.b,
        "b_port": link.b_port,
        "speed_gbps": link.speed,
        "mtu": link.mtu,
        "a_ip": ip(link.a_ip),
        "b_ip": ip(link.b_ip),
        "prefixlen": link.prefixlen,
    }


def nic_dict(n: HostNic) -> dict[str, Any]:
    return {
        "plane": n.plane,
        "interface": n.interface,
        "rail": n.rail,
        "speed_gbps": n.speed,
        "mtu": n.mtu,
        "address": ip(n.address),
        "prefixlen": n.prefixlen,
        "gateway": ip(n.gateway),
        "leaf": n.leaf,
        "leaf_port": n.leaf_port,
        "bond": n.bond,
        **carried_dict(n),
    }


def carried_dict(n: HostNic) -> dict[str, Any]:
    """A NIC on a converged plane: its tagged subinterfaces (`vlans`), and no untagged address when it carries
    none of the plane's own traffic. Nothing for any other NIC, whose entry stays as it was."""
    if not n.carried and n.native:
        return {}
    out: dict[str, Any] = {
        "vlans": [
            {
                "plane": c.plane,
                "vrf": c.vrf,
                "vlan": c.vlan,
                "interface": c.interface,
                "address": ip(c.address),
                "prefixlen": c.prefixlen,
                "gateway": ip(c.gateway),
            }
            for c in n.carried
        ]
    }
    if not n.native:
        out |= {"address": None, "prefixlen": None, "gateway": None}
    return out


def server_dict(s: Server) -> dict[str, Any]:
    return {
        "name": s.name,
        "group": s.group,
        "kind": s.kind,
        "gpus": s.gpus,
        "gpu_model": s.gpu_model,
        "units": s.units,
        "mgmt_interface": s.mgmt_interface,
        "mgmt_ip": ip(s.mgmt_ip),
        "mgmt_switch": s.mgmt_switch,
        "mgmt_port": s.mgmt_port,
        "nics": [nic_dict(n) for n in s.nics],
    }


def full(plan: Plan) -> dict[str, Any]:
    doc = summary(plan)
    if plan.infiniband is not None:
        # Each InfiniBand switch's management port on the OOB plane, as an Ethernet switch's mgmt_ip/mgmt_port.
        doc["infiniband"]["management"] = [
            {
                "name": m.device,
                "mgmt_port": m.port,
                "mgmt_ip": ip(m.address),
                "oob_switch": m.oob_switch,
                "oob_port": m.oob_port,
            }
            for m in plan.infiniband.management.values()
        ]
    doc["qos_profiles"] = {k: v.model_dump() | {"host_tos": v.host_tos} for k, v in plan.intent.qos_profiles.items()}
    for name, plane in plan.planes.items():
        doc["planes"][name] |= {
            "prefix": plane.prefix,
            "mtu": plane.mtu,
            "host_mtu": plane.host_mtu,
            "qos": plane.qos,
            "carries_roce": plane.carries_roce,
            "routing": plane.routing,
            "failure_domains": [{"name": f.name, "devices": f.devices} for f in plane.failure_domains],
            "devices": [device_dict(d) for d in plane.devices],
            "links": [link_dict(link) for link in plane.links],
        }
        if plane.plane_of:  # a compute plane built as several planes: each switch's plane
            doc["planes"][name]["plane_of"] = dict(plane.plane_of)
        if plane.carried:
            doc["planes"][name]["carries"] = [carried_record(c) for c in plane.carried]
    doc["servers"] = [server_dict(s) for s in plan.servers]
    if plan.intent.site is not None or plan.places:
        _placed(plan, doc)
    return doc


def _placed(plan: Plan, doc: dict[str, Any]) -> None:
    """Where every switch and server stands, and each cable's label and length (a plan with a site)."""

    def place(entry: dict[str, Any]) -> None:
        p = plan.places.get(entry["name"])
        entry |= {"rack": p.rack, "position": p.position, "serial": p.serial} if p else dict.fromkeys(PLACE_KEYS)

    for name, plane in plan.planes.items():
        for entry in doc["planes"][name]["devices"]:
            place(entry)
        for entry, link in zip(doc["planes"][name]["links"], plane.links, strict=True):
            entry |= {"label": cable_label(plane.prefix, link.number), "length_m": link.length}
    for entry in doc["servers"]:
        place(entry)


def render(plan: Plan) -> str:
    return json_dumps(full(plan), indent=1) + "\n"
