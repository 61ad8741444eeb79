"""A Grafana dashboard from the plan: a row per plane, a traffic panel per rail, the plane's health
(links, BGP, ECMP against the plan, flaps, the weakest optics and worst pre-FEC error rates) and, on
planes that carry RoCE, its lossless counters and the deepest lossless queues."""

from __future__ import annotations

from typing import Any

from gpufabric.plan.model import Plan
from gpufabric.telemetry.job_rules import RECORDS as JOB_RECORDS
from gpufabric.telemetry.optics_rules import BER
from gpufabric.telemetry.probe_rules import P99 as PROBE_P99
from gpufabric.telemetry.targets import switch_targets

WIDTH, HEIGHT = 24, 8


def _panel(title: str, exprs: list[tuple[str, str]], unit: str = "short") -> dict[str, Any]:
    return {
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend} for i, (expr, legend) in enumerate(exprs)
        ],
    }


def _rate(metric: str, by: str, selector: str, window: str = "1m") -> str:
    return f"sum by ({by}) (rate({metric}{{{selector}}}[{window}]))"


def plane_panels(plane: str, rails: list[str], roce: bool) -> list[dict[str, Any]]:
    sel = f'plane="{plane}"'
    panels = []
    for rail in rails:
        traffic = _rate("gpufabric_interface_octets_total", "device", f'{sel},rail="{rail}",direction="tx"') + " * 8"
        panels.append(
            _panel(f"{plane}: rail {rail}" if rail else f"{plane}: traffic", [(traffic, "{{device}}")], "bps")
        )
    ecmp = f"min by (device) (gpufabric_ecmp_paths{{{sel}}} / gpufabric_ecmp_planned_paths{{{sel}}})"
    flaps = f"sum by (device) (increase(gpufabric_link_carrier_changes_total{{{sel}}}[10m]))"
    panels += [
        _panel(f"{plane}: links down", [(f"sum by (device) (1 - gpufabric_link_up{{{sel}}})", "{{device}}")]),
        _panel(
            f"{plane}: BGP sessions down", [(f"sum by (device) (1 - gpufabric_bgp_session_up{{{sel}}})", "{{device}}")]
        ),
        _panel(f"{plane}: ECMP paths against the plan", [(ecmp, "{{device}}")], "percentunit"),
        _panel(f"{plane}: link flaps (10 min)", [(flaps, "{{device}}")]),
    ]
    # Optics: the ten weakest receivers and the ten worst pre-FEC error rates, not thousands of lines.
    weakest = f"bottomk(10, min by (device, port) (gpufabric_optics_rx_power_dbm{{{sel}}}))"
    panels += [
        _panel(f"{plane}: optics, weakest receive power", [(weakest, "{{device}} {{port}}")], "dBm"),
        _panel(f"{plane}: pre-FEC bit error rate, worst", [(f"topk(10, {BER}{{{sel}}})", "{{device}} {{port}}")]),
    ]
    if roce:
        rx = f'{sel},direction="rx"'
        pauses = [
            (_rate("gpufabric_pfc_pause_frames_total", "device, priority", rx), "{{device}} prio {{priority}}"),
            (_rate("gpufabric_nic_pause_frames_total", "host, priority", rx), "{{host}} prio {{priority}}"),
        ]
        marks = [
            (_rate("gpufabric_ecn_marked_packets_total", "device", sel), "{{device}} CE"),
            (_rate("gpufabric_nic_cnp_sent_total", "host", sel), "{{host}} CNP sent"),
        ]
        # The ten deepest lossless queues, as a share of the plan's ECN maximum: past 1, PFC is next.
        deep = f"topk(10, gpufabric_queue_buffer_watermark_bytes{{{sel}}} / gpufabric_queue_ecn_max_bytes{{{sel}}})"
        panels += [
            _panel(f"{plane}: PFC pause frames received", pauses, "pps"),
            _panel(f"{plane}: ECN marks and CNPs", marks, "pps"),
            _panel(
                f"{plane}: lossless queues, deepest watermark against the ECN maximum",
                [(deep, "{{device}} {{port}} {{buffer}} {{queue}}")],
                "percentunit",
            ),
        ]
    return panels


JOB_VARIABLE = {
    "name": "job_id",
    "label": "Job",
    "type": "query",
    "datasource": {"type": "prometheus", "uid": "${datasource}"},
    "query": {"query": "label_values(gpufabric_job_port_info, job_id)", "refId": "jobs"},
    "refresh": 2,  # on time range change: the jobs running in the range shown
    "multi": True,
    "includeAll": False,
}


def job_panels() -> list[dict[str, Any]]:
    """The job row: the fabric as the chosen jobs see it (the records of job_rules.py, the join's ports, and
    the probe mesh's latency from the job's nodes)."""
    job = 'job_id=~"$job_id"'
    each = "{{job_id}}"
    ports = f"gpufabric_job_port_info{{{job}}}"
    errors = "sum by (device, port, cable) (rate(gpufabric_interface_errors_total[5m]))"
    nodes = f'label_replace(group by (host) (gpufabric_job_nic_info{{{job}}}), "src", "$1", "host", "(.+)")'
    return [
        _panel(
            "job: errors and discards on its ports",
            [
                (f"{JOB_RECORDS['errors']}{{{job}}}", f"{each} errors"),
                (f"{JOB_RECORDS['discards']}{{{job}}}", f"{each} discards"),
            ],
            "pps",
        ),
        _panel(
            "job: PFC pauses received, ECN marks, CNPs sent",
            [
                (f"{JOB_RECORDS['pauses']}{{{job}}}", f"{each} pauses"),
                (f"{JOB_RECORDS['ecn']}{{{job}}}", f"{each} CE marks"),
                (f"{JOB_RECORDS['cnp']}{{{job}}}", f"{each} CNPs"),
            ],
            "pps",
        ),
        _panel("job: link flaps (10 min)", [(f"{JOB_RECORDS['flaps']}{{{job}}}", each)]),
        _panel("job: uplink traffic", [(f"{JOB_RECORDS['uplink_bits']}{{{job}}}", each)], "bps"),
        _panel(
            "job: busiest uplink against its rate",
            [(f"{JOB_RECORDS['uplink_utilisation']}{{{job}}}", each)],
            "percentunit",
        ),
        _panel(
            "job: its ports with the most errors",
            [
                (
                    f"topk(10, {ports} * on(device, port) group_left() ({errors}) > 0)",
                    "{{job_id}} {{device}} {{port}} ({{role}}, {{cable}})",
                )
            ],
            "pps",
        ),
        _panel(
            "job: probe latency p99 from its nodes",
            [
                (
                    f"topk(10, max by (src, dst, rail) ({PROBE_P99} * on(src) group_left() {nodes}))",
                    "{{src}} to {{dst}} rail {{rail}}",
                )
            ],
            "s",
        ),
    ]


def _job_row(y: int) -> list[dict[str, Any]]:
    panels: list[dict[str, Any]] = [
        {"type": "row", "title": "jobs ($job_id)", "collapsed": False, "gridPos": {"h": 1, "w": WIDTH, "x": 0, "y": y}}
    ]
    mine = job_panels()
    for i, panel in enumerate(mine):
        panel["gridPos"] = {"h": HEIGHT, "w": WIDTH // 2, "x": (i % 2) * (WIDTH // 2), "y": y + 1 + (i // 2) * HEIGHT}
    return panels + mine


def dashboard(plan: Plan) -> dict[str, Any]:
    rails: dict[str, set[str]] = {}
    for t in switch_targets(plan):
        rails.setdefault(t.plane, set()).update(p["rail"] for p in t.ports.values())
    panels: list[dict[str, Any]] = []
    y = 0
    for name, plane in plan.planes.items():
        if name not in rails:
            continue
        panels.append(
            {"type": "row", "title": name, "collapsed": False, "gridPos": {"h": 1, "w": WIDTH, "x": 0, "y": y}}
        )
        y += 1
        ordered = sorted(rails[name], key=lambda r: (len(r), r))
        mine = plane_panels(name, ordered, plane.carries_roce)
        for i, panel in enumerate(mine):
            panel["gridPos"] = {"h": HEIGHT, "w": WIDTH // 2, "x": (i % 2) * (WIDTH // 2), "y": y + (i // 2) * HEIGHT}
        panels += mine
        y += (len(mine) + 1) // 2 * HEIGHT
    panels += _job_row(y)  # the fabric through the jobs on it: job_join.py's series, job_rules.py's records
    for i, p in enumerate(panels, 1):
        p["id"] = i
    return {
        "title": f"gpufabric: {plan.intent.fabric.name}",
        "uid": f"gpufabric-{plan.intent.fabric.name}"[:40],
        "schemaVersion": 39,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
                JOB_VARIABLE,
            ]
        },
        "panels": panels,
    }


def queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every query on the dashboard."""
    return [(p["title"], t["expr"]) for p in board["panels"] for t in p.get("targets", [])]
