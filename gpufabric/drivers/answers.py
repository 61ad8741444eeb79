"""A switch's answers are outside input: how much of one is read, for how long, and what it must look like.

A switch is a peer that can lie or break: an answer may be gigabytes, arrive a byte a minute, carry a
login banner where a frame was expected, hold terminal escapes or `[red]`-style markup in its stderr,
or be JSON of another shape than the getter asked for. Each of those ends here as a named failure, an
`SwitchAnswerError` naming the switch, the command and the bound or shape that was not met, never as
a hang, an exhausted memory, a shifted answer or a KeyError.

The bounds (`ReadBounds`), and why they are what they are:

- 64 MiB per command (stdout and stderr together). The largest configuration gpufabric renders is 79 KB
  (a SONiC spine's config_db.json, inventory/examples/sonic.yml), the largest NVUE one 51 KB (a
  superspine of the 32k-GPU example); a switch's own running configuration, defaults included, is a few
  times that. What grows with the fabric is the routing table: validate and the exporter read a
  switch's whole IPv4 table as JSON, and a leaf of the 32k example holds about 1,800 prefixes with
  64-way ECMP, some 30 MB of vtysh's JSON (about 250 bytes a next hop, measured on the lab's recorded
  table). 64 MiB holds that twice over and a configuration hundreds of times.
- 60 s per command, from the exec request to the exit status: a whole-command deadline, not an idle
  timeout (a byte every 59 s used to keep a command going for ever). A driver's own timeout, when
  longer, wins. NVUE's apply of a full 64-port candidate is the slowest command pushed (8 s assumed in
  bench/fleet_sim/latency.py), and it printed nothing for its whole run before: under the old idle
  timeout a quiet apply already had 60 s.
- 256 MiB and 900 s of answers per session burst: the commands a session runs back to back (no pause
  of REST_SECONDS between two of them) share one budget, so a switch answering every command just
  under its bounds cannot keep a worker for the length of a whole validate times its commands. A
  pause renews it: a session kept open between a telemetry scrape and the next, or across a push's
  batches, is bounded per burst of use, not over its life (the exporter reads the whole routing table
  every scrape).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from napalm.base.exceptions import NapalmException

from gpufabric.errors import GpufabricError
from gpufabric.inputs import InputError, MiB, json_text
from gpufabric.outputs import shown

REST_SECONDS = 1.0  # a pause this long between two commands starts a new session budget


@dataclass(frozen=True)
class ReadBounds:
    """How much of a switch's answers is read, and for how long (see the module's text for the figures)."""

    command_bytes: int = 64 * MiB
    command_seconds: float = 60.0
    session_bytes: int = 256 * MiB
    session_seconds: float = 900.0
    rest_seconds: float = REST_SECONDS


DEFAULT_BOUNDS = ReadBounds()


def size_text(n: int) -> str:
    if n < MiB:
        return f"{n:,} bytes"
    return f"{n / MiB:,.1f}".removesuffix(".0") + " MiB"


class SwitchAnswerError(NapalmException, GpufabricError):
    """A switch's answer that cannot be used, named by switch and command. One line: a push's report
    and validate's table show the first line of an error."""

    def __init__(self, host: str, command: str, problem: str) -> None:
        self.host, self.command, self.problem = host, command, problem
        super().__init__(f"{host or 'the switch'}: `{shown(command, 120)}`: {problem}")


class AnswerTooLargeError(SwitchAnswerError):
    """More bytes than a bound allows (per command or per session burst)."""

    size = 0  # how many bytes had been read when the bound was passed


class AnswerDeadlineError(SwitchAnswerError):
    """The answer did not end within a deadline (the command's, or the session burst's)."""


class AnswerFramingError(SwitchAnswerError):
    """A batched read whose per-command frames are missing, repeated or garbled."""


class AnswerShapeError(SwitchAnswerError):
    """An answer that parses, but not to what was asked: JSON of another shape, a missing key, a number
    that is not one."""


class ShapeError(ValueError, GpufabricError):
    """A parser's finding about an answer's shape, before the driver names the switch and command
    (`located` turns it into an AnswerShapeError)."""


def switch_json(text: str, what: str) -> Any:
    """A switch's JSON answer, read by RFC 8259 (no NaN or Infinity, nesting bounded: see
    gpufabric.inputs.json_text), or ShapeError."""
    try:
        return json_text(text, what, what)
    except InputError as exc:
        raise ShapeError(exc.problems[0].message if exc.problems else str(exc)) from None


def as_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ShapeError(f"{what} is {_kind(value)}, not a JSON object")
    return value


def as_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ShapeError(f"{what} is {_kind(value)}, not a JSON list")
    return value


def as_dicts(value: Any, what: str) -> list[dict[str, Any]]:
    items = as_list(value, what)
    for i, item in enumerate(items):
        if not isinstance(item, dict):  # the words only for a finding: a routing table has 100,000 items
            raise ShapeError(f"{what}[{i}] is {_kind(item)}, not a JSON object")
    return items


def as_str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ShapeError(f"{what} is {_kind(value)}, not a string")
    return value


def as_int(value: Any, what: str) -> int:
    """A count or an index: a JSON integer, or a string of one (some daemons quote numbers)."""
    if isinstance(value, bool):
        raise ShapeError(f"{what} is a boolean, not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise ShapeError(f"{what} is {_kind(value)}, not an integer")


def as_float(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ShapeError(f"{what} is {_kind(value)}, not a number")
    try:
        number = float(value)
    except ValueError:
        raise ShapeError(f"{what} is {shown(str(value), 40)!r}, not a number") from None
    if not math.isfinite(number):
        raise ShapeError(f"{what} is {value!r}, not a finite number")
    return number


def key(item: dict[str, Any], name: str, what: str) -> Any:
    if name not in item:
        raise ShapeError(f"{what} has no {name!r}")
    return item[name]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {shown(value, 40)!r}"
    return f"the number {value!r}" if isinstance(value, int | float) else type(value).__name__


def located(host: str, command: str, exc: Exception) -> AnswerShapeError:
    """A parser's failure on `command`'s answer, as the named failure of this switch and command. A
    parser's KeyError or TypeError (an answer of a shape nobody checked for) is named the same way,
    with what Python found, instead of leaving as a traceback."""
    if isinstance(exc, ShapeError):
        found, named = str(exc), f"`{command}`"
        if found.startswith(named):  # the parser named the command too: said once
            return AnswerShapeError(host, command, f"its answer{found[len(named) :]}")
        return AnswerShapeError(host, command, f"its answer is not what was asked: {found}")
    detail = f"{type(exc).__name__}: {shown(str(exc), 200)}"
    return AnswerShapeError(host, command, f"its answer has an unexpected shape ({detail})")


PARSE_FAILURES = (ShapeError, KeyError, TypeError, AttributeError, IndexError, ValueError, RecursionError)


# What NAPALM's own getters (EOS, NX-OS) read from a switch's JSON: its code indexes the answer as the
# vendor documents it, and a switch answering otherwise fails there with a KeyError or a TypeError.
NAPALM_READS = (
    "get_facts",
    "get_interfaces",
    "get_interfaces_counters",
    "get_interfaces_ip",
    "get_bgp_neighbors",
    "get_lldp_neighbors",
    "get_route_to",
    "get_config",
    "compare_config",
    "cli",
)
_SHAPE_SLIPS = (KeyError, TypeError, AttributeError, IndexError)


def named_reads(cls: type, names: tuple[str, ...] = NAPALM_READS) -> type:
    """Give `cls` each getter it inherits, wrapped so that a KeyError, TypeError, AttributeError or
    IndexError inside it (NAPALM's code meeting an answer of another shape) is the named failure of
    this switch and getter instead of a traceback. Used as a class decorator."""
    for name in names:
        setattr(cls, name, _named(getattr(cls, name), name))
    return cls


def _named(getter: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(getter)
    def read(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return getter(self, *args, **kwargs)
        except _SHAPE_SLIPS as exc:
            raise located(str(getattr(self, "hostname", "")), name, exc) from None

    return read


def bounds_of(optional_args: dict[str, Any]) -> ReadBounds:
    """The drivers' optional arg `read_bounds` (a ReadBounds: another size or deadline than the defaults,
    for a fabric whose answers outgrow them, or a test), else DEFAULT_BOUNDS."""
    bounds = optional_args.get("read_bounds", DEFAULT_BOUNDS)
    if not isinstance(bounds, ReadBounds):
        raise TypeError(
            f"optional arg read_bounds: a gpufabric.drivers.answers.ReadBounds, not {type(bounds).__name__}"
        )
    return bounds
