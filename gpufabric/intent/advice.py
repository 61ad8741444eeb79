"""Warnings: intents that are valid but probably not what was meant.

Each warning is a Problem (field, what is dubious, the risk) so it is located like an error; the
planner adds them to the plan's warnings, which every command prints and `--strict` turns into exit 3.
"""

from __future__ import annotations

import unicodedata
from ipaddress import IPv4Address, IPv4Network

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import DataPlane, Intent
from gpufabric.intent.rules import SERVICE_LISTS, address_pools, downlink_speed, uplink_speed

# ECN marking below two full frames marks nearly every packet of a burst; marking that starts only
# after this long a queue at the plane's slowest RoCE port lets PFC pause before ECN slows senders.
ECN_MIN_FRAMES = 2
ECN_MAX_START_US = 100.0
# A management ACL this wide admits a large part of the address space.
WIDEST_ACL_PREFIXLEN = 8
_LOOPBACK = IPv4Network("127.0.0.0/8")
# Scripts whose letters pass for Latin ones (Cyrillic a, U+0430; Greek o, U+03BF) in a banner or a report.
_LOOKALIKE_SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "FULLWIDTH", "MATHEMATICAL", "LETTERLIKE")


def intent_warnings(intent: Intent, switch_loopbacks: dict[int, str] | None = None) -> list[Problem]:
    """What is dubious about `intent`; `switch_loopbacks` (address -> switch) once the plan knows them."""
    found: list[Problem] = []
    found += _duplicate_services(intent)
    found += _service_reach(intent, switch_loopbacks or {})
    found += _acl_width(intent)
    found += _duplicate_api_ports(intent)
    for name, plane in intent.data_planes():
        found += _mtu_room(name, plane)
        found += _ecn(intent, name, plane)
    found += _lookalikes(intent)
    return found


def _duplicate_services(intent: Intent) -> list[Problem]:
    found = []
    for key in SERVICE_LISTS:
        first: dict[IPv4Address, int] = {}
        for i, address in enumerate(getattr(intent.management, key)):
            if address in first:
                found.append(
                    Problem(
                        ("management", key, i),
                        f"{address} is listed twice (also [{first[address]}])",
                        "one server is configured where two were meant: when it fails there is no other",
                    )
                )
            first.setdefault(address, i)
    return found


def _data_pools(intent: Intent) -> list[tuple[Path, IPv4Network]]:
    return [(path, net) for path, net in address_pools(intent) if path[:2] != ("planes", "oob")]


def _service_reach(intent: Intent, loopbacks: dict[int, str]) -> list[Problem]:
    """Switches reach their services from the management VRF, over the OOB plane and its gateway,
    which routes nothing toward the data planes."""
    found = []
    m = intent.management
    oob = intent.planes.oob
    pools = _data_pools(intent)
    for key in SERVICE_LISTS:
        for i, address in enumerate(getattr(m, key)):
            at: Path = ("management", key, i)
            if int(address) in loopbacks:
                found.append(
                    Problem(
                        at,
                        f"{address} is the loopback of the switch {loopbacks[int(address)]}",
                        "that switch would send to itself and every other switch to one of its peers; name the "
                        "service's own address",
                    )
                )
                continue
            if key == "syslog_servers" and address in _LOOPBACK:
                found.append(
                    Problem(
                        at,
                        f"{address} is the switch's own loopback",
                        "logs stay on each switch (lost with it) unless a local relay forwards them; name the "
                        "collector's address",
                    )
                )
                continue
            if key == "dns_servers":
                continue  # resolvers may well be reached in-band
            pool = next((path for path, net in pools if address in net), None)
            if pool is not None:
                found.append(
                    Problem(
                        at,
                        f"{address} lies in the data-plane pool {'.'.join(map(str, pool))}",
                        "switches reach this service from their management VRF over the OOB plane, which has "
                        "no route into the data planes: it will not answer",
                    )
                )
            elif oob is None:
                found.append(
                    Problem(
                        at,
                        f"{address} is named but there is no oob plane",
                        "switches reach this service from their management port, which nothing connects",
                    )
                )
    return found


def _acl_width(intent: Intent) -> list[Problem]:
    business = intent.planes.business
    if business is None or business.border is None:
        return []
    oob = intent.planes.oob
    found = []
    pools = _data_pools(intent)
    for i, prefix in enumerate(business.border.management_prefixes):
        at: Path = ("planes", "business", "border", "management_prefixes", i)
        wider = oob is not None and prefix != oob.subnet and oob.subnet.subnet_of(prefix)
        if wider or prefix.prefixlen < WIDEST_ACL_PREFIXLEN:
            around = f"wider than the OOB plane {oob.subnet}" if wider and oob is not None else "very wide"
            found.append(
                Problem(
                    at,
                    f"{prefix} is {around}",
                    f"switch management (SSH, gNMI, SNMP) answers all {prefix.num_addresses:,} addresses of it, "
                    "not only the management hosts; name the jump hosts' own prefix",
                )
            )
            continue  # one warning per prefix: the widest reason says it
        over = _acl_over_pools(at, prefix, pools)
        if over is not None:
            found.append(over)
    return found


def _acl_over_pools(at: Path, prefix: IPv4Network, pools: list[tuple[Path, IPv4Network]]) -> Problem | None:
    """A management prefix that reaches into the fabric's own pools lets its servers' addresses (and the
    switches' loopbacks and links) reach every switch's SSH, gNMI and SNMP: any tenant on a GPU node could."""
    hit = next(((path, net) for path, net in pools if prefix.overlaps(net)), None)
    if hit is None:
        return None
    path, net = hit
    return Problem(
        at,
        f"{prefix} reaches into the fabric's own pool {net} ({'.'.join(map(str, path))})",
        "switch management (SSH, gNMI, SNMP) then answers the fabric's servers and switches themselves, not "
        "only the management hosts; name the jump hosts' own prefix",
    )


def _duplicate_api_ports(intent: Intent) -> list[Problem]:
    """A port listed twice in `api_ports` is most likely a typo for another API's port (8443, 2379, ...):
    the border then filters that API's clients away while the intent looks as if it let them in."""
    found = []
    for name, plane in intent.data_planes():
        if plane.border is None:
            continue
        first: dict[int, int] = {}
        for i, port in enumerate(plane.border.api_ports):
            if port in first:
                found.append(
                    Problem(
                        ("planes", name, "border", "api_ports", i),
                        f"port {port} is listed twice (also [{first[port]}])",
                        "one API is opened where two were meant: the other stays closed to its clients",
                    )
                )
            first.setdefault(port, i)
    return found


def _mtu_room(name: str, plane: DataPlane) -> list[Problem]:
    if plane.host_mtu != plane.mtu:
        return []
    return [
        Problem(
            ("planes", name, "host_mtu"),
            f"host MTU {plane.host_mtu} equals the switch MTU",
            "no room for encapsulation (a VLAN tag, VXLAN or another header on the path drops full-size "
            f"frames); leave headroom, e.g. host_mtu: {plane.mtu - 216 if plane.mtu >= 9216 else plane.mtu - 100}",
        )
    ]


def _ecn(intent: Intent, name: str, plane: DataPlane) -> list[Problem]:
    if plane.qos is None or plane.qos not in intent.qos_profiles:
        return []
    q = intent.qos_profiles[plane.qos]
    roles = [r for r in (plane.switches.leaf, plane.switches.spine, plane.switches.superspine) if r is not None]
    if not roles:
        return []
    slowest = min(min(downlink_speed(r), uplink_speed(r)) for r in roles)
    at: Path = ("qos_profiles", plane.qos, "ecn_min_bytes")
    start_us = q.ecn_min_bytes * 8 / (slowest * 1000)  # bytes at slowest Gb/s, in microseconds
    if q.ecn_min_bytes < ECN_MIN_FRAMES * plane.host_mtu:
        return [
            Problem(
                at,
                f"ECN marking starts at {q.ecn_min_bytes} bytes, under {ECN_MIN_FRAMES} frames of the {name} "
                f"plane's {plane.host_mtu}-byte MTU",
                "nearly every packet of a burst is marked and RoCE senders slow down for no congestion; "
                "150000 suits 100G-800G ports",
            )
        ]
    if start_us > ECN_MAX_START_US:
        return [
            Problem(
                at,
                f"ECN marking starts at {q.ecn_min_bytes} bytes, {start_us:.0f} µs of queue at the {name} plane's "
                f"{slowest}G ports",
                f"PFC pauses before ECN slows the senders (over {ECN_MAX_START_US:.0f} µs); lower it to "
                f"{int(slowest * 1000 * ECN_MAX_START_US / 8):d} or less",
            )
        ]
    return []


def _lookalikes(intent: Intent) -> list[Problem]:
    texts: list[tuple[Path, str]] = [(("fabric", "description"), intent.fabric.description)]
    if intent.management.snmp is not None:
        texts.append((("management", "snmp", "location"), intent.management.snmp.location))
    found = []
    for at, text in texts:
        odd = next((c for c in text if ord(c) > 127 and _looks_latin(c)), None)
        if odd is not None:
            found.append(
                Problem(
                    at,
                    f"holds U+{ord(odd):04X} ({unicodedata.name(odd, '?').lower()}), which looks like a Latin letter",
                    "a search or a comparison for the ASCII word misses it, and some switch CLIs mangle it; "
                    "write plain ASCII",
                )
            )
    return found


def _looks_latin(c: str) -> bool:
    name = unicodedata.name(c, "")
    folded = unicodedata.normalize("NFKC", c)
    return any(script in name for script in _LOOKALIKE_SCRIPTS) or (folded != c and folded.isascii())
