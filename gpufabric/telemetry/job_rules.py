"""Prometheus rules over the job join (gpufabric/telemetry/job_join.py): per-job fabric rates and the alerts
that name a running job and the part of its footprint that degrades.

The join. A port can be on several jobs' footprints (a leaf uplink is on every job under that leaf that crosses
a spine; a node shared by two jobs puts its NICs in both), so the info series is not unique per `device, port`
and the counter cannot be the "one" side. Each counter is first summed to one series per port
(`sum by (device, port)`), then matched onto the info rows: `info * on(device, port) group_left() counter`,
many info rows to one counter, and summed per job. A job that ended has no info series, so the products, and
the records and alerts built on them, have nothing for it: no stale series.

Records (by job_id and user): errors, discards, PFC pause frames received (switch ports and the job's NICs),
ECN marks on its ports, CNPs its NICs sent, link flaps (ports and NICs, 10 minutes), and its uplinks'
traffic (bits per second over all of them) and utilisation (the busiest uplink, over its link rate where the
port reports one), and the share of the probe mesh's probes sent from the job's nodes that were lost (the loss
its NICs' peers see across the fabric, where the mesh runs: gpufabric/telemetry/prober.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.telemetry.durations import check_duration

PORT_INFO = "gpufabric_job_port_info"
NIC_INFO = "gpufabric_job_nic_info"
BY_JOB = "job_id, user"

RECORDS = {
    "errors": "gpufabric:job_errors:rate5m",
    "discards": "gpufabric:job_discards:rate5m",
    "pauses": "gpufabric:job_pfc_pauses_received:rate5m",
    "ecn": "gpufabric:job_ecn_marks:rate5m",
    "cnp": "gpufabric:job_cnps_sent:rate5m",
    "flaps": "gpufabric:job_link_flaps:increase10m",
    "uplink_bits": "gpufabric:job_uplink_bits:rate5m",
    "uplink_utilisation": "gpufabric:job_uplink_utilisation:max5m",
    "probe_loss": "gpufabric:job_probe_loss:ratio5m",
}


@dataclass(frozen=True)
class JobThresholds:
    discards: float = 100  # frames dropped on one of a job's ports in the window
    pause_per_second: float = 10_000  # as GpufabricPfcPauseStorm: a storm, not congestion
    window: str = "5m"
    hold: str = "1m"  # a link down (or counters rising) this long before the job alert fires
    scheduler_hold: str = "5m"

    def __post_init__(self) -> None:
        for text in (self.window, self.hold, self.scheduler_hold):
            check_duration(text)


# What names a port or a NIC in an alert, taken from the exporter's own counter series (they carry the plan's
# labels; the info series carry only the join's keys).
PORT_NAMES = "plane, rail, peer, cable"
NIC_NAMES = "plane, rail, leaf"


def _ports(inner: str, info: str = PORT_INFO, names: bool = False) -> str:
    """`inner` (one series per device, port) on each job's rows of those ports; with `names`, the port's plan
    labels copied from `inner` onto the result."""
    return f"{info} * on(device, port) group_left({PORT_NAMES if names else ''}) ({inner})"


def _nics(inner: str, names: bool = False) -> str:
    return f"{NIC_INFO} * on(host, interface) group_left({NIC_NAMES if names else ''}) ({inner})"


def _per_port(metric: str, window: str, selector: str = "", fn: str = "rate", names: bool = False) -> str:
    by = f"device, port, {PORT_NAMES}" if names else "device, port"
    return f"sum by ({by}) ({fn}({metric}{selector}[{window}]))"


def _per_nic(metric: str, window: str, selector: str = "", fn: str = "rate", names: bool = False) -> str:
    by = f"host, interface, {NIC_NAMES}" if names else "host, interface"
    return f"sum by ({by}) ({fn}({metric}{selector}[{window}]))"


def _probes(what: str, window: str) -> str:
    """The probe mesh's probes `what` (sent, lost) per second, per sending host (the prober's `src`)."""
    return f'sum by (host) (label_replace(rate(gpufabric_probe_{what}_total[{window}]), "host", "$1", "src", "(.*)"))'


def _hosts(inner: str) -> str:
    """`inner` (one series per host) on each job's hosts: a host is one row per job holding it (its NICs' rows
    taken once)."""
    return f"max by ({BY_JOB}, host) ({NIC_INFO}) * on(host) group_left() ({inner})"


def _job(expr: str, agg: str = "sum") -> str:
    return f"{agg} by ({BY_JOB}) ({expr})"


def _both(a: str, b: str) -> str:
    """The sum of two per-job vectors where a job has both, else whichever it has."""
    return f"({a}) + on({BY_JOB}) ({b}) or ({a}) or ({b})"


def _because(expr: str, reason: str) -> str:
    return f'label_replace({expr}, "reason", "{reason}", "", "")'


def job_group(t: JobThresholds = JobThresholds()) -> dict[str, object]:
    w = t.window
    pause = "gpufabric_pfc_pause_frames_total"
    # Per-priority pause counters where the OS has them, else its sum over the priorities (`priority="all"`):
    # never both for one port.
    port_pauses = (
        _per_port(pause, w, '{direction="rx",priority!="all"}')
        + " or "
        + _per_port(pause, w, '{direction="rx",priority="all"}')
    )
    nic_pauses = _per_nic("gpufabric_nic_pause_frames_total", w, '{direction="rx"}')
    flaps = "gpufabric_link_carrier_changes_total"
    nic_flaps = "gpufabric_nic_carrier_changes_total"
    octets = f"max by (device, port) (rate(gpufabric_interface_octets_total[{w}])) * 8"
    speed = "max by (device, port) (gpufabric_link_speed_bits_per_second)"
    uplinks = f'{PORT_INFO}{{role="uplink"}}'
    records = [
        (RECORDS["errors"], _job(_ports(_per_port("gpufabric_interface_errors_total", w)))),
        (RECORDS["discards"], _job(_ports(_per_port("gpufabric_interface_discards_total", w)))),
        (RECORDS["pauses"], _both(_job(_ports(port_pauses)), _job(_nics(nic_pauses)))),
        (RECORDS["ecn"], _job(_ports(_per_port("gpufabric_ecn_marked_packets_total", w)))),
        (RECORDS["cnp"], _job(_nics(_per_nic("gpufabric_nic_cnp_sent_total", w)))),
        (
            RECORDS["flaps"],
            _both(
                _job(_ports(_per_port(flaps, "10m", fn="increase"))),
                _job(_nics(_per_nic(nic_flaps, "10m", fn="increase"))),
            ),
        ),
        (RECORDS["uplink_bits"], _job(_ports(octets, uplinks))),
        (RECORDS["uplink_utilisation"], _job(_ports(f"{octets} / on(device, port) {speed}", uplinks), "max")),
        (RECORDS["probe_loss"], f"{_job(_hosts(_probes('lost', w)))} / {_job(_hosts(_probes('sent', w)))}"),
    ]
    part = (
        "job {{ $labels.job_id }} ({{ $labels.user }}): {{ $labels.device }} {{ $labels.port }} "
        "({{ $labels.role }} to {{ $labels.peer }}, cable {{ $labels.cable }}): {{ $labels.reason }}"
    )
    nic = (
        "job {{ $labels.job_id }} ({{ $labels.user }}): {{ $labels.host }} {{ $labels.interface }} "
        "(rail {{ $labels.rail }}, to {{ $labels.leaf }}): {{ $labels.reason }}"
    )
    named_pauses = (
        _per_port(pause, w, '{direction="rx",priority!="all"}', names=True)
        + " or "
        + _per_port(pause, w, '{direction="rx",priority="all"}', names=True)
    )
    degraded_port = " or ".join(
        _because(_ports(inner, names=True), reason)
        for inner, reason in (
            (f"max by (device, port, {PORT_NAMES}) (gpufabric_link_up == 0)", "the link is down"),
            (f"{_per_port(flaps, '10m', fn='increase', names=True)} > 0", "the link flapped"),
            (f"{_per_port('gpufabric_interface_errors_total', w, fn='increase', names=True)} > 0", "errored frames"),
            (
                f"{_per_port('gpufabric_interface_discards_total', w, fn='increase', names=True)} > {t.discards:g}",
                "frames dropped",
            ),
            (f"({named_pauses}) > {t.pause_per_second:g}", "a PFC pause storm"),
            (
                f"{_per_port('gpufabric_pfc_watchdog_events_total', w, fn='increase', names=True)} > 0",
                "the PFC watchdog tripped",
            ),
        )
    )
    degraded_nic = " or ".join(
        _because(_nics(inner, names=True), reason)
        for inner, reason in (
            (f"max by (host, interface, {NIC_NAMES}) (gpufabric_nic_link_up == 0)", "the NIC's link is down"),
            (f"{_per_nic(nic_flaps, '10m', fn='increase', names=True)} > 0", "the NIC's link flapped"),
            (
                f"{_per_nic('gpufabric_nic_errors_total', w, fn='increase', names=True)} > 0",
                "errored frames at the NIC",
            ),
            (
                f"{_per_nic('gpufabric_nic_out_of_sequence_total', w, fn='increase', names=True)} > 0",
                "RoCE packets out of sequence (loss)",
            ),
        )
    )
    rules: list[dict[str, object]] = [{"record": name, "expr": expr} for name, expr in records]
    rules += [
        {
            "alert": "GpufabricJobFootprintDegraded",
            "expr": degraded_port,
            "for": t.hold,
            "labels": {"severity": "warning"},
            "annotations": {"summary": part},
        },
        {
            "alert": "GpufabricJobNicDegraded",
            "expr": degraded_nic,
            "for": t.hold,
            "labels": {"severity": "warning"},
            "annotations": {"summary": nic},
        },
        {
            "alert": "GpufabricJobSchedulerUnread",
            "expr": "gpufabric_job_scheduler_up == 0",
            "for": t.scheduler_hold,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "the exporter has no recent answer from {{ $labels.scheduler }}: "
                "the job series are absent (running jobs are not joined to the fabric)"
            },
        },
    ]
    return {"name": "gpufabric-jobs", "rules": rules}
