"""What the host_baseline role read on each GPU host: the GPU-to-rail-NIC pairing from the PCI tree.

`playbooks/validate.yml` writes one `<host>.json` per GPU host (into build/host-facts/ by default):
`{"host": ..., "source": "sysfs", "gpus": [{"index", "pci", "numa_node", ...}], "nics": [...],
"pairs": [{"nic": "eth1", "rail": 1, "gpus": [0, 1, 2, 3], "via": [...]}]}`. GPU indexes are in PCI
address order, the order nvidia-smi and the device plugin number them. `gpufabric export k8s-network
--host-facts DIR` takes the pairing from here, and assumes rail r serves GPU r-1 only for a node with
no reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufabric.errors import Problem
from gpufabric.inputs import InputError, MiB, read_json
from gpufabric.plan.model import Plan

MAX_FACTS = 4 * MiB  # a host's reading is a few KiB


@dataclass(frozen=True, slots=True)
class Reading:
    host: str
    pairs: dict[str, tuple[int, ...]]  # rail NIC -> the GPU indexes it serves
    file: str


def _problem(file: Path, where: tuple[str | int, ...], message: str, hint: str) -> InputError:
    return InputError(str(file), [Problem(where, message, hint)])


def _reading(file: Path, doc: Any, nics: dict[str, set[str]], gpus: dict[str, int]) -> Reading:
    if not isinstance(doc, dict) or not isinstance(doc.get("host"), str):
        raise _problem(file, ("host",), "not a host_baseline reading: no host name",
                       "give the files playbooks/validate.yml wrote (build/host-facts/<host>.json)")  # fmt: skip
    host = doc["host"]
    if host not in nics:
        raise _problem(file, ("host",), f"host {host!r} is not a GPU server of the plan with rail NICs",
                       "read the hosts of this plan, or leave this file out")  # fmt: skip
    pairs = doc.get("pairs")
    if not isinstance(pairs, list):
        raise _problem(file, ("pairs",), "no pairs list", "run playbooks/validate.yml again")
    out: dict[str, tuple[int, ...]] = {}
    for i, p in enumerate(pairs):
        nic = p.get("nic") if isinstance(p, dict) else None
        if not isinstance(nic, str) or nic not in nics[host]:
            raise _problem(file, ("pairs", i, "nic"), f"{nic!r} is not a rail NIC of {host} in the plan "
                           f"({', '.join(sorted(nics[host]))})", "read the host with the plan's NICs")  # fmt: skip
        served = p.get("gpus")
        if not isinstance(served, list) or not all(
            isinstance(g, int) and not isinstance(g, bool) and 0 <= g < gpus[host] for g in served
        ):
            raise _problem(file, ("pairs", i, "gpus"), f"GPU indexes {served!r} are not whole numbers below "
                           f"{host}'s {gpus[host]} GPUs", "read the host again")  # fmt: skip
        out[nic] = tuple(served)
    return Reading(host, out, str(file))


def load(path: Path, plan: Plan, rail_nics: dict[str, set[str]]) -> dict[str, Reading]:
    """Node -> its reading, from `path` (a folder of `<host>.json`, or one file). `rail_nics`: the
    plan's rail NIC names per GPU node. A reading that names a host, NIC or GPU the plan does not have
    is bad input (exit 2)."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        hint = "run playbooks/validate.yml (it writes build/host-facts/), or name the folder it wrote"
        raise _problem(path, (), "no <host>.json in this folder", hint)
    gpus = {s.name: s.gpus for s in plan.servers if s.name in rail_nics}
    out: dict[str, Reading] = {}
    for file in files:
        reading = _reading(file, read_json(file, what="a host reading", max_bytes=MAX_FACTS), rail_nics, gpus)
        if reading.host in out:
            raise _problem(file, ("host",), f"{reading.host} is read twice (also {out[reading.host].file})",
                           "keep one reading per host")  # fmt: skip
        out[reading.host] = reading
    return out
