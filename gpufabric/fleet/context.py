"""Each targeted switch's configuration context, built once per command and handed on.

A push renders each switch's candidate, derives the checks that must hold after its change and,
once converged, the sessions to wait for: all three read the same `DeviceContext`. Validate's
expectations and drift check read it too. Built on first use and kept for the command's life.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gpufabric.config.context import DeviceContext, LinkIndex, build
from gpufabric.plan.model import Plan


class SwitchContexts(Mapping[str, DeviceContext]):
    """Switch name -> its context, each built once (on first use) from the plan and its link index."""

    def __init__(self, plan: Plan, index: LinkIndex) -> None:
        self.plan = plan
        self.index = index
        self._built: dict[str, DeviceContext] = {}

    def __getitem__(self, name: str) -> DeviceContext:
        ctx = self._built.get(name)
        if ctx is None:
            ctx = self._built[name] = build(self.plan, self.index.devices[name], self.index)
        return ctx

    def __iter__(self) -> Iterator[str]:
        return iter(self.index.devices)

    def __len__(self) -> int:
        return len(self.index.devices)

    @property
    def built(self) -> int:
        """How many contexts were built so far (each switch at most once)."""
        return len(self._built)


def contexts_of(plan: Plan, index: LinkIndex, contexts: SwitchContexts | None) -> SwitchContexts:
    """The command's contexts when it has them, else a fresh set over `plan` (a caller of its own)."""
    return contexts if contexts is not None else SwitchContexts(plan, index)
