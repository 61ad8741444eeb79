"""What a plan is in a source of truth: the objects `sot push` keeps there, each under a key of its own.

Kept independent of any server's API: a record names other records by kind and key (`Ref`), and the
sync (nautobot.py) turns those into the server's ids. The ASN of a switch, the group and place of a
server and the row and column of a rack are custom fields: Nautobot's core has no ASN model (its BGP
models are an app), and racks have no coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Interface, IPv4Network
from typing import Any

from gpufabric.config.mlag import HOST_VLAN, PEER_VLAN
from gpufabric.plan.model import Plan, cable_label, ip
from gpufabric.platforms import platform

SERVER_ROLE = "{kind}-server"
MANUFACTURER = "Unspecified"  # the intent names a switch's model, not who makes it


@dataclass(frozen=True, slots=True)
class Ref:
    """Another record, by kind and key; the sync puts its id in its place."""

    kind: str
    key: str


@dataclass(slots=True)
class Record:
    key: str
    fields: dict[str, Any]


@dataclass(slots=True)
class Desired:
    """Every record of a plan, by kind, in the order they depend on one another."""

    site: str
    tag: str
    vocabulary: dict[str, list[Record]] = field(default_factory=dict)  # made when missing, never removed
    owned: dict[str, list[Record]] = field(default_factory=dict)  # made, updated and removed to match

    def add(self, kind: str, key: str, owned: bool = True, **fields: Any) -> None:
        into = self.owned if owned else self.vocabulary
        into.setdefault(kind, []).append(Record(key, fields))


INTERFACE_TYPES = {
    1: "1000base-t",
    10: "10gbase-x-sfpp",
    25: "25gbase-x-sfp28",
    40: "40gbase-x-qsfpp",
    50: "50gbase-x-sfp56",
    100: "100gbase-x-qsfp28",
    200: "200gbase-x-qsfp56",
    400: "400gbase-x-osfp",
    800: "800gbase-x-osfp",
}


def interface_key(device: str, name: str) -> str:
    return f"{device}:{name}"


def desired(plan: Plan) -> Desired:
    intent = plan.intent
    site = intent.site
    name = (site.name if site is not None and site.name else None) or intent.fabric.name
    out = Desired(site=name, tag=f"gpufabric-{intent.fabric.name}")
    out.add("locations", name, name=name)
    racks = site.racks if site is not None else []
    for rack in racks:
        out.add(
            "racks",
            rack.name,
            name=rack.name,
            location=Ref("locations", name),
            u_height=rack.units,
            custom_fields={"gpufabric_row": rack.row, "gpufabric_column": rack.column},
        )
    interfaces: dict[str, dict[str, Any]] = {}

    def interface(device: str, port: str, speed: int | None, mtu: int | None, kind: str = "") -> None:
        key = interface_key(device, port)
        if key in interfaces:
            return
        interfaces[key] = {
            "device": Ref("devices", device),
            "name": port,
            "type": kind or INTERFACE_TYPES.get(speed or 0, "other"),
            "mtu": mtu,
        }

    for d in plan.devices():
        place = plan.places.get(d.name)
        out.add("device-types", d.model, owned=False, model=d.model, manufacturer=Ref("manufacturers", MANUFACTURER))
        out.add("roles", d.role, owned=False, name=d.role)
        out.add("platforms", d.platform, owned=False, name=d.platform)
        out.add(
            "devices",
            d.name,
            name=d.name,
            device_type=Ref("device-types", d.model),
            role=Ref("roles", d.role),
            platform=Ref("platforms", d.platform),
            location=Ref("locations", name),
            rack=Ref("racks", place.rack) if place is not None and place.rack else None,
            position=place.position if place is not None and place.rack else None,
            face="front" if place is not None and place.rack else "",
            serial=(place.serial or "") if place is not None else "",
            custom_fields={"gpufabric_asn": d.asn, "gpufabric_group": None, "gpufabric_index": None},
        )
        if d.loopback is not None:
            interface(d.name, "lo", None, None, "virtual")
        interface(d.name, d.mgmt_port, None, None, "1000base-t")
    groups = {g.name: g for g in intent.server_groups}
    seen: dict[str, int] = {}
    for s in plan.servers:
        place = plan.places.get(s.name)
        seen[s.group] = seen.get(s.group, 0) + 1
        role = SERVER_ROLE.format(kind=s.kind)
        model = groups[s.group].gpu_model or role
        out.add("device-types", model, owned=False, model=model, manufacturer=Ref("manufacturers", MANUFACTURER))
        out.add("roles", role, owned=False, name=role)
        out.add(
            "devices",
            s.name,
            name=s.name,
            device_type=Ref("device-types", model),
            role=Ref("roles", role),
            platform=None,
            location=Ref("locations", name),
            rack=Ref("racks", place.rack) if place is not None and place.rack else None,
            position=place.position if place is not None and place.rack else None,
            face="front" if place is not None and place.rack else "",
            serial=(place.serial or "") if place is not None else "",
            custom_fields={"gpufabric_asn": None, "gpufabric_group": s.group, "gpufabric_index": seen[s.group]},
        )
        if s.mgmt_interface:
            interface(s.name, s.mgmt_interface, None, None, "1000base-t")
        for nic in s.nics:
            interface(s.name, nic.interface, nic.speed, nic.mtu)
    addresses: dict[str, tuple[str, str]] = {}  # address/len -> (device, interface)

    def address(value: int | None, prefixlen: int | None, device: str, port: str) -> None:
        if value is not None and prefixlen is not None:
            addresses.setdefault(f"{ip(value)}/{prefixlen}", (device, port))

    oob_len = intent.planes.oob.subnet.prefixlen if intent.planes.oob is not None else 24
    for d in plan.devices():
        address(d.loopback, 32, d.name, "lo")
        address(d.mgmt_ip, oob_len, d.name, d.mgmt_port)
    known = {d.name for d in plan.devices()} | {s.name for s in plan.servers}
    for plane in plan.planes.values():
        for link in plane.links:
            if link.a not in known or link.b not in known:
                continue  # an edge router is the site's, not the fabric's: its cables stay out
            interface(link.a, link.a_port, link.speed, link.mtu)
            interface(link.b, link.b_port, link.speed, link.mtu)
            address(link.a_ip, link.prefixlen, link.a, link.a_port)
            address(link.b_ip, link.prefixlen, link.b, link.b_port)
            out.add(
                "cables",
                cable_label(plane.prefix, link.number),
                label=cable_label(plane.prefix, link.number),
                a=Ref("interfaces", interface_key(link.a, link.a_port)),
                b=Ref("interfaces", interface_key(link.b, link.b_port)),
                length=link.length,
                length_unit="m" if link.length is not None else "",
            )
    for s in plan.servers:
        address(s.mgmt_ip, oob_len, s.name, s.mgmt_interface or "")
        for nic in s.nics:
            address(nic.address, nic.prefixlen, s.name, nic.interface)
    for key, fields in interfaces.items():
        out.add("interfaces", key, **fields)
    for plane_name, unit, vid, what in vlans(plan):
        key = f"{plane_name}-unit{unit}-{what}"
        out.add("vlans", key, name=key, vid=vid, description=f"{plane_name} unit {unit}: {what}")
    pools = _pools(plan)
    for prefix, what in pools.items():
        out.add("prefixes", prefix, prefix=prefix, description=what)
    networks = [IPv4Network(p) for p in pools]
    # Each device's management address is its primary one: how Nautobot's own tools reach it.
    managed = [(d.name, d.mgmt_ip) for d in plan.devices()] + [(s.name, s.mgmt_ip) for s in plan.servers]
    for device, value in managed:
        if value is not None:
            addr = f"{ip(value)}/{oob_len}"
            out.add("primary-ips", device, device=Ref("devices", device), ip_address=Ref("ip-addresses", addr))
    for addr, (device, port) in addresses.items():
        iface = IPv4Interface(addr)
        if not any(iface.ip in n for n in networks):  # an address outside every pool gets its own network
            networks.append(iface.network)
            out.add("prefixes", str(iface.network), prefix=str(iface.network), description="")
        out.add("ip-addresses", addr, address=addr)
        out.add(
            "ip-address-to-interface",
            f"{addr}@{interface_key(device, port)}",
            ip_address=Ref("ip-addresses", addr),
            interface=Ref("interfaces", interface_key(device, port)),
        )
    return out


def vlans(plan: Plan) -> list[tuple[str, int, int, str]]:
    """The VLANs of LACP planes, per leaf pair (unit): the hosts' VLAN, the peer link's, and the routed
    peering's where the platform has one: (plane, unit, VLAN id, what for)."""
    out: list[tuple[str, int, int, str]] = []
    for name, plane in plan.planes.items():
        units: dict[int, list[str]] = {}
        for d in plane.devices:
            if d.svi_ip is not None and d.unit is not None:
                units.setdefault(d.unit, []).append(d.platform)
        for unit, platforms in sorted(units.items()):
            out += [(name, unit, HOST_VLAN, "hosts"), (name, unit, PEER_VLAN, "mlag-peer")]
            l3 = platform(platforms[0]).facts.mlag_l3_vlan
            if l3 is not None and any(d.peer_l3_ip is not None for d in plane.devices if d.unit == unit):
                out.append((name, unit, l3, "mlag-l3-peer"))
    return out


def _pools(plan: Plan) -> dict[str, str]:
    """The intent's address pools, each with what it is for."""
    intent = plan.intent
    pools: dict[str, str] = {}
    for name, plane in intent.data_planes():
        a = plane.addressing
        pools.setdefault(str(a.loopbacks), f"{name} loopbacks")
        if getattr(a, "p2p", None) is not None:
            pools.setdefault(str(a.p2p), f"{name} links")
        pools.setdefault(str(a.hosts), f"{name} hosts")
        if plane.border is not None:
            pools.setdefault(str(plane.border.edge_p2p), f"{name} edge links")
    if intent.planes.oob is not None:
        pools.setdefault(str(intent.planes.oob.subnet), "oob")
    return pools
