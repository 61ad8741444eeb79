"""Intent in, plan out. Deterministic: everything is built in intent order."""

from __future__ import annotations

import dataclasses

from gpufabric.gc_pause import gc_paused
from gpufabric.ib.errors import IbError
from gpufabric.intent.advice import intent_warnings
from gpufabric.intent.errors import Problem
from gpufabric.intent.loader import LoadedIntent
from gpufabric.intent.model import Intent
from gpufabric.intent.rules import server_names
from gpufabric.plan.converged import attach as attach_carried
from gpufabric.plan.fabric import PlaneBuilder
from gpufabric.plan.growth import at_build_out, installed
from gpufabric.plan.infiniband import IbPlan, located, management_ports, plan_infiniband
from gpufabric.plan.management import ManagementPort
from gpufabric.plan.model import Plan, PlanePlan, Server
from gpufabric.plan.multiplane import builders as multiplane_builders
from gpufabric.plan.multiplane import join as join_planes
from gpufabric.plan.multiplane import share_nic_cages
from gpufabric.plan.oob import build_oob, oob_addresses_needed
from gpufabric.plan.placement import place
from gpufabric.plan.placement import problems as placement_problems
from gpufabric.plan.sizing import SizingError, size_plane
from gpufabric.plan.storage import problems as storage_problems


def build_plan(loaded: LoadedIntent) -> Plan:
    """Size and expand every plane; raise IntentError with every problem found if the design does not fit."""
    with gc_paused():
        return _build(loaded)


def _build(loaded: LoadedIntent) -> Plan:
    build_out = at_build_out(loaded.intent)
    # The InfiniBand plane is sized for the build-out, so its switches are known before the OOB plane
    # cables their management ports; its problems are reported after the Ethernet planes' as before.
    ib: IbPlan | None = None
    ib_error: IbError | None = None
    if loaded.intent.infiniband is not None:
        try:
            ib = plan_infiniband(loaded.intent, build_out)
        except IbError as exc:
            ib_error = exc
    ib_ports = management_ports(ib) if ib is not None else []
    plan = _build_for(loaded, build_out, ib_ports)
    for plane in plan.planes.values():
        for i, link in enumerate(plane.links, 1):
            link.number = i
    misplaced = placement_problems(loaded.intent, plan)
    if misplaced:
        raise loaded.error(misplaced)
    plan = installed(plan, loaded.intent)
    misplaced = place(plan)
    if misplaced:
        raise loaded.error(misplaced)
    short = storage_problems(plan)  # the installed servers read and write; the path is the one built
    if short:
        raise loaded.error(short)
    if ib_error is not None:
        raise loaded.error(located(ib_error, loaded.intent)) from None
    if ib is not None:
        cabled = {p.device: p for p in ib_ports if p.address is not None}
        plan.infiniband = dataclasses.replace(ib, management=cabled)
    return plan


def _build_for(loaded: LoadedIntent, intent: Intent, others: list[ManagementPort]) -> Plan:
    """The plan of `intent` (the build-out); problems are located in the loaded file."""
    servers = _servers(intent)
    by_name = {s.name: s for s in servers}
    problems: list[Problem] = []
    builders: list[PlaneBuilder] = []
    several: dict[str, list[PlaneBuilder]] = {}  # planes built as several independent planes
    for name, plane in intent.data_planes():
        if plane.multiplane is not None:
            several[name], trouble = multiplane_builders(intent, name, plane, by_name)
            problems += trouble
            continue
        try:
            sizing = size_plane(intent, name, plane)
        except SizingError as exc:
            problems += exc.problems
            continue
        builder = PlaneBuilder(name, plane, sizing, by_name)
        problems += builder.check_pools()
        builders.append(builder)
    if problems:
        raise loaded.error(problems)
    single = {b.name: b for b in builders}
    planes: dict[str, PlanePlan] = {
        name: single[name].build() if name in single else join_planes(name, [b.build() for b in several[name]], p)
        for name, p in intent.data_planes()
    }
    groups = {s.name: s.group for s in servers}
    for name, p in intent.data_planes():
        if name in several:  # one module per NIC cage whose ports land on several planes
            share_nic_cages(intent, name, p, planes[name], groups)
    for built in planes.values():
        attach_carried(intent, built, servers)
    if intent.planes.oob is not None:
        switches = [d for p in planes.values() for d in p.devices]
        endpoints = len(switches) + sum(1 for s in servers if s.mgmt_interface) + len(others)
        # NTP, syslog and DNS servers on the management subnet keep their addresses: no switch gets one.
        m = intent.management
        named = (*m.ntp_servers, *m.syslog_servers, *m.dns_servers)
        services = {int(a) for a in named if a in intent.planes.oob.subnet}
        try:
            problems += oob_addresses_needed(endpoints + len(services), intent.planes.oob)
            if not problems:
                planes["oob"] = build_oob(intent.planes.oob, switches, servers, frozenset(services), others)
        except SizingError as exc:
            problems += exc.problems
        if problems:
            raise loaded.error(problems)
    problems = _name_clashes(intent, planes, servers)
    if problems:
        raise loaded.error(problems)
    loopbacks = {d.loopback: d.name for p in planes.values() for d in p.devices if d.loopback is not None}
    dubious = loaded.located(intent_warnings(loaded.intent, loopbacks))
    return Plan(intent, loaded.file, planes, servers, dubious + _warnings(planes) + _credential_warnings(intent))


def _name_clashes(intent: Intent, planes: dict[str, PlanePlan], servers: list[Server]) -> list[Problem]:
    """Servers, switches and edge routers are hosts of one inventory, by name: a server named like a leaf
    would take the leaf's place there, and `push --device` would then reach the server."""
    owners: dict[str, str] = {d.name: f"the {d.plane} {d.role} switch" for p in planes.values() for d in p.devices}
    problems: list[Problem] = []
    group_index = {g.name: gi for gi, g in enumerate(intent.server_groups)}
    reported: set[str] = set()
    for s in servers:
        if s.name in owners and s.group not in reported:
            reported.add(s.group)
            problems.append(
                Problem(
                    ("server_groups", group_index[s.group], "naming"),
                    f"server '{s.name}' has the name of {owners[s.name]} {s.name}",
                    "give servers names that no switch has (switch names start with their plane's prefix)",
                )
            )
    owners.update({s.name: f"server {s.name} (group {s.group})" for s in servers})
    for at, edge in intent.edge_routers():
        if edge.name in owners:
            problems.append(
                Problem(
                    (*at, "name"),
                    f"edge router '{edge.name}' has the name of {owners[edge.name]}",
                    "give the edge router a name no switch or server has",
                )
            )
    return problems


def _servers(intent: Intent) -> list[Server]:
    servers = []
    for group in intent.server_groups:
        oob = group.nics.get("oob")
        mgmt_if = oob.interfaces[0] if oob is not None and intent.planes.oob is not None else None
        for i, name in enumerate(server_names(group)):
            servers.append(
                Server(
                    name=name,
                    group=group.name,
                    kind=group.kind,
                    index=group.start_index + i,
                    gpus=group.gpus,
                    gpu_model=group.gpu_model,
                    mgmt_interface=mgmt_if,
                )
            )
    return servers


def _credential_warnings(intent: Intent) -> list[str]:
    cred = intent.credentials
    if cred.switches.password is not None and cred.salt_key is None:
        return [
            "credentials: no salt_key, so the switch password's hash salts follow from the fabric and user "
            "names, which anyone can read (a dictionary can be computed ahead): add salt_key: {env: NAME} "
            "naming a random value you keep with the password"
        ]
    return []


def _warnings(planes: dict[str, PlanePlan]) -> list[str]:
    warnings = []
    for name, plane in planes.items():
        for t in plane.tier_stats:
            if t.ratio > t.target + 1e-9:
                warnings.append(
                    f"{name}: {t.tier} oversubscription {t.ratio:.2f}:1 is above the target "
                    f"{t.target:g}:1 ({t.down_gbps}G down, {t.up_gbps}G up per switch)"
                )
        ecmp = plane.routing.get("ecmp")
        uplinks = plane.sizing.get("leaf_uplinks", 0)
        if isinstance(ecmp, int) and uplinks > ecmp:
            warnings.append(
                f"{name}: ECMP width {ecmp} is below the {uplinks} uplinks of a leaf; "
                f"{uplinks - ecmp} paths stay idle (raise routing.ecmp to {uplinks})"
            )
    return warnings
