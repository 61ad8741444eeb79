"""Prometheus rules over the probe mesh (gpufabric/telemetry/prober.py): p50 and p99 per pair and per leaf pair,
loss, and the alerts on latency drift and loss.

Drift. The p99 of a pair alerts when, for `hold`:
- it is above the planned bound (`bound`, 2 ms by default: a RoCE fabric's round trip through five switches is
  microseconds; milliseconds mean queues held by PFC or a path gone bad), or
- it is more than `factor` times its own median p99 over the last day and above `floor` (so that a pair at
  30 microseconds going to 100 is not an incident). The median, not the mean: one bad hour yesterday does not
  raise today's baseline, and a drift shorter than half a day stays measured against the healthy level.
A new pair has no day of history: its baseline is the median of what there is.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.telemetry.durations import check_duration

BUCKET = "gpufabric_probe_rtt_seconds_bucket"
PAIR = "plane, rail, src, dst, src_leaf, dst_leaf"
LEAF_PAIR = "plane, rail, src_leaf, dst_leaf"
P50 = "gpufabric:probe_rtt_seconds:p50_5m"
P99 = "gpufabric:probe_rtt_seconds:p99_5m"
LEAF_P99 = "gpufabric:probe_rtt_seconds_leaf_pair:p99_5m"
LOSS = "gpufabric:probe_loss:ratio5m"


@dataclass(frozen=True)
class ProbeThresholds:
    bound: float = 0.002  # seconds: the planned ceiling of a pair's p99
    factor: float = 3.0  # times the pair's median p99 over the baseline window
    floor: float = 0.0002  # seconds: below this a rise is not drift
    baseline: str = "1d"
    loss: float = 0.01  # share of probes lost
    window: str = "5m"
    hold: str = "5m"

    def __post_init__(self) -> None:
        for text in (self.baseline, self.window, self.hold):
            check_duration(text)
        if not (self.bound > 0 and self.factor > 1 and self.floor >= 0 and 0 < self.loss < 1):
            raise ValueError("bound > 0, factor > 1, floor >= 0 and 0 < loss < 1")


def _quantile(q: float, by: str, window: str) -> str:
    return f"histogram_quantile({q:g}, sum by (le, {by}) (rate({BUCKET}[{window}])))"


def probe_group(t: ProbeThresholds = ProbeThresholds()) -> dict[str, object]:
    w = t.window
    pair = (
        "{{ $labels.src }} to {{ $labels.dst }} ({{ $labels.plane }} rail {{ $labels.rail }}, "
        "{{ $labels.src_leaf }} to {{ $labels.dst_leaf }})"
    )
    sent = f"sum by ({PAIR}) (rate(gpufabric_probe_sent_total[{w}]))"
    lost = f"sum by ({PAIR}) (rate(gpufabric_probe_lost_total[{w}]))"
    rules: list[dict[str, object]] = [
        {"record": P50, "expr": _quantile(0.5, PAIR, w)},
        {"record": P99, "expr": _quantile(0.99, PAIR, w)},
        {"record": LEAF_P99, "expr": _quantile(0.99, LEAF_PAIR, w)},
        {"record": LOSS, "expr": f"{lost} / {sent} > -1"},  # `> -1`: not the NaN of a pair that sent nothing
        {
            "alert": "GpufabricProbeLatencyDrift",
            "expr": f"{P99} > {t.bound:g}"
            f" or ({P99} > {t.factor:g} * quantile_over_time(0.5, {P99}[{t.baseline}]) and {P99} > {t.floor:g})",
            "for": t.hold,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": f"{pair}: p99 round trip {{{{ $value | humanizeDuration }}}}, over {t.bound * 1000:g} ms "
                f"or {t.factor:g} times its median of the last {t.baseline}"
            },
        },
        {
            "alert": "GpufabricProbeLoss",
            "expr": f"{LOSS} > {t.loss:g}",
            "for": t.hold,
            "labels": {"severity": "warning"},
            "annotations": {"summary": f"{pair}: {{{{ $value | humanizePercentage }}}} of probes lost"},
        },
    ]
    return {"name": "gpufabric-probes", "rules": rules}
