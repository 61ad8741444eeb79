"""Around a change that takes switches out of service (a push's disruptive change, a restart, an upgrade).

Before the change, for one batch of switches:
1. the servers that depend on one of them alone (a rail leaf's, a storage leaf's without an MLAG pair:
   gpufabric/scheduler/behind.py) are taken out of the schedulers the intent or the command line names,
   and their jobs are waited for, up to the job wait. When jobs still run then, the change is refused
   (the nodes gpufabric took out are put back, no switch is touched) unless the caller forces it;
2. the switches are drained with their OS's mechanism (the maintenance tasks), and the fabric is waited
   on until the traffic has left them (gpufabric/maintenance/wait.py: the neighbours route around them,
   their fabric ports carry near nothing), bounded by a timeout. A drain that fails, or traffic that does
   not leave in time, undoes the batch's drains and refuses the change.

After the change: the switches are undrained, the plan's ECMP widths waited back, and then the scheduler
drains made for them are undone (only the nodes gpufabric took out, and only while they carry its mark).

Each step is a record in the audit trail (`Trail.event`): the scheduler's drains and resumes, the
switches' drains and undrains. The same `AroundChange` answers a push's `Drainer` (`PushDrainer`) and a
restart's or upgrade's (`RollDrainer`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from nornir.core import Nornir

from gpufabric.fleet.connect import switch_connector
from gpufabric.fleet.push_id import PushId
from gpufabric.fleet.target import Fleet
from gpufabric.maintenance.service import Settle, drain_switches, ecmp_caps, undrain_switches
from gpufabric.maintenance.wait import wait_drained
from gpufabric.push.audit import Trail
from gpufabric.scheduler import (
    Behind,
    Reach,
    Scheduler,
    SchedulerDrain,
    SchedulerError,
    Watcher,
    drain_for,
    job_wait,
    resume,
    schedulers,
)
from gpufabric.scheduler.model import Quiet


@dataclass(frozen=True)
class SchedulerPolicy:
    """Which schedulers to tell, how long to wait for their jobs, and whether to go on when they still run."""

    schedulers: tuple[Scheduler, ...] = ()
    job_wait: float = 3600.0
    force: bool = False

    @classmethod
    def of(cls, fleet: Fleet, reach: Reach | None, force: bool = False) -> SchedulerPolicy:
        """The intent's `scheduler:` section, overridden by what the command line says (`reach`)."""
        return cls(tuple(schedulers(fleet.plan, reach)), job_wait(fleet.plan, reach), force)


@dataclass
class _Held:
    switches: set[str]  # the batch's switches not yet back in service
    drains: list[tuple[Scheduler, SchedulerDrain]]


@dataclass
class AroundChange:
    """Takes a batch's switches (and the servers behind them) out of service and puts them back."""

    fleet: Fleet
    ident: PushId
    settle: Settle = field(default_factory=Settle)
    policy: SchedulerPolicy = field(default_factory=SchedulerPolicy)
    trail: Trail | None = None
    watcher: Watcher = field(default_factory=Quiet)
    held: list[_Held] = field(default_factory=list)
    _behind: Behind | None = field(default=None, init=False, repr=False)

    @property
    def behind(self) -> Behind:
        """The servers behind each switch, the plan read once for the whole change (not once a switch)."""
        if self._behind is None:
            self._behind = Behind(self.fleet.plan)
        return self._behind

    @property
    def by(self) -> str | None:
        if self.trail is None:
            return None
        who = self.trail.who
        return f"{who.sudo_user or who.os_user}@{self.ident.controller}"

    def _event(self, subject: str, status: str, reason: str = "", **extra: object) -> None:
        if self.trail is not None:
            self.trail.event(subject, status, reason, **extra)

    def take(self, names: Sequence[str], reasons: Mapping[str, str]) -> dict[str, str]:
        """Take the batch out of service. {} when done; else every name with why nothing was changed."""
        names = list(names)
        drains, refused = self._schedulers_out(names)
        if refused:
            return dict.fromkeys(names, refused)
        failed: dict[str, str] = {}
        by_reason: dict[str, list[str]] = {}
        for name in names:
            by_reason.setdefault(reasons.get(name, ""), []).append(name)
        for reason, group in by_reason.items():
            found = drain_switches(self.fleet, group, self.ident, reason=reason, by=self.by, settle=Settle(wait=False),
                                   read_before=False)  # fmt: skip
            for s in found.switches:
                if s.failed:
                    failed[s.device] = s.error or str(s.state.get("note") or "") or "not drained"
                else:
                    self._event(s.device, "drained", reason, mechanism=s.state.get("mechanism"))
        if failed:
            first = next(iter(failed))
            self._back(names, drains)
            return {n: failed.get(n, f"not changed: {first} could not be drained") + "; nothing was changed"
                    for n in names}  # fmt: skip
        if self.settle.wait:
            self.watcher.say(f"waiting up to {self.settle.timeout:g} s for the traffic to leave {', '.join(names)}")
            waited = wait_drained(
                self.fleet.plan, names, switch_connector(self.fleet.access), ecmp_caps(self.fleet, names),
                timeout=self.settle.timeout, max_rate=self.settle.max_rate,
                terminating=[n for n in names if self.behind(n)],
            )  # fmt: skip
            self._event(",".join(names), "traffic-left" if waited.done else "traffic-stayed",
                        "; ".join(waited.waiting_for[:5]), seconds=round(waited.seconds, 2))  # fmt: skip
            if not waited.done:
                self._back(names, drains)
                held = ", ".join(waited.waiting_for[:3])
                why = f"the traffic did not leave within {self.settle.timeout:g} s ({held}); nothing was changed"
                return dict.fromkeys(names, why)
            self.watcher.say(f"the traffic left {', '.join(names)} in {waited.seconds:.1f} s")
        self.held.append(_Held(set(names), drains))
        return {}

    def give_back(self, names: Sequence[str]) -> dict[str, str]:
        """Put the switches back in service; the servers behind a batch go back once all its switches are.
        {} when done; else the names still out, with why."""
        names = list(names)
        found = undrain_switches(self.fleet, names, self.ident, settle=self.settle, read_before=False)
        failed = {s.device: s.error or "still drained" for s in found.switches if s.failed}
        if found.wait is not None and not found.wait.done:
            held = ", ".join(found.wait.waiting_for[:3])
            for name in names:
                failed.setdefault(name, f"the planned ECMP widths did not come back within {self.settle.timeout:g} s "
                                        f"({held})")  # fmt: skip
        for s in found.switches:
            held_by = s.state.get("held_by")
            word = "failed-undrain" if s.device in failed else ("held" if held_by else "undrained")
            self._event(s.device, word, failed.get(s.device, "") or str(held_by or ""))
        back = set(names) - set(failed)
        for entry in list(self.held):
            entry.switches -= back
            if not entry.switches:
                self.held.remove(entry)
                self._resume(entry.drains)
        return failed

    def _schedulers_out(self, names: list[str]) -> tuple[list[tuple[Scheduler, SchedulerDrain]], str]:
        """The servers behind `names`, out of every scheduler named; ([], why) when refused (nothing changed)."""
        plan = self.fleet.plan
        alone = [n for n in names if self.behind(n)]
        if not alone:
            return [], ""
        if not self.policy.schedulers:
            servers = sorted({s.name for n in alone for s in self.behind(n)})
            self.watcher.warn(
                f"no scheduler named (intent `scheduler:` or --slurm-conf/--k8s-api): {', '.join(servers)} "
                f"depend on {', '.join(alone)} alone and are not drained anywhere"
            )
            self._event(",".join(alone), "scheduler-none", f"servers behind, told to no scheduler: {','.join(servers)}")
            return [], ""
        drains: list[tuple[Scheduler, SchedulerDrain]] = []
        for scheduler in self.policy.schedulers:
            try:
                drain = drain_for(scheduler, plan, alone, self.ident.id, self.policy.job_wait,
                                  force=self.policy.force, watcher=self.watcher, behind=self.behind)  # fmt: skip
            except SchedulerError as exc:
                self._resume(drains)
                why = f"{scheduler.kind}: {exc}; nothing was changed"
                self._event(",".join(alone), "scheduler-refused", why)
                return [], why
            self._event(
                ",".join(alone),
                "scheduler-refused" if drain.refused else ("scheduler-forced" if drain.forced else "scheduler-drained"),
                drain.mark.text,
                scheduler=scheduler.kind,
                nodes=drain.ours,
                others=[n.node for n in drain.others],
                waited=round(drain.waited, 2),
                holding={k: list(v) for k, v in drain.holding.items()},
                resumed=drain.resumed,  # a refusal puts back at once what it took out
            )
            if drain.refused:
                self._resume(drains)
                running = "; ".join(f"{node}: {', '.join(what)}" for node, what in drain.holding.items())
                why = (f"{scheduler.kind}: jobs still run after {self.policy.job_wait:g} s on servers behind "
                       f"{', '.join(alone)} ({running}); refused, nothing was changed")  # fmt: skip
                return [], why
            drains.append((scheduler, drain))
        return drains, ""

    def _back(self, names: list[str], drains: list[tuple[Scheduler, SchedulerDrain]]) -> None:
        """Undo a batch's drains after a failed take: the switches (whatever of them drained), then the servers."""
        undrain_switches(self.fleet, names, self.ident, settle=Settle(wait=False))
        self._resume(drains)

    def _resume(self, drains: list[tuple[Scheduler, SchedulerDrain]]) -> None:
        for scheduler, drain in drains:
            resume(scheduler, drain, self.watcher)
            self._event(drain.mark.subject, "scheduler-resumed", drain.mark.text, scheduler=scheduler.kind,
                        nodes=drain.resumed, kept=drain.kept)  # fmt: skip


class PushDrainer:
    """A push's `Drainer` (gpufabric/push/drain.py): the Nornir it is given names the batch's switches."""

    def __init__(self, around: AroundChange) -> None:
        self.around = around

    def drain(self, nr: Nornir, push_id: str, reasons: Mapping[str, str]) -> Mapping[str, str]:
        return self.around.take(list(nr.inventory.hosts), reasons)

    def undrain(self, nr: Nornir, push_id: str) -> Mapping[str, str]:
        return self.around.give_back(list(nr.inventory.hosts))


class RollDrainer:
    """A restart's or upgrade's `Drainer` (gpufabric/upgrade/drain.py): None per switch done, else why."""

    def __init__(self, around: AroundChange) -> None:
        self.around = around

    def drain(self, devices: Sequence[str], push_id: str, reason: str) -> Mapping[str, str | None]:
        failed = self.around.take(devices, dict.fromkeys(devices, reason))
        return {n: failed.get(n) for n in devices}

    def undrain(self, devices: Sequence[str], push_id: str) -> Mapping[str, str | None]:
        failed = self.around.give_back(devices)
        return {n: failed.get(n) for n in devices}


PushDrainerFactory = Callable[[Fleet, PushId, Trail], PushDrainer]


def push_drainer(
    reach: Reach | None = None,
    *,
    force: bool = False,
    settle: Settle | None = None,
    watcher: Watcher | None = None,
) -> PushDrainerFactory:
    """What a push drains with once its fleet is open: the scheduler first, then the switches, then the wait."""

    def made(fleet: Fleet, ident: PushId, trail: Trail) -> PushDrainer:
        policy = SchedulerPolicy.of(fleet, reach, force)
        return PushDrainer(AroundChange(fleet, ident, settle or Settle(), policy, trail, watcher or Quiet()))

    return made
