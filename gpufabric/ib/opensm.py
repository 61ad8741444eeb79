"""The subnet manager's files, rendered from the plan plus a discovery (names -> GUIDs).

- opensm.conf: the SM's own port GUID and priority (primary or standby), the routing engine
  with the top tier as roots, every file path inside one folder (nothing read from /etc),
  QoS on with the SL-to-VL tables.
- partitions.conf: the default partition limited (adapters limited members, so tenants
  cannot reach each other through it; switches and the SMs full), one partition per tenant
  with its hosts' adapter ports as full members, MTU 4096 on IPoIB broadcast groups.
- qos-policy.conf: the service level per partition (qos-ulps).
- root-guids.conf / cn-guids.conf: the top tier's node GUIDs, the compute adapters' port GUIDs.
- node-name-map: GUID -> planned name, for OpenSM's log and the diagnostics' output.
- with SHARP: sharp_am.cfg and NVIDIA OpenSM's opensm-sharp.conf (gpufabric.ib.sharp).

Every value is checked on its way into a line (gpufabric.ib.names): a name, GUID or path that
would end the line, start a comment or read as the format's syntax is refused, never written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gpufabric.files import write_atomic
from gpufabric.ib import names, sharp
from gpufabric.ib.discovery import Discovery
from gpufabric.ib.discovery import check as check_discovery
from gpufabric.ib.errors import IbError, Problem
from gpufabric.ib.model import IbFabric
from gpufabric.intent.errors import printable

DEFAULT_PKEY = 0x7FFF
MTU_4096 = 5  # the IBTA encoding OpenSM's partition flags take
Engine = Literal["ftree", "updn", "minhop"]
ENGINES: tuple[Engine, ...] = ("updn", "ftree", "minhop")


@dataclass(frozen=True)
class Partition:
    name: str
    pkey: int
    hosts: tuple[str, ...]  # planned compute hosts: every adapter of each is a full member
    sl: int = 0
    ipoib: bool = True


@dataclass(frozen=True)
class SmSettings:
    # up/down with the plan's top tier as roots: on the SuperPOD 4-SU layout and after a leaf loses
    # a spine it spreads destinations evenly over a leaf's uplinks, where fat-tree routing does not
    # (measured with the real OpenSM; docs/infiniband.md, "Routing engine").
    routing_engine: Engine = "updn"
    partitions: tuple[Partition, ...] = ()
    sl2vl: tuple[int, ...] = tuple(range(8)) * 2  # SL n -> VL n for SL 0-7, SL 8-15 fold onto VL 0-7
    max_vls: int = 8
    priority_primary: int = 15
    priority_standby: int = 14
    sweep_interval: int = 10
    qos: bool = True  # SL-to-VL tables on every port; off, a subnet comes up 4x faster in ibsim
    extra: dict[str, str] = field(default_factory=dict)  # further opensm.conf options, as written
    # NVIDIA SHARP: sharp_am's configuration and NVIDIA OpenSM's option, in files of their own (gpufabric.ib.sharp)
    sharp: bool = False


def check(fabric: IbFabric, settings: SmSettings) -> None:
    """Partitions named once each and by the name pattern, with members that exist, PKeys in range
    and once each, SLs and the SL-to-VL table."""
    problems: list[Problem] = []
    hosts = set(fabric.hosts)
    seen: dict[int, str] = {DEFAULT_PKEY: "Default"}
    named: set[str] = set()
    if settings.routing_engine not in ENGINES:
        problems.append(
            Problem(
                "design.routing_engine",
                f"routing engine {str(settings.routing_engine)[:40]!r}",
                f"use one of {', '.join(ENGINES)}",
            )
        )
    for i, part in enumerate(settings.partitions):
        where = f"partitions[{i}] ({printable(part.name)[:40]})"
        try:
            names.partition_name(part.name, where)
        except IbError as exc:
            problems += exc.problems
        if part.name in named:
            problems.append(Problem(where, f"partition {part.name!r} is defined twice", "give each its own name"))
        named.add(part.name)
        if not 0x0001 <= part.pkey <= 0x7FFE:
            problems.append(
                Problem(
                    where, f"PKey 0x{part.pkey:x} out of range", "use 0x0001-0x7ffe (0x7fff is the default partition)"
                )
            )
        elif part.pkey in seen:
            problems.append(
                Problem(
                    where,
                    f"PKey 0x{part.pkey:04x} already used by {seen[part.pkey]}",
                    "give each partition its own PKey",
                )
            )
        else:
            seen[part.pkey] = part.name
        if not part.hosts:
            problems.append(Problem(where, "no members", "list the hosts of the tenant, or drop the partition"))
        unknown = sorted(set(part.hosts) - hosts)
        if unknown:
            problems.append(Problem(where, f"unplanned hosts {', '.join(unknown[:5])}", "use hosts of the plan"))
        if not 0 <= part.sl <= 15:
            problems.append(Problem(where, f"service level {part.sl}", "use 0-15"))
    if settings.sharp:
        try:
            sharp.check(fabric)
        except IbError as exc:
            problems += exc.problems
    if len(settings.sl2vl) != 16 or any(not 0 <= vl < settings.max_vls for vl in settings.sl2vl):
        problems.append(
            Problem("sl2vl", f"{list(settings.sl2vl)}", f"give 16 VLs, each below max_vls ({settings.max_vls})")
        )
    if problems:
        raise IbError(problems)


def render(
    fabric: IbFabric,
    found: Discovery,
    settings: SmSettings,
    directory: Path,
    role: Literal["primary", "standby"] = "primary",
) -> dict[str, str]:
    """File name -> text, for an SM whose files live in `directory`."""
    check(fabric, settings)
    sm = fabric.sm.primary if role == "primary" else fabric.sm.standby
    if sm is None:
        raise IbError([Problem("sm", "no standby planned", "plan a second fabric-manager or compute host")])
    names.fabric_name(fabric.design.name)
    check_discovery(found, fabric)  # another fabric's GUIDs would make its hosts members of this one's partitions
    files = {
        "opensm.conf": _opensm_conf(fabric, found, settings, directory, sm=sm, role=role),
        "partitions.conf": _partitions(fabric, found, settings),
        "qos-policy.conf": _qos_policy(settings),
        "root-guids.conf": _guids(found.nodes[n.name].node for n in fabric.roots),
        "cn-guids.conf": _guids(found.nodes[n.name].port for n in fabric.role("compute")),
        "node-name-map": _node_name_map(fabric, found),
    }
    if settings.sharp:
        # Apart from opensm.conf: the open-source OpenSM refuses `sharp_enabled`, NVIDIA's takes it.
        files.update(sharp.render(fabric, found, directory, sm))
    return files


def _node_name_map(fabric: IbFabric, found: Discovery) -> str:
    # `GUID "name"`: the reader takes the name up to the next double quote, and has no escape for one.
    return "".join(
        f'{names.guid(found.nodes[n.name].node, n.name)} "{names.node_description(n.name, "node-name-map")}"\n'
        for n in fabric.nodes
    )


def write(files: dict[str, str], directory: Path) -> None:
    """Each file written whole (OpenSM, started or re-read meanwhile, never sees half a file)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        write_atomic(directory / name, text)


def _guids(guids: Iterable[int]) -> str:
    return "".join(f"{names.guid(g, 'GUID file')}\n" for g in guids)


def _opensm_conf(fabric: IbFabric, found: Discovery, settings: SmSettings, d: Path, *, sm: str, role: str) -> str:
    sl2vl = ",".join(str(int(v)) for v in settings.sl2vl)
    d = Path(names.sm_path(d))
    options: list[tuple[str, object]] = [
        ("guid", names.guid(found.nodes[sm].port, sm)),
        ("sm_priority", settings.priority_primary if role == "primary" else settings.priority_standby),
        ("lmc", 0),
        ("sweep_interval", settings.sweep_interval),
        ("routing_engine", settings.routing_engine),
        ("root_guid_file", d / "root-guids.conf"),
        ("cn_guid_file", d / "cn-guids.conf"),
        ("partition_config_file", d / "partitions.conf"),
        ("no_partition_enforcement", "FALSE"),
        ("part_enforce", "both"),
        ("qos", "TRUE" if settings.qos else "FALSE"),
        ("qos_policy_file", d / "qos-policy.conf"),
        ("qos_max_vls", settings.max_vls),
        *((f"qos_{kind}_sl2vl", sl2vl) for kind in ("ca", "sw0", "swe", "rtr")),
        ("node_name_map_name", d / "node-name-map"),
        ("log_file", d / "opensm.log"),
        ("force_log_flush", "TRUE"),  # the log is read while OpenSM runs (SUBNET UP)
        ("dump_files_dir", d),
        ("per_module_logging_file", d / "per-module-logging.conf"),
        ("prefix_routes_file", d / "prefix-routes.conf"),
        ("torus_config", d / "torus-2QoS.conf"),
        *settings.extra.items(),
    ]
    names.node_description(sm, "opensm.conf")
    head = [
        f"# OpenSM for {names.fabric_name(fabric.design.name)}: {role} subnet manager on {sm!r}",
        f"# routing {settings.routing_engine} with the {fabric.roots[0].role} tier as roots; MTU 4096 per partition",
    ]
    return "\n".join([*head, *(" ".join(names.option(k, v)) for k, v in options)]) + "\n"


def _sm_ports(fabric: IbFabric, found: Discovery) -> list[int]:
    return [found.nodes[n].port for n in (fabric.sm.primary, fabric.sm.standby) if n]


def _partitions(fabric: IbFabric, found: Discovery, settings: SmSettings) -> str:
    if not settings.partitions:
        # No tenants: one cluster, every adapter a full member of the default partition (OpenSM's own
        # default); limited, no two adapters could talk at all.
        return (
            "# No tenant partitions: every adapter a full member of the default partition.\n"
            f"Default=0x{DEFAULT_PKEY:04x}, ipoib, mtu={MTU_4096}, defmember=full :"
            " ALL, ALL_SWITCHES=full, SELF=full ;\n"
        )
    sms = ", ".join(f"{names.guid(g, 'subnet manager port')}=full" for g in _sm_ports(fabric, found))
    out = [
        "# The default partition limited: adapters are limited members (they reach the SM and the",
        "# switches, not each other); switches and the subnet managers full members.",
        f"Default=0x{DEFAULT_PKEY:04x}, ipoib, mtu={MTU_4096}, defmember=limited :"
        + " ALL_CAS=limited, ALL_SWITCHES=full, SELF=full"
        + (f", {sms}" if sms else "")
        + " ;",
    ]
    ports: dict[str, list[str]] = {}  # host -> its adapter ports, once (not once per partition)
    for n in fabric.role("compute"):
        if n.host:
            ports.setdefault(n.host, []).append(f"{names.guid(found.nodes[n.name].port, n.name)}=full")
    order = {h: i for i, h in enumerate(ports)}
    for i, part in enumerate(settings.partitions):
        name = names.partition_name(part.name, f"partitions[{i}]")
        members = sorted(set(part.hosts) & ports.keys(), key=order.__getitem__)  # in plan order
        by_host = {h: ports[h] for h in members}
        flags = f", ipoib, mtu={MTU_4096}" if part.ipoib else ""
        out.append(f"# {name}: {len(by_host)} hosts, every adapter port a full member")
        # One host's ports per line: OpenSM reads this file a line at a time into a fixed buffer, and a
        # line of a large tenant's every port (thousands of GUIDs) fails to parse ("bad PortGUID"); a
        # definition runs on over lines until its ';'.
        lines = [", ".join(ports) for ports in by_host.values()]
        out.append(f"{name}=0x{part.pkey:04x}{flags}, defmember=full :")
        out += [f"    {line}{',' if i < len(lines) - 1 else ' ;'}" for i, line in enumerate(lines)]
    return "\n".join(out) + "\n"


def _qos_policy(settings: SmSettings) -> str:
    rules: Sequence[str] = [f"    any, pkey 0x{p.pkey:04x} : {p.sl}" for p in settings.partitions]
    return "\n".join(["qos-ulps", "    default : 0", *rules, "end-qos-ulps"]) + "\n"
