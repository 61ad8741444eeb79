"""Turn pydantic's validation errors into problems a person can act on."""

from __future__ import annotations

import difflib
import re
import reprlib
from typing import Any

from pydantic import BaseModel, ValidationError

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import DataPlane, InfinibandPlane
from gpufabric.intent.partial import clean_path
from gpufabric.intent.types import PATTERN_HINTS


def problems_from(exc: ValidationError, root: type[BaseModel]) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[Path, str]] = set()
    for err in exc.errors(include_url=False):
        problem = _one(err, root)
        if (problem.path, problem.message) not in seen:
            seen.add((problem.path, problem.message))
            problems.append(problem)
    return problems


# Fields of an Ethernet compute plane that mean nothing on InfiniBand, with why and what to give instead.
_NOT_ON_INFINIBAND = {
    **dict.fromkeys(
        ("qos", "carries_roce", "cable_length", "pfc", "ecn", "dscp", "lossless"),
        (
            "is a RoCE (Ethernet) setting; InfiniBand's flow control is credit-based and lossless by design",
            "drop it; give service levels per partition (partitions[].sl) and sl2vl instead",
        ),
    ),
    **dict.fromkeys(
        ("routing", "addressing", "host_links", "host_mtu", "load_balancing"),
        (
            "is an IP/BGP setting; an InfiniBand plane has no IP and no BGP (the subnet manager routes it)",
            "drop it; choose routing_engine, and ipoib for addresses on the hosts",
        ),
    ),
    "switches": ("lists Ethernet switch roles", "drop it; give switch_model (QM9700 or QM8700)"),
}


def _one(err: Any, root: type[BaseModel]) -> Problem:
    path = clean_path(err["loc"])
    kind = err["type"]
    if kind == "missing":
        return Problem(path, "is required but missing", f"add `{path[-1]}:` here (see docs/intent.md)")
    if kind == "union_tag_invalid":
        tag = str(err.get("ctx", {}).get("tag", "")).removeprefix("transport:")
        return Problem((*path, "transport"), f"{tag} is not allowed", "use ethernet (the default) or infiniband")
    if kind == "extra_forbidden" and "transport:infiniband" in err["loc"] and path[-1] in _NOT_ON_INFINIBAND:
        what, fix = _NOT_ON_INFINIBAND[str(path[-1])]
        return Problem(path, f"'{path[-1]}' {what}", fix)
    if kind == "extra_forbidden" and path[-1] == "sharp":
        return Problem(
            path,
            "'sharp' is InfiniBand's in-network reduction in NVIDIA Quantum switches; this plane is Ethernet, "
            "and gpufabric configures SHARP on InfiniBand only",
            "drop it, or give the compute plane `transport: infiniband` (Quantum switches)",
        )
    if kind == "extra_forbidden":
        allowed = _fields_at(root, tuple(err["loc"][:-1]))
        close = difflib.get_close_matches(str(path[-1]), allowed, n=1, cutoff=0.75)
        hint = f"did you mean `{close[0]}`?" if close else f"known fields here: {', '.join(sorted(allowed))}"
        return Problem(path, f"unknown field '{path[-1]}'", hint)
    if kind in ("literal_error", "enum"):
        expected = err.get("ctx", {}).get("expected", "")
        return Problem(path, f"{_show(err.get('input'))} is not allowed", f"use one of {expected}")
    if kind == "string_pattern_mismatch":
        pattern = str(err.get("ctx", {}).get("pattern", ""))
        hint = PATTERN_HINTS.get(pattern, f"match the pattern {pattern}")
        return Problem(path, f"{_show(err.get('input'))} is not allowed here", f"write {hint}")
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return Problem(path, f"{_show(err.get('input'))} is out of range", err["msg"].lower())
    if kind in ("too_short", "too_long"):
        return Problem(path, err["msg"].replace("List", "the list").replace("Dictionary", "the mapping"))
    if kind == "value_error":
        msg = str(err.get("ctx", {}).get("error", err["msg"])).removeprefix("Value error, ")
        # Validators say "what is wrong; write what is right": the second half is the fix.
        what, _, fix = msg.rpartition("; ")
        if what and fix.startswith(("write ", "use ")):
            return Problem(path, what, fix)
        return Problem(path, msg)
    if kind.startswith(("ip_v4", "ip_any")):
        return Problem(
            path,
            f"{_show(err.get('input'))} is not an IPv4 {'network' if 'network' in kind else 'address'}",
            "write it like 10.0.0.0/24 (host bits zero)" if "network" in kind else "write it like 10.0.0.1",
        )
    if kind in ("int_type", "bool_type", "int_from_float", "float_type"):
        return _typed(path, kind, err.get("input"))
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return Problem(path, f"expected a mapping of fields, found {_kind_of(err.get('input'))}")
    if kind == "list_type":
        return Problem(path, f"expected a list, found {_kind_of(err.get('input'))}")
    # Pydantic's own message is clear enough for the rest (int_parsing, bool_parsing, ...).
    return Problem(path, f"{err['msg']} (found {_show(err.get('input'))})")


_TRANSPORTS: dict[str, type[BaseModel]] = {"transport:ethernet": DataPlane, "transport:infiniband": InfinibandPlane}

_LEADING_ZERO = re.compile(r"^[-+]?0[0-9]+$")
_OCTAL = re.compile(r"^[-+]?0[0-7]+$")
_BASE60 = re.compile(r"^[-+]?[0-9]+(:[0-5]?[0-9])+$")
_YAML11_BOOLS = {"yes", "no", "on", "off", "y", "n"}


def _typed(path: Path, kind: str, value: Any) -> Problem:
    """A value of the wrong type, with what YAML 1.1 would have made of it and what to write."""
    want = "true or false" if kind == "bool_type" else ("a number" if kind == "float_type" else "a whole number")
    found = f"{_show(value)} is not {'an integer' if want == 'a whole number' else want}"
    if isinstance(value, str):
        text = value.strip()
        if _LEADING_ZERO.match(text):
            octal = f" (YAML 1.1 reads it as the octal {int(text, 8)})" if _OCTAL.match(text) else ""
            return Problem(path, f"{found}: a leading zero is ambiguous{octal}", f"write {int(text, 10)}")
        if _BASE60.match(text):
            sixty = 0
            for part in text.lstrip("+-").split(":"):
                sixty = sixty * 60 + int(part)
            return Problem(
                path, f"{found} (YAML 1.1 reads {text} as the base-60 number {sixty})", f"write {want}, without a colon"
            )
        if text.lower() in _YAML11_BOOLS | {"true", "false"}:
            fix = "write true or false" if kind == "bool_type" else f"write {want}, not yes/no/on/off"
            return Problem(path, f"{found} (in YAML 1.2, {text} is text)", fix)
        return Problem(path, found, f"write {want}, unquoted")
    if isinstance(value, float) and value.is_integer() and kind != "bool_type":
        return Problem(path, f"{found}", f"write {int(value)}, without the decimal point")
    if isinstance(value, bool):
        return Problem(path, found, f"write {want}, not true/false")
    if isinstance(value, int) and kind == "bool_type":
        return Problem(path, found, f"write {'true' if value else 'false'} (a number is not a yes/no answer)")
    return Problem(path, found, f"write {want}")


_SHOW = reprlib.Repr()
_SHOW.maxstring = _SHOW.maxother = 60
_SHOW.maxlist = _SHOW.maxdict = 4
_SHOW.maxlevel = 2


def _show(value: Any) -> str:
    """A short picture of a value: bounded whatever its size (an alias bomb expands to millions)."""
    return _SHOW.repr(value)


def _kind_of(value: Any) -> str:
    return {str: "a string", int: "a number", float: "a number", list: "a list", bool: "true/false"}.get(
        type(value), "nothing" if value is None else type(value).__name__
    )


def _fields_at(root: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Names of the fields allowed at pydantic's location `loc`, for 'did you mean'."""
    model: Any = root
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        if isinstance(part, str) and part.startswith("transport:"):
            model = _TRANSPORTS.get(part, model)  # the union branch pydantic took
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            # Inside a dict[...] value, the key is data, not a field name.
            continue
        model = _model_in(field.annotation)
    return list(getattr(model, "model_fields", {}).keys())


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
