"""Options and plan helpers every command shares: the intent argument, `--strict`, and the selection
of switches (`--plane/--device/--role`), each defined here once."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import click

from gpufabric.cli.errors import EXIT_OK, EXIT_WARNINGS
from gpufabric.cli.output import err, shown
from gpufabric.intent import load_intent
from gpufabric.intent.types import ALL_PLANES
from gpufabric.plan import Plan, build_plan
from gpufabric.plan.multiplane import part_of


def lab_name_callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A lab's name (`lab up --name`, `--lab-name`), checked before anything else: exit 2 naming the rule."""
    from gpufabric.fleet.lab.names import LabNameError, check_name  # light: a pattern and a hash

    if value is None:
        return None
    try:
        return check_name(value)
    except LabNameError as exc:
        raise click.BadParameter(str(exc)) from None


class FiniteFloat(click.FloatRange):
    """Every number of seconds, rate, share or factor a command takes: click's FLOAT and FloatRange
    accept `nan`, `inf` and `-inf` (Python's float() parses them, and NaN compares false with every
    bound, so a range lets it through). A NaN wait never ends a loop (`scheduler drain --job-wait nan`
    polled slurmctld for ever) and a NaN factor passes every comparison (`--factor nan` passed every
    slow node): refused here, exit 2, naming the option. Bounds as FloatRange's."""

    def __init__(
        self, min: float | None = None, max: float | None = None, *, min_open: bool = False, max_open: bool = False
    ) -> None:
        super().__init__(min, max, min_open=min_open, max_open=max_open)
        # `--help` as before: FLOAT RANGE [lo<=x<=hi] with bounds, FLOAT without.
        self.name = "float" if min is None and max is None else "float range"

    def _describe_range(self) -> str:
        return "" if self.min is None and self.max is None else super()._describe_range()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            bounds = f" in the range {self._describe_range()}" if self._describe_range() else ""
            self.fail(f"{value!r} is not a finite number: give a number{bounds}", param, ctx)
        return super().convert(number, param, ctx)


ROLES = ("leaf", "spine", "superspine", "border", "mgmt")

file_arg = click.argument("file", required=False, type=click.Path(dir_okay=False))
strict_option = click.option(
    "--strict", is_flag=True, help="Exit 3 when the intent or the plan has warnings (after doing the work)."
)


class PlaneName(click.Choice):
    """A plane (compute, storage, business, oob), or one plane of a multi-plane compute plane as the exports
    name it (compute-p1 ... compute-p9)."""

    def __init__(self) -> None:
        super().__init__([*ALL_PLANES, "compute-pN"])

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and part_of(value):
            return value
        if value == "compute-pN":
            self.fail("name the plane by its number: compute-p1, compute-p2, ...", param, ctx)
        return super().convert(value, param, ctx)


PLANE = PlaneName()
plane_option = click.option("--plane", type=PLANE, help="Only this plane's switches (compute-pN: one plane of a "
                            "multi-plane compute plane).")  # fmt: skip
device_option = click.option(
    "--device", "devices", multiple=True, metavar="NAME", help="Only this switch (repeatable)."
)
role_option = click.option("--role", type=click.Choice(ROLES), help="Only this role.")
SELECTION = (plane_option, device_option, role_option)


def selection_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--plane, --device (as `devices`) and --role, in that order in `--help`."""
    for option in reversed(SELECTION):
        fn = option(fn)
    return fn


def load_plan(file: str | None, *, reaches: bool = False) -> Plan:
    """The plan of FILE (or ./inventory/fabric.yml, else the shipped example unless the command `reaches`
    switches or schedulers: that needs a real intent)."""
    loaded = load_intent(file, embedded=not reaches)
    return build_plan(loaded)


def print_warnings(plan: Plan) -> None:
    """Every warning of the intent and the plan, on stderr, one line each."""
    for w in plan.warnings:
        err.print(shown(f"warning: {w}"))


def warnings_exit(plan: Plan, strict: bool, code: int = 0) -> int:
    """`code`, or EXIT_WARNINGS when it is 0, `--strict` was given and there are warnings."""
    return EXIT_WARNINGS if code == EXIT_OK and strict and plan.warnings else code
