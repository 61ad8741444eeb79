"""An InfiniBand compute fabric described in YAML, read with every problem located by line.

    infiniband:
      name: pod-a
      superpod: dgx-h100          # NVIDIA's published sizes (dgx-h100 or dgx-b200), or give
      su_count: 1                 # nodes_per_su, rails, switch_model, hca_rate, ... yourself
      routing_engine: updn        # the top tier as roots (default); ftree, minhop
      partitions:
        - {name: tenant-a, pkey: 0x0101, hosts: [dgx001, dgx002], sl: 2}

The cluster intent describes the same with `transport: infiniband` on its compute plane
(gpufabric.plan.infiniband); this file describes an InfiniBand fabric on its own.
InfiniBand has no PFC, ECN or DSCP (credit-based flow control is lossless by design): such
RoCE settings are refused with the InfiniBand equivalent named.

The file is read as the intent is (gpufabric.inputs: YAML 1.2's core schema) and checked by a
schema with the intent's strict types and name patterns: `0101` is no octal PKey, `"false"` no
boolean, `1.9` no service level. Names reach OpenSM's files, so each has a pattern. The design's
size is checked on its numbers before anything is built (a subnet's LIDs bound it).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from string import Formatter
from typing import Annotated, Any, Literal, cast

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError

from gpufabric.ib.design import IbDesign, superpod
from gpufabric.ib.errors import IbError
from gpufabric.ib.errors import Problem as IbProblem
from gpufabric.ib.model import IbFabric
from gpufabric.ib.names import HOST, HOST_PATTERN, MAX_LIDS, RESERVED_PARTITIONS
from gpufabric.ib.opensm import ENGINES, Engine, Partition, SmSettings, check
from gpufabric.ib.planner import plan_fabric
from gpufabric.inputs import yaml_text
from gpufabric.intent.errors import IntentError, Path, Problem
from gpufabric.intent.model import Model
from gpufabric.intent.schema_errors import problems_from
from gpufabric.intent.types import NAME_PATTERN, InterfaceName, whole_number

TOP = "infiniband"
ROCE_KEYS = {"pfc", "ecn", "dscp", "roce", "trust", "lossless", "buffers", "cnp", "qos"}
MAX_PKEY = 0x7FFE  # 0x7fff is the default partition; the top bit is the membership, not the key


def _pkey(value: Any) -> Any:
    """A PKey as written: hexadecimal text with 0x (`0x0101`, as OpenSM and smpquery show PKeys; YAML
    1.2 as gpufabric reads it keeps an unquoted 0x0101 as that text), or a decimal number (257).
    `0101` is refused: YAML 1.1 reads it as the octal 65, YAML 1.2 as 101, and it was likely meant
    as hexadecimal, so nothing is guessed."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{value!r} is not a PKey; write it in hexadecimal like 0x0101, or in decimal like 257")
    if isinstance(value, str):
        if re.fullmatch(r"0[xX][0-9a-fA-F]{1,4}", value):
            value = int(value, 16)
        elif re.fullmatch(r"0[0-9]{1,8}", value):
            octal = f", YAML 1.1 as the octal 0x{int(value, 8):04x}" if re.fullmatch(r"0[0-7]+", value) else ""
            raise ValueError(
                f"'{value}' has a leading zero: YAML 1.2 reads it as decimal {int(value, 10)}{octal}, and a "
                f"PKey is usually meant in hexadecimal; write 0x{value[-4:].zfill(4)} for hexadecimal "
                f"or {int(value, 10)} for decimal"
            )
        else:
            raise ValueError(
                f"{value[:40]!r} is not a PKey; write it in hexadecimal like 0x0101, or in decimal like 257"
            )
    if 0x8000 < value <= 0xFFFF and value & 0x7FFF <= MAX_PKEY:
        raise ValueError(
            f"0x{value:04x} has the full-membership bit (0x8000) set, which gpufabric sets itself for the "
            f"members; write 0x{value & 0x7FFF:04x}"
        )
    if not 0x0001 <= value <= MAX_PKEY:
        raise ValueError(f"PKey {value:#x} is out of range; use 0x0001-0x7ffe (0x7fff is the default partition)")
    return value


def _partition_name(value: str) -> str:
    if value.lower() in RESERVED_PARTITIONS:
        raise ValueError(f"'{value}' is a name OpenSM reads as a keyword or as the default partition's; use another")
    return value


def _routing_engine(value: str) -> str:
    if value not in ENGINES:
        raise ValueError(f"routing engine {value[:40]!r} is not planned for; use one of {', '.join(ENGINES)}")
    return value


_NAME_SPEC = re.compile(r"^(0?[1-9])?d?$")
_NAME_TEXT = re.compile(r"^[a-z0-9-]*$")
NAME_FIELDS = ("index", "su", "slot")


def _node_name(value: str) -> str:
    """Only {index}, {su} and {slot}, optionally zero-padded: the full format language reads
    attributes (`{index.__class__}`) and pads without bound (`{index:>999999999}`)."""
    example = "write e.g. dgx{index:03d} ({index}, {su} and {slot}, optionally zero-padded)"
    try:
        parts = list(Formatter().parse(value))
    except ValueError:
        raise ValueError(f"'{value}' is not a name pattern; {example}") from None
    used = set()
    for text, name, spec, conversion in parts:
        if not _NAME_TEXT.match(text):
            raise ValueError(f"'{value}' holds {text!r} around its fields; {example} with lower-case letters")
        if name is None:
            continue
        if name not in NAME_FIELDS or conversion is not None or not _NAME_SPEC.match(spec or ""):
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ValueError(f"'{value}' has the field {{{shown}}}; {example}")
        used.add(name)
    if "index" not in used and not {"su", "slot"} <= used:
        raise ValueError(f"'{value}' makes one name for several nodes; {example}")
    return value


def _distinct(values: list[str]) -> list[str]:
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise ValueError(f"'{twice}' is listed twice; use each once")
    return values


HostName = Annotated[str, Field(pattern=HOST_PATTERN)]
Name = Annotated[str, Field(pattern=NAME_PATTERN)]


class PartitionSpec(Model):
    """A tenant: every adapter port of its hosts a full member."""

    name: Annotated[str, Field(pattern=NAME_PATTERN), AfterValidator(_partition_name)]
    pkey: Annotated[int, BeforeValidator(_pkey)]
    hosts: list[HostName] = Field(default_factory=list, max_length=MAX_LIDS)
    sl: int = Field(0, ge=0, le=15)
    ipoib: bool = True


class FabricSpec(Model):
    """The fields under `infiniband:` (docs/infiniband.md, "The fabric file"). Design fields left out
    take the published SuperPOD's values (with `superpod`) or IbDesign's defaults."""

    name: Name = "infiniband"
    superpod: Literal["dgx-h100", "dgx-b200"] | None = None
    su_count: int | None = Field(None, ge=1)
    nodes_per_su: int | None = Field(None, ge=1, le=128)
    rails: int | None = Field(None, ge=1, le=16)
    switch_model: Literal["QM9700", "QM8700"] | None = None
    hca_rate: Literal["NDR", "NDR200", "HDR", "HDR100"] | None = None
    fabric_manager_ports: int | None = Field(None, ge=0, le=16)
    fabric_manager_ports_per_host: int | None = Field(None, ge=1, le=16)
    node_name: Annotated[str, Field(max_length=64), AfterValidator(_node_name)] | None = None
    hca_names: Annotated[list[InterfaceName], Field(min_length=1, max_length=16), AfterValidator(_distinct)] | None = (
        None
    )
    tiers: Annotated[Literal[2, 3] | None, BeforeValidator(whole_number)] = None
    hosts: Annotated[list[HostName], Field(min_length=1, max_length=MAX_LIDS), AfterValidator(_distinct)] | None = None
    routing_engine: Annotated[str, AfterValidator(_routing_engine)] = "updn"
    partitions: list[PartitionSpec] = Field(default_factory=list, max_length=MAX_PKEY)
    sl2vl: list[Annotated[int, Field(ge=0, le=14)]] | None = Field(None, min_length=16, max_length=16)
    max_vls: int = Field(8, ge=1, le=15)


class DesignFile(Model):
    infiniband: FabricSpec


DESIGN_KEYS = tuple(f.name for f in dataclasses.fields(IbDesign) if f.name != "name")


@dataclass(frozen=True)
class IbIntent:
    fabric: IbFabric
    settings: SmSettings


def load(text: str, file: str) -> IbIntent:
    data, lines = yaml_text(text, file)
    if not isinstance(data, dict) or TOP not in data:
        raise IntentError(
            file, [Problem((TOP,), "missing", f"start the file with '{TOP}:' and the fabric under it")], lines
        )
    try:
        spec = DesignFile.model_validate(data).infiniband
    except ValidationError as exc:
        raise IntentError(file, [_roce(p) for p in problems_from(exc, DesignFile)], lines) from None
    try:
        design = _design(spec)
        settings = _settings(spec)
        fabric = plan_fabric(design)  # refuses a design too large for a subnet before building it
        check(fabric, settings)
    except IbError as exc:
        raise IntentError(file, [_located(p.where, p.message, p.fix) for p in exc.problems], lines) from None
    return IbIntent(fabric, settings)


def _roce(problem: Problem) -> Problem:
    """A RoCE setting is no unknown field: it has an InfiniBand equivalent to name."""
    key = problem.path[-1] if len(problem.path) == 2 and problem.path[0] == TOP else None
    if key in ROCE_KEYS and problem.message.startswith("unknown field"):
        return Problem(
            problem.path,
            f"'{key}' is a RoCE (Ethernet) setting; an InfiniBand plane has credit-based flow control",
            "drop it; give service levels per partition (partitions[].sl) and sl2vl instead",
        )
    return problem


def _design(spec: FabricSpec) -> IbDesign:
    given: dict[str, Any] = {k: getattr(spec, k) for k in DESIGN_KEYS if getattr(spec, k, None) is not None}
    for key in ("hca_names", "hosts"):
        if key in given:
            given[key] = tuple(given[key])
    if spec.superpod is None:
        if "su_count" not in given:
            raise IbError(
                [_ib("design.su_count", "is required", "give su_count, or superpod: dgx-h100 or dgx-b200 with it")]
            )
        design = IbDesign(name=spec.name, **given)
    else:
        base = superpod(spec.superpod, given.pop("su_count", 1))
        design = dataclasses.replace(base, name=spec.name, **given)
    _check_node_name(design)
    return design


def _check_node_name(design: IbDesign) -> None:
    """The host names the pattern makes are host names (the first and the longest: zero-padding is
    fixed width, so the last index, SU and slot make the longest)."""
    if design.hosts:
        return
    for index, su, slot in ((1, 1, 1), (max(1, design.node_count), design.su_count, design.nodes_per_su)):
        host = design.node_name.format(index=index, su=su, slot=slot)
        if not HOST.match(host):
            raise IbError(
                [
                    _ib(
                        "design.node_name",
                        f"makes the host name {host[:60]!r}",
                        "make host names of lower-case letters, digits and '-', not at either end, at most 48",
                    )
                ]
            )


def _settings(spec: FabricSpec) -> SmSettings:
    partitions = tuple(Partition(p.name, p.pkey, tuple(p.hosts), p.sl, p.ipoib) for p in spec.partitions)
    extra: dict[str, Any] = {}
    if spec.sl2vl is not None:
        extra["sl2vl"] = tuple(spec.sl2vl)
    engine = cast(Engine, spec.routing_engine)  # one of ENGINES: checked by the schema
    return SmSettings(routing_engine=engine, partitions=partitions, max_vls=spec.max_vls, **extra)


def _ib(where: str, message: str, fix: str) -> IbProblem:
    return IbProblem(where, message, fix)


def _located(where: str, message: str, fix: str) -> Problem:
    """An IbError's `where` ("design.tiers", "partitions[2] (x)") as a path into the file."""
    path: Path
    if m := re.match(r"partitions\[(\d+)\]", where):
        path = (TOP, "partitions", int(m[1]))
    elif where.startswith("design."):
        path = (TOP, where.removeprefix("design."))
    elif where == "sl2vl":
        path = (TOP, "sl2vl")
    else:
        path = (TOP,)
    return Problem(path, message, fix)
