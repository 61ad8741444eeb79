"""Cross-field rules that need no sizing: references, roles, speeds, MTU, QoS, pools that overlap.

Rules that depend on how many switches and links the design needs (radix, pool
sizes) live with the planner's sizing, which is where those numbers are known.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from ipaddress import IPv4Address, IPv4Network
from string import Formatter

from gpufabric.intent.converged_rules import converged_rules
from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.export_rules import export_rules
from gpufabric.intent.infiniband_rules import infiniband_rules
from gpufabric.intent.model import DataPlane, InfinibandPlane, Intent, OobPlane, ServerGroup, SwitchRole
from gpufabric.intent.multiplane_rules import multiplane_rules, rails_per_plane
from gpufabric.intent.storage_rules import storage_rules
from gpufabric.intent.supernic_rules import supernic_rules
from gpufabric.intent.types import ALL_PLANES, PlaneName
from gpufabric.platforms import names, platform

# BGP unnumbered (RFC 5549) is rendered only where it is the platform's common idiom.
SERVICE_LISTS = ("ntp_servers", "syslog_servers", "dns_servers")


def _numbered_only_platforms() -> frozenset[str]:
    return frozenset(n for n in names() if platform(n).facts.numbered_only)


def _mlag_platforms() -> tuple[str, ...]:
    return tuple(n for n in names() if platform(n).facts.mlag)


BREAKOUTS = (1, 2, 4, 8)
_SPEC = re.compile(r"^(0?[1-9])?d?$")
_HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def downlink_speed(role: SwitchRole) -> int:
    return role.downlink_speed or role.port_speed


def uplink_speed(role: SwitchRole) -> int:
    return role.uplink_speed or role.port_speed


# Servers one intent may plan, counted at build-out before anything is built. GPU servers are bounded
# at the intent's limit, 16,384 (131,072 GPUs at 8 each: inventory/examples/multiplane-131k.yml plans
# them in seconds); storage and CPU servers beside them at a quarter of that. Without a bound, 256
# groups of 65,536 servers ran for minutes and ended in MemoryError.
MAX_GPU_SERVERS = 16_384
MAX_OTHER_SERVERS = 4_096

# Ranges that are never a pool or a service address: they do not route as unicast to one host.
SPECIAL_RANGES = (
    (IPv4Network("0.0.0.0/8"), "'this network' (0.0.0.0/8), which no host may use as its address"),
    (IPv4Network("127.0.0.0/8"), "loopback (127.0.0.0/8), which never leaves the host"),
    (IPv4Network("169.254.0.0/16"), "link-local (169.254.0.0/16), which no router forwards"),
    (IPv4Network("224.0.0.0/4"), "multicast (224.0.0.0/4), not one host's address"),
    (IPv4Network("240.0.0.0/4"), "reserved (class E, 240.0.0.0/4, with the broadcast address), which hosts refuse"),
)


def check_rules(intent: Intent) -> list[Problem]:
    problems: list[Problem] = _fan_out(intent)
    if problems:
        return problems  # the other rules walk every server name: not for a design this large
    problems += _server_groups(intent)
    problems += rails_per_plane(intent)
    problems += _site(intent)
    for name, plane in intent.data_planes():
        problems += _data_plane(intent, name, plane)
    if intent.infiniband is not None:
        problems += infiniband_rules(intent, intent.infiniband)
    if intent.planes.oob is not None:
        problems += _oob_plane(intent.planes.oob)
    problems += _qos_profiles(intent)
    problems += _pool_overlaps(intent)
    problems += _asn_overlaps(intent)
    problems += _credentials(intent)
    problems += _bmcs(intent)
    problems += _releases(intent)
    problems += _prefixes(intent)
    problems += _address_kinds(intent)
    problems += _snmp_location_text(intent)
    problems += _qos_profile_names(intent)
    problems += export_rules(intent)
    problems += converged_rules(intent)
    problems += storage_rules(intent)
    if not any(getattr(intent.planes, p) is not None for p in ALL_PLANES):
        problems.append(Problem(("planes",), "no plane is defined", "define at least `compute:` under planes"))
    return problems


def _fan_out(intent: Intent) -> list[Problem]:
    """GPU servers and the others (storage, CPU) each within their bound, counted at build-out."""
    problems: list[Problem] = []
    for gpu, limit, what in ((True, MAX_GPU_SERVERS, "GPU"), (False, MAX_OTHER_SERVERS, "storage and CPU")):
        groups = enumerate(intent.server_groups)
        sizes = {i: max(g.count, g.build_out or 0) for i, g in groups if (g.kind == "gpu") == gpu}
        total = sum(sizes.values())
        if total <= limit:
            continue
        gi = max(sizes, key=lambda i: sizes[i])
        problems.append(
            Problem(
                ("server_groups", gi, "count"),
                f"the {what} groups add up to {total:,} servers (count or build_out); gpufabric plans at most "
                f"{limit:,} {what} servers per intent",
                f"plan at most {limit:,} {what} servers per intent (split the cluster into several intents)",
            )
        )
    return problems


def _address_kinds(intent: Intent) -> list[Problem]:
    """Pools and service addresses must be unicast addresses a host can hold."""
    problems: list[Problem] = []
    for path, net in address_pools(intent):
        what = next((w for special, w in SPECIAL_RANGES if net.overlaps(special)), None)
        if what is not None:
            problems.append(
                Problem(path, f"{net} reaches into {what}", "use a private unicast range such as 10.0.0.0/8")
            )
    oob = intent.planes.oob
    services: list[tuple[Path, IPv4Address]] = [
        (("management", key, i), a) for key in SERVICE_LISTS for i, a in enumerate(getattr(intent.management, key))
    ]
    if oob is not None and oob.gateway is not None:
        services.append((("planes", "oob", "gateway"), oob.gateway))
    for path, address in services:
        problem = _service_kind(path, address, oob)
        if problem is not None:
            problems.append(problem)
    return problems


def _service_kind(path: Path, address: IPv4Address, oob: OobPlane | None) -> Problem | None:
    # Syslog to the switch's own loopback can be a local relay: a warning (advice.py), not an error.
    local_syslog = path[:2] == ("management", "syslog_servers") and address.is_loopback
    what = next((w for special, w in SPECIAL_RANGES if address in special and not local_syslog), None)
    if address == IPv4Address("255.255.255.255"):
        what = "the broadcast address"
    if what is not None:
        return Problem(path, f"{address} is {what}", "write the unicast address of the server")
    if (
        oob is None
        or oob.subnet.prefixlen >= 31
        or address not in (oob.subnet.network_address, oob.subnet.broadcast_address)
    ):
        return None
    edge = "network" if address == oob.subnet.network_address else "broadcast"
    return Problem(
        path,
        f"{address} is the {edge} address of the management subnet {oob.subnet}, not a host",
        f"use a host address inside {oob.subnet}, e.g. {oob.subnet.network_address + 1}",
    )


def _prefixes(intent: Intent) -> list[Problem]:
    """Switch names start with their plane's prefix: two planes with one prefix would make two
    switches of one name, one configuration mixing both planes, one inventory host for two."""
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for name in ALL_PLANES:
        plane = getattr(intent.planes, name)
        if plane is None or isinstance(plane, InfinibandPlane):  # InfiniBand switches are named by the plan
            continue
        if plane.prefix in seen:
            problems.append(
                Problem(
                    ("planes", name, "prefix"),
                    f"prefix '{plane.prefix}' is also the {seen[plane.prefix]} plane's",
                    "give each plane its own prefix (cmp, sto, biz, oob)",
                )
            )
        seen.setdefault(plane.prefix, name)
    return problems


def _switch_platforms(intent: Intent) -> dict[str, Path]:
    """Each platform the intent's switches run, with the first role that names it (for messages)."""
    used: dict[str, Path] = {}
    for name in ALL_PLANES:
        plane = getattr(intent.planes, name)
        if plane is None or isinstance(plane, InfinibandPlane):
            continue
        for role_name, role in _roles_present(plane).items():
            used.setdefault(role.platform, ("planes", name, "switches", role_name, "platform"))
    return used


def _snmp_location_text(intent: Intent) -> list[Problem]:
    """Every switch is configured with the SNMP location; a platform that would not read it back exactly
    (NX-OS and ';') refuses it, whichever plane its switches serve."""
    snmp = intent.management.snmp
    if snmp is None or not snmp.location:
        return []
    problems = []
    for name, role in _switch_platforms(intent).items():
        why = platform(name).free_text_problem(snmp.location)
        if why is not None:
            problems.append(
                Problem(
                    ("management", "snmp", "location"),
                    f"{why} ({name} switches: {'.'.join(map(str, role[:-1]))})",
                    "write the location without it, e.g. 'hall B, row 3'",
                )
            )
    return problems


def _releases(intent: Intent) -> list[Problem]:
    problems = []
    for name, settings in intent.platforms.items():
        supported = platform(name).facts.releases
        if settings.release not in supported:
            problems.append(
                Problem(
                    ("platforms", name, "release"),
                    f"{name} release {settings.release} is not one gpufabric renders for",
                    f"use one of {', '.join(supported)} (default {platform(name).facts.default_release})",
                )
            )
    return problems


def server_names(group: ServerGroup) -> Iterator[str]:
    for i in range(group.count):
        yield group.server_name(i)


def _server_groups(intent: Intent) -> list[Problem]:
    problems: list[Problem] = []
    groups: dict[str, int] = {}
    names: dict[str, str] = {}
    for gi, group in enumerate(intent.server_groups):
        at: Path = ("server_groups", gi)
        if group.name in groups:
            problems.append(
                Problem((*at, "name"), f"group name '{group.name}' is used twice", "give each group its own name")
            )
        groups[group.name] = gi
        if group.build_out is not None and group.build_out < group.count:
            problems.append(
                Problem(
                    (*at, "build_out"),
                    f"build_out {group.build_out} is below the {group.count} servers installed",
                    f"raise build_out to {group.count} or more (or leave it out)",
                )
            )
        problems += _naming(group, at, names)
        for plane_name, nics in group.nics.items():
            nat: Path = (*at, "nics", plane_name)
            if getattr(intent.planes, plane_name) is None:
                problems.append(
                    Problem(
                        nat,
                        f"plane '{plane_name}' is not defined under planes",
                        f"define planes.{plane_name} or remove these NICs",
                    )
                )
            if len(set(nics.interfaces)) != len(nics.interfaces):
                problems.append(
                    Problem((*nat, "interfaces"), "an interface name is listed twice", "list each NIC once")
                )
            if nics.rails is not None:
                problems += _rails(nics.rails, len(nics.interfaces), (*nat, "rails"))
            if plane_name == "oob" and len(nics.interfaces) != 1:
                problems.append(
                    Problem(
                        (*nat, "interfaces"), "a server has one management (BMC) port", "list exactly one interface"
                    )
                )
        seen_if: dict[str, str] = {}
        for plane_name, nics in group.nics.items():
            for ifname in nics.interfaces:
                if ifname in seen_if and seen_if[ifname] != plane_name:
                    problems.append(
                        Problem(
                            (*at, "nics", plane_name, "interfaces"),
                            f"'{ifname}' is already a {seen_if[ifname]} NIC",
                            "every NIC serves one plane; use distinct names",
                        )
                    )
                seen_if[ifname] = plane_name
    return problems


def _naming_fields_ok(pattern: str) -> bool:
    """Exactly one `{index}` field, optionally zero-padded (`{index:03d}`): the full format
    language would let a typo like `{index:>999999999}` allocate gigabytes."""
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in Formatter().parse(pattern) if name is not None]
    except ValueError:
        return False
    if len(fields) != 1:
        return False
    name, spec, conv = fields[0]
    return name == "index" and conv is None and _SPEC.match(spec or "") is not None


def _naming(group: ServerGroup, at: Path, names: dict[str, str]) -> list[Problem]:
    if group.hosts is not None:
        return _hosts(group, at, names)
    if group.count == 0:
        return [Problem((*at, "count"), "the group has no servers", "give `count` and `naming`, or list `hosts`")]
    if not _naming_fields_ok(group.naming):
        return [
            Problem(
                (*at, "naming"),
                f"'{group.naming}' does not make distinct names from an index",
                "include {index} once, optionally zero-padded: gpu{index:03d}",
            )
        ]
    numeric = _all_numeric_name(group, at)
    if numeric is not None:
        return [numeric]
    problems: list[Problem] = []
    for name in server_names(group):
        if not _HOSTNAME.match(name):
            problems.append(
                Problem((*at, "naming"), f"'{name}' is not a valid host name", "use lower-case letters, digits and '-'")
            )
            break
        if name in names:
            problems.append(
                Problem(
                    (*at, "naming"),
                    f"server name '{name}' is also made by group '{names[name]}'",
                    "change the pattern or start_index so names do not collide",
                )
            )
            break
        names[name] = group.name
    return problems


def _hosts(group: ServerGroup, at: Path, names: dict[str, str]) -> list[Problem]:
    assert group.hosts is not None
    problems: list[Problem] = []
    if group.naming:
        problems.append(
            Problem((*at, "naming"), "the servers are named by `hosts` and by `naming`", "keep one of the two")
        )
    if group.count != len(group.hosts):
        problems.append(
            Problem(
                (*at, "count"),
                f"count {group.count} is not the {len(group.hosts)} hosts listed",
                "leave `count` out: it is the number of hosts",
            )
        )
    for hi, host in enumerate(group.hosts):
        hat: Path = (*at, "hosts", hi)
        if host.name.isdigit() or host.name in names:
            what = "is all digits" if host.name.isdigit() else f"is also in group '{names[host.name]}'"
            problems.append(
                Problem((*hat, "name"), f"server name '{host.name}' {what}", "give each server its own name")
            )
        names.setdefault(host.name, group.name)
        if (host.rack is None) != (host.position is None):
            problems.append(Problem(hat, "a host has a rack without a position, or one without the other", "give both"))
    return problems


def _site(intent: Intent) -> list[Problem]:
    """Racks named once and at distinct places; every rack named by a host or a switch exists, and every
    position lies within its rack."""
    site = intent.site
    problems: list[Problem] = []
    racks: dict[str, int] = {}
    places: dict[tuple[int, int], str] = {}
    for ri, rack in enumerate(site.racks if site is not None else []):
        at: Path = ("site", "racks", ri)
        if rack.name in racks:
            problems.append(Problem((*at, "name"), f"rack '{rack.name}' is listed twice", "list each rack once"))
        elif (rack.row, rack.column) in places:
            problems.append(
                Problem(
                    (*at, "column"),
                    f"rack '{rack.name}' stands where rack '{places[rack.row, rack.column]}' does",
                    "give each rack its own row and column",
                )
            )
        racks[rack.name] = rack.units
        places.setdefault((rack.row, rack.column), rack.name)

    def placed(at: Path, rack: str | None, position: int | None) -> None:
        if rack is None or position is None:
            return
        if rack not in racks:
            problems.append(Problem((*at, "rack"), f"rack '{rack}' is not under site.racks", "add it there"))
        elif position > racks[rack]:
            problems.append(
                Problem(
                    (*at, "position"),
                    f"unit {position} is above rack '{rack}' ({racks[rack]} units)",
                    "give a unit of the rack, or the rack's `units`",
                )
            )

    for gi, group in enumerate(intent.server_groups):
        for hi, host in enumerate(group.hosts or []):
            placed(("server_groups", gi, "hosts", hi), host.rack, host.position)
    for name, where in (site.switches if site is not None else {}).items():
        placed(("site", "switches", name), where.rack, where.position)
    return problems


def _all_numeric_name(group: ServerGroup, at: Path) -> Problem | None:
    """RFC 1123 (2.1) keeps host names from being all digits, so that a name is never read as an address:
    `ping 1` goes to 0.0.0.1, and inventories, /etc/hosts and Slurm take `17` for a number."""
    name = next((n for n in server_names(group) if n.isdigit()), None)
    if name is None:
        return None
    return Problem(
        (*at, "naming"),
        f"'{group.naming}' makes all-numeric host names such as '{name}', which RFC 1123 forbids "
        "(they read as addresses or numbers)",
        "put a letter in the pattern, e.g. gpu{index:03d}",
    )


def _rails(rails: list[int], n: int, at: Path) -> list[Problem]:
    if len(rails) != n:
        return [Problem(at, f"{len(rails)} rails for {n} interfaces", "give one rail per interface")]
    if sorted(rails) != list(range(1, n + 1)):
        return [Problem(at, f"rails {rails} must number 1..{n}, each once", f"use a permutation of 1..{n}")]
    return []


def _roles_present(plane: DataPlane | OobPlane) -> dict[str, SwitchRole]:
    return {k: v for k, v in plane.switches if v is not None}


def _data_plane(intent: Intent, name: PlaneName, plane: DataPlane) -> list[Problem]:
    at: Path = ("planes", name)
    problems: list[Problem] = []
    roles = _roles_present(plane)
    sw: Path = (*at, "switches")
    for needed in ("leaf", "spine"):
        if needed not in roles:
            problems.append(
                Problem(
                    sw,
                    f"a {plane.tiers}-tier plane needs a `{needed}` switch role",
                    f"add switches.{needed} with platform, model, ports and port_speed",
                )
            )
    if plane.tiers == 3 and "superspine" not in roles:
        problems.append(Problem(sw, "a 3-tier plane needs a `superspine` role", "add switches.superspine"))
    if plane.tiers == 2 and "superspine" in roles:
        problems.append(
            Problem((*sw, "superspine"), "superspines need `tiers: 3`", "set tiers: 3 or remove superspine")
        )
    if "mgmt" in roles:
        problems.append(Problem((*sw, "mgmt"), "`mgmt` switches belong to the oob plane", "move them to planes.oob"))
    if name != "business" and ("border" in roles or plane.border is not None):
        problems.append(Problem((*at, "border"), "only the business plane has a border", "remove border here"))
    if name == "business" and ("border" in roles) != (plane.border is not None):
        problems.append(
            Problem(
                (*at, "border"),
                "border switches and the `border` section come together",
                "define both switches.border and border (edge routers), or neither",
            )
        )
    for role_name, role in roles.items():
        problems += _speeds(role, (*sw, role_name))
    problems += _tier_speeds(roles, sw)
    problems += _attached_nics(intent, name, plane, roles, at)
    problems += _mtu(plane, roles, at)
    problems += _lengths(plane, roles, at)
    problems += _qos_ref(intent, plane, at)
    if plane.routing.addressing == "p2p31" and plane.addressing.p2p is None:
        problems.append(
            Problem(
                (*at, "addressing", "p2p"),
                "`addressing: p2p31` needs a p2p pool",
                "add addressing.p2p, e.g. 10.1.0.0/20, or use routing.addressing: unnumbered",
            )
        )
    numbered_only = sorted({r.platform for r in roles.values() if r.platform in _numbered_only_platforms()})
    if plane.routing.addressing == "unnumbered" and numbered_only:
        problems.append(
            Problem(
                (*at, "routing", "addressing"),
                f"the templates peer {', '.join(numbered_only)} switches over /31 addresses, not unnumbered",
                "set routing.addressing: p2p31 and add an addressing.p2p pool (a /31 per fabric link)",
            )
        )
    if plane.host_links == "lacp" and "leaf" in roles and roles["leaf"].platform not in _mlag_platforms():
        problems.append(
            Problem(
                (*at, "host_links"),
                f"{roles['leaf'].platform} leaves have no MLAG for LACP hosts",
                "use host_links: routed, or a leaf platform with MLAG (cumulus, eos, nxos)",
            )
        )
    problems += _load_balancing(plane, roles, at)
    problems += supernic_rules(intent, name, plane, roles, at)
    if name == "compute":
        problems += _balancing_support(intent, plane, roles, sw)
    problems += multiplane_rules(intent, name, plane)
    problems += _bgp_timers(plane, (*at, "routing"))
    problems += _bfd(plane, roles, (*at, "routing", "bfd"))
    problems += _max_med(plane, roles, (*at, "routing", "max_med_on_startup"))
    if plane.border is not None:
        problems += _border(plane, (*at, "border"))
    return problems


def _load_balancing(plane: DataPlane, roles: dict[str, SwitchRole], at: Path) -> list[Problem]:
    """`adaptive` needs every routed switch of the plane to steer by link load; half a plane adaptive would
    leave the other half hashing flows onto the links the adaptive half avoids."""
    if plane.load_balancing != "adaptive":
        return []
    without = sorted({r.platform for r in roles.values() if not platform(r.platform).adaptive_routing()})
    if not without:
        return []
    having = ", ".join(n for n in names() if platform(n).adaptive_routing())
    return [
        Problem(
            (*at, "load_balancing"),
            f"{', '.join(without)} switches have no adaptive routing gpufabric can configure",
            f"use load_balancing: ecmp, or switches of a platform with it ({having})",
        )
    ]


def _balancing_support(intent: Intent, plane: DataPlane, roles: dict[str, SwitchRole], sw: Path) -> list[Problem]:
    """Every compute-plane switch renders a load-balancing setting of its platform: where the platform has
    none gpufabric can prove for the role's hardware and pinned release, the intent is refused at the model."""
    adaptive = plane.load_balancing == "adaptive"
    problems = []
    for role_name, role in roles.items():
        why = platform(role.platform).balancing_problem(role.model, intent.release(role.platform), adaptive)
        if why is not None:
            problems.append(Problem((*sw, role_name, "model"), *why))
    return problems


def _bgp_timers(plane: DataPlane, at: Path) -> list[Problem]:
    """Keepalive and hold come together (every platform's `timers bgp` takes both), the hold above the keepalive:
    a hold the keepalive cannot refresh in time ends every session."""
    keepalive, hold = plane.routing.keepalive, plane.routing.hold
    if keepalive is None and hold is None:
        return []
    if keepalive is None or hold is None:
        missing = "keepalive" if keepalive is None else "hold"
        return [
            Problem(
                (*at, missing),
                "`keepalive` and `hold` are set together",
                f"add routing.{missing} (e.g. keepalive: 3, hold: 9), or remove both for the platform's default",
            )
        ]
    if hold <= keepalive:
        return [
            Problem(
                (*at, "hold"),
                f"hold {hold} s is not above keepalive {keepalive} s",
                f"set hold to {3 * keepalive} (three keepalives, RFC 4271) or lower keepalive",
            )
        ]
    return []


def _max_med(plane: DataPlane, roles: dict[str, SwitchRole], at: Path) -> list[Problem]:
    """Max-MED on startup only where every switch of the plane renders it (its platform says so)."""
    if plane.routing.max_med_on_startup is None:
        return []
    lacking = sorted({r.platform for r in roles.values() if not platform(r.platform).facts.bgp_max_med})
    if not lacking:
        return []
    rendering = ", ".join(n for n in names() if platform(n).facts.bgp_max_med)
    return [
        Problem(
            at,
            f"{', '.join(lacking)} switches render no BGP max-MED on startup: their vendor's model has no such setting",
            f"remove routing.max_med_on_startup, or put the plane's switches on a platform that renders it "
            f"({rendering})",
        )
    ]


def _bfd(plane: DataPlane, roles: dict[str, SwitchRole], at: Path) -> list[Problem]:
    """Every switch of the plane must take the BFD timers: both ends of a session run the same ones."""
    bfd = plane.routing.bfd
    if not bfd.enabled:
        return []
    problems: list[Problem] = []
    for field, value, limits in (
        ("interval", bfd.interval, "bfd_interval_range"),
        ("multiplier", bfd.multiplier, "bfd_multiplier_range"),
    ):
        ranges: dict[str, tuple[int, int]] = {
            n: getattr(platform(n).facts, limits) for n in sorted({r.platform for r in roles.values()})
        }
        refusing = [n for n, (lo, hi) in ranges.items() if not lo <= value <= hi]
        if refusing:
            low, high = max(lo for lo, _ in ranges.values()), min(hi for _, hi in ranges.values())
            takes = ", ".join(f"{n} {ranges[n][0]}-{ranges[n][1]}" for n in refusing)
            problems.append(
                Problem(
                    (*at, field),
                    f"BFD {field} {value} is outside what {', '.join(refusing)} switches take ({takes})",
                    f"set routing.bfd.{field} between {low} and {high}, which every switch of the plane takes",
                )
            )
    return problems


def _speeds(role: SwitchRole, at: Path) -> list[Problem]:
    problems = []
    for key, speed in (("downlink_speed", downlink_speed(role)), ("uplink_speed", uplink_speed(role))):
        if speed > role.port_speed or role.port_speed % speed or role.port_speed // speed not in BREAKOUTS:
            problems.append(
                Problem(
                    (*at, key),
                    f"{speed}G does not split a {role.port_speed}G port evenly",
                    f"use {', '.join(f'{role.port_speed // b}G' for b in BREAKOUTS)} (breakout 1, 2, 4 or 8 ways)",
                )
            )
    return problems


def _tier_speeds(roles: dict[str, SwitchRole], at: Path) -> list[Problem]:
    problems = []
    pairs = [("leaf", "spine"), ("border", "spine"), ("spine", "superspine")]
    for low, high in pairs:
        if low in roles and high in roles and uplink_speed(roles[low]) != downlink_speed(roles[high]):
            problems.append(
                Problem(
                    (*at, low, "uplink_speed"),
                    f"{low} uplinks run at {uplink_speed(roles[low])}G but {high} downlinks at "
                    f"{downlink_speed(roles[high])}G",
                    "both ends of a link run at one speed; "
                    f"set {high}.downlink_speed (a breakout) or {low}.uplink_speed to match",
                )
            )
    return problems


def _attached_nics(
    intent: Intent, name: PlaneName, plane: DataPlane, roles: dict[str, SwitchRole], at: Path
) -> list[Problem]:
    attached = [(gi, g) for gi, g in enumerate(intent.server_groups) if name in g.nics]
    if not attached:
        return [
            Problem(
                at,
                f"no server group has NICs on the {name} plane",
                f"add nics.{name} to a server group, or remove the plane",
            )
        ]
    problems: list[Problem] = []
    leaf = roles.get("leaf")
    for gi, group in attached:
        nics = group.nics[name]
        nat: Path = ("server_groups", gi, "nics", name)
        if leaf is not None and nics.speed != downlink_speed(leaf):
            problems.append(
                Problem(
                    (*nat, "speed"),
                    f"{nics.speed}G NICs but {name} leaf downlinks run at {downlink_speed(leaf)}G",
                    f"set the NIC speed to {downlink_speed(leaf)}G "
                    f"or planes.{name}.switches.leaf.downlink_speed to {nics.speed}G",
                )
            )
        if plane.host_links == "lacp" and len(nics.interfaces) != 2:
            problems.append(
                Problem(
                    (*nat, "interfaces"),
                    f"host_links: lacp bonds two NICs, found {len(nics.interfaces)}",
                    "list two interfaces, one per leaf of the pair",
                )
            )
    return problems


def _lengths(plane: DataPlane, roles: dict[str, SwitchRole], at: Path) -> list[Problem]:
    """On a RoCE plane, every cable within the length class the PFC headroom is sized for (a longer cable
    holds more in flight than the headroom absorbs). Reach by medium: export_rules.cable_reach."""
    lengths = plane.lengths
    leaf = roles.get("leaf")
    if lengths is None or leaf is None:
        return []
    spine = roles.get("spine")
    given = {
        "host": (lengths.host, downlink_speed(leaf)),
        "leaf_spine": (lengths.leaf_spine, uplink_speed(leaf)),
    }
    if lengths.spine_superspine is not None and spine is not None:
        given["spine_superspine"] = (lengths.spine_superspine, uplink_speed(spine))
    problems: list[Problem] = []
    longest_key = max(given, key=lambda k: given[k][0])
    longest = given[longest_key][0]
    allowed = int(plane.cable_length.rstrip("m"))
    if plane.carries_roce and longest > allowed:
        wider = next((c for c in ("30m", "100m") if int(c.rstrip("m")) >= longest), None)
        problems.append(
            Problem(
                (*at, "lengths", longest_key),
                f"a {longest} m cable on a lossless RoCE plane whose PFC headroom is sized for {plane.cable_length} "
                "(cable_length): what is in flight on it while a pause takes effect would be dropped",
                f"set cable_length: {wider}" if wider else "keep lossless RoCE cables within 100 m",
            )
        )
    return problems


def _mtu(plane: DataPlane, roles: dict[str, SwitchRole], at: Path) -> list[Problem]:
    problems = []
    if plane.host_mtu > plane.mtu:
        problems.append(
            Problem(
                (*at, "host_mtu"),
                f"host MTU {plane.host_mtu} is above the switch MTU {plane.mtu}",
                f"lower host_mtu to {plane.mtu} or less (9000 with 9216 switch ports)",
            )
        )
    leaf = roles.get("leaf")
    if leaf is not None and plane.host_mtu > platform(leaf.platform).facts.max_mtu:
        problems.append(
            Problem(
                (*at, "host_mtu"),
                f"host MTU {plane.host_mtu} is above what {leaf.platform} leaves "
                f"carry ({platform(leaf.platform).facts.max_mtu})",
                "use host_mtu: 9000",
            )
        )
    return problems


def _qos_ref(intent: Intent, plane: DataPlane, at: Path) -> list[Problem]:
    if plane.qos is not None and plane.qos not in intent.qos_profiles:
        known = ", ".join(sorted(intent.qos_profiles)) or "none defined"
        return [
            Problem(
                (*at, "qos"),
                f"QoS profile '{plane.qos}' is not defined",
                f"use one of qos_profiles ({known}), or define it",
            )
        ]
    if not plane.carries_roce:
        return []
    if plane.qos is None:
        return [
            Problem(
                (*at, "qos"),
                "the plane carries RoCE but names no QoS profile",
                "set qos: to a lossless profile (roce_priority with PFC)",
            )
        ]
    if not intent.qos_profiles[plane.qos].lossless:
        return [
            Problem(
                ("qos_profiles", plane.qos, "lossless"),
                f"profile '{plane.qos}' is lossy but {at[-1]} carries RoCE",
                "set lossless: true (PFC no-drop on the RoCE priority)",
            )
        ]
    return []


def _border(plane: DataPlane, at: Path) -> list[Problem]:
    assert plane.border is not None
    names = [e.name for e in plane.border.edge_routers]
    if len(set(names)) != len(names):
        return [Problem((*at, "edge_routers"), "an edge router name is listed twice", "give each its own name")]
    bad = [p for p in plane.border.api_ports if not 1 <= p <= 65535]
    if bad:
        return [Problem((*at, "api_ports"), f"{bad[0]} is not a TCP port", "use 1..65535")]
    return []


def _oob_plane(oob: OobPlane) -> list[Problem]:
    at: Path = ("planes", "oob")
    roles = _roles_present(oob)
    problems = []
    if "mgmt" not in roles:
        problems.append(
            Problem(
                (*at, "switches"), "the oob plane needs `mgmt` switches", "add switches.mgmt (e.g. a 48-port 1G switch)"
            )
        )
    for extra in ("leaf", "border"):
        if extra in roles:
            problems.append(
                Problem(
                    (*at, "switches", extra),
                    f"the oob plane has no `{extra}` role",
                    "use mgmt (access), spine (aggregation) and superspine (core)",
                )
            )
    problems += _oob_core(oob, roles, at)
    if oob.gateway is not None and oob.gateway not in oob.subnet:
        problems.append(
            Problem((*at, "gateway"), f"{oob.gateway} is outside {oob.subnet}", f"use an address inside {oob.subnet}")
        )
    return problems


def _oob_core(oob: OobPlane, roles: dict[str, SwitchRole], at: Path) -> list[Problem]:
    """A `superspine` core groups the spines: the plan counts them, so the intent gives no spine count."""
    sw: Path = (*at, "switches")
    if "superspine" not in roles:
        if oob.spine_group is not None:
            return [Problem((*at, "spine_group"), "spine groups join at an OOB core", "add switches.superspine")]
        return []
    problems = []
    spine = roles.get("spine")
    if spine is None:
        problems.append(Problem(sw, "an OOB core (superspine) joins spines, and there are none", "add switches.spine"))
    elif spine.count is not None:
        problems.append(
            Problem(
                (*sw, "spine", "count"),
                "with an OOB core the plan counts the spines (one group per set of mgmt switches they carry)",
                "remove spine.count; set spine_group to size the groups",
            )
        )
    mgmt = roles.get("mgmt")
    group = oob.spine_group or (mgmt.uplinks if mgmt is not None else None) or 2
    if mgmt is not None and mgmt.uplinks is not None and mgmt.uplinks % group:
        problems.append(
            Problem(
                (*sw, "mgmt", "uplinks"),
                f"{mgmt.uplinks} uplinks do not spread over a group of {group} spines",
                f"use a multiple of {group}, or a spine_group that divides {mgmt.uplinks}",
            )
        )
    return problems


# Profile names that say "no profile" instead of naming one. The intent reads YAML 1.2, where `qos: no` is
# the text "no"; YAML 1.1 (PyYAML, Ansible, most editors' linters) reads these as booleans or null, and a
# person reads `qos: no` or `qos: off` as "no QoS". With a profile of that name the plane would silently
# get lossless PFC queues where none were meant.
YAML11_WORDS = {
    **dict.fromkeys(("y", "yes", "on", "true"), "true"),
    **dict.fromkeys(("n", "no", "off", "false"), "false"),
    "null": "null",
    "none": "None (no value)",
}


def _qos_profile_names(intent: Intent) -> list[Problem]:
    problems = []
    for name in intent.qos_profiles:
        if name in YAML11_WORDS:
            problems.append(
                Problem(
                    ("qos_profiles", name),
                    f"a QoS profile may not be named '{name}': YAML 1.1 (Ansible, PyYAML) reads it as "
                    f"{YAML11_WORDS[name]} and a person reads `qos: {name}` as no QoS, yet the plane would get "
                    "this profile",
                    "give the profile a name that says what it is, e.g. roce; leave `qos` out of a plane for none",
                )
            )
    return problems


def _qos_profiles(intent: Intent) -> list[Problem]:
    problems = []
    for name, p in intent.qos_profiles.items():
        at: Path = ("qos_profiles", name)
        if p.roce_priority == p.cnp_priority:
            problems.append(
                Problem(
                    (*at, "cnp_priority"),
                    f"CNPs share priority {p.cnp_priority} with RoCE data",
                    "give CNPs their own strict priority (6 by convention)",
                )
            )
        if p.roce_dscp == p.cnp_dscp:
            problems.append(
                Problem(
                    (*at, "cnp_dscp"),
                    f"CNPs share DSCP {p.cnp_dscp} with RoCE data",
                    "use DSCP 48 for CNPs and 26 for RoCE",
                )
            )
        if p.ecn_min_bytes >= p.ecn_max_bytes:
            problems.append(
                Problem(
                    (*at, "ecn_min_bytes"),
                    f"ECN minimum {p.ecn_min_bytes} is not below the maximum {p.ecn_max_bytes}",
                    "e.g. 150000 and 1500000",
                )
            )
    return problems


def address_pools(intent: Intent) -> list[tuple[Path, IPv4Network]]:
    """Every address pool of the intent, with its field path (("planes", plane, ...), network)."""
    pools: list[tuple[Path, IPv4Network]] = []
    for name, plane in intent.data_planes():
        for key in ("loopbacks", "p2p", "hosts"):
            net = getattr(plane.addressing, key)
            if net is not None:
                pools.append((("planes", name, "addressing", key), net))
        if plane.border is not None:
            pools.append((("planes", name, "border", "edge_p2p"), plane.border.edge_p2p))
        for carried, logical in (plane.carries or {}).items():
            for key in ("hosts", "p2p"):
                if (net := getattr(logical, key)) is not None:
                    pools.append((("planes", name, "carries", carried, key), net))
    if intent.infiniband is not None and intent.infiniband.ipoib is not None:
        pools.append((("planes", "compute", "ipoib", "subnet"), intent.infiniband.ipoib.subnet))
    if intent.planes.oob is not None:
        pools.append((("planes", "oob", "subnet"), intent.planes.oob.subnet))
    return pools


def _pool_overlaps(intent: Intent) -> list[Problem]:
    pools = address_pools(intent)
    problems = []
    for i, (path_a, a) in enumerate(pools):
        for path_b, b in pools[i + 1 :]:
            if a.overlaps(b):
                problems.append(
                    Problem(
                        path_b,
                        f"{b} overlaps {a} ({'.'.join(map(str, path_a))})",
                        "give every pool its own address range",
                    )
                )
    return problems


def _asn_overlaps(intent: Intent) -> list[Problem]:
    planes = intent.data_planes()
    problems = []
    for i, (name_a, a) in enumerate(planes):
        for name_b, b in planes[i + 1 :]:
            if a.routing.asn_pool.overlaps(b.routing.asn_pool):
                problems.append(
                    Problem(
                        ("planes", name_b, "routing", "asn_pool"),
                        f"{b.routing.asn_pool} overlaps the {name_a} pool {a.routing.asn_pool}",
                        "give each plane its own ASN range",
                    )
                )
    for at, edge in intent.edge_routers():
        for other, p in planes:
            if p.routing.asn_pool.first <= edge.asn <= p.routing.asn_pool.last:
                problems.append(
                    Problem(
                        (*at, "asn"),
                        f"edge ASN {edge.asn} lies inside the {other} fabric pool",
                        "use the edge's own ASN, outside every fabric pool",
                    )
                )
    return problems


def _bmcs(intent: Intent) -> list[Problem]:
    """A group whose BMCs are read needs the address they are read at (an `oob` port on the OOB plane) and
    the login they are read with."""
    problems = []
    for gi, group in enumerate(intent.server_groups):
        if group.bmc is None:
            continue
        at: Path = ("server_groups", gi, "bmc")
        if "oob" not in group.nics or intent.planes.oob is None:
            problems.append(
                Problem(
                    at,
                    "the BMCs are read at the servers' OOB addresses, and this group has none",
                    "give the group an `oob` NIC (nics.oob) and define planes.oob, or remove bmc",
                )
            )
        if intent.credentials.bmc is None:
            problems.append(
                Problem(
                    at,
                    "the BMCs need a login, and credentials.bmc names none",
                    "add credentials.bmc: {username: NAME, password: {env: GPUFABRIC_BMC_PASSWORD}}",
                )
            )
    return problems


def _credentials(intent: Intent) -> list[Problem]:
    sw = intent.credentials.switches
    problems = []
    if sw.password is None and sw.ssh_key is None:
        problems.append(
            Problem(
                ("credentials", "switches"),
                "switches need a password or an ssh_key reference",
                "add password: {env: GPUFABRIC_SWITCH_PASSWORD}",
            )
        )
    elif sw.password is None:
        used = {
            r.platform
            for name in ALL_PLANES
            if (plane := getattr(intent.planes, name)) is not None and not isinstance(plane, InfinibandPlane)
            for r in _roles_present(plane).values()
        }
        api = [n for n in names() if n in used and platform(n).facts.password_login]
        if api:
            problems.append(
                Problem(
                    ("credentials", "switches", "password"),
                    f"{' and '.join(api)} switches are reached through their HTTPS API (eAPI, NX-API), which "
                    "logs in with a password, not an SSH key",
                    "add password: {env: NAME} (the SSH key still serves FRR and Cumulus switches)",
                )
            )
    key = intent.credentials.salt_key
    if key is not None and key.vault is not None:
        problems.append(
            Problem(
                ("credentials", "salt_key"),
                "the salt key is needed when configs are rendered, before any vault is opened",
                "name an environment variable: salt_key: {env: GPUFABRIC_SALT_KEY}",
            )
        )
    return problems
