"""The rolling reboot or upgrade itself, batch by batch (one failure domain of a plane at a time, the push's
batches), against the `Steps` and the `Drainer` it is given: the Nornir ones in service, doubles in tests.

Per batch: read each switch (sessions and ports up, validate's failing checks, the release it runs); for an
upgrade, stage the image and check its checksum (nothing disruptive yet); drain; install; reboot (the least
disruptive mode the platform offers); wait until each switch is back, rebooted and has every session and port
it had before; check it runs the release asked for (an upgrade) and fails no validate check it passed before;
undrain. A switch that does not hold stops the rollout after its batch and stays drained. On an upgrade it
boots its previous image: the controller sets it back when the switch answers, and a switch that does not come
back within the bound is waited for once more, as the vendor's own fallback may bring it back on the previous
image. The switches of later batches are not touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from gpufabric.drivers.images import Installed
from gpufabric.push.targets import Batch
from gpufabric.upgrade.drain import Drainer
from nornir_tasks.lifecycle import Back, Before, Image, Rebooted


class State(StrEnum):
    DONE = "done"  # rebooted (or upgraded), back, checked, undrained
    UNCHANGED = "unchanged"  # an upgrade: it already runs the release
    FAILED = "failed"  # did not hold: the rollout stopped here (left drained unless said otherwise)
    FELL_BACK = "fell back"  # an upgrade that did not hold: the switch runs its previous image again
    SKIPPED = "skipped"  # not attempted: the rollout stopped before its batch


STOPS = (State.FAILED, State.FELL_BACK)


@dataclass
class Outcome:
    device: str
    state: State = State.SKIPPED
    reason: str = ""
    batch: int = 0
    mode: str = ""  # how it was rebooted
    before: str = ""  # the OS version it ran before
    after: str = ""  # and after
    back_s: float | None = None  # from the reboot until back and converged
    drained: bool = False  # left drained when the rollout ended
    notes: tuple[str, ...] = ()  # what its reboot reported on the way (a repair it needed)

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "state": str(self.state),
            "reason": self.reason,
            "batch": self.batch,
            "mode": self.mode,
            "before": self.before,
            "after": self.after,
            "back_s": None if self.back_s is None else round(self.back_s, 2),
            "drained": self.drained,
            "notes": list(self.notes),
        }


@dataclass
class BatchTiming:
    """Seconds each phase of a batch took (the bound counts the same phases)."""

    batch: int
    devices: int
    stage_s: float = 0.0
    drain_s: float = 0.0
    install_s: float = 0.0
    back_s: float = 0.0  # reboot asked until the last switch back and converged
    check_s: float = 0.0
    undrain_s: float = 0.0
    total_s: float = 0.0


class Steps(Protocol):
    """One step on several switches at once: per switch its outcome, or a string saying why it failed."""

    def snapshot(self, names: list[str]) -> Mapping[str, Before | str]: ...

    def stage(self, names: list[str], image: Image) -> Mapping[str, str | None]: ...

    def install(self, names: list[str], image: Image) -> Mapping[str, Installed | str]: ...

    def reboot(self, names: list[str], modes: Mapping[str, str]) -> Mapping[str, Rebooted | str]: ...

    def wait_back(
        self, names: list[str], before: Mapping[str, Before], rebooted: Mapping[str, Rebooted], timeout: float
    ) -> Mapping[str, Back]: ...

    def findings(self, names: list[str]) -> Mapping[str, frozenset[tuple[str, str]] | str]: ...

    def keep(self, names: list[str], image: Image) -> Mapping[str, str | None]: ...

    def boot_previous(self, names: list[str], previous: Mapping[str, str]) -> Mapping[str, Rebooted | str]: ...

    def release_of(self, name: str, os_version: str) -> str | None: ...


class RollWatcher:
    """What the rollout tells its caller as it goes (the command line's progress); nothing here."""

    def step(self, batch: Batch, what: str) -> None:
        """`what` begins on the batch's switches."""

    def batch_done(self, batch: Batch, outcomes: list[Outcome]) -> None:
        """The batch ended: each of its switches' outcome."""


@dataclass(frozen=True)
class Job:
    push_id: str
    reason: str  # what the drain records ("gpufabric restart <push id>")
    modes: Mapping[str, str]  # switch -> reboot mode
    boot_timeout: float  # from the reboot until back and converged
    fallback_timeout: float  # an upgrade: how much longer a switch that did not come back is waited for
    image: Image | None = None  # an upgrade's; None: a restart


@dataclass
class Rolled:
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    timings: list[BatchTiming] = field(default_factory=list)
    stopped_at: int | None = None  # the batch the rollout stopped at

    @property
    def ok(self) -> bool:
        return self.stopped_at is None and all(o.state in (State.DONE, State.UNCHANGED) for o in self.outcomes.values())


def roll(batches: Sequence[Batch], steps: Steps, drainer: Drainer, job: Job, watcher: RollWatcher | None) -> Rolled:
    shown = watcher or RollWatcher()
    rolled = Rolled({n: Outcome(n, batch=b.number) for b in batches for n in b.devices})
    for batch in batches:
        timing = BatchTiming(batch.number, len(batch.devices))
        started = time.monotonic()
        _Run(steps, drainer, job, rolled.outcomes, shown).batch(batch, timing)
        timing.total_s = time.monotonic() - started
        rolled.timings.append(timing)
        done = [rolled.outcomes[n] for n in batch.devices]
        shown.batch_done(batch, done)
        if any(o.state in STOPS for o in done):
            rolled.stopped_at = batch.number
            for o in rolled.outcomes.values():
                if o.batch > batch.number:
                    o.reason = f"not attempted: the rollout stopped at batch {batch.number}"
            break
    return rolled


def _timed(timing: BatchTiming, attr: str, fn: Callable[[], Any]) -> Any:
    started = time.monotonic()
    try:
        return fn()
    finally:
        setattr(timing, attr, getattr(timing, attr) + time.monotonic() - started)


def _fail(o: Outcome, why: str, state: State = State.FAILED) -> None:
    o.state, o.reason = state, _with_notes(why, o.notes)


def _with_notes(reason: str, notes: tuple[str, ...]) -> str:
    """The reason, with what the reboot reported on the way after it: the repair a switch needed is read
    beside whatever became of it."""
    said = "; ".join(dict.fromkeys(notes))
    if not said:
        return reason
    return f"{reason} (the reboot said: {said})" if reason else said


@dataclass
class _Run:
    steps: Steps
    drainer: Drainer
    job: Job
    out: dict[str, Outcome]
    shown: RollWatcher

    def batch(self, batch: Batch, timing: BatchTiming) -> None:
        steps, drainer, job, out, shown = self.steps, self.drainer, self.job, self.out, self.shown
        names = list(batch.devices)
        image = job.image
        shown.step(batch, "reading")
        read = steps.snapshot(names)
        before: dict[str, Before] = {}
        for n in names:
            got = read[n]
            if isinstance(got, str):
                _fail(out[n], f"could not be read before the reboot, nothing was done: {got}")
            else:
                before[n] = got
                out[n].before = got.os_version
        names = [n for n in names if n in before]
        if image is not None:
            for n in list(names):
                if steps.release_of(n, before[n].os_version) == image.release:
                    out[n].state, out[n].reason = State.UNCHANGED, f"already runs release {image.release}"
                    names.remove(n)
            if names:
                shown.step(batch, "staging")
                staged = _timed(timing, "stage_s", lambda: steps.stage(names, image))
                for n in list(names):
                    if staged[n] is not None:
                        _fail(out[n], f"{staged[n]}; nothing was installed")
                        names.remove(n)
        if not names:
            return
        shown.step(batch, "draining")
        drained = _timed(timing, "drain_s", lambda: drainer.drain(names, job.push_id, job.reason))
        refused = [n for n in names if drained.get(n) is not None]
        if refused:  # the batch goes no further: what did drain is undrained, nothing was rebooted
            ok = [n for n in names if n not in refused]
            back = drainer.undrain(ok, job.push_id) if ok else {}
            for n in refused:  # whatever of its drain was done, `maintenance status` shows
                _fail(out[n], f"{drained[n]}; nothing was rebooted")
            for n in ok:
                _fail(out[n], f"not rebooted: {refused[0]} could not be drained")
                out[n].drained = back.get(n) is not None
            return
        for n in names:
            out[n].drained = True
        previous: dict[str, str] = {}
        rebooting: list[str] = list(names)
        self_rebooting: set[str] = set()
        if image is not None:
            shown.step(batch, "installing")
            installed = _timed(timing, "install_s", lambda: steps.install(names, image))
            for n in names:
                got = installed[n]
                if isinstance(got, str):
                    _fail(out[n], f"{got}; not rebooted, left drained")
                    rebooting.remove(n)
                else:
                    previous[n] = got.previous
                    if got.reboots:
                        self_rebooting.add(n)
        shown.step(batch, "rebooting")
        asked = [n for n in rebooting if n not in self_rebooting]
        sent = steps.reboot(asked, {n: job.modes[n] for n in asked}) if asked else {}
        now = time.monotonic()
        rebooted: dict[str, Rebooted] = {n: Rebooted(now, False) for n in self_rebooting}
        for n in asked:
            out[n].mode = job.modes[n]
            got_reboot = sent[n]
            if isinstance(got_reboot, str):
                _fail(out[n], f"{got_reboot}; left drained")
            else:
                rebooted[n] = got_reboot
                out[n].notes = got_reboot.notes
        waiting = [n for n in rebooting if n in rebooted]
        if not waiting:
            return
        shown.step(batch, "waiting for the switches to come back")
        backs = _timed(timing, "back_s", lambda: steps.wait_back(waiting, before, rebooted, job.boot_timeout))
        healthy: list[str] = []
        for n in waiting:
            back = backs[n]
            out[n].after, out[n].back_s = back.os_version, back.seconds
            if back.ok:
                healthy.append(n)
            elif image is None:
                _fail(out[n], f"did not come back as it was: {back.problem}; left drained")
        if image is not None:
            lost = [n for n in waiting if not backs[n].ok]
            if lost:
                self.not_back(lost, before, rebooted)
            for n in list(healthy):
                running = steps.release_of(n, backs[n].os_version)
                if running != image.release:
                    healthy.remove(n)
                    why = f"came back on {backs[n].os_version or 'an unknown version'}, not release {image.release}"
                    self.fall_back([n], why, before, previous)
        shown.step(batch, "checking")
        found = _timed(timing, "check_s", lambda: steps.findings(healthy) if healthy else {})
        good: list[str] = []
        for n in healthy:
            now_failing = found[n]
            if isinstance(now_failing, str):
                problem = f"could not be validated after the reboot: {now_failing}"
            else:
                new = sorted(now_failing - before[n].findings)
                problem = (
                    f"fails {len(new)} check(s) it passed before: "
                    + ", ".join(f"{c} {i}" for c, i in new[:3])
                    + (" ..." if len(new) > 3 else "")
                    if new
                    else ""
                )
            if not problem:
                good.append(n)
            elif image is not None:
                self.fall_back([n], problem, before, previous)
            else:
                _fail(out[n], f"{problem}; left drained")
        if image is not None and good:
            kept = steps.keep(good, image)
            for n in list(good):
                if kept[n] is not None:
                    _fail(out[n], f"{kept[n]}; left drained")
                    good.remove(n)
        if not good:
            return
        shown.step(batch, "undraining")
        undrained = _timed(timing, "undrain_s", lambda: drainer.undrain(good, job.push_id))
        for n in good:
            if undrained.get(n) is not None:
                _fail(out[n], f"rebooted and healthy, but {undrained[n]}")
            else:
                out[n].state, out[n].drained = State.DONE, False
                done = f"runs release {image.release} ({out[n].after})" if image is not None else ""
                out[n].reason = _with_notes(done, out[n].notes)

    def not_back(self, lost: list[str], before: Mapping[str, Before], rebooted: Mapping[str, Rebooted]) -> None:
        steps, job, out = self.steps, self.job, self.out
        """Switches that did not come back on the new image within the bound: waited for once more (the vendor's
        fallback may bring them back on the previous image); whatever they run then, the rollout stops."""
        bound = job.boot_timeout
        again = steps.wait_back(lost, before, rebooted, bound + job.fallback_timeout)
        for n in lost:
            back = again[n]
            out[n].after, out[n].back_s = back.os_version, back.seconds
            if not back.ok:
                _fail(
                    out[n],
                    f"did not come back within {bound:g} s, nor {job.fallback_timeout:g} s later: {back.problem}",
                )
                continue
            running = steps.release_of(n, back.os_version)
            if job.image is not None and running == job.image.release:
                _fail(
                    out[n],
                    f"came back on release {running} only after {back.seconds:.0f} s, beyond the {bound:g} s bound",
                )
            else:
                _fail(
                    out[n],
                    f"did not come back within {bound:g} s; came back on its previous image ({back.os_version}) "
                    f"after {back.seconds:.0f} s",
                    State.FELL_BACK,
                )

    def fall_back(self, names: list[str], why: str, before: Mapping[str, Before], previous: Mapping[str, str]) -> None:
        steps, job, out = self.steps, self.job, self.out
        """The switch runs the new image but does not hold (or runs another release): boot its previous image."""
        image = job.image
        assert image is not None
        on_previous = [
            n for n in names if steps.release_of(n, out[n].after) == steps.release_of(n, before[n].os_version)
        ]
        for n in on_previous:  # it never left the previous image: nothing to boot back
            _fail(out[n], f"{why}; it still runs its previous image", State.FELL_BACK)
        names = [n for n in names if n not in on_previous]
        if not names:
            return
        sent = steps.boot_previous(names, {n: previous.get(n, "") for n in names})
        rebooted = {n: r for n in names if not isinstance(r := sent[n], str)}
        for n in names:
            if n not in rebooted:
                _fail(out[n], f"{why}; booting its previous image failed: {sent[n]}")
        if not rebooted:
            return
        waiting = list(rebooted)
        backs = steps.wait_back(waiting, before, rebooted, job.boot_timeout + job.fallback_timeout)
        for n in waiting:
            back = backs[n]
            out[n].after = back.os_version or out[n].after
            if back.ok and steps.release_of(n, back.os_version) == steps.release_of(n, before[n].os_version):
                _fail(out[n], f"{why}; booted its previous image ({previous.get(n, '')}) again", State.FELL_BACK)
            else:
                _fail(out[n], f"{why}; its previous image did not come back either: {back.problem or back.os_version}")
