"""Inventory hosts and groups built from the plan, shared by the Nornir and Ansible inventory plugins.

Group names are valid in both tools (letters, digits, underscores):
  switches, servers, plane_<plane>, <plane>_switches, <plane>_servers, role_<role>,
  platform_<platform>, <plane>_su<N> / <plane>_unit<N>, <plane>_rail<N>, <plane>_pod<N>, group_<server group>.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gpufabric.export.plan_json import nic_dict
from gpufabric.export.yaml_out import UnsafeText, dump_yaml
from gpufabric.intent.converged import CARRYING_ROLES
from gpufabric.plan.converged import carried_record
from gpufabric.plan.infiniband import IB_MTU, IbPlan
from gpufabric.plan.model import LACP_BOND, Device, HostNic, Plan, Server, ip
from gpufabric.plan.multiplane import nic_multiplane

VAR_PREFIX = "gpufabric_"
# Ansible evaluates these in inventory values on the controller (a `lookup('pipe', ...)` runs a command).
# The intent refuses them; values that hold one all the same are marked so Ansible reads them literally.
TEMPLATE_MARKERS = ("{{", "{%", "{#")


@dataclass
class InventoryHost:
    name: str
    platform: str
    hostname: str | None
    groups: list[str]
    data: dict[str, Any] = field(default_factory=dict)


def _gname(text: str) -> str:
    return text.replace("-", "_")


def _unit_group(plane: str, topology: str, unit: int) -> str:
    return f"{plane}_{'su' if topology == 'rail-optimized' else 'unit'}{unit}"


def plane_facts(plan: Plan) -> dict[str, dict[str, Any]]:
    """What hosts must agree with per plane: MTU and, where RoCE runs, the QoS contract."""
    facts: dict[str, dict[str, Any]] = {}
    for name, plane in plan.planes.items():
        entry: dict[str, Any] = {"mtu": plane.mtu, "host_mtu": plane.host_mtu, "carries_roce": plane.carries_roce}
        if plane.qos is not None:
            profile = plan.intent.qos_profiles[plane.qos]
            entry["qos"] = profile.model_dump() | {"name": plane.qos, "host_tos": profile.host_tos}
        if plane.carried:
            entry["carries"] = [carried_record(c) for c in plane.carried]
        spectrum_x = getattr(getattr(plan.intent.planes, name, None), "spectrum_x", None)
        if spectrum_x is not None:  # the SuperNICs' side of adaptive routing (the supernic role)
            entry["spectrum_x"] = spectrum_x.model_dump()
            multiplane = getattr(getattr(plan.intent.planes, name, None), "multiplane", None)
            if multiplane is not None:  # their multi-plane mode (the supernic role's split settings)
                mode = nic_multiplane(multiplane)
                entry["multiplane"] = {"mode": mode["multiplaneMode"], "planes": mode["numberOfPlanes"]}
        facts[name] = entry
    return facts


def _switch(plan: Plan, d: Device) -> InventoryHost:
    topology = plan.planes[d.plane].topology
    groups = ["switches", f"plane_{d.plane}", f"{d.plane}_switches", f"role_{d.role}", f"platform_{d.platform}"]
    if d.role == "leaf" and d.unit is not None:
        groups.append(_unit_group(d.plane, topology, d.unit))
    if d.rail is not None:
        groups.append(f"{d.plane}_rail{d.rail}")
    if d.pod is not None:
        groups.append(f"{d.plane}_pod{d.pod}")
    index = plan.planes[d.plane].plane_of.get(d.name)  # plane k of a compute plane built as several
    if index is not None:
        groups.append(f"{d.plane}_p{index}")
    data: dict[str, Any] = {
        "plane": d.plane,
        "role": d.role,
        "platform": d.platform,
        "model": d.model,
        "asn": d.asn,
        "loopback": ip(d.loopback),
        "mgmt_ip": ip(d.mgmt_ip),
        "unit": d.unit,
        "rail": d.rail,
        "pod": d.pod,
        "failure_domain": d.failure_domain,
        "mtu": d.mtu,
    }
    if index is not None:
        data["fabric_plane"] = index
    carried = plan.planes[d.plane].carried if d.role in CARRYING_ROLES else []
    if carried:  # the VRFs this switch holds for a converged plane's carried planes
        data["carries"] = [{"plane": c.name, "vrf": c.vrf, "vlan": c.vlan} for c in carried]
        groups += [f"carries_{c.name}" for c in carried]
    return InventoryHost(d.name, d.platform, ip(d.mgmt_ip), groups, data)


# What a bond member's entry leaves out: the bond carries them, once.
_BOND_CARRIES = ("address", "prefixlen", "gateway")


def host_nics(s: Server) -> list[dict[str, Any]]:
    """Every data NIC of the server; a bond member names its bond and carries no address of its own."""
    out = []
    for n in s.nics:
        entry = nic_dict(n)
        if n.bond is not None:
            entry = {k: v for k, v in entry.items() if k not in _BOND_CARRIES}
        out.append(entry)
    return out


def host_bonds(s: Server) -> list[dict[str, Any]]:
    """The server's LACP bonds: name (as `interface`), members, and the one address, MTU and gateway they share."""
    members: dict[str, list[HostNic]] = {}
    for n in s.nics:
        if n.bond is not None:
            members.setdefault(n.bond, []).append(n)
    return [
        {
            "interface": name,
            "plane": nics[0].plane,
            "members": [n.interface for n in nics],
            "mtu": nics[0].mtu,
            "address": ip(nics[0].address),
            "prefixlen": nics[0].prefixlen,
            "gateway": ip(nics[0].gateway),
            **asdict(LACP_BOND),
        }
        for name, nics in members.items()
    ]


def infiniband_host(ib: IbPlan, host: str) -> dict[str, Any] | None:
    """What a host needs of its InfiniBand compute plane: its adapters (rail order) and their leaf ports, its
    partitions, and its IPoIB interface where the intent asks for one (None: the host is not on the plane)."""
    adapters = [n for n in ib.fabric.role("compute") if n.host == host]
    if not adapters:
        return None
    ports = {c.down.node: c for c in ib.fabric.cables if c.tier == "node-leaf"}
    ipoib = ib.ipoib.get(host)
    return {
        "mtu": IB_MTU,
        "su": adapters[0].su,
        "adapters": [
            {
                "device": n.name.split(" ", 1)[1],
                "rail": n.rail,
                "leaf": ports[n.name].up.node,
                "leaf_port": ports[n.name].up.port,
                "rate": ports[n.name].rate.label,
            }
            for n in adapters
        ],
        "partitions": [
            {"name": p.name, "pkey": f"0x{p.pkey:04x}", "sl": p.sl, "ipoib": p.ipoib} for p in ib.partitions_of(host)
        ],
        "ipoib": []
        if ipoib is None
        else [
            {
                "device": ipoib.device,
                "pkey": f"0x{ipoib.pkey:04x}",
                "address": ip(ipoib.address),
                "prefixlen": ipoib.prefixlen,
                "mtu": ipoib.mtu,
                "mode": ipoib.mode,
                "netdev": ipoib.netdev,
            }
        ],
    }


def _server(plan: Plan, s: Server, facts: dict[str, dict[str, Any]]) -> InventoryHost:
    groups = ["servers", f"group_{_gname(s.group)}"]
    for plane, unit in s.units.items():
        groups += [f"plane_{plane}", f"{plane}_servers", _unit_group(plane, plan.planes[plane].topology, unit)]
    ib = infiniband_host(plan.infiniband, s.name) if plan.infiniband is not None else None
    if ib is not None:
        groups += ["plane_compute", "compute_servers", f"compute_su{ib['su']}"]
    attached = {n.plane for n in s.nics}
    data = {
        "group": s.group,
        "kind": s.kind,
        "gpus": s.gpus,
        "gpu_model": s.gpu_model,
        "units": s.units,
        "mgmt_interface": s.mgmt_interface,
        "mgmt_ip": ip(s.mgmt_ip),
        "nics": host_nics(s),
        "bonds": host_bonds(s),
        "planes": {p: f for p, f in facts.items() if p in attached},
        **({"infiniband": ib} if ib is not None else {}),
    }
    return InventoryHost(s.name, "linux", ip(s.mgmt_ip), groups, data)


def build(plan: Plan) -> list[InventoryHost]:
    facts = plane_facts(plan)
    hosts = [_switch(plan, d) for d in plan.devices()]
    hosts += [_server(plan, s, facts) for s in plan.servers]
    return hosts


def literal(value: Any) -> Any:
    """`value` with every text holding template syntax as UnsafeText, in lists and mappings too."""
    if isinstance(value, str):
        return UnsafeText(value) if any(m in value for m in TEMPLATE_MARKERS) else value
    if isinstance(value, dict):
        return {k: literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal(v) for v in value]
    return value


def ansible_vars(h: InventoryHost) -> dict[str, Any]:
    out: dict[str, Any] = {f"{VAR_PREFIX}{k}": literal(v) for k, v in h.data.items()}
    if h.hostname:
        out["ansible_host"] = h.hostname
    return out


def render_ansible(plan: Plan) -> str:
    """A static YAML inventory with the same groups and variables as the dynamic plugin."""
    groups: dict[str, dict[str, Any]] = {}
    for h in build(plan):
        for g in h.groups:
            groups.setdefault(g, {"hosts": {}})["hosts"][h.name] = ansible_vars(h) if g == h.groups[0] else None
    header = f"# Static Ansible inventory for {plan.intent.fabric.name}, generated by gpufabric.\n"
    return header + dump_yaml({"all": {"children": groups}})
