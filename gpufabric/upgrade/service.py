"""Rolling restart and upgrade as library calls: `restart(request, ...) -> RollResult`,
`upgrade(request, ...) -> RollResult`. They print nothing: the `RollWatcher` they are given shows progress.

Both open the fleet as push does (gpufabric.fleet decides lab or real switches), batch the switches by
failure domain as push does (gpufabric/push/targets.py: a canary alone, then one failure domain of a plane at
a time, the data planes side by side), hold the fabric's push lock, and roll (gpufabric/upgrade/roll.py). The
drain is the `Drainer` the caller gives (default: the drivers' own drain and undrain).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nornir.core import Nornir
from nornir.plugins.runners import ThreadedRunner

from gpufabric.drivers.images import image_name, image_url
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.errors import EmptySelectionError, PushRefusedError
from gpufabric.fleet.expect import Expectation, expectations
from gpufabric.fleet.push_id import new_push_id, tag
from gpufabric.fleet.select import in_plane
from gpufabric.fleet.target import READ_WORKERS, WORKERS, Fleet, open_fleet
from gpufabric.maintenance.around import AroundChange, RollDrainer, SchedulerPolicy
from gpufabric.maintenance.service import DRAIN_TIMEOUT, Settle, default_trail
from gpufabric.parallel import cores
from gpufabric.platforms import platform
from gpufabric.push.audit import AuditLog, SwitchFacts, Trail, Who
from gpufabric.push.lock import FabricBusyError, LockPathError, fabric_lock
from gpufabric.push.targets import Batch, batches
from gpufabric.scheduler import Reach
from gpufabric.upgrade.drain import Drainer, NoDrain
from gpufabric.upgrade.roll import BatchTiming, Job, Outcome, Rolled, RollWatcher, State, roll
from gpufabric.upgrade.steps import NornirSteps
from gpufabric.validate.planned import planned
from gpufabric.verify.running.checks import Planned
from nornir_tasks.lifecycle import Image

_SHA512_HEX = frozenset("0123456789abcdef")


class RollRefusedError(PushRefusedError):
    """The restart or upgrade cannot go ahead as asked; nothing was touched."""


class BadImageError(RollRefusedError):
    option = "--image"
    bad_value = True


@dataclass(frozen=True)
class RestartRequest:
    fleet: FleetArgs
    planes: tuple[str, ...] = ()  # several planes (`--plane` repeated); one goes through `fleet.plane`
    mode: str | None = None  # None: each platform's least disruptive reboot (Platform.reboot_modes)
    drain: bool = True  # False: `--drain never`
    boot_timeout: float = 900.0  # from the reboot until back and converged
    batch_size: int | None = None
    dry_run: bool = False
    poll: float = 2.0
    settle: float = 2.0
    validate: bool = True  # hold each switch to validate's checks it passed before
    schedulers: Reach | None = None  # the command line's word on the schedulers (None: the intent's)
    force: bool = False  # change a switch when its servers' jobs still run after the job wait
    drain_timeout: float = DRAIN_TIMEOUT  # how long a drain waits for the traffic to leave and come back (0: not)
    audit_log: Path | None = None  # None: the lab's state folder for a lab that is up, else the default


@dataclass(frozen=True)
class UpgradeRequest:
    fleet: FleetArgs
    release: str
    image_url: str
    sha512: str
    image_name: str | None = None  # the file name on the switch (default: the URL's last part)
    planes: tuple[str, ...] = ()
    mode: str | None = None
    drain: bool = True
    boot_timeout: float = 1800.0
    fallback_timeout: float = 1800.0  # how much longer a switch that did not come back is waited for
    batch_size: int | None = None
    dry_run: bool = False
    poll: float = 5.0
    settle: float = 2.0
    validate: bool = True
    schedulers: Reach | None = None  # the command line's word on the schedulers (None: the intent's)
    force: bool = False  # change a switch when its servers' jobs still run after the job wait
    drain_timeout: float = DRAIN_TIMEOUT  # how long a drain waits for the traffic to leave and come back (0: not)
    audit_log: Path | None = None  # None: the lab's state folder for a lab that is up, else the default


@dataclass(frozen=True)
class RollResult:
    kind: str  # "restart" or "upgrade"
    push_id: str
    target: str  # "lab" or "switches"
    dry_run: bool
    seconds: float
    drain: bool
    batches: tuple[Batch, ...] = ()
    outcomes: tuple[Outcome, ...] = ()
    timings: tuple[BatchTiming, ...] = ()
    stopped_at: int | None = None
    release: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        if self.dry_run:
            return True
        return self.stopped_at is None and all(o.state in (State.DONE, State.UNCHANGED) for o in self.outcomes)

    def count(self, state: State) -> int:
        return sum(o.state == state for o in self.outcomes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "push_id": self.push_id,
            "target": self.target,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "seconds": round(self.seconds, 2),
            "drain": self.drain,
            "release": self.release,
            "stopped_at": self.stopped_at,
            "batches": [dataclasses.asdict(b) for b in self.batches],
            "devices": [o.as_dict() for o in self.outcomes],
            "timings": [_rounded(dataclasses.asdict(t)) for t in self.timings],
            "notes": list(self.notes),
        }


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}


class Watcher(RollWatcher):
    """What a restart or upgrade tells its caller beyond the rollout's steps; nothing here."""

    def say(self, text: str) -> None:
        """A line from around the change: the schedulers' drains, the wait for the traffic."""

    def warn(self, text: str) -> None:
        """A line to be noticed: a refusal, a change forced with jobs still running."""

    def starting(self, kind: str, push_id: str, batches: Sequence[Batch], drain: bool) -> None:
        """The fleet is open, the batches planned, the lock held: the rollout begins."""


DrainerFactory = Callable[[Nornir], Drainer]


class _Recorded(RollWatcher):
    """The caller's watcher, and each switch's end written to the audit trail as soon as its batch ends, beside
    the drains around it: a rollout interrupted later still has every finished batch's ends on record."""

    def __init__(self, kind: str, trail: Trail, shown: RollWatcher) -> None:
        self.kind, self.trail, self.shown = kind, trail, shown

    def step(self, batch: Batch, what: str) -> None:
        self.shown.step(batch, what)

    def batch_done(self, batch: Batch, outcomes: list[Outcome]) -> None:
        self.batch_ends(outcomes, batch.number)
        self.shown.batch_done(batch, outcomes)

    def batch_ends(self, outcomes: list[Outcome], batch: int) -> None:
        for o in outcomes:  # a switch already recorded is not recorded twice (Trail.record)
            self.trail.record(o.device, f"{self.kind} {o.state}", o.reason or (o.mode and f"rebooted ({o.mode})"),
                              batch=batch)  # fmt: skip


def restart(
    request: RestartRequest, watcher: Watcher | None = None, *, drainer: DrainerFactory | None = None
) -> RollResult:
    """Reboot the selected switches one failure domain at a time: drain, reboot, wait until back and
    converged, validate, undrain. Raises RollRefusedError (exit 2) before anything is touched."""
    return _roll("restart", request, watcher or Watcher(), drainer, image=None)


def upgrade(
    request: UpgradeRequest, watcher: Watcher | None = None, *, drainer: DrainerFactory | None = None
) -> RollResult:
    """Install release `request.release` on the selected switches one failure domain at a time: stage the
    image and check its SHA-512, drain, install, reboot into it, check the release and validate, undrain;
    a switch that does not hold boots its previous image and the rollout stops there."""
    if request.fleet.wants_lab:
        raise RollRefusedError(
            "the lab's switches run the machine's FRR: there is no image to install (`nornir restart --lab` "
            "reboots them; the upgrade runs against switches or the fleet simulator, bench/upgrade_scale.py)"
        )
    image = _image(request)
    return _roll("upgrade", request, watcher or Watcher(), drainer, image=image)


def _image(request: UpgradeRequest) -> Image:
    sha = request.sha512.strip().lower()
    if len(sha) != 128 or not set(sha) <= _SHA512_HEX:
        raise BadImageError("--sha512: give the image's SHA-512 as 128 hexadecimal digits (the vendor publishes it)")
    try:
        url = image_url(request.image_url)
        name = image_name(request.image_name or url.rstrip("/").rsplit("/", 1)[-1])
    except ValueError as exc:
        raise BadImageError(str(exc)) from None
    return Image(request.release, name, url, sha)


def _narrow(fleet: Fleet, planes: tuple[str, ...]) -> None:
    """Keep only the switches of `planes` (several planes asked for; one went through FleetArgs.plane)."""
    if len(planes) <= 1:
        return
    fleet.targets[:] = [d for d in fleet.targets if any(in_plane(fleet.plan, d, p) for p in planes)]
    if not fleet.targets:
        raise EmptySelectionError("no switch matches the selection (--plane/--device/--role)")
    wanted = {d.name for d in fleet.targets}
    for name in list(fleet.nr.inventory.hosts):
        if name not in wanted:
            del fleet.nr.inventory.hosts[name]


def _modes(fleet: Fleet, asked: str | None) -> dict[str, str]:
    modes = {}
    for d in fleet.targets:
        offered = platform(d.platform).reboot_modes() if not fleet.access.lab else platform("frr").reboot_modes()
        if asked is not None and asked not in offered:
            raise RollRefusedError(f"{d.name} ({d.platform}) reboots {', '.join(offered)}, not {asked}")
        modes[d.name] = asked or offered[0]
    return modes


def _roll(
    kind: str,
    request: RestartRequest | UpgradeRequest,
    watcher: Watcher,
    drainer: DrainerFactory | None,
    *,
    image: Image | None,
) -> RollResult:
    started = time.perf_counter()
    args = request.fleet
    if len(request.planes) == 1:
        args = dataclasses.replace(args, plane=request.planes[0])
    fleet = open_fleet(args, workers=WORKERS)
    _narrow(fleet, request.planes)
    ident = new_push_id()
    tag(fleet.nr.inventory, ident)
    target = "lab" if fleet.access.lab else "switches"
    notes: list[str] = list(fleet.access.notes)
    if image is not None:
        notes += _check_release(fleet, image.release)
    modes = _modes(fleet, request.mode)
    plan_batches = batches(fleet.plan, fleet.targets, request.batch_size, width=WORKERS)
    names = [n for b in plan_batches for n in b.devices]
    if request.dry_run:
        fleet.nr.close_connections()
        would = ["stage and check the image"] if image is not None else []
        would += ["drain"] if request.drain else []
        would += ["install"] if image is not None else []
        said = f"dry run: would {', '.join([*would, 'reboot'])}"
        outcomes = tuple(
            Outcome(n, State.SKIPPED, f"{said} ({modes[n]})", b.number, modes[n])
            for b in plan_batches
            for n in b.devices
        )
        release = image.release if image else None
        seconds = time.perf_counter() - started
        return RollResult(
            kind, ident.id, target, True, seconds, request.drain, tuple(plan_batches), outcomes,
            release=release, notes=tuple(notes),
        )  # fmt: skip
    # Every switch of a batch at once: a switch's steps are mostly waiting on it (its install, its reboot).
    largest = max(len(b.devices) for b in plan_batches)
    fleet.nr = fleet.nr.with_runner(ThreadedRunner(num_workers=min(READ_WORKERS, max(WORKERS, largest))))
    expects, held = _expectations(fleet, names, request.validate, image)
    steps = NornirSteps(
        fleet.nr, expects, held, {d.name: _platform_of(fleet, d.platform) for d in fleet.targets},
        poll=request.poll, settle=request.settle,
    )  # fmt: skip
    trail_file = AuditLog(request.audit_log or default_trail(args))  # no trail, no change (AuditError: exit 2)
    trail = Trail(
        trail_file,
        ident.id,
        ident.started,
        fleet.plan.intent.fabric.name,
        Who.now(fleet.access.username, ident.controller),
        False,
        target,
        {d.name: SwitchFacts(d.platform, d.plane) for d in fleet.targets},
    )
    if not request.drain:
        drains: Drainer = NoDrain()
    elif drainer is not None:
        drains = drainer(fleet.nr)
    else:  # the scheduler's drains, each OS's drain and the waits for the traffic (gpufabric/maintenance/around.py)
        policy = SchedulerPolicy.of(fleet, request.schedulers, request.force)
        drains = RollDrainer(
            AroundChange(fleet, ident, Settle(request.drain_timeout > 0, request.drain_timeout), policy, trail, watcher)
        )
    job = Job(
        push_id=ident.id,
        reason=f"gpufabric {kind} {ident.id}",
        modes=modes,
        boot_timeout=request.boot_timeout,
        fallback_timeout=request.fallback_timeout if isinstance(request, UpgradeRequest) else 0.0,
        image=image,
    )
    recorded = _Recorded(kind, trail, watcher)
    try:
        with fabric_lock(fleet.plan.intent.fabric.name, target=fleet.access.target):
            watcher.starting(kind, ident.id, plan_batches, request.drain)
            rolled: Rolled = roll(plan_batches, steps, drains, job, recorded)
        for b in plan_batches:  # the switches of the batches the rollout stopped before
            recorded.batch_ends([rolled.outcomes[n] for n in b.devices], b.number)
    except (FabricBusyError, LockPathError) as exc:  # the fabric's lock, not held: nothing was touched
        trail.refused(names, str(exc))
        raise
    except BaseException as exc:  # an interrupt (Ctrl-C, SIGTERM) or a bug: the trail still names every switch
        why = (
            f"the {kind} stopped: {type(exc).__name__}, before this switch's end was known; a switch it drained "
            "stays drained (`nornir maintenance status` names them, `nornir maintenance off` undrains)"
        )
        for n in names:
            trail.record(n, f"{kind} {State.FAILED}", why)
        raise
    finally:
        trail_file.close()
        fleet.nr.close_connections()
    return RollResult(
        kind,
        ident.id,
        target,
        False,
        time.perf_counter() - started,
        request.drain,
        tuple(plan_batches),
        tuple(rolled.outcomes[n] for n in names),
        tuple(rolled.timings),
        rolled.stopped_at,
        image.release if image else None,
        tuple(notes),
    )


def _platform_of(fleet: Fleet, name: str) -> str:
    return "frr" if fleet.access.lab else name  # the lab's switches all run FRR, whatever the plan says


def _check_release(fleet: Fleet, release: str) -> list[str]:
    """The release is one each targeted platform is rendered for, and one platform is targeted (one image);
    a release other than the intent's pin is a note: `validate` holds the switches to the pin."""
    kinds = sorted({d.platform for d in fleet.targets})
    if len(kinds) != 1:
        raise RollRefusedError(
            f"the selection holds {', '.join(kinds)} switches: an image is one platform's; select one "
            "(--role, --plane or --device)"
        )
    spec = platform(kinds[0])
    if not spec.installs_images():
        raise RollRefusedError(f"{spec.title}: {spec.image_fallback()}")
    if release not in spec.facts.releases:
        raise BadReleaseError(
            f"--release {release}: gpufabric renders {spec.title} for {', '.join(spec.facts.releases)} only"
        )
    pinned = fleet.plan.intent.release(spec.name)
    if pinned != release:
        return [
            f"note: the intent pins {spec.name} release {pinned}; `nornir validate` will report these switches "
            f"until it pins {release}"
        ]
    return []


class BadReleaseError(RollRefusedError):
    option = "--release"
    bad_value = True


def _expectations(
    fleet: Fleet, names: list[str], validate: bool, image: Image | None
) -> tuple[dict[str, Expectation], dict[str, Planned | None]]:
    """What each switch must have back after its reboot: the sessions (to other planned switches) and ports it
    had up before; and validate's checks it passed before (an upgrade's release check holds it to the new
    release)."""
    expects = expectations(fleet.plan, fleet.index, names, contexts=fleet.contexts)
    known = {d.name for d in fleet.plan.devices()}
    for name, ex in expects.items():  # an edge router is not the rollout's to wait for
        peers = {k: asn for k, asn in ex.peers.items() if _peer_of(fleet, name, k) in known}
        expects[name] = dataclasses.replace(ex, peers=peers)
    if not validate:
        return expects, dict.fromkeys(names)
    held: dict[str, Planned | None] = dict(
        planned(fleet.plan, fleet.index, names, None, processes=cores(), contexts=fleet.contexts)
    )
    for name, p in held.items():
        if p is not None:
            held[name] = dataclasses.replace(p, release=image.release if image else p.release,
                                             platform=_platform_of(fleet, p.platform))  # fmt: skip
    return expects, held


def _peer_of(fleet: Fleet, name: str, key: str) -> str | None:
    ctx = fleet.contexts[name]
    return next((n.peer for n in ctx.neighbors if n.key == key), None)
