"""Domain errors of the InfiniBand package: the CLI turns them into messages and exit code 2."""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.errors import GpufabricError


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a design or a file: where, what, and what would be right."""

    where: str  # a field ("design.su_count") or a file position ("fabric.topo:12")
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message} ({self.fix})"


class IbError(GpufabricError):
    """A design the planner cannot build, or a fabric that does not match its plan."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


def fail(where: str, message: str, fix: str) -> IbError:
    return IbError([Problem(where, message, fix)])
