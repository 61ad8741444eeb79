"""The one place the library's errors become exit codes and messages.

Exit codes (the table every command keeps, docs/exit-codes.md): 0 done, nothing found; 1 an internal
error (a bug: anything that is not a GpufabricError); 2 bad input or a refusal (nothing was done: a
located problem in a file, an option at fault, a switch or lab that cannot be used as asked); 3
warnings under --strict; 4 findings: the command ran to its end and found or left something wrong
(failed checks, failed or rolled-back switches, a refused drain, a non-empty diff where asked); 5
`diff` only: findings that would disturb what carries traffic; 130 interrupted. Findings are a
command's result, not an error, and never pass through here: a command returns `outcome(ok)`.

FAMILIES is read top to bottom and the first family an error belongs to decides; every error
gpufabric raises on purpose derives from GpufabricError (gpufabric/errors.py), so none is reported
as a bug.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from gpufabric.errors import GpufabricError, LocatedError, printable
from gpufabric.fleet.errors import PushRefusedError  # light: the options of every command load it

if TYPE_CHECKING:
    from gpufabric.fleet.access import Access  # NAPALM and Nornir: only where a command reaches switches

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_WARNINGS, EXIT_FINDINGS, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
EXIT_DISRUPTIVE = 5  # `diff`: a change that would disturb what carries traffic today (findings, graver)

BUG_NOTE = (
    "this is a bug in gpufabric; please report it with the intent file (set GPUFABRIC_DEBUG=1 to see the traceback)"
)


@dataclass(frozen=True)
class Family:
    """Errors of one kind: the exit code they end a command with, and how they are shown."""

    error: type[BaseException]
    exit_code: int
    shown: Callable[[BaseException], str]


def _located(exc: BaseException) -> str:
    assert isinstance(exc, LocatedError)
    return exc.render()  # every problem with its file, line and field, then what was not done


def _refusal(exc: BaseException) -> str:
    return f"error: {printable(str(exc))}"


def _bug(exc: BaseException) -> str:
    return f"internal error: {type(exc).__name__}: {printable(str(exc))}"


FAMILIES: tuple[Family, ...] = (
    Family(LocatedError, EXIT_INPUT, _located),  # the intent or an input file (IntentError, InputError)
    Family(GpufabricError, EXIT_INPUT, _refusal),  # push refusals, secrets, IB designs, exports, lab, ...
    Family(BaseException, EXIT_INTERNAL, _bug),  # not raised on purpose: a bug
)


def outcome(ok: bool) -> int:
    """A command's exit code from its result: EXIT_OK when all was well, EXIT_FINDINGS when it ran to its
    end and something failed, differs or was refused."""
    return EXIT_OK if ok else EXIT_FINDINGS


def family_of(exc: BaseException) -> Family:
    return next(f for f in FAMILIES if isinstance(exc, f.error))


def report(exc: BaseException) -> int:
    """Say what went wrong on stderr (as plain text: a message may echo what the user gave) and
    return the exit code for it."""
    from gpufabric.cli.output import err  # rich: not at start-up

    family = family_of(exc)
    if family.exit_code == EXIT_INTERNAL and os.environ.get("GPUFABRIC_DEBUG"):
        traceback.print_exception(exc)
    err.print(family.shown(exc), markup=False)
    if family.exit_code == EXIT_INTERNAL:
        err.print(BUG_NOTE)
    return family.exit_code


def usage_error(exc: PushRefusedError) -> click.UsageError:
    if exc.bad_value:
        return click.BadParameter(str(exc), param_hint=exc.option)
    return click.UsageError(str(exc))


@contextmanager
def refusals() -> Iterator[None]:
    """Inside a command: a refusal naming an option exits 2 with its message as a usage error
    (with the `Usage:` line and the option at fault)."""
    try:
        yield
    except PushRefusedError as exc:
        raise usage_error(exc) from None


def show_notes(access: Access) -> None:
    from gpufabric.cli.output import err, shown

    for note in access.notes:
        err.print(shown(note))  # may name a file or a variable the user gave: text, never markup
