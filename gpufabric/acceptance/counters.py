"""The evidence of an incast job: counters of its NICs and switch ports before and after, as flat
`name -> value` maps, and what their differences show (drops, PFC pauses, ECN marks and CNPs).

NIC counter names are mlx5's (ConnectX), as the Linux kernel's mlx5 documentation
(Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst) and NVIDIA's
"Understanding mlx5 Linux counters" give them: `ethtool -S` has `rx_prio<p>_pause` and
`tx_prio<p>_pause` (PFC frames received and sent on priority p), `rx_discards_phy` (received packets
the port dropped for lack of buffer), `rx_prio<p>_discards`, `rx_prio<p>_buf_discard` and
`rx_prio<p>_cong_discard` (the same per priority), `tx_discards_phy` and `rx_out_of_buffer`; the RDMA
port's `hw_counters` have `np_ecn_marked_roce_packets` and `np_cnp_sent` (the receiver saw ECN marks
and answered with CNPs), `rp_cnp_handled` (a sender slowed down on a CNP) and `out_of_buffer` (a
packet dropped for want of a receive WQE).

Switch ports are read through the platform's lossless reader (the telemetry's): PFC frames per
priority or summed, PFC watchdog trips, ECN marks and per-queue drops where the OS reports them, and
NAPALM's per-port discards.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpufabric.acceptance.model import Endpoint, IncastJob
from gpufabric.errors import GpufabricError
from gpufabric.outputs import json_dumps
from gpufabric.verify.running.ethtool import PortCounters
from gpufabric.verify.running.lossless import read_lossless

Counters = dict[str, int]
HW_COUNTERS = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "out_of_buffer")
_NIC_DROPS = re.compile(
    r"(rx|tx)_discards_phy|rx_out_of_buffer|out_of_buffer|rx_prio(\d)_(discards|buf_discard|cong_discard)"
)
_NIC_PAUSE = re.compile(r"(rx|tx)_prio(\d)_pause")
_NIC_ECN = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled")
_DIGITS = re.compile(r"[0-9]+")


class SnapshotError(ValueError, GpufabricError):
    """A counter snapshot that cannot be read."""


# -- NICs ------------------------------------------------------------------------------------------


def nic_command(end: Endpoint) -> str:
    """One shell line on a server: `ethtool -S` of its NIC, then its RDMA port counters as `path:value`."""
    files = " ".join(f"/sys/class/infiniband/{end.hca}/ports/*/hw_counters/{c}" for c in HW_COUNTERS)
    return f"ethtool -S {shlex.quote(end.interface)}; grep -H . {files} 2>/dev/null || true"


def parse_nic(text: str) -> Counters:
    """`ethtool -S` lines (`     name: value`) and `grep -H` lines of hw_counters files, by name."""
    found: Counters = {}
    for line in text.splitlines():
        if line.startswith("/sys/"):
            path, _, value = line.rpartition(":")
            name = path.rsplit("/", 1)[-1]
        else:
            name, _, value = line.strip().partition(":")
        if _DIGITS.fullmatch(value.strip()) and name:  # ASCII digits: isdigit() takes '²', int() refuses it
            name, n = name.strip(), int(value)
            if found.get(name, n) != n:  # two snapshots in one file: which is this one cannot be told
                raise SnapshotError(f"{name} read twice ({found[name]}, then {n}): more than one snapshot in the file")
            found[name] = n
    if not found:
        raise SnapshotError("no counters: not `ethtool -S` output, or the NIC is gone")
    return found


# -- switches --------------------------------------------------------------------------------------


def flatten(found: PortCounters, discards: dict[str, int] | None = None) -> Counters:
    """A port's lossless counters as `pfc.prio3.rx`, `pfc.all.tx`, `ecn_marked`, `drops.queue.<q>`,
    `pfc_watchdog`, `discards.rx` ..."""
    out: Counters = {f"pfc.prio{p}.{d}": n for (p, d), n in found.pause.items()}
    out |= {f"pfc.all.{d}": n for d, n in found.pause_all.items()}
    out |= {f"drops.queue.{q}": n for q, n in found.queue_drops.items()}
    if found.ecn_marked is not None:
        out["ecn_marked"] = found.ecn_marked
    if found.storm:
        out["pfc_watchdog"] = sum(found.storm.values())
    out |= {f"discards.{d}": n for d, n in (discards or {}).items()}
    return out


def read_switch(conn: Any, platform: str, ports: list[str]) -> dict[str, Counters]:
    """The job's ports of one switch: the platform's lossless counters and NAPALM's per-port discards."""
    lossless = read_lossless(conn, platform, ports) or {}
    getter = getattr(conn, "get_interfaces_counters", None)
    per_port = getter() if getter is not None else {}
    out = {}
    for port in ports:
        c = per_port.get(port) or {}
        discards = {d: int(c[f"{d}_discards"]) for d in ("rx", "tx") if c.get(f"{d}_discards", -1) >= 0}
        out[port] = flatten(lossless.get(port, PortCounters()), discards)
    return out


def snapshot_switches(job: IncastJob, platforms: dict[str, str], connect: Callable[[str], Any]) -> dict[str, Any]:
    """{switch: {port: counters}} for every switch port the job crosses; a switch that cannot be read
    is recorded with its error, so the report says which evidence is missing."""
    by_switch: dict[str, list[str]] = {}
    for switch, port in job.ports:
        by_switch.setdefault(switch, []).append(port)
    out: dict[str, Any] = {}
    for switch, ports in sorted(by_switch.items()):
        try:
            conn = connect(switch)
            try:
                out[switch] = read_switch(conn, platforms[switch], sorted(ports))
            finally:
                getattr(conn, "close", lambda: None)()
        except Exception as exc:  # one unreadable switch is missing evidence, not the end of the snapshot
            out[switch] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def dump(snapshot: dict[str, Any]) -> str:
    return json_dumps(snapshot, indent=1, sort_keys=True) + "\n"


def check_snapshot(doc: Any, name: str) -> dict[str, Any]:
    """A switch snapshot as `dump` writes it: {switch: {port: {counter: whole number}}}, or
    {switch: {"error": text}} for a switch that could not be read. Anything else is refused: a
    counter that is text, fractional or negative would compare as no rise, and so as no drop."""
    if not isinstance(doc, dict):
        raise SnapshotError(f"{name}: not a switch snapshot (an object of switches)")
    for switch, ports in doc.items():
        if not isinstance(ports, dict):
            raise SnapshotError(f"{name}: {switch}: not an object of ports")
        if "error" in ports:
            if not isinstance(ports["error"], str):
                raise SnapshotError(f"{name}: {switch}: error is not text")
            continue
        for port, counters in ports.items():
            if not isinstance(counters, dict):
                raise SnapshotError(f"{name}: {switch} {port}: not an object of counters")
            for counter, value in counters.items():
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise SnapshotError(f"{name}: {switch} {port} {counter}: {value!r} is not a counter "
                                        "(a whole number, zero or more)")  # fmt: skip
    return doc


# -- what the differences show ---------------------------------------------------------------------


@dataclass(slots=True)
class Evidence:
    drops: list[str] = field(default_factory=list)  # "device port queue/priority: n dropped"
    pauses: list[str] = field(default_factory=list)
    ecn: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # evidence that could not be read
    blind: list[str] = field(default_factory=list)  # ports whose OS reports no drop counter the reader knows
    unknown: list[str] = field(default_factory=list)  # drop counters whose change cannot be told (cleared, gone)


def _rose(before: Counters, after: Counters) -> Counters:
    """Counters that grew (a counter that went down was cleared or wrapped: no reading)."""
    return {k: after[k] - before[k] for k in after if k in before and after[k] > before[k]}


def _untold(ev: Evidence, where: str, before: Counters, after: Counters, is_drop: Callable[[str], bool]) -> None:
    """Drop counters whose rise cannot be read: one that went down (cleared, or wrapped, during the
    test: the drops before the reset are lost), one read before but not after, or one read after only
    and above zero. Each leaves the drops unknown, which is never the same as none."""
    for name in sorted(set(before) | set(after)):
        if not is_drop(name):
            continue
        if name not in after:
            ev.unknown.append(f"{where}: {name} read before ({before[name]}), not after")
        elif name not in before:
            if after[name] > 0:
                ev.unknown.append(f"{where}: {name} read after ({after[name]}), not before")
        elif after[name] < before[name]:
            ev.unknown.append(f"{where}: {name} went down from {before[name]} to {after[name]} (cleared or wrapped "
                              "during the test)")  # fmt: skip


def _nic_drop(name: str) -> bool:
    return _NIC_DROPS.fullmatch(name) is not None


def _switch_drop(name: str) -> bool:
    return name.startswith(("drops.", "discards.")) or name == "pfc_watchdog"


def judge_nic(ev: Evidence, where: str, before: Counters, after: Counters, priority: int) -> None:
    _untold(ev, where, before, after, _nic_drop)
    for name, n in sorted(_rose(before, after).items()):
        if (m := _NIC_DROPS.fullmatch(name)) is not None:
            prio = m.group(2)
            what = f"priority {prio}" if prio is not None else "all priorities"
            ev.drops.append(f"{where} {what}: {name} +{n}")
        elif (m := _NIC_PAUSE.fullmatch(name)) is not None and int(m.group(2)) == priority:
            ev.pauses.append(f"{where}: {name} +{n}")
        elif name in _NIC_ECN:
            ev.ecn.append(f"{where}: {name} +{n}")


def judge_switch_port(ev: Evidence, where: str, before: Counters, after: Counters, priority: int) -> None:
    if not any(k.startswith(("drops.", "discards.")) for k in after):
        ev.blind.append(where)
    _untold(ev, where, before, after, _switch_drop)
    for name, n in sorted(_rose(before, after).items()):
        if name.startswith("drops.queue."):
            ev.drops.append(f"{where} queue {name.removeprefix('drops.queue.')}: +{n} packets dropped")
        elif name.startswith("discards."):
            ev.drops.append(f"{where} all queues: +{n} packets discarded ({name.removeprefix('discards.')})")
        elif name == "pfc_watchdog":
            ev.drops.append(f"{where} priority {priority}: PFC watchdog tripped +{n} (the queue dropped while stuck)")
        elif name.startswith((f"pfc.prio{priority}.", "pfc.all.")):
            ev.pauses.append(f"{where}: PFC {name.rsplit('.', 1)[1]} +{n}")
        elif name == "ecn_marked":
            ev.ecn.append(f"{where}: ECN-marked +{n}")


def judge_switches(ev: Evidence, job: IncastJob, before: dict[str, Any], after: dict[str, Any]) -> None:
    for switch, port in job.ports:
        b, a = before.get(switch), after.get(switch)
        if not isinstance(b, dict) or not isinstance(a, dict) or "error" in b or "error" in a:
            error = next((s["error"] for s in (b, a) if isinstance(s, dict) and "error" in s), "no snapshot")
            ev.unread.append(f"{switch}: {error}")
            continue
        if port not in b or port not in a:
            ev.unread.append(f"{switch} {port}: not in the snapshot")
            continue
        judge_switch_port(ev, f"{switch} {port}", b[port], a[port], job.priority)
    ev.unread = list(dict.fromkeys(ev.unread))
