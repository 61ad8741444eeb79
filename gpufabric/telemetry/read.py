"""One scrape of one switch or server: its counters as samples labelled from the plan.

Switches are read through their NAPALM driver's getters (ports, counters, BGP, routes) and, where the
driver has them, gpufabric's own (port states, BGP sessions, carrier changes, `ethtool -S`); servers over SSH
(`ethtool -S` per data NIC, the RDMA port counters, `ip -s -j link`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any, NamedTuple

from napalm.base.exceptions import NapalmException

from gpufabric.drivers.answers import PARSE_FAILURES
from gpufabric.errors import GpufabricError
from gpufabric.fleet.expect import ports_now, sessions_now
from gpufabric.platforms import platform as platform_spec
from gpufabric.telemetry.link_quality import read_link_quality
from gpufabric.telemetry.optics import Optics, from_linux
from gpufabric.telemetry.optics import samples as optics_samples
from gpufabric.telemetry.targets import NicTarget, SwitchTarget
from gpufabric.verify.running.ethtool import parse_ethtool, parse_hw_counters
from gpufabric.verify.running.lossless import read_lossless

RDMA_COUNTERS = ("np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "out_of_sequence")


class Sample(NamedTuple):
    metric: str
    labels: dict[str, str]
    value: float


def read_switch(conn: Any, t: SwitchTarget) -> list[Sample]:
    out: list[Sample] = []
    # Only `is_up` of each port and each session is exported: read by the drivers' lighter getters where they
    # have them (a Linux switch: iproute2 alone for the ports, one vtysh for the sessions instead of two), on
    # every scrape of every switch.
    ifaces = ports_now(conn)
    counters = conn.get_interfaces_counters()
    for port, extra in sorted(t.ports.items()):
        labels = {**t.labels, **extra}
        if port in ifaces:
            out.append(Sample("gpufabric_link_up", labels, 1.0 if ifaces[port]["is_up"] else 0.0))
        c = counters.get(port)
        if c is not None:
            for direction in ("rx", "tx"):
                d = {**labels, "direction": direction}
                out.append(Sample("gpufabric_interface_octets_total", d, c[f"{direction}_octets"]))
                out.append(Sample("gpufabric_interface_errors_total", d, c[f"{direction}_errors"]))
                out.append(Sample("gpufabric_interface_discards_total", d, c[f"{direction}_discards"]))
    out += _optional(conn, t)
    out += _buffers(conn, t)
    peers = sessions_now(conn).get("global", {}).get("peers", {}) if t.sessions else {}
    for key, peer in sorted(t.sessions.items()):
        up = bool(peers.get(key, {}).get("is_up"))
        out.append(Sample("gpufabric_bgp_session_up", {**t.labels, "peer": key, "peer_device": peer}, float(up)))
    routes = conn.get_route_to() if t.ecmp else {}
    for prefix, (planned, dest) in sorted(t.ecmp.items()):
        hops = [h for h in routes.get(prefix, []) if h.get("protocol") == "bgp" and h.get("selected_next_hop")]
        labels = {**t.labels, "destination": prefix, "destination_device": dest}
        out.append(Sample("gpufabric_ecmp_paths", labels, float(len(hops))))
        out.append(Sample("gpufabric_ecmp_planned_paths", labels, float(planned)))
    return out


def _optional(conn: Any, t: SwitchTarget) -> list[Sample]:
    """Counters not every switch has: carrier changes (Linux drivers) and the lossless counters."""
    out: list[Sample] = []
    flaps: Callable[[], dict[str, int]] | None = getattr(conn, "get_carrier_changes", None)
    if flaps is not None:
        changes = flaps()
        for port, extra in sorted(t.ports.items()):
            if port in changes:
                out.append(Sample("gpufabric_link_carrier_changes_total", {**t.labels, **extra}, changes[port]))
    for port, found in sorted((read_lossless(conn, t.platform, sorted(t.ports)) or {}).items()):
        labels = {**t.labels, **t.ports[port]}
        for (prio, direction), n in sorted(found.pause.items()):
            pl = {**labels, "priority": str(prio), "direction": direction}
            out.append(Sample("gpufabric_pfc_pause_frames_total", pl, n))
        for direction, n in sorted(found.pause_all.items()):  # the OS sums the priorities
            pl = {**labels, "priority": "all", "direction": direction}
            out.append(Sample("gpufabric_pfc_pause_frames_total", pl, n))
        if found.storm:
            out.append(Sample("gpufabric_pfc_watchdog_events_total", labels, sum(found.storm.values())))
        if found.ecn_marked is not None:
            out.append(Sample("gpufabric_ecn_marked_packets_total", labels, found.ecn_marked))
        for queue, n in sorted(found.queue_drops.items()):
            out.append(Sample("gpufabric_queue_dropped_packets_total", {**labels, "queue": queue}, n))
    for port, optics in sorted((read_link_quality(conn, t.platform, sorted(t.ports)) or {}).items()):
        extra = t.ports[port]
        out += _optics({**t.labels, "port": port, "peer": extra["peer"], "rail": extra["rail"]}, optics)
    return out


def _buffers(conn: Any, t: SwitchTarget) -> list[Sample]:
    """The lossless queues' buffers, read with the OS's own feature (its platform's `read_buffers`). An answer
    of another shape, or a command the switch refuses (LANZ or burst detection not on its hardware), costs
    only these samples: the switch's other counters are still served."""
    if not t.lossless_queues or not t.ports:
        return []
    try:
        found = platform_spec(t.platform).read_buffers(conn, sorted(t.ports), list(t.lossless_queues)) or {}
    except (*PARSE_FAILURES, NapalmException, GpufabricError):  # an answer of another shape, a command refused
        return []
    out: list[Sample] = []
    for port, queues in sorted(found.items()):
        if port not in t.ports:
            continue
        for (queue, buffer), value in sorted(queues.items()):
            labels = {**t.labels, **t.ports[port], "queue": queue, "buffer": buffer}
            if value.occupancy_bytes is not None:
                out.append(Sample("gpufabric_queue_buffer_bytes", labels, value.occupancy_bytes))
            if value.watermark_bytes is not None:
                out.append(Sample("gpufabric_queue_buffer_watermark_bytes", labels, value.watermark_bytes))
            if t.ecn_max_bytes is not None:
                out.append(Sample("gpufabric_queue_ecn_max_bytes", labels, float(t.ecn_max_bytes)))
    return out


def _optics(labels: dict[str, str], found: Optics) -> list[Sample]:
    """One cable end's transceiver and FEC samples; labelled alike on switches and servers (OPTICS)."""
    return [Sample(metric, {**labels, **extra}, value) for metric, extra, value in optics_samples(found)]


def host_script(nics: list[NicTarget]) -> str:
    """One SSH command per scrape of a server: ethtool per NIC, the RDMA counters and their netdevs."""
    names = " ".join(shlex.quote(n.interface) for n in nics)
    counters = " ".join(f"/sys/class/infiniband/*/ports/*/hw_counters/{c}" for c in RDMA_COUNTERS)
    return (
        f'for p in {names}; do echo "@@port $p"; ethtool -S "$p" 2>/dev/null; '
        'echo "@@module $p"; ethtool -m "$p" 2>/dev/null || sudo -n ethtool -m "$p" 2>/dev/null; '
        'echo "@@fec $p"; ethtool -I --show-fec "$p" 2>/dev/null; '
        'echo "@@speed $p"; cat "/sys/class/net/$p/speed" 2>/dev/null; '
        'echo "@@state $p"; cat "/sys/class/net/$p/operstate" "/sys/class/net/$p/carrier_changes" 2>/dev/null; '
        'echo "@@aer $p"; for k in correctable nonfatal fatal; do f="/sys/class/net/$p/device/aer_dev_$k"; '
        '[ -r "$f" ] && sed "s/^/$k /" "$f"; done; done; '
        f"echo @@rdma; grep -H . {counters} 2>/dev/null; "
        "echo @@netdev; for d in /sys/class/infiniband/*; do "
        '[ -d "$d" ] && echo "$(basename "$d") $(ls "$d/device/net" 2>/dev/null | head -1)"; done; '
        "echo @@links; ip -s -j link show"
    )


def read_host(output: str, nics: list[NicTarget]) -> list[Sample]:
    sections = _sections(output)
    out: list[Sample] = []
    by_if = {n.interface: n for n in nics}
    for port, text in sections["port"].items():
        nic = by_if.get(port)
        if nic is None:
            continue
        labels = _nic_labels(nic)
        found = parse_ethtool(text)
        for (prio, direction), n in sorted(found.pause.items()):
            out.append(
                Sample("gpufabric_nic_pause_frames_total", {**labels, "priority": str(prio), "direction": direction}, n)
            )
        for level, n in sorted(found.storm.items()):
            out.append(Sample("gpufabric_nic_pause_storm_events_total", {**labels, "level": level}, n))
        linux = {k: sections[k].get(port, "") for k in ("module", "fec", "speed")}
        end = {"plane": nic.plane, "device": nic.host, "role": "server", "port": port, "peer": nic.leaf}
        out += _optics({**end, "rail": nic.rail}, from_linux(linux, text))
    netdev = dict(line.split(" ", 1) for line in sections["netdev"].get("", "").splitlines() if " " in line)
    for hca, values in parse_hw_counters(sections["rdma"].get("", "")).items():
        nic = by_if.get(netdev.get(hca, "").strip())
        if nic is None:
            continue
        labels = _nic_labels(nic)
        names = dict(
            zip(RDMA_COUNTERS, ("cnp_sent", "cnp_handled", "ecn_marked_roce_packets", "out_of_sequence"), strict=True)
        )
        out += [Sample(f"gpufabric_nic_{names[k]}_total", labels, v) for k, v in sorted(values.items())]
    for link in json.loads(sections["links"].get("", "") or "[]"):
        nic = by_if.get(link.get("ifname", ""))
        stats = link.get("stats64", {})
        if nic is not None and stats:
            for direction in ("rx", "tx"):
                d = {**_nic_labels(nic), "direction": direction}
                out.append(Sample("gpufabric_nic_octets_total", d, stats[direction]["bytes"]))
                if isinstance(stats[direction].get("errors"), int):
                    out.append(Sample("gpufabric_nic_errors_total", d, stats[direction]["errors"]))
    for port, nic in sorted(by_if.items()):
        out += _nic_health(_nic_labels(nic), sections["state"].get(port), sections["aer"].get(port))
    return out


AER_TOTALS = {"correctable": "TOTAL_ERR_COR", "nonfatal": "TOTAL_ERR_NONFATAL", "fatal": "TOTAL_ERR_FATAL"}


def _nic_health(labels: dict[str, str], state: str | None, aer: str | None) -> list[Sample]:
    """Link state and carrier changes (sysfs operstate, carrier_changes) and the PCIe AER totals of the NIC's
    device (sysfs aer_dev_correctable/nonfatal/fatal, each line `<severity> <error> <count>` as the script
    prefixes them; the kernel's TOTAL_ERR_* line is the sum)."""
    out: list[Sample] = []
    lines = (state or "").split()
    if lines and lines[0] in ("up", "down", "lowerlayerdown", "dormant", "notpresent", "testing"):
        out.append(Sample("gpufabric_nic_link_up", labels, 1.0 if lines[0] == "up" else 0.0))
        if len(lines) > 1 and lines[1].isdigit() and len(lines[1]) <= 20:
            out.append(Sample("gpufabric_nic_carrier_changes_total", labels, float(lines[1])))
    for line in (aer or "").splitlines():
        parts = line.split()
        if len(parts) == 3 and AER_TOTALS.get(parts[0]) == parts[1] and parts[2].isdigit() and len(parts[2]) <= 20:
            out.append(Sample("gpufabric_nic_pcie_aer_errors_total", {**labels, "severity": parts[0]}, float(parts[2])))
    return out


def _nic_labels(nic: NicTarget) -> dict[str, str]:
    return {"plane": nic.plane, "host": nic.host, "interface": nic.interface, "rail": nic.rail, "leaf": nic.leaf}


def _sections(output: str) -> dict[str, dict[str, str]]:
    """The host script's output by marker: @@port/@@module/@@fec/@@speed/@@state/@@aer NAME blocks, and @@rdma,
    @@netdev, @@links."""
    found: dict[str, dict[str, list[str]]] = {
        "port": {}, "module": {}, "fec": {}, "speed": {}, "state": {}, "aer": {}, "rdma": {}, "netdev": {}, "links": {},
    }  # fmt: skip
    current: list[str] | None = None
    for line in output.splitlines():
        marker, _, name = line.partition(" ")
        if marker in ("@@port", "@@module", "@@fec", "@@speed", "@@state", "@@aer") and name:
            current = found[marker[2:]].setdefault(name, [])
        elif line.strip() in ("@@rdma", "@@netdev", "@@links"):
            current = found[line.strip()[2:]].setdefault("", [])
        elif current is not None:
            current.append(line)
    return {k: {n: "\n".join(v) for n, v in blocks.items()} for k, blocks in found.items()}
