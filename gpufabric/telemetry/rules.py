"""Prometheus alert rules for the fabric, from the metrics table (`promtool check rules` reads them)."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from gpufabric.ib import alerts as ib_alerts
from gpufabric.telemetry.durations import MAX_DURATION_CHARS, DurationError, check_duration
from gpufabric.telemetry.flapping import FLAPPING, flapping
from gpufabric.telemetry.health_rules import health_groups
from gpufabric.telemetry.job_rules import job_group
from gpufabric.telemetry.optics_rules import optics_group
from gpufabric.telemetry.probe_rules import probe_group

__all__ = [
    "FLAPPING",
    "MAX_DURATION_CHARS",
    "DurationError",
    "Thresholds",
    "alert_rules",
    "check_duration",
    "rules_yaml",
]


@dataclass(frozen=True)
class Thresholds:
    pause_per_second: float = 10_000  # PFC pause frames received on one port: a storm, not congestion
    cnp_per_second: float = 50_000  # congestion notifications sent by one NIC
    ecn_per_second: float = 100_000  # CE-marked packets on one port
    hold: str = "1m"  # how long a condition lasts before it alerts (rate-based and state alerts)

    def __post_init__(self) -> None:
        check_duration(self.hold)  # the rules file's `for:` takes only a duration


def alert_rules(t: Thresholds = Thresholds()) -> dict[str, object]:
    def rule(name: str, expr: str, summary: str, severity: str = "warning", hold: str | None = None) -> dict:
        return {
            "alert": name,
            "expr": expr,
            "for": hold if hold is not None else t.hold,
            "labels": {"severity": severity},
            "annotations": {"summary": summary},
        }

    rules = [
        rule(
            "GpufabricSwitchUnreachable", "gpufabric_scrape_ok == 0", "{{ $labels.device }} does not answer", "critical"
        ),
        rule(
            "GpufabricLinkDown",
            "gpufabric_link_up == 0",
            "{{ $labels.device }} {{ $labels.port }} to {{ $labels.peer }} (cable {{ $labels.cable }}) is down",
            "critical",
        ),
        rule(
            "GpufabricLinkFlapped",
            "increase(gpufabric_link_carrier_changes_total[10m]) > 0 or changes(gpufabric_link_up[10m]) > 0",
            "{{ $labels.device }} {{ $labels.port }} to {{ $labels.peer }} went down or up in the last 10 minutes",
            hold="0s",
        ),
        # Flapping, not one cut and its repair (a carrier change down, one up): more than two changes in the
        # window. This one takes nodes out (the remediation loop); a single cut is GpufabricLinkDown's.
        rule(
            "GpufabricLinkFlapping",
            flapping("gpufabric_link_carrier_changes_total", "10m")
            + f" or changes(gpufabric_link_up[10m]) > {FLAPPING}",
            "{{ $labels.device }} {{ $labels.port }} to {{ $labels.peer }} (cable {{ $labels.cable }}) is flapping: "
            "down and up again more than once in 10 minutes",
            "critical",
            hold="0s",
        ),
        rule(
            "GpufabricBgpSessionDown",
            "gpufabric_bgp_session_up == 0",
            "{{ $labels.device }} session {{ $labels.peer }} to {{ $labels.peer_device }} is not established",
            "critical",
        ),
        rule(
            "GpufabricEcmpNarrowerThanPlanned",
            "gpufabric_ecmp_paths < gpufabric_ecmp_planned_paths",
            "{{ $labels.device }} reaches {{ $labels.destination_device }} over {{ $value }} paths, fewer than planned",
        ),
        rule(
            "GpufabricPfcPauseStorm",
            f'rate(gpufabric_pfc_pause_frames_total{{direction="rx"}}[1m]) > {t.pause_per_second:g} '
            f'or rate(gpufabric_nic_pause_frames_total{{direction="rx"}}[1m]) > {t.pause_per_second:g}',
            "pause storm on {{ $labels.device }}{{ $labels.host }} {{ $labels.port }}{{ $labels.interface }}",
            "critical",
        ),
        rule(
            "GpufabricPfcWatchdogTripped",
            "increase(gpufabric_pfc_watchdog_events_total[5m]) > 0"
            " or increase(gpufabric_nic_pause_storm_events_total[5m]) > 0",
            "PFC watchdog on {{ $labels.device }}{{ $labels.host }}",
            "critical",
            hold="0s",
        ),
        rule(
            "GpufabricCnpSurge",
            f"rate(gpufabric_nic_cnp_sent_total[5m]) > {t.cnp_per_second:g}",
            "{{ $labels.host }} {{ $labels.interface }} sends many CNPs: congestion on rail {{ $labels.rail }}",
        ),
        rule(
            "GpufabricEcnSurge",
            f"rate(gpufabric_ecn_marked_packets_total[5m]) > {t.ecn_per_second:g}",
            "{{ $labels.device }} {{ $labels.port }} marks many packets CE",
        ),
        rule(
            "GpufabricRoceLoss",
            "increase(gpufabric_nic_out_of_sequence_total[5m]) > 0",
            "{{ $labels.host }} {{ $labels.interface }} sees RoCE packets out of sequence: the lossless class drops",
        ),
    ]
    # The InfiniBand fabric's rules (over `gpufabric ib metrics` or `telemetry serve`): a group of their own, idle
    # without it. GPU, host NIC and lossless-buffer health (health_rules.py).
    groups = [{"name": "gpufabric", "rules": rules}, optics_group(), ib_alerts.alert_group(), *health_groups()]
    groups.append(job_group())  # running jobs joined to their footprints' ports (job_rules.py)
    groups.append(probe_group())  # the probe mesh's latency and loss (probe_rules.py)
    return {"groups": groups}


def rules_yaml(t: Thresholds = Thresholds()) -> str:
    return yaml.safe_dump(alert_rules(t), sort_keys=False, width=200)
