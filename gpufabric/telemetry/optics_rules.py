"""Prometheus rules for optics and link quality, over the OPTICS series (switch ports and server NICs alike).

- Receive power below the module's own low warning threshold, where the module publishes one, else
  below a fixed floor. A lane with no light at all reads -Inf dBm and fires it.
- Module temperature above the module's own high warning threshold, else above 70 C: the top of the
  commercial operating range (0-70 C case temperature) that SFF modules are specified for.
- Pre-FEC bit error rate: the bits FEC corrected over the bits received (where the port counts them,
  as ConnectX does) or over the link's rate. A recording rule keeps it, `gpufabric:pre_fec_ber:rate5m`;
  it alerts above a threshold an order of magnitude under the 2.4e-4 at which the Reed-Solomon
  RS(544,514) FEC of 50G-per-lane PAM4 links stops correcting, and when it rises tenfold in an hour.
- Any uncorrectable codeword (frames lost: RoCE retransmits, the job slows) or post-FEC symbol error.
"""

from __future__ import annotations

from dataclasses import dataclass

BER = "gpufabric:pre_fec_ber:rate5m"


@dataclass(frozen=True)
class OpticsThresholds:
    rx_power_floor_dbm: float = -10.0  # for modules that publish no thresholds of their own
    temperature_ceiling_c: float = 70.0  # likewise: the commercial range's top
    pre_fec_ber: float = 2.4e-5
    ber_rise: float = 10.0  # times the rate an hour before
    ber_rise_floor: float = 1e-8  # below this a tenfold rise is still a healthy link
    hold: str = "2m"
    window: str = "5m"


def optics_group(t: OpticsThresholds = OpticsThresholds()) -> dict[str, object]:
    end = "{{ $labels.device }} {{ $labels.port }} (to {{ $labels.peer }})"

    def rule(name: str, expr: str, summary: str, severity: str, hold: str | None = None) -> dict[str, object]:
        return {
            "alert": name,
            "expr": expr,
            "for": t.hold if hold is None else hold,
            "labels": {"severity": severity},
            "annotations": {"summary": f"{end}: {summary}"},
        }

    rx, rx_low = "gpufabric_optics_rx_power_dbm", "gpufabric_optics_rx_power_low_warning_dbm"
    temp, temp_high = "gpufabric_optics_temperature_celsius", "gpufabric_optics_temperature_high_warning_celsius"
    bits, received = "gpufabric_fec_corrected_bits_total", "gpufabric_phy_received_bits_total"
    w = t.window
    rules: list[dict[str, object]] = [
        {
            "record": BER,
            "expr": f"rate({bits}[{w}]) / rate({received}[{w}]) > -1"
            f" or rate({bits}[{w}]) / gpufabric_link_speed_bits_per_second",
        },
        rule(
            "GpufabricOpticsRxPowerLow",
            f"{rx} < ignoring(lane) group_left {rx_low}"
            f" or ({rx} < {t.rx_power_floor_dbm:g} unless ignoring(lane) {rx_low})",
            "lane {{ $labels.lane }} receives less light than the module's low warning (or -10 dBm): "
            "a dirty or damaged fibre, a bad connector or a failing far-end laser",
            "warning",
        ),
        rule(
            "GpufabricOpticsTemperatureHigh",
            f"{temp} > {temp_high} or ({temp} > {t.temperature_ceiling_c:g} unless {temp_high})",
            "the transceiver runs hotter than its warning threshold (or 70 C)",
            "warning",
        ),
        rule(
            "GpufabricPreFecBerHigh",
            f"{BER} > {t.pre_fec_ber:g}",
            "the pre-FEC bit error rate is high: FEC still corrects, but the link is degrading",
            "warning",
        ),
        rule(
            "GpufabricPreFecBerRising",
            f"{BER} > {t.ber_rise_floor:g} and {BER} > {t.ber_rise:g} * ({BER} offset 1h)",
            "the pre-FEC bit error rate is ten times what it was an hour ago",
            "warning",
            hold="0s",
        ),
        rule(
            "GpufabricFecUncorrectable",
            f"increase(gpufabric_fec_uncorrected_codewords_total[{w}]) > 0",
            "codewords FEC could not correct: frames are lost on this link",
            "critical",
            hold="0s",
        ),
        rule(
            "GpufabricSymbolErrors",
            f"increase(gpufabric_symbol_errors_total[{w}]) > 0",
            "symbol errors after FEC: frames are lost on this link",
            "critical",
            hold="0s",
        ),
    ]
    return {"name": "gpufabric-optics", "rules": rules}
