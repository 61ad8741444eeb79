"""Run a push batch by batch: stage the batch in parallel, then confirm it whole or roll it back whole."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from nornir.core import Nornir

from gpufabric.push.expect import Expectation
from gpufabric.push.targets import Batch
from nornir_tasks.per_host import run_per_host
from nornir_tasks.push import DeviceOutcome, PushOptions, confirm, rollback, stage

CONVERGED = frozenset({"unchanged", "changed", "would change"})


@dataclass
class Rollout:
    outcomes: dict[str, DeviceOutcome] = field(default_factory=dict)
    stopped_at: Batch | None = None

    @property
    def converged(self) -> bool:
        return self.stopped_at is None and all(o.status in CONVERGED for o in self.outcomes.values())


def run(
    nr: Nornir,
    *,
    plan_batches: list[Batch],
    candidates: dict[str, str],
    expects: dict[str, Expectation],
    opts: PushOptions,
    on_batch: Callable[[Batch, dict[str, DeviceOutcome]], None] | None = None,
) -> Rollout:
    rollout = Rollout()
    for batch in plan_batches:
        names = list(batch.devices)
        staged = run_per_host(
            nr,
            names,
            stage,
            candidate={n: candidates[n] for n in names},
            expect={n: expects[n] for n in names},
            opts=dict.fromkeys(names, opts),
            batch=dict.fromkeys(names, batch.number),
        )
        rollout.outcomes.update(staged)
        pending = [n for n, o in staged.items() if o.status == "staged"]
        failed = [n for n, o in staged.items() if o.status not in CONVERGED and o.status != "staged"]
        if failed:
            why = f"rolled back with its batch: {failed[0]} {staged[failed[0]].status}"
            if pending:
                rollout.outcomes.update(
                    run_per_host(
                        nr, pending, rollback, outcome={n: staged[n] for n in pending}, why=dict.fromkeys(pending, why)
                    )
                )
            rollout.stopped_at = batch
        elif pending:
            confirmed = run_per_host(nr, pending, confirm, outcome={n: staged[n] for n in pending})
            rollout.outcomes.update(confirmed)
            if any(o.status != "changed" for o in confirmed.values()):
                rollout.stopped_at = batch  # a switch that could not be confirmed reverts; nothing more goes out
        if on_batch:
            on_batch(batch, {n: rollout.outcomes[n] for n in names})
        if rollout.stopped_at is not None:
            break
    for batch in plan_batches:
        for name in batch.devices:
            if name not in rollout.outcomes:
                stop = rollout.stopped_at
                rollout.outcomes[name] = DeviceOutcome(
                    name,
                    "skipped",
                    f"not attempted: the rollout stopped at batch {stop.number if stop else '?'}",
                    batch=batch.number,
                )
    return rollout
