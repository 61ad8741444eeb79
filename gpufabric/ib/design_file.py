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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any

from gpufabric.ib.design import PUBLISHED, IbDesign, superpod
from gpufabric.ib.errors import IbError
from gpufabric.ib.errors import Problem as IbProblem
from gpufabric.ib.model import IbFabric
from gpufabric.ib.opensm import Partition, SmSettings, check
from gpufabric.ib.planner import plan_fabric
from gpufabric.intent.errors import IntentError, Path, Problem
from gpufabric.intent.yaml_lines import load_yaml

TOP = "infiniband"
DESIGN_KEYS = {f.name for f in fields(IbDesign)} - {"name"}
SM_KEYS = {"routing_engine", "partitions", "sl2vl", "max_vls"}
ROCE_KEYS = {"pfc", "ecn", "dscp", "roce", "trust", "lossless", "buffers", "cnp"}
ENGINES = ("ftree", "updn", "minhop")


@dataclass(frozen=True)
class IbIntent:
    fabric: IbFabric
    settings: SmSettings


def load(text: str, file: str) -> IbIntent:
    data, lines = load_yaml(text, file)
    body = data.get(TOP) if isinstance(data, dict) else None
    if not isinstance(body, dict):
        raise IntentError(
            file, [Problem((TOP,), "missing", f"start the file with '{TOP}:' and the fabric under it")], lines
        )
    problems = _keys(body)
    if problems:
        raise IntentError(file, problems, lines)
    try:
        design = _design(body)
        settings = _settings(body)
        fabric = plan_fabric(design)
        check(fabric, settings)
    except IbError as exc:
        raise IntentError(file, [_located(p.where, p.message, p.fix) for p in exc.problems], lines) from None
    except (TypeError, ValueError) as exc:
        raise IntentError(file, [Problem((TOP,), str(exc), "see docs/infiniband.md for the fields")], lines) from None
    return IbIntent(fabric, settings)


def _keys(body: dict[str, Any]) -> list[Problem]:
    out = []
    known = DESIGN_KEYS | SM_KEYS | {"name", "superpod"}
    for key in body:
        path = (TOP, key)
        if key in ROCE_KEYS or key == "qos":
            out.append(
                Problem(
                    path,
                    f"'{key}' is a RoCE (Ethernet) setting; an InfiniBand plane has credit-based flow control",
                    "drop it; give service levels per partition (partitions[].sl) and sl2vl instead",
                )
            )
        elif key not in known:
            out.append(Problem(path, f"unknown field '{key}'", f"use one of {', '.join(sorted(known))}"))
    return out


def _design(body: dict[str, Any]) -> IbDesign:
    name = str(body.get("name", "infiniband"))
    given = {k: body[k] for k in DESIGN_KEYS if k in body}
    if "hca_names" in given:
        given["hca_names"] = tuple(given["hca_names"])
    system = body.get("superpod")
    if system is None:
        return IbDesign(name=name, **given)
    if system not in PUBLISHED:
        raise IbError(
            [_ib("design.superpod", f"no published SuperPOD {system!r}", f"use one of {', '.join(PUBLISHED)}")]
        )
    base = superpod(str(system), int(given.pop("su_count", 1)))
    return IbDesign(**{**{f.name: getattr(base, f.name) for f in fields(IbDesign)}, **given, "name": name})


def _settings(body: dict[str, Any]) -> SmSettings:
    engine = body.get("routing_engine", "updn")
    if engine not in ENGINES:
        raise IbError([_ib("design.routing_engine", f"routing engine {engine!r}", f"use one of {', '.join(ENGINES)}")])
    parts = body.get("partitions") or []
    if not isinstance(parts, list):
        raise IbError([_ib("partitions", "is not a list", "give a list of {name, pkey, hosts, sl}")])
    partitions = tuple(_partition(i, p) for i, p in enumerate(parts))
    extra: dict[str, Any] = {}
    if "sl2vl" in body:
        extra["sl2vl"] = tuple(int(v) for v in body["sl2vl"])
    if "max_vls" in body:
        extra["max_vls"] = int(body["max_vls"])

    return SmSettings(routing_engine=engine, partitions=partitions, **extra)


def _partition(i: int, p: Any) -> Partition:
    if not isinstance(p, dict) or "name" not in p or "pkey" not in p:
        raise IbError(
            [_ib(f"partitions[{i}] (?)", "needs name and pkey", "write {name: NAME, pkey: 0x0101, hosts: [...]}")]
        )
    pkey = p["pkey"]
    if isinstance(pkey, str):
        pkey = int(pkey, 0)
    return Partition(
        str(p["name"]),
        int(pkey),
        tuple(str(h) for h in p.get("hosts") or ()),
        int(p.get("sl", 0)),
        bool(p.get("ipoib", True)),
    )


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
