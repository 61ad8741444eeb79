"""What happened to one switch in a push: one vocabulary for the tasks, the rollout, the report and
the audit trail. String-valued, so `--json` and the audit file carry the same words as ever."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    UNCHANGED = "unchanged"  # already runs the planned configuration
    WOULD_CHANGE = "would change"  # its diff is read and not empty (a dry run stops here)
    STAGED = "staged"  # committed with a revert timer armed, checks passed, awaiting its batch's confirm
    CHANGED = "changed"  # confirmed
    ROLLED_BACK = "rolled back"
    FAILED = "failed"
    SKIPPED = "skipped"  # would have changed in a batch the rollout never reached
    REFUSED = "refused"  # the push stopped before any change (audit trail: lock, timers, another push)
    # the pending-push check before anything else
    CLEAR = "clear"
    BUSY = "busy"


# A switch in one of these is where the push wanted it.
CONVERGED = frozenset({Status.UNCHANGED, Status.CHANGED, Status.WOULD_CHANGE})
