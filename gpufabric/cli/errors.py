"""The command line's side of the library's domain errors: the one place they become click's usage
errors (message, `Usage:` hint, exit code 2), and the notes the library leaves for the user."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from gpufabric.cli.output import err, shown
from gpufabric.fleet.errors import PushRefusedError  # light: the options of every command load it

if TYPE_CHECKING:
    from gpufabric.fleet.access import Access  # NAPALM and Nornir: only where a command reaches switches


def usage_error(exc: PushRefusedError) -> click.UsageError:
    if exc.bad_value:
        return click.BadParameter(str(exc), param_hint=exc.option)
    return click.UsageError(str(exc))


@contextmanager
def refusals() -> Iterator[None]:
    """Inside a command: a refusal from the library exits 2 with its message, as a usage error."""
    try:
        yield
    except PushRefusedError as exc:
        raise usage_error(exc) from None


def show_notes(access: Access) -> None:
    for note in access.notes:
        err.print(shown(note))  # may name a file or a variable the user gave: text, never markup
