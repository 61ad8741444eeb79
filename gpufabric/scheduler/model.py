"""What the scheduler service speaks in: the mark gpufabric leaves on a node, a node's state as a
scheduler reports it, the contract every scheduler keeps, and the results the service returns.

The mark is the record on the scheduler's side. Slurm keeps it as the node's reason, Kubernetes as
an annotation beside the cordon: `gpufabric <owner>: <subject>`, where the owner is a push id (or a
remediation's id) and the subject the switch (or cable) the node was taken out for. It is written
by `Mark.text` and read back only by `Mark.parse`, which takes nothing but that exact form: a reason
a person wrote that merely resembles it is not ours, and the node stays as the person left it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gpufabric.errors import GpufabricError

OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SUBJECT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]{0,63}(,[A-Za-z0-9][A-Za-z0-9._/:@-]{0,63}){0,7}")
MARK = re.compile(rf"gpufabric (?P<owner>{OWNER.pattern}): (?P<subject>{SUBJECT.pattern})")
# A node's name as the plan writes it, and as Slurm and Kubernetes (RFC 1123 subdomain) accept it.
NODE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?")


class SchedulerError(GpufabricError):
    """The scheduler could not be reached or asked as needed (the message says which and why)."""


class SchedulerOutputError(SchedulerError):
    """A scheduler answered in a form gpufabric does not read: nothing is guessed from it."""


def checked_node(name: str) -> str:
    if not NODE.fullmatch(name):
        raise SchedulerError(f"{name!r} is not a node name a scheduler accepts (letters, digits, '.', '_', '-')")
    return name


@dataclass(frozen=True, slots=True)
class Mark:
    """Who took a node out and for what: `gpufabric <owner>: <subject>`."""

    owner: str  # a push id (gf-...), or the id of whatever else drains (a remediation)
    subject: str  # the switch(es), or the part, the node was taken out for

    def __post_init__(self) -> None:
        if not OWNER.fullmatch(self.owner):
            raise SchedulerError(f"{self.owner!r} cannot name a drain's owner (letters, digits, '.', '_', '-')")
        if not SUBJECT.fullmatch(self.subject):
            raise SchedulerError(f"{self.subject!r} cannot name what a node is drained for")

    @property
    def text(self) -> str:
        return f"gpufabric {self.owner}: {self.subject}"

    @classmethod
    def parse(cls, text: str) -> Mark | None:
        """The mark a reason holds, when it is exactly one of ours; None for anything else."""
        found = MARK.fullmatch(text)
        return None if found is None else cls(found["owner"], found["subject"])


@dataclass(frozen=True, slots=True)
class NodeState:
    """A node as its scheduler shows it now."""

    name: str
    out: bool  # drained (Slurm) or cordoned (Kubernetes), by anyone
    reason: str  # Slurm's reason, or gpufabric's annotation; "" when none
    holders: tuple[str, ...] = ()  # what still runs there and would be hurt: job ids, namespace/pod
    set_by: str = ""  # who set the reason, where the scheduler says (Slurm's user)

    @property
    def mark(self) -> Mark | None:
        return Mark.parse(self.reason) if self.out else None


class Scheduler(Protocol):
    """One scheduler, reached. Every method names nodes; none changes a node it was not given."""

    kind: str  # "slurm" | "kubernetes"

    def nodes(self, names: Sequence[str]) -> dict[str, NodeState]:
        """The state of those of `names` the scheduler knows (a name it does not know is left out)."""
        ...

    def take_out(self, node: str, mark: Mark) -> None:
        """Drain or cordon `node`, leaving `mark` as the record."""
        ...

    def put_back(self, node: str, mark: Mark) -> bool:
        """Resume or uncordon `node` if it still carries exactly `mark`; False when it does not."""
        ...

    def move(self, states: dict[str, NodeState]) -> list[str]:
        """Ask what holds these nodes to leave, where the scheduler can (Kubernetes evicts; Slurm lets jobs
        end): lines saying what was asked and what is blocked."""
        ...

    def marked(self) -> list[NodeState]:
        """Every node that carries a gpufabric mark, whoever's: the drains a crashed controller left."""
        ...


class Watcher(Protocol):
    """What a person sees while the service runs (the command line's lines; a script may pass None)."""

    def say(self, text: str) -> None: ...

    def warn(self, text: str) -> None: ...


class Quiet:
    def say(self, text: str) -> None:
        pass

    def warn(self, text: str) -> None:
        pass


@dataclass(frozen=True, slots=True)
class NodeDrain:
    """One node behind the change, in one scheduler: whether gpufabric took it out (and so will put it back)."""

    node: str
    ours: bool  # gpufabric set the drain now and will resume it
    before: str = ""  # the reason it carried already when it was out before (a person's, or another push's)


@dataclass
class SchedulerDrain:
    """What `drain_for` did in one scheduler, and what `resume` needs to undo exactly that."""

    scheduler: str
    mark: Mark
    nodes: list[NodeDrain] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # servers behind the switch that the scheduler does not hold
    waited: float = 0.0  # seconds spent waiting for jobs and pods to leave
    holding: dict[str, tuple[str, ...]] = field(default_factory=dict)  # what still ran when the wait ended
    refused: bool = False  # the wait ran out: nothing may change, and our drains were undone
    forced: bool = False  # the wait ran out and the caller went on regardless
    resumed: list[str] = field(default_factory=list)  # our nodes put back (by `resume`, or by a refusal)
    kept: list[str] = field(default_factory=list)  # our nodes left out: their mark was changed by someone
    notes: list[str] = field(default_factory=list)  # evictions asked, PDBs blocking, ...

    @property
    def ours(self) -> list[str]:
        return [n.node for n in self.nodes if n.ours]

    @property
    def others(self) -> list[NodeDrain]:
        return [n for n in self.nodes if not n.ours]

    @property
    def clear(self) -> bool:
        """The change may go ahead: nothing holds the nodes (or the caller forced it)."""
        return not self.refused and (not self.holding or self.forced)
