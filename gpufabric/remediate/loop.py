"""The loop: an alert's nodes out of the schedulers while it fires, back in once it has stayed
resolved for the hold-down, within the blast-radius guards.

- A node is taken out under the mark `gpufabric remediate: <alert>@<part>` (gpufabric.scheduler's
  `drain_nodes`, not waiting for jobs: running work goes on, new work keeps away). A node that is out
  already (a person's drain, a push's) is not ours and is never put back by the loop.
- Several alerts may hold one node: it is put back when the last of them has stayed resolved for the
  hold-down. An alert that fires again within its hold-down keeps its nodes out (a flapping signal does
  not flap the node).
- The guards: the nodes out (by anyone) may not pass `max_share` of the plan's servers, nor
  `max_unit_share` of any scalable unit's, each at least one node. Past a cap the loop takes out no
  more: the alert is recorded as capped, for a person.
- `dry_run`: everything is decided and written to the trail, nothing is asked of a scheduler.
- The state (which alert holds which node, under which mark) is a record file written whole after
  every change, read back at start and checked field by field (record.py): a restarted receiver still
  resumes what it drained.
- Record before acting: a drain's or resume's intent goes to the trail, fsynced (trail.py), and a
  drain's nodes to the record, before any scheduler is asked; the outcome follows. A trail or record
  that cannot be written is a TrailError, raised before anything is asked of a scheduler.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.files import PRIVATE, write_atomic
from gpufabric.outputs import json_dumps
from gpufabric.owned_files import owned_dir
from gpufabric.plan.model import Plan
from gpufabric.remediate.payload import Alert
from gpufabric.remediate.record import OWNER, VERSION, Held, Out, read_record
from gpufabric.remediate.targets import Target, target_of
from gpufabric.remediate.trail import Trail, TrailError
from gpufabric.scheduler import Mark, Scheduler, SchedulerError, drain_nodes
from gpufabric.scheduler.model import SUBJECT


class RemediateError(GpufabricError):
    """The loop cannot keep its record or trail, or its settings are wrong: the message says which."""


@dataclass(frozen=True)
class Guards:
    max_share: float = 0.05  # of the plan's servers, out at once
    max_unit_share: float = 0.25  # of one scalable unit's servers
    hold_down: float = 600.0  # seconds an alert stays resolved before its nodes go back
    dry_run: bool = False

    def __post_init__(self) -> None:
        for name in ("max_share", "max_unit_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise RemediateError(f"{name}: a share between 0 and 1, not {value}")
        if self.hold_down < 0:
            raise RemediateError("hold_down: seconds, not negative")


@dataclass(frozen=True)
class Action:
    """One thing the loop did (or, dry, would do), as the trail records it."""

    # drain | resume | capped | kept | held | ignored | failed; `intent` before a drain or a resume (the
    # trail only), `start` when the receiver starts
    action: str
    alert: dict[str, Any]
    part: str = ""
    nodes: tuple[str, ...] = ()
    scheduler: str = ""
    detail: str = ""
    dry_run: bool = False

    def line(self) -> str:
        what = f"{self.action}{' (dry run)' if self.dry_run else ''}"
        nodes = f" {', '.join(self.nodes)}" if self.nodes else ""
        where = f" [{self.scheduler}]" if self.scheduler else ""
        return f"{what}{where}{nodes}: {self.alert.get('name', '?')} {self.part}: {self.detail}".rstrip(": ")


def _record_folder_error(why: str) -> TrailError:
    return TrailError(f"{why}; or choose another file with --state")


def _now_text(clock: float) -> str:
    return datetime.fromtimestamp(clock, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _mark(alert: str, target: Target) -> Mark:
    """`<alert>@<cable>,<part>` for a part at a cable's end (the cable's label, then the end's place), else
    `<alert>@<part>`: what Slurm's reason and Kubernetes' annotation show a person."""
    part = f"{target.cable},{target.part}" if target.cable else target.part
    for subject in (f"{alert}@{part}", f"{alert}@{target.part}", target.part):
        if SUBJECT.fullmatch(subject):
            return Mark(OWNER, subject)
    return Mark(OWNER, alert)


class Remediator:
    """The loop's decisions, one notification (`handle`) or one look at the hold-downs (`tick`) at a time.
    Not thread-safe: the receiver calls it under one lock."""

    def __init__(
        self,
        plan: Plan,
        schedulers: Sequence[Scheduler],
        guards: Guards,
        *,
        state_path: Path,
        audit_path: Path,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.plan = plan
        self.schedulers = list(schedulers)
        self.guards = guards
        self.state_path = state_path
        self.audit_path = audit_path
        self.clock = clock
        self.held: dict[str, Held] = {}
        self.out: dict[str, Out] = {}
        self._units: dict[str, list[tuple[str, int]]] = {s.name: sorted(s.units.items()) for s in plan.servers}
        self.trail = Trail(audit_path)
        self.trail.check()  # TrailError: a loop that could not record what it does is never made
        # The record's folder as the trail's: no one else may plant a record (or a link) for the loop to read.
        owned_dir(state_path.parent, os.geteuid(), "the folder of the remediation record", _record_folder_error)
        self._load()

    # -- the record file and the trail -----------------------------------------------------------
    def _load(self) -> None:
        if os.path.lexists(self.state_path):  # a link there (dangling or not) is read, and refused, too
            self.held, self.out = read_record(self.state_path, self.clock())

    def _save(self) -> None:
        data = {
            "version": VERSION,
            "held": {k: vars(v) for k, v in self.held.items()},
            "out": {k: vars(v) for k, v in self.out.items()},
        }
        try:
            write_atomic(self.state_path, json_dumps(data, indent=1) + "\n", mode=PRIVATE)
        except OSError as exc:
            raise TrailError(
                f"the remediation record {self.state_path} cannot be written: {exc.strerror or exc}; the loop acts "
                "only when it can record what it holds (choose another file with --state)"
            ) from None

    def _trail(self, action: Action) -> Action:
        record = {"time": _now_text(self.clock()), "owner": OWNER, **vars(action), "nodes": list(action.nodes)}
        self.trail.append(json_dumps(record) + "\n")  # TrailError: the caller acts on nothing more
        return action

    def start(self) -> None:
        """Write the trail's first line of this run and the record whole: a receiver that cannot keep
        either does not start (TrailError). The trail's file was checked when the loop was made."""
        held = sorted({n for h in self.held.values() for n in h.nodes})
        detail = f"holds {', '.join(held)}" if held else "holds no node"
        self._trail(Action("start", {}, detail=f"{detail}; hold-down {self.guards.hold_down:g} s"))
        self._save()

    # -- the guards ------------------------------------------------------------------------------
    def _out_now(self) -> set[str]:
        """The plan's servers out in any scheduler, by anyone, and those the loop holds (dry ones too)."""
        names = [s.name for s in self.plan.servers]
        out = set(self.out)
        for scheduler in self.schedulers:
            out |= {name for name, state in scheduler.nodes(names).items() if state.out}
        return out

    def _room(self, node: str, out: set[str]) -> str:
        """'' when `node` may go out with `out` already out; else which cap it would pass."""
        total = len(self.plan.servers)
        cap = max(1, math.floor(self.guards.max_share * total))
        if len(out) + 1 > cap:
            return f"the cluster cap: {len(out)} of {total} servers out, at most {cap} ({self.guards.max_share:g})"
        for plane, unit in self._units.get(node, []):
            members = [s for s, units in self._units.items() if (plane, unit) in units]
            cap = max(1, math.floor(self.guards.max_unit_share * len(members)))
            already = sum(1 for s in members if s in out)
            if already + 1 > cap:
                return (
                    f"the unit cap of {plane} unit {unit}: {already} of {len(members)} out, at most {cap} "
                    f"({self.guards.max_unit_share:g})"
                )
        return ""

    # -- notifications ---------------------------------------------------------------------------
    def handle(self, alerts: Sequence[Alert]) -> list[Action]:
        """Act on one notification's alerts; then look at the hold-downs."""
        actions: list[Action] = []
        for alert in alerts:
            target = target_of(self.plan, alert.labels)
            if target is None:
                actions.append(self._trail(Action("ignored", alert.record(), detail="not an alert the loop acts on")))
            elif alert.status == "firing":
                actions += self._firing(alert, target)
            else:
                actions += self._resolved(alert, target)
        actions += self.tick()
        return actions

    def _firing(self, alert: Alert, target: Target) -> list[Action]:
        record = alert.record()
        if not target.nodes:
            return [self._trail(Action("ignored", record, target.part, detail=target.why))]
        held = self.held.get(alert.key)
        if held is not None:
            if held.resolved_at is not None:
                held.resolved_at = None
                self._save()
                return [
                    self._trail(
                        Action(
                            "held",
                            record,
                            held.part,
                            tuple(held.nodes),
                            detail="fires again within its hold-down: its nodes stay out",
                        )
                    )
                ]
            wanted = [n for n in target.nodes if n not in held.nodes]
            if not wanted:
                return []  # a repeat of a notification already acted on
        else:
            held = Held(record, target.part, [])
            wanted = list(target.nodes)
        actions: list[Action] = []
        mark = _mark(alert.name, target)
        out = self._out_now()
        allowed: list[str] = []
        for node in wanted:
            if node in self.out:  # already ours, for another alert: hold it too
                self.out[node].holders.append(alert.key)
                held.nodes.append(node)
                actions.append(
                    self._trail(
                        Action(
                            "held",
                            record,
                            target.part,
                            (node,),
                            detail=f"out already for another alert ({self.out[node].mark!r}): this one holds it too",
                        )
                    )
                )
                continue
            if node in out:
                actions.append(
                    self._trail(
                        Action(
                            "kept",
                            record,
                            target.part,
                            (node,),
                            detail="out already, not by the loop: left as it is, never put back by it",
                        )
                    )
                )
                continue
            why = self._room(node, out | set(allowed))
            if why:
                actions.append(
                    self._trail(
                        Action(
                            "capped", record, target.part, (node,), detail=f"not taken out: {why}; waiting for a person"
                        )
                    )
                )
                continue
            allowed.append(node)
        if allowed:
            actions += self._take_out(alert, record, target, mark=mark, nodes=allowed, held=held)
        if held.nodes:
            self.held[alert.key] = held
        self._save()
        return actions

    def _take_out(
        self, alert: Alert, record: dict[str, Any], target: Target, *, mark: Mark, nodes: list[str], held: Held
    ) -> list[Action]:
        actions: list[Action] = []
        ours: dict[str, list[str]] = {n: [] for n in nodes}
        others: set[str] = set()
        if self.guards.dry_run:
            actions.append(
                self._trail(
                    Action(
                        "drain", record, target.part, tuple(nodes), detail=f"{mark.text!r}; {target.why}", dry_run=True
                    )
                )
            )
        else:
            self._intend(alert.key, record, target, mark=mark, nodes=nodes, held=held)
            for scheduler in self.schedulers:
                try:
                    result = drain_nodes(scheduler, nodes, mark, None)
                except SchedulerError as exc:
                    actions.append(
                        self._trail(Action("failed", record, target.part, tuple(nodes), scheduler.kind, str(exc)))
                    )
                    continue
                for drain in result.nodes:
                    if drain.ours:
                        ours[drain.node].append(scheduler.kind)
                    else:
                        others.add(drain.node)
                        actions.append(
                            self._trail(
                                Action(
                                    "kept",
                                    record,
                                    target.part,
                                    (drain.node,),
                                    scheduler.kind,
                                    f"out already ({drain.before or 'no reason'}): never put back by the loop",
                                )
                            )
                        )
                taken = tuple(n.node for n in result.nodes if n.ours)
                if taken:
                    actions.append(
                        self._trail(
                            Action("drain", record, target.part, taken, scheduler.kind, f"{mark.text!r}; {target.why}")
                        )
                    )
        for node in nodes:  # what was done, in place of what was intended
            if ours[node] or self.guards.dry_run:
                self.out[node] = Out(mark.text, ours[node], [alert.key], self.guards.dry_run)
                if node not in held.nodes:
                    held.nodes.append(node)
            else:
                self.out.pop(node, None)
                if node in held.nodes:
                    held.nodes.remove(node)
        if not held.nodes:
            self.held.pop(alert.key, None)
        return actions

    def _intend(
        self, key: str, record: dict[str, Any], target: Target, *, mark: Mark, nodes: list[str], held: Held
    ) -> None:
        """Before any scheduler is asked: the intent on the trail, then the record as if every scheduler
        took every node out. A crash after the drain then still finds the nodes at restart, and puts back
        only where the scheduler shows exactly this mark. Nothing written, nothing drained (TrailError)."""
        kinds = [s.kind for s in self.schedulers]
        self._trail(
            Action(
                "intent",
                record,
                target.part,
                tuple(nodes),
                ", ".join(kinds),
                f"about to drain under {mark.text!r}: {target.why}",
            )
        )
        before = list(held.nodes), key in self.held
        for node in nodes:
            self.out[node] = Out(mark.text, list(kinds), [key], False)
            held.nodes.append(node)
        self.held[key] = held
        try:
            self._save()
        except TrailError:
            for node in nodes:
                self.out.pop(node, None)
            held.nodes = before[0]
            if not before[1]:
                del self.held[key]
            raise

    def _resolved(self, alert: Alert, target: Target) -> list[Action]:
        held = self.held.get(alert.key)
        if held is None:
            return [self._trail(Action("ignored", alert.record(), target.part, detail="resolved: it held no node"))]
        if held.resolved_at is None:
            held.resolved_at = self.clock()
            self._save()
            return [
                self._trail(
                    Action(
                        "held",
                        alert.record(),
                        held.part,
                        tuple(held.nodes),
                        detail=f"resolved: its nodes go back after {self.guards.hold_down:g} s resolved",
                    )
                )
            ]
        return []

    def tick(self) -> list[Action]:
        """Put back the nodes whose every holding alert has stayed resolved for the hold-down."""
        now = self.clock()
        done = [
            k
            for k, h in self.held.items()
            if h.resolved_at is not None and now - h.resolved_at >= self.guards.hold_down
        ]
        if not done:
            return []
        actions: list[Action] = []
        for key in done:
            held = self.held[key]
            left: list[str] = []  # nodes a scheduler failed to put back: the alert holds them until it can
            for node in held.nodes:
                out = self.out.get(node)
                if out is None:
                    continue
                others = [k for k in out.holders if k != key]
                if others:  # another alert still holds it
                    out.holders = others
                    continue
                actions += self._put_back(held, node, out)
                if out.ours:
                    left.append(node)
                else:
                    del self.out[node]
            if left:
                held.nodes = left
            else:
                del self.held[key]
        self._save()
        return actions

    def _put_back(self, held: Held, node: str, out: Out) -> list[Action]:
        mark = Mark.parse(out.mark)
        if out.dry or mark is None:
            return [
                self._trail(
                    Action(
                        "resume",
                        held.alert,
                        held.part,
                        (node,),
                        detail=f"resolved for {self.guards.hold_down:g} s",
                        dry_run=True,
                    )
                )
            ]
        actions = []
        self._trail(
            Action(
                "intent",
                held.alert,
                held.part,
                (node,),
                ", ".join(out.ours),
                f"about to put back from {out.mark!r}: resolved for {self.guards.hold_down:g} s",
            )
        )  # TrailError: nothing is put back unrecorded
        for scheduler in self.schedulers:
            if scheduler.kind not in out.ours:
                continue
            try:
                back = scheduler.put_back(node, mark)
            except SchedulerError as exc:
                actions.append(self._trail(Action("failed", held.alert, held.part, (node,), scheduler.kind, str(exc))))
                continue  # still ours in that scheduler: tried again at the next look
            out.ours = [kind for kind in out.ours if kind != scheduler.kind]
            if back:
                actions.append(
                    self._trail(
                        Action(
                            "resume",
                            held.alert,
                            held.part,
                            (node,),
                            scheduler.kind,
                            f"resolved for {self.guards.hold_down:g} s",
                        )
                    )
                )
            else:
                actions.append(
                    self._trail(
                        Action(
                            "kept",
                            held.alert,
                            held.part,
                            (node,),
                            scheduler.kind,
                            f"no longer carries {out.mark!r}: someone changed it, left out",
                        )
                    )
                )
        return actions
