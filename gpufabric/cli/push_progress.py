"""What a push shows while it runs: a progress bar (on a terminal) and a line per batch, as a Nornir
processor. Nornir calls its hooks as each switch starts and ends a task (the bar advances as each
switch's part of the push is done); the rollout calls `on_preview` and `on_batch` when every diff is
read and as each batch ends (the lines, the diffs, the batch counter)."""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from nornir.core.inventory import Host
from nornir.core.task import AggregatedResult, MultiResult, Task
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from gpufabric.cli.output import err, out, shown, shown_lines
from gpufabric.fleet.status import CONVERGED, Status
from gpufabric.push.rollout import Rollout
from gpufabric.push.targets import Batch
from nornir_tasks.push import DeviceOutcome

log = logging.getLogger(__name__)

# A switch's part of the push is done when one of these tasks ends with one of these statuses.
DONE = {
    "check_pending": {Status.FAILED},
    "preview": {Status.FAILED, Status.UNCHANGED},
    "stage": {Status.FAILED, Status.ROLLED_BACK, Status.UNCHANGED},
    "confirm": {Status.CHANGED, Status.FAILED},
    "rollback": {Status.ROLLED_BACK, Status.FAILED},
}


class PushProgress:
    """The push's progress bar and lines (stderr) and its diffs (stdout, once, before the first change)."""

    def __init__(self, where: str, total: int, *, show_diff: bool, dry_run: bool) -> None:
        self.where, self.show_diff, self.dry_run = where, show_diff, dry_run
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            # Redrawn on each event, by no thread of its own: the reads of a large fleet fork processes,
            # and a fork must not copy a lock a display thread happened to hold.
            auto_refresh=False,
        )
        self.bar = self.progress.add_task(f"push to {where}: reading every switch's diff", total=total)
        self.batches_out = 0
        self._done: set[str] = set()
        self._lock = threading.Lock()

    def __enter__(self) -> PushProgress:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.progress.stop()

    # Nornir's processor hooks

    def task_started(self, task: Task) -> None:
        pass

    def task_completed(self, task: Task, result: AggregatedResult) -> None:
        pass

    def task_instance_started(self, task: Task, host: Host) -> None:
        log.debug("%s: %s started", host.name, task.name)

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        outcome = result[0].result
        if not isinstance(outcome, DeviceOutcome) or outcome.status not in DONE.get(task.name, set()):
            return
        with self._lock:
            if host.name in self._done:
                return
            self._done.add(host.name)
        self.progress.advance(self.bar)
        self.progress.refresh()

    def subtask_instance_started(self, task: Task, host: Host) -> None:
        pass

    def subtask_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        pass

    # The rollout's events

    def on_preview(self, read: Rollout) -> None:
        self.batches_out = len(read.batches)
        done = sum(o.status in DONE["preview"] for o in read.outcomes.values())  # read from other processes too
        self.progress.update(self.bar, completed=done, description=f"push to {self.where}: batch 1/{self.batches_out}")
        self.progress.refresh()
        for name in read.unreadable:  # the reasons are the switches' own words: text, never markup
            err.print(Text.assemble(shown(f"{name} failed", "red"), ": ", shown(read.outcomes[name].reason)))
        if self.show_diff and read.batches:
            # Stopped while the diffs print: a running bar sends what goes to stdout to its own
            # stream (stderr), and results belong on stdout.
            self.progress.stop()
            print_diffs(read, self.dry_run)
            self.progress.start()

    def on_batch(self, b: Batch, done: dict[str, DeviceOutcome]) -> None:
        self.progress.update(self.bar, description=f"push to {self.where}: batch {b.number + 1}/{self.batches_out}")
        self.progress.refresh()
        confirmed = [o.device for o in done.values() if o.status == Status.CHANGED]
        if confirmed:
            err.print(
                shown(
                    f"batch {b.number}/{self.batches_out} ({b.domain}): committed, checked and confirmed: "
                    + ", ".join(confirmed)
                )
            )
        for o in done.values():
            if o.status not in CONVERGED:
                head = shown(f"batch {b.number} ({b.domain}): {o.device} {o.status}", "red")
                err.print(Text.assemble(head, ": ", shown(o.reason)))


def print_diffs(read: Rollout, dry_run: bool) -> None:
    """Each switch's diff as the preview read it, in the order the switches go out: once, before the
    first commit (the summary after the push does not repeat them)."""
    for batch in read.batches:
        for name in batch.devices:
            o = read.outcomes[name]
            when = "would change" if dry_run or read.unreadable else f"batch {batch.number}, {batch.domain}"
            if o.drain:
                reasons = ", ".join(dict.fromkeys(str(d.reason) for d in o.disruptions))
                when += f"; drained: {reasons}" if reasons else f"; drained: --drain {read.drain_policy}"
            out.print(Text.assemble(shown(f"--- {name}", "bold"), f" ({when})"))
            # The switch's own text: its escape sequences are shown, never sent to the terminal.
            out.print(shown_lines(o.diff))
