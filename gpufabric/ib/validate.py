"""Read-only checks of a live InfiniBand fabric against its plan, through the real diagnostics.

Each check runs a tool of infiniband-diags through `run` (on hardware: the tools themselves; in
the lab: the same tools on ibsim) and compares what it prints with the plan:

- sm: the master is the planned primary SM port (sminfo) and the standby answers as standby;
- nodes and cabling: ibnetdiscover finds every planned node and cable port for port and nothing
  else (a swapped cable is named at both ends, a cut one as missing); widths as planned;
- ports: every planned cable end Active/LinkUp (iblinkinfo) and every node with a LID;
- partitions: every compute port's PKey table holds exactly the default partition (limited) and
  the tenants its host is in (full), so a port outside a partition does not see it (smpquery);
- routes: per rail, between hosts of two SUs, ibtracert goes leaf, spine, leaf on that rail;
- counters: the error counters of every planned switch port within limits (perfquery).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor

from gpufabric.ib import counters, discovery, topology
from gpufabric.ib.errors import IbError
from gpufabric.ib.model import IbFabric
from gpufabric.ib.opensm import DEFAULT_PKEY, SmSettings
from gpufabric.ib.results import Result, Runner
from gpufabric.intent.errors import printable

# Diagnostics at once (ibsim serves ten clients, two of them the subnet managers).
PARALLEL_QUERIES = 4


_LINK = re.compile(r'^(0x[0-9a-f]+)\s+"\s*([^"]*)"\s+(\d+)\s+(\d+)\[[^\]]*\]\s+==\((.*?)\)==>', re.MULTILINE)


CHECKS = ("cabling", "ports", "sm", "partitions", "routes", "counters")


def validate(
    fabric: IbFabric, settings: SmSettings, run: Runner, *, rates: bool = True, checks: Collection[str] = CHECKS
) -> list[Result]:
    """The checks asked for (nodes and LIDs always); passed results are kept, so a green report
    says what was looked at."""
    seen = topology.parse(run(["ibnetdiscover"]), "ibnetdiscover")
    results = _cabling(fabric, seen, rates) if "cabling" in checks else []
    try:
        found = discovery.discover(fabric, seen)
    except IbError as exc:
        return results + [Result("nodes", p.message, "as planned", "differs", False) for p in exc.problems]
    results.append(Result("nodes", f"{len(fabric.nodes)} planned nodes", "found", "found", True))
    results += _lids(fabric, seen)
    if "ports" in checks:
        results += _ports(fabric, run(["iblinkinfo", "--line"]))
    if "sm" in checks:
        results += _sm(fabric, found, seen, run)
    if "partitions" in checks:
        results += _partitions(fabric, settings, seen, run)
    if "routes" in checks:
        results += _routes(fabric, seen, run)
    if "counters" in checks:
        try:
            results += counters.check(fabric, counters.read(fabric, seen, run))
        except IbError as exc:  # a switch that does not answer perfquery: the check fails, naming why
            results.append(Result("counters", "switch ports", "read", f"not read: {exc}"[:200], False))
    return results


def _cabling(fabric: IbFabric, seen: topology.Topology, rates: bool) -> list[Result]:
    diff = discovery.compare(fabric, seen, rates=rates)
    out = [Result("cabling", f"{a} - {b}", "cabled", "missing", False) for a, b in diff.missing]
    out += [Result("cabling", f"{a} - {b}", "not cabled", "cabled (unplanned)", False) for a, b in diff.unplanned]
    out += [Result("rate", f"{a} - {b}", want, got, False) for a, b, want, got in diff.rate]
    if not rates:  # the width still has to be as planned (ibsim's speeds are its own, its widths not)
        planned = {frozenset(c.ends()): c.rate.label for c in fabric.cables}
        for link in seen.links:
            want = planned.get(frozenset((link.a, link.b)))
            if want and link.rate and link.rate.split("x")[0] != want.split("x")[0]:
                out.append(Result("width", f"{link.a} - {link.b}", want, link.rate, False))
    if not out:
        out.append(Result("cabling", f"{len(fabric.cables)} planned cables", "as planned", "as planned", True))
    return out


def _lids(fabric: IbFabric, seen: topology.Topology) -> list[Result]:
    by = seen.by_name()
    missing = [n.name for n in fabric.nodes if not by[n.name].lid]
    if missing:
        return [Result("lid", name, "a LID", "none", False) for name in missing]
    return [Result("lid", f"{len(fabric.nodes)} nodes", "a LID each", "a LID each", True)]


def _ports(fabric: IbFabric, links: str) -> list[Result]:
    state = {(m[2].strip(), int(m[4])): " ".join(m[5].split()) for m in _LINK.finditer(links)}
    out = []
    for cable in fabric.cables:
        for end in (cable.down, cable.up):
            got = state.get((end.node, end.port), "not listed")
            if "Active/ LinkUp" not in got:
                out.append(Result("port", str(end), "Active/LinkUp", got, False))
    if not out:
        out.append(Result("port", f"{2 * len(fabric.cables)} planned ports", "Active/LinkUp", "Active/LinkUp", True))
    return out


def _sminfo(run: Runner, *args: str) -> str:
    """sminfo's answer, or what stands for none: an SM that does not answer within sminfo's MAD timeout (not
    running, or too busy to answer: the lab's OpenSM, starved of CPU during a sweep, once did) is a finding
    about the fabric, reported as such, not a failure of the command."""
    try:
        return run(["sminfo", *args])
    except IbError as exc:
        return f"no answer ({exc.problems[0].message[:120]})"


def _sm(fabric: IbFabric, found: discovery.Discovery, seen: topology.Topology, run: Runner) -> list[Result]:
    master = _sminfo(run)
    want = found.nodes[fabric.sm.primary].port
    ok = f"sm guid 0x{want:x}," in master and "SMINFO_MASTER" in master
    out = [Result("sm", f"master {fabric.sm.primary}", f"0x{want:x} MASTER", master.strip(), ok)]
    if fabric.sm.standby:
        lid = seen.by_name()[fabric.sm.standby].lid
        standby = _sminfo(run, str(lid)) if lid else "no LID"  # no answer: the standby is not running
        out.append(
            Result("sm", f"standby {fabric.sm.standby}", "STANDBY", standby.strip(), "SMINFO_STANDBY" in standby)
        )
    return out


NO_ANSWER = "no answer to smpquery"


def _pkey_tables(run: Runner, lids: dict[str, int]) -> dict[str, set[str]]:
    """Node description -> the PKeys in its port's table, one SMP per port (smpquery pkeys), four
    at a time. (OpenSM's SA answers a PKeyTableRecord table query for one switch only.)"""

    def table(lid: int) -> set[str]:
        try:
            return set(re.findall(r"0x[0-9a-f]{4}", run(["smpquery", "pkeys", str(lid)]))) - {"0x0000"}
        except IbError:  # the port did not answer (down, or its LID moved since the discovery): named below
            return {NO_ANSWER}

    with ThreadPoolExecutor(max_workers=PARALLEL_QUERIES) as pool:
        return dict(zip(lids, pool.map(table, lids.values()), strict=True))


def _partitions(fabric: IbFabric, settings: SmSettings, seen: topology.Topology, run: Runner) -> list[Result]:
    by = seen.by_name()
    compute = fabric.role("compute")
    tables = _pkey_tables(run, {n.name: by[n.name].lid or 0 for n in compute})
    out = []
    # The subnet managers' ports are full members of the default partition (partitions.conf: the SM's
    # own port and the planned SM ports `=full`): 0xffff where every other adapter holds 0x7fff.
    # Without tenant partitions every adapter is a full member of the default partition.
    sm_ports = {fabric.sm.primary, fabric.sm.standby}
    for node in compute:
        full = node.name in sm_ports or not settings.partitions
        default = DEFAULT_PKEY | (0x8000 if full else 0)
        want = {f"0x{default:04x}"} | {
            f"0x{0x8000 | p.pkey:04x}" for p in settings.partitions if node.host in set(p.hosts)
        }
        got = tables[node.name]
        if got != want:
            out.append(Result("partition", node.name, " ".join(sorted(want)), " ".join(sorted(got)), False))
    if not out:
        out.append(Result("partition", f"{len(compute)} compute ports", "PKeys as planned", "PKeys as planned", True))
    return out


def _routes(fabric: IbFabric, seen: topology.Topology, run: Runner) -> list[Result]:
    """Per rail: the first host of SU 1 to the first host of the last SU, through that rail's leaves."""
    if fabric.design.su_count < 2:
        return []
    by = seen.by_name()
    out = []
    first = [n for n in fabric.role("compute") if n.su == 1]
    last = [n for n in fabric.role("compute") if n.su == fabric.design.su_count]
    for rail in range(1, fabric.design.rails + 1):
        src = next(n for n in first if n.rail == rail)
        dst = next(n for n in last if n.rail == rail)
        want = [f"su1-leaf{rail}", "spine", f"su{fabric.design.su_count}-leaf{rail}"]
        try:
            route = run(["ibtracert", str(by[src.name].lid), str(by[dst.name].lid)])
        except IbError as exc:  # no route (a port down on the way): a failed check, the others still run
            item = f"rail {rail}: {src.name} -> {dst.name}"
            out.append(Result("route", item, " -> ".join(want), f"no route: {exc}"[:200], False))
            continue
        hops = re.findall(r'-> switch port \{[^}]*\}\[\d+\] lid \d+-\d+ "([^"]+)"', route)
        want = [f"su1-leaf{rail}", "spine", f"su{fabric.design.su_count}-leaf{rail}"]
        ends = bool(hops) and hops[0] == want[0] and hops[-1] == want[2]
        middle = fabric.by_name.get(hops[1]) if len(hops) == 3 else None  # a hop the plan has not: no spine of it
        ok = ends and middle is not None and middle.role == "spine"
        if fabric.tiers == 3:  # same rail, other block of SUs: up to the core and back down
            ok = ends and len(hops) in (3, 5)
        out.append(Result("route", f"rail {rail}: {src.name} -> {dst.name}", " -> ".join(want), " -> ".join(hops), ok))
    return out


def render_table(results: list[Result], show_all: bool = False) -> str:
    """One line per result. Item and observed values come from the fabric's tools: control characters
    are written as escapes, so no value can end a line or repaint the terminal's view of the table."""
    rows = [r for r in results if show_all or not r.ok] or results
    lines = [f"{'check':10} {'verdict':7} {'item':52} expected / observed"]
    for r in rows:
        verdict = "ok" if r.ok else "FAIL"
        observed = printable(r.observed.replace("\n", " "))[:80]
        item = printable(r.item)[:52]
        lines.append(f"{r.check:10} {verdict:7} {item:52} {printable(r.expected)} / {observed}")
    failed = sum(not r.ok for r in results)
    lines.append(f"{len(results)} results, {failed} failed")
    return "\n".join(lines) + "\n"
