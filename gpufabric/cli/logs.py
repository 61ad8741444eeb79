"""`--log-level`/`-v`: what gpufabric's own modules log, on stderr. Quiet unless asked for.

Only gpufabric's loggers are configured: Nornir logs every task's arguments at INFO and NAPALM's
drivers log what they send at DEBUG, so turning them up is left to whoever embeds the library and
knows what their candidates hold.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

ENV = "GPUFABRIC_LOG_LEVEL"
LEVELS = ("debug", "info", "warning", "error")
PACKAGES = ("gpufabric", "nornir_tasks", "napalm_frr", "napalm_cumulus")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is when a record comes: a progress bar that redirects stderr
    while it runs (rich's) then keeps the log lines above it instead of tearing through it."""

    def __init__(self) -> None:
        super().__init__()

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


class _Printable(logging.Formatter):
    """A log line holds switches' and tools' words (why a read failed, what a switch answered): its
    control characters are written as escapes, so a line can neither forge a second record nor send an
    escape sequence to the terminal or to whatever collects stderr."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's own name)
        from gpufabric.intent.errors import printable

        record.message = printable(record.message)  # the message only: a traceback below it is ours
        return super().formatMessage(record)


def level_for(name: str | None, verbose: int) -> int:
    """--log-level wins; else -v gives INFO, -vv DEBUG; else WARNING (nothing in a normal run)."""
    if name:
        return int(logging.getLevelName(name.upper()))
    return {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)


def configure(level: int) -> None:
    formatter = _Printable(FORMAT, datefmt="%Y-%m-%dT%H:%M:%SZ")
    formatter.converter = time.gmtime
    for package in PACKAGES:
        logger = logging.getLogger(package)
        for old in [h for h in logger.handlers if isinstance(h, _Stderr)]:
            logger.removeHandler(old)
        handler = _Stderr()
        handler.setFormatter(formatter)
        logger.addHandler(handler)
        logger.setLevel(level)
