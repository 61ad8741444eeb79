"""The scheduler before a switch: take the servers that depend on it out, wait for their work to
leave, and later put back exactly the nodes gpufabric took out.

`drain_for` is what a push, a maintenance or a restart calls before a disruptive change of a switch;
`drain_nodes` is the same for a list of nodes (the remediation loop names nodes, not switches);
`resume` undoes one drain; `status` lists every node that carries a gpufabric mark (the drains a
crashed controller left behind) and `resume_owner` puts those of one owner back.

The rules, in every scheduler:
- a node that is already out (a person drained or cordoned it, or another push did) is not ours:
  it is left as it is and never put back by us, but its work is still waited for, since the
  change would hurt it all the same;
- the wait is bounded: when it runs out the drain is refused (`refused`, and every node we took out
  is put back before returning: nothing changed), unless the caller forces it (`forced`, said
  loudly to the watcher);
- a node is put back only while it still carries our exact mark: one a person re-drained meanwhile
  (another reason) stays out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from gpufabric.errors import printable
from gpufabric.plan.model import Plan
from gpufabric.scheduler.behind import BehindServer, servers_behind
from gpufabric.scheduler.model import Mark, NodeDrain, NodeState, Quiet, Scheduler, SchedulerDrain, Watcher

POLL = 2.0  # seconds between two looks at what still holds the nodes


BehindOf = Callable[[str], list[BehindServer]]  # a switch -> the servers behind it (a behind.Behind)


def nodes_behind(plan: Plan, switches: Sequence[str], behind: BehindOf | None = None) -> dict[str, list[str]]:
    """Server -> the switches of `switches` it depends on alone, in plan order. `behind`: the plan's
    `behind.Behind`, when the caller keeps one (each plane read once for many switches)."""
    out: dict[str, list[str]] = {}
    order = {s.name: i for i, s in enumerate(plan.servers)}
    for switch in switches:
        for server in behind(switch) if behind is not None else servers_behind(plan, switch):
            out.setdefault(server.name, []).append(switch)
    return dict(sorted(out.items(), key=lambda item: order[item[0]]))


def drain_for(
    scheduler: Scheduler,
    plan: Plan,
    switches: str | Sequence[str],
    push_id: str,
    job_wait: float,
    *,
    force: bool = False,
    watcher: Watcher | None = None,
    poll: float = POLL,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    behind: BehindOf | None = None,
) -> SchedulerDrain:
    """Take out the servers behind `switches` (one switch, or a batch's) before they change. `behind`: as
    `nodes_behind`'s."""
    names = [switches] if isinstance(switches, str) else list(switches)
    found = nodes_behind(plan, names, behind)
    mark = Mark(push_id, ",".join(names))
    return drain_nodes(
        scheduler, list(found), mark, job_wait, force=force, watcher=watcher, poll=poll, clock=clock, sleep=sleep
    )


def drain_nodes(
    scheduler: Scheduler,
    nodes: Iterable[str],
    mark: Mark,
    job_wait: float | None,
    *,
    force: bool = False,
    watcher: Watcher | None = None,
    poll: float = POLL,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> SchedulerDrain:
    """Take `nodes` out under `mark`, then wait up to `job_wait` seconds for what runs there to leave
    (0: look once and refuse if anything runs; None: do not look, as a remediation that only keeps new
    work away from a failing node)."""
    seen = watcher or Quiet()
    wanted = list(dict.fromkeys(nodes))
    result = SchedulerDrain(scheduler.kind, mark)
    states = scheduler.nodes(wanted)
    result.unknown = [n for n in wanted if n not in states]
    if result.unknown:
        seen.say(f"{scheduler.kind}: not in the scheduler, left alone: {', '.join(result.unknown)}")
    for name in (n for n in wanted if n in states):
        state = states[name]
        if state.out:
            result.nodes.append(NodeDrain(name, False, state.reason))
            # The reason is a person's text: escaped (a scheduler's reader keeps it so too), never a terminal's command.
            said = printable(state.reason) or "no reason"
            seen.say(f"{scheduler.kind}: {name} was out already ({said}): left as it is")
            continue
        try:
            scheduler.take_out(name, mark)
        except BaseException:
            _undo(scheduler, result, seen)  # a failure half-way leaves nothing of ours behind
            raise
        result.nodes.append(NodeDrain(name, True))
        seen.say(f"{scheduler.kind}: {name} taken out: {mark.text}")
    if job_wait is None or not result.nodes:
        return result
    _wait(scheduler, result, job_wait, seen=seen, poll=poll, clock=clock, sleep=sleep)
    if result.holding and not force:
        result.refused = True
        seen.warn(
            f"{scheduler.kind}: still running after {job_wait:.0f} s: {_holding(result.holding)}; "
            "refused: nothing changes, and the nodes gpufabric took out are put back"
        )
        _undo(scheduler, result, seen)
    elif result.holding:
        result.forced = True
        seen.warn(
            f"FORCED: {scheduler.kind}: the change goes ahead while {_holding(result.holding)} still run "
            "on nodes behind it: they will see the switch go"
        )
    return result


def _holding(holding: dict[str, tuple[str, ...]]) -> str:
    return "; ".join(f"{node}: {', '.join(what)}" for node, what in holding.items())


def _wait(
    scheduler: Scheduler,
    result: SchedulerDrain,
    job_wait: float,
    *,
    seen: Watcher,
    poll: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> None:
    names = [n.node for n in result.nodes]
    start = clock()
    said: set[str] = set()
    while True:
        states = scheduler.nodes(names)
        busy = {name: s.holders for name, s in states.items() if s.holders}
        result.holding = busy
        result.waited = clock() - start
        if not busy:
            seen.say(f"{scheduler.kind}: nothing runs on {len(names)} node(s) behind the change any more")
            return
        for line in scheduler.move({name: states[name] for name in busy}):
            if line not in said:
                said.add(line)
                result.notes.append(line)
                seen.say(f"{scheduler.kind}: {line}")
        if result.waited >= job_wait:
            return
        sleep(min(poll, max(0.0, job_wait - result.waited)))


def _undo(scheduler: Scheduler, result: SchedulerDrain, seen: Watcher) -> None:
    for name in result.ours:
        if name in result.resumed or name in result.kept:
            continue
        if scheduler.put_back(name, result.mark):
            result.resumed.append(name)
            seen.say(f"{scheduler.kind}: {name} put back")
        else:
            result.kept.append(name)
            seen.warn(f"{scheduler.kind}: {name} no longer carries {result.mark.text!r}: left out, as someone set it")


def resume(scheduler: Scheduler, drain: SchedulerDrain, watcher: Watcher | None = None) -> SchedulerDrain:
    """Put back the nodes `drain` took out (and only those still carrying its mark); returns `drain`
    with `resumed` and `kept` filled in."""
    _undo(scheduler, drain, watcher or Quiet())
    return drain


def status(scheduler: Scheduler) -> list[tuple[NodeState, Mark]]:
    """Every node carrying a gpufabric mark, with the mark: what a crashed controller left out."""
    out = []
    for state in scheduler.marked():
        mark = state.mark
        if mark is not None:
            out.append((state, mark))
    return out


def resume_owner(scheduler: Scheduler, owner: str, watcher: Watcher | None = None) -> list[SchedulerDrain]:
    """Put back every node whose mark names `owner` (a crashed push's drains), one drain per mark."""
    drains: dict[Mark, SchedulerDrain] = {}
    for state, mark in status(scheduler):
        if mark.owner == owner:
            drain = drains.setdefault(mark, SchedulerDrain(scheduler.kind, mark))
            drain.nodes.append(NodeDrain(state.name, True))
    for drain in drains.values():
        resume(scheduler, drain, watcher)
    return list(drains.values())
