"""Validate as a library call: `validate(request, watcher) -> ValidateReport`. Changes nothing.

The Ethernet switches are read through gpufabric.fleet (which decides lab or real switches) by the
Nornir task `nornir_tasks.validate.validate_device`, from a process per core for a large fleet; the
InfiniBand compute plane (`plane="compute"` when it is InfiniBand) with infiniband-diags, on the
lab's simulated fabric when the lab is asked for, else on this host. It prints nothing: the
`ValidateWatcher` it is given shows progress, the `ValidateReport` it returns says what was found.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from gpufabric.config.secrets import secret_values
from gpufabric.errors import GpufabricError
from gpufabric.fleet.access import Access
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.candidates import candidate
from gpufabric.fleet.errors import NoLabError, PushRefusedError
from gpufabric.fleet.runner import FORK_FROM, run_per_host_forked
from gpufabric.fleet.target import READ_WORKERS, open_fleet
from gpufabric.ib import lab as ib_lab
from gpufabric.ib.errors import IbError
from gpufabric.intent import load_intent
from gpufabric.lab.control import infiniband_dir
from gpufabric.parallel import cores
from gpufabric.plan import build_plan
from gpufabric.plan.infiniband import IbPlan
from gpufabric.validate import infiniband
from gpufabric.validate.planned import planned
from gpufabric.verify.running.counters import Limits
from gpufabric.verify.running.results import CheckResult
from nornir_tasks.validate import validate_device


class WholePlaneError(PushRefusedError):
    """--device or --role given for the InfiniBand compute plane, which is checked whole."""


class PlaneUnreadableError(GpufabricError):
    """The InfiniBand tools could not read the compute plane; the message may hold their own words."""


@dataclass(frozen=True)
class ValidateRequest:
    fleet: FleetArgs
    drift: bool = True  # compare each switch's running configuration with its rendered one
    counter_window: float = 0.0  # seconds between two reads of each planned port's counters (0: none)
    max_error_rate: float = 0.0  # errored frames per second a port may show in the window
    max_discard_rate: float = 1000.0
    max_pause_rate: float = 10000.0


@dataclass(frozen=True)
class ValidateReport:
    results: tuple[CheckResult, ...]
    seconds: float
    what: str  # what was checked: "12 switches", "6 InfiniBand switches"

    @property
    def failed(self) -> int:
        return sum(not r.ok for r in self.results)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


class ValidateWatcher:
    """What validate tells its caller while it runs; nothing here (the command line shows it)."""

    def reached(self, access: Access) -> None:
        """The fleet is open; `access.notes` are for the person running validate."""

    def note(self, text: str) -> None:
        """Something the person running validate should know (not an error)."""

    def reading(self, what: str, processes: int) -> AbstractContextManager[None]:
        """`what` is being read, from `processes` processes."""
        return nullcontext(None)


def validate(request: ValidateRequest, watcher: ValidateWatcher | None = None) -> ValidateReport:
    """Check the running switches (or the InfiniBand compute plane) against the plan.

    Raises PushRefusedError when it cannot go ahead as asked (no lab up, no switch selected, ...) and
    PlaneUnreadableError when the InfiniBand tools cannot read the fabric."""
    started = time.perf_counter()
    shown = watcher or ValidateWatcher()
    args = request.fleet
    if args.plane == "compute":
        ib = build_plan(load_intent(args.file)).infiniband
        if ib is not None:
            return _validate_infiniband(ib, args, shown, started)
    fleet = open_fleet(args, workers=READ_WORKERS)  # validate only reads
    shown.reached(fleet.access)
    if args.plane is None and fleet.plan.infiniband is not None:
        shown.note("note: the InfiniBand compute plane is not among these switches: `--plane compute` checks it")
    names = fleet.names
    # No thread runs yet: the ECMP model may fork.
    expected = planned(fleet.plan, fleet.index, names, args.plane, processes=cores(), contexts=fleet.contexts)
    secrets = fleet.access.secrets
    candidates = {
        n: candidate(fleet.plan, fleet.index, n, secrets, contexts=fleet.contexts) if request.drift else None
        for n in names
    }
    limits = Limits(request.counter_window, request.max_error_rate, request.max_discard_rate, request.max_pause_rate)
    masked = secret_values(fleet.plan.intent, secrets)
    # A large fleet is read from a process per core.
    processes = cores() if len(names) >= FORK_FROM else 1
    with shown.reading(f"{len(names)} switches", processes):
        found = run_per_host_forked(
            fleet.nr,
            names,
            validate_device,
            processes,
            planned=expected,
            candidate=candidates,
            limits=dict.fromkeys(names, limits),
            masked=dict.fromkeys(names, masked),
        )
    fleet.nr.close_connections()
    results = tuple(r for name in names for r in found[name])
    return ValidateReport(results, time.perf_counter() - started, f"{len(names)} switches")


def _validate_infiniband(ib: IbPlan, args: FleetArgs, shown: ValidateWatcher, started: float) -> ValidateReport:
    """The InfiniBand compute plane, read with infiniband-diags: on the lab's ibsim fabric when the lab
    is asked for, else on this host, which must have a port on the fabric (the subnet manager's host)."""
    if args.devices or args.role:
        raise WholePlaneError("--device and --role select Ethernet switches; the InfiniBand plane is checked whole")
    lab_state = infiniband_dir(args.lab_dir)
    running = ib_lab.status(lab_state)
    if args.wants_lab and not (running and all(running.values())):
        raise NoLabError(f"the lab's InfiniBand compute plane is not up (state {lab_state}): run `gpufabric lab up`")
    run = infiniband.lab_runner(lab_state) if args.wants_lab else infiniband.local_runner
    with shown.reading(f"the InfiniBand compute plane ({len(ib.fabric.nodes)} nodes)", 1):
        try:
            # ibsim reports its own link speeds: in the lab the widths are compared, not the rates.
            found = infiniband.check_plane(ib, run, rates=not args.wants_lab)
        except IbError as exc:
            raise PlaneUnreadableError(f"InfiniBand compute plane: {exc}") from None
    what = f"{len(ib.fabric.switches)} InfiniBand switches"
    return ValidateReport(tuple(found), time.perf_counter() - started, what)
