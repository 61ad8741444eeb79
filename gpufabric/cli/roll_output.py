"""What `nornir restart` and `nornir upgrade` share on the terminal: the progress lines, the table of
switches, the JSON result. Shared here because no command module imports another's."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from gpufabric.cli.errors import outcome
from gpufabric.cli.output import err, out, shown, write_stdout
from gpufabric.outputs import json_dumps
from gpufabric.push.targets import Batch
from gpufabric.upgrade.roll import Outcome, State
from gpufabric.upgrade.service import RollResult, Watcher

STYLE = {
    State.DONE: "green",
    State.UNCHANGED: "dim",
    State.FAILED: "bold red",
    State.FELL_BACK: "red",
    State.SKIPPED: "yellow",
}


class Progress(Watcher):
    """Each batch's steps as they begin, one line each on stderr (nothing with --json)."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self.total = 0

    def starting(self, kind: str, push_id: str, batches: Sequence[Batch], drain: bool) -> None:
        self.total = len(batches)
        if not self.quiet:
            how = "drained first" if drain else "NOT drained (--drain never): their traffic is lost while they reboot"
            err.print(shown(f"{kind} {push_id}: {sum(len(b.devices) for b in batches)} switches in "
                            f"{self.total} batches, {how}"))  # fmt: skip

    def step(self, batch: Batch, what: str) -> None:
        if not self.quiet:
            err.print(shown(f"batch {batch.number}/{self.total} ({batch.domain}): {what}"))

    def say(self, text: str) -> None:
        if not self.quiet:
            err.print(shown(text))

    def warn(self, text: str) -> None:
        err.print(shown(f"warning: {text}", "bold"))  # a refusal or a forced change, even with --json

    def batch_done(self, batch: Batch, outcomes: list[Outcome]) -> None:
        if self.quiet:
            return
        bad = [o for o in outcomes if o.state in (State.FAILED, State.FELL_BACK)]
        for o in bad:
            err.print(Text.assemble(Text(f"{o.device} {o.state}", "red"), ": ", shown(o.reason)))


def report(result: RollResult, *, as_json: bool) -> int:
    """Print the result; the exit code: 0 every switch done (or a dry run), 4 the rollout stopped."""
    if as_json:
        write_stdout(json_dumps(result.as_dict(), indent=2) + "\n")
        return outcome(result.ok)
    for note in result.notes:
        err.print(shown(note))
    table = Table(title=result.kind)
    for column in ("batch", "switch", "result", "mode", "before", "after", "back s", "reason"):
        table.add_column(column)
    for o in result.outcomes:
        back = "" if o.back_s is None else f"{o.back_s:.1f}"
        table.add_row(str(o.batch), shown(o.device), Text(str(o.state), STYLE.get(o.state, "")), o.mode,
                      shown(o.before), shown(o.after), back, shown(o.reason))  # fmt: skip
    out.print(table)
    counts = ", ".join(f"{result.count(s)} {s}" for s in State if result.count(s))
    if result.dry_run:
        switches, waves = len(result.outcomes), len(result.batches)
        err.print(f"{result.kind} dry run: {switches} switches in {waves} batches; nothing done")
    elif result.ok:
        err.print(f"{result.kind} {result.push_id}: {counts} in {len(result.batches)} batches, {result.seconds:.1f} s")
    else:
        drained = [o.device for o in result.outcomes if o.drained]
        err.print(shown(f"{result.kind} {result.push_id} stopped at batch {result.stopped_at}: {counts}, "
                        f"{result.seconds:.1f} s"))  # fmt: skip
        if drained:
            err.print(shown(f"left drained: {', '.join(drained)} (`gpufabric maintenance off` returns them)"))
    return outcome(result.ok)
