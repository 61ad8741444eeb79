"""One measured fact of the demo's report."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Fact:
    name: str
    expected: str
    observed: str
    passed: bool
    plane: str = ""
    note: str = ""  # how it was measured, where that matters (an emulation, for instance)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def fact(name: str, expected: object, observed: object, *, plane: str = "", note: str = "") -> Fact:
    return Fact(name, str(expected), str(observed), str(expected) == str(observed), plane, note)
