"""The rules of converged planes (`carries:`): what relates a carried plane to its physical plane, to the
other planes, to the server groups, to the QoS profile and to the platforms of the switches."""

from __future__ import annotations

from gpufabric.intent.converged import CARRYING_ROLES, CarriedPlane
from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import DataPlane, Intent
from gpufabric.platforms import platform


def converged_rules(intent: Intent) -> list[Problem]:
    problems: list[Problem] = []
    for name, plane in intent.data_planes():
        if plane.carries:
            problems += _plane(intent, name, plane, ("planes", name, "carries"))
    for gi, group in enumerate(intent.server_groups):
        for name, nics in group.nics.items():
            if nics.native:
                continue
            physical = getattr(intent.planes, name, None)
            carries = physical.carries if isinstance(physical, DataPlane) else None
            if not carries or not any(group.name in carried_groups(intent, name, lp) for lp in carries.values()):
                problems.append(
                    Problem(
                        ("server_groups", gi, "nics", name, "native"),
                        f"these NICs would carry nothing: no plane carried on the {name} plane takes group "
                        f"{group.name}",
                        f"remove native: false, or add the group to a plane under planes.{name}.carries",
                    )
                )
    return problems


def carried_groups(intent: Intent, physical: str, logical: CarriedPlane) -> list[str]:
    """The server groups whose hosts join a carried plane: those it names, or every group on the physical plane."""
    attached = [g.name for g in intent.server_groups if physical in g.nics]
    return attached if logical.groups is None else [g for g in attached if g in logical.groups]


def _plane(intent: Intent, name: str, plane: DataPlane, at: Path) -> list[Problem]:
    assert plane.carries is not None
    problems: list[Problem] = []
    if name == "compute":
        return [
            Problem(at, "the compute plane carries only its own RoCE traffic", "move carries to business or storage")
        ]
    if plane.host_links != "routed":
        problems.append(
            Problem(
                ("planes", name, "host_links"),
                "carried planes ride routed host ports (a tagged /31 per port), not LACP bonds",
                "set host_links: routed",
            )
        )
    for role_name, role in plane.switches:
        if (
            role is not None
            and role_name in CARRYING_ROLES
            and (why := platform(role.platform).carried_planes_problem()) is not None
        ):
            problems.append(
                Problem(
                    ("planes", name, "switches", role_name, "platform"),
                    f"{why}, so this plane cannot carry {', '.join(plane.carries)}",
                    "give the plane's switches a platform that renders carried planes (docs/configs.md)",
                )
            )
    profile = intent.qos_profiles.get(plane.qos) if plane.qos else None
    vrfs: dict[str, str] = {}
    vlans: dict[int, str] = {}
    priorities: dict[int, str] = {}
    dscps: dict[int, str] = {}
    if profile is not None and plane.carries_roce:
        priorities |= {profile.roce_priority: "RoCE", profile.cnp_priority: "CNP"}
        dscps |= {profile.roce_dscp: "RoCE", profile.cnp_dscp: "CNP"}
    lossless: list[str] = [c for c, lp in plane.carries.items() if lp.traffic == "lossless"]
    share = sum(lp.bandwidth_percent for lp in plane.carries.values())
    if plane.carries_roce and profile is not None and not lossless:
        share += profile.roce_bandwidth_percent  # the plane's own RoCE class keeps its share
    for carried, lp in plane.carries.items():
        cat: Path = (*at, carried)
        problems += _identity(intent, name, carried, lp, cat)
        if lp.vrf in vrfs:
            problems.append(Problem((*cat, "vrf"), f"VRF {lp.vrf} is {vrfs[lp.vrf]}'s too", "give each plane its VRF"))
        vrfs.setdefault(lp.vrf, carried)
        if lp.vlan in vlans:
            problems.append(Problem((*cat, "vlan"), f"VLAN {lp.vlan} is {vlans[lp.vlan]}'s too", "give each its tag"))
        vlans.setdefault(lp.vlan, carried)
        problems += _pools(plane, lp, cat)
        if lp.traffic == "lossless":
            problems += _lossless(
                name, plane, lp, cat, lossless=lossless, profile_lossless=profile is not None and profile.lossless
            )
            continue
        if lp.priority is None or not lp.dscp:
            problems.append(
                Problem(
                    cat,
                    "a lossy plane needs its own class: `priority` and the `dscp` its hosts mark",
                    "add priority: (1-7) and dscp: [..]",
                )
            )
            continue
        if lp.priority in priorities:
            problems.append(
                Problem(
                    (*cat, "priority"),
                    f"priority {lp.priority} is {priorities[lp.priority]}'s",
                    "give each class its own priority",
                )
            )
        priorities.setdefault(lp.priority, carried)
        for i, value in enumerate(lp.dscp):
            if value in dscps:
                problems.append(
                    Problem((*cat, "dscp", i), f"DSCP {value} is {dscps[value]}'s", "give each class its own DSCP")
                )
            dscps.setdefault(value, carried)
    if share > 99:
        problems.append(
            Problem(
                at,
                f"the carried planes' classes take {share}% of the bandwidth, leaving none to the plane's own traffic",
                "lower the bandwidth_percent values so they add up to 99 or less",
            )
        )
    return problems


def _identity(intent: Intent, name: str, carried: str, lp: CarriedPlane, at: Path) -> list[Problem]:
    problems: list[Problem] = []
    # A host has one plane of each name: two fabrics carrying it would give it two, with nothing to join them.
    also = [other for other, p in intent.data_planes() if other != name and p.carries and carried in p.carries]
    if also:
        problems.append(
            Problem(
                at,
                f"{carried} is carried by the {', '.join(also)} plane too",
                f"carry {carried} on one plane only",
            )
        )
    if carried == name:
        problems.append(Problem(at, f"the {name} plane's own traffic is not carried", f"remove carries.{name}"))
    if carried == "storage" and intent.planes.storage is not None:
        problems.append(
            Problem(
                at,
                "storage is carried here and is a plane of its own (planes.storage)",
                "keep one: remove planes.storage or carries.storage",
            )
        )
    if carried == "storage":
        for gi, group in enumerate(intent.server_groups):
            if "storage" in group.nics and intent.planes.storage is None:
                problems.append(
                    Problem(
                        ("server_groups", gi, "nics", "storage"),
                        f"storage rides the {name} plane's switches: its hosts reach it through their {name} NICs",
                        f"remove nics.storage and list the group under planes.{name}.carries.storage.groups",
                    )
                )
    known = {g.name for g in intent.server_groups if name in g.nics}
    for i, group_name in enumerate(lp.groups or []):
        if group_name not in known:
            problems.append(
                Problem(
                    (*at, "groups", i),
                    f"'{group_name}' is not a server group with NICs on the {name} plane",
                    f"name groups that have nics.{name}: {', '.join(sorted(known)) or 'none'}",
                )
            )
    if lp.groups is not None and not lp.groups:
        problems.append(Problem((*at, "groups"), "no server group joins the plane", "name at least one group"))
    return problems + _subinterface_names(intent, name, carried, lp)


# A Linux interface name has at most 15 characters (IFNAMSIZ 16 with its NUL): a host's subinterface
# `<nic>.<vlan>` must fit, or no backend can create it.
IFNAME_MAX = 15


def _subinterface_names(intent: Intent, name: str, carried: str, lp: CarriedPlane) -> list[Problem]:
    problems: list[Problem] = []
    joined = set(carried_groups(intent, name, lp))
    for gi, group in enumerate(intent.server_groups):
        nics = next((n for plane, n in group.nics.items() if plane == name), None)
        if nics is None or group.name not in joined:
            continue
        for ii, ifname in enumerate(nics.interfaces):
            sub = f"{ifname}.{lp.vlan}"
            if len(sub) > IFNAME_MAX:
                problems.append(
                    Problem(
                        ("server_groups", gi, "nics", name, "interfaces", ii),
                        f"the {carried} plane's subinterface {sub} is {len(sub)} characters, more than a Linux "
                        f"interface name takes ({IFNAME_MAX})",
                        f"rename the NIC (udev) to at most {IFNAME_MAX - 1 - len(str(lp.vlan))} characters, or "
                        "give the plane a shorter VLAN number",
                    )
                )
    return problems


def _pools(plane: DataPlane, lp: CarriedPlane, at: Path) -> list[Problem]:
    problems: list[Problem] = []
    own = plane.addressing.hosts
    if lp.hosts.prefixlen > own.prefixlen:
        problems.append(
            Problem(
                (*at, "hosts"),
                f"{lp.hosts} is smaller than the plane's hosts pool {own}: each host port takes the /31 at its "
                "place there",
                f"use a /{own.prefixlen} or larger",
            )
        )
    if plane.routing.addressing == "p2p31":
        own_p2p = plane.addressing.p2p
        if lp.p2p is None:
            problems.append(
                Problem(
                    (*at, "p2p"),
                    "the plane peers over /31s, so the VRF needs a /31 per fabric link",
                    "add p2p: a pool as large as addressing.p2p",
                )
            )
        elif own_p2p is not None and lp.p2p.prefixlen > own_p2p.prefixlen:
            problems.append(
                Problem((*at, "p2p"), f"{lp.p2p} is smaller than addressing.p2p {own_p2p}", "use one as large")
            )
    elif lp.p2p is not None:
        problems.append(
            Problem(
                (*at, "p2p"),
                "the plane is unnumbered: its VRF sessions run over IPv6 link-local, no /31 is used",
                "remove p2p",
            )
        )
    return problems


def _lossless(
    name: str, plane: DataPlane, lp: CarriedPlane, at: Path, *, lossless: list[str], profile_lossless: bool
) -> list[Problem]:
    problems: list[Problem] = []
    if len(lossless) > 1:
        problems.append(
            Problem((*at, "traffic"), f"only one carried plane can be lossless, found {', '.join(lossless)}", "")
        )
    if not (plane.carries_roce and profile_lossless):
        problems.append(
            Problem(
                (*at, "traffic"),
                f"a lossless plane uses the {name} plane's RoCE class, which it does not have",
                f"set planes.{name}.carries_roce: true and qos: a lossless profile",
            )
        )
    if lp.priority is not None or lp.dscp:
        problems.append(
            Problem(
                (*at, "priority" if lp.priority is not None else "dscp"),
                "a lossless plane takes the QoS profile's RoCE priority and DSCP",
                "remove priority and dscp",
            )
        )
    return problems
