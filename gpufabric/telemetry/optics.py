"""Optics and link quality at one end of a cable: the transceiver's temperature and per-lane power
(its digital diagnostics), and the FEC and symbol-error counters of the port it sits in.

Linux (FRR and Cumulus switches, servers) reads them with ethtool:
- `ethtool -m PORT` decodes the module's memory (SFF-8472 for SFP, SFF-8636 for QSFP28/56, CMIS for
  QSFP-DD/OSFP) into `<label> : <value>` lines: `Module temperature : 41.50 degrees C / ...`,
  `Rcvr signal avg optical power(Channel 1) : 0.8000 mW / -0.97 dBm`, `Transmit avg optical power
  (Channel 1) ...`, `Laser tx bias current (Channel 1) : 6.500 mA`; an SFP has one lane and no
  `(Channel N)`. Where the module publishes alarm and warning thresholds (SFF-8636 page 03h, SFF-8472
  A2h) ethtool prints them too (`Laser rx power low warning threshold : 0.0800 mW / -10.97 dBm`,
  `Module temperature high warning threshold : 70.00 degrees C / ...`): the alerts compare against the
  module's own limits where it has them.
- `ethtool -I --show-fec PORT` prints the kernel's standard FEC statistics under `Statistics:` as
  `  corrected_blocks: N`, `  uncorrectable_blocks: N`, `  corrected_bits: N` (each followed by
  `    Lane K: N` where the driver counts per lane).
- ConnectX (mlx5) also counts in `ethtool -S`: `rx_corrected_bits_phy` (bits FEC corrected),
  `rx_bits_phy` (bits received: the denominator of the pre-FEC bit error rate) and
  `rx_pcs_symbol_err_phy` (`rx_symbol_errors_phy` in older kernels: errors FEC did not correct).

A value a port does not report stays None and gives no sample: no metric claims a zero it never read.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

# `<label> : <number> mW / <number> dBm`: optical power; ethtool prints `-inf` dBm for no light at all.
_POWER = re.compile(r"(?P<label>[^:]+?)\s*:\s*[-\d.]+\s*mW\s*/\s*(?P<dbm>-?inf|-?\d+(?:\.\d+)?)\s*dBm")
_TEMP = re.compile(r"(?P<label>[^:]+?)\s*:\s*(?P<c>-?\d+(?:\.\d+)?)\s*degrees C(?:\s*/.*)?")
_BIAS = re.compile(r"(?P<label>[^:]+?)\s*:\s*(?P<ma>\d+(?:\.\d+)?)\s*mA")
_CHANNEL = re.compile(r"\(\s*Channel\s+(\d+)\s*\)")
_FEC_STAT = re.compile(r"(corrected_blocks|uncorrectable_blocks|corrected_bits):\s*(\d+)")
_PHY_COUNTERS = {
    "rx_corrected_bits_phy": "corrected_bits",
    "rx_bits_phy": "received_bits",
    "rx_pcs_symbol_err_phy": "symbol_errors",
    "rx_symbol_errors_phy": "symbol_errors",
}


@dataclass(slots=True)
class Lane:
    rx_dbm: float | None = None
    tx_dbm: float | None = None
    bias_ma: float | None = None


@dataclass(slots=True)
class Optics:
    """One port's transceiver and link-quality reading; None where the port does not report it."""

    temperature_c: float | None = None
    lanes: dict[int, Lane] = field(default_factory=dict)  # 1-based, as the module numbers its channels
    rx_low_warning_dbm: float | None = None  # the module's own thresholds, where it publishes them
    rx_low_alarm_dbm: float | None = None
    temperature_high_warning_c: float | None = None
    temperature_high_alarm_c: float | None = None
    fec_corrected: int | None = None  # codewords (blocks) FEC corrected
    fec_uncorrected: int | None = None  # codewords FEC could not correct: frames lost
    corrected_bits: int | None = None
    received_bits: int | None = None
    symbol_errors: int | None = None
    speed_mbps: int | None = None  # the link's rate where the OS says it: the pre-FEC BER's denominator

    def lane(self, n: int) -> Lane:
        return self.lanes.setdefault(n, Lane())

    def is_empty(self) -> bool:
        return self == Optics()


def _dbm(text: str) -> float:
    return -math.inf if text.endswith("inf") else float(text)


def _channel(label: str) -> int:
    m = _CHANNEL.search(label)
    return int(m.group(1)) if m else 1


def _threshold(found: Optics, label: str, value: float) -> None:
    low = label.lower()
    if low.startswith("laser rx power low warning"):
        found.rx_low_warning_dbm = value
    elif low.startswith("laser rx power low alarm"):
        found.rx_low_alarm_dbm = value
    elif low.startswith("module temperature high warning"):
        found.temperature_high_warning_c = value
    elif low.startswith("module temperature high alarm"):
        found.temperature_high_alarm_c = value


def _is_bias(label: str) -> bool:
    return label.startswith("laser") and "bias" in label and "threshold" not in label


def parse_module(text: str, found: Optics | None = None) -> Optics:
    """`ethtool -m PORT`'s decoded lines into temperature, per-lane power and bias, and the thresholds."""
    found = found if found is not None else Optics()
    for raw in text.splitlines():
        line = raw.strip()
        if m := _POWER.fullmatch(line):
            label, value = m["label"], _dbm(m["dbm"])
            low = label.lower()
            if "threshold" in low:
                _threshold(found, label, value)
            elif "rcvr" in low or "receiver" in low or low.startswith("rx "):
                found.lane(_channel(label)).rx_dbm = value
            elif "transmit" in low or "output power" in low or low.startswith("tx "):
                found.lane(_channel(label)).tx_dbm = value
        elif m := _TEMP.fullmatch(line):
            if "threshold" in m["label"].lower():
                _threshold(found, m["label"], float(m["c"]))
            elif m["label"].lower() == "module temperature":
                found.temperature_c = float(m["c"])
        elif (m := _BIAS.fullmatch(line)) and _is_bias(m["label"].lower()):
            found.lane(_channel(m["label"])).bias_ma = float(m["ma"])
    return found


def parse_fec(text: str, found: Optics | None = None) -> Optics:
    """`ethtool -I --show-fec PORT`: the totals under `Statistics:` (the per-lane lines are not summed again)."""
    found = found if found is not None else Optics()
    in_stats = False
    for line in text.splitlines():
        if line.strip() == "Statistics:":
            in_stats = True
        elif in_stats and (m := _FEC_STAT.fullmatch(line.strip())):
            value = int(m.group(2))
            if m.group(1) == "corrected_blocks":
                found.fec_corrected = value
            elif m.group(1) == "uncorrectable_blocks":
                found.fec_uncorrected = value
            else:
                found.corrected_bits = value
    return found


def parse_phy_counters(text: str, found: Optics | None = None) -> Optics:
    """ConnectX's PHY counters in `ethtool -S PORT`; a FEC statistic already read stays as read."""
    found = found if found is not None else Optics()
    for line in text.splitlines():
        name, sep, value = line.strip().partition(":")
        attr = _PHY_COUNTERS.get(name.strip())
        if attr is None or not sep or not value.strip().isdigit():
            continue
        if getattr(found, attr) is None:
            setattr(found, attr, int(value))
    return found


def samples(found: Optics) -> list[tuple[str, dict[str, str], float]]:
    """(metric, extra labels, value) for what the port reported; the caller adds the port's plan labels."""
    out: list[tuple[str, dict[str, str], float]] = []

    def add(metric: str, value: float | None, **extra: str) -> None:
        if value is not None:
            out.append((metric, extra, float(value)))

    add("gpufabric_optics_temperature_celsius", found.temperature_c)
    add("gpufabric_optics_temperature_high_warning_celsius", found.temperature_high_warning_c)
    add("gpufabric_optics_rx_power_low_warning_dbm", found.rx_low_warning_dbm)
    for n, lane in sorted(found.lanes.items()):
        add("gpufabric_optics_rx_power_dbm", lane.rx_dbm, lane=str(n))
        add("gpufabric_optics_tx_power_dbm", lane.tx_dbm, lane=str(n))
        add("gpufabric_optics_bias_milliamperes", lane.bias_ma, lane=str(n))
    add("gpufabric_fec_corrected_codewords_total", found.fec_corrected)
    add("gpufabric_fec_uncorrected_codewords_total", found.fec_uncorrected)
    add("gpufabric_fec_corrected_bits_total", found.corrected_bits)
    add("gpufabric_phy_received_bits_total", found.received_bits)
    add("gpufabric_symbol_errors_total", found.symbol_errors)
    add("gpufabric_link_speed_bits_per_second", None if found.speed_mbps is None else found.speed_mbps * 1e6)
    return out


def from_linux(sections: dict[str, str], ethtool_stats: str = "") -> Optics:
    """A Linux port's reading from its `module`, `fec` and `speed` sections and its `ethtool -S` text."""
    found = parse_module(sections.get("module", ""))
    parse_fec(sections.get("fec", ""), found)
    parse_phy_counters(ethtool_stats, found)
    speed = sections.get("speed", "").strip()
    if speed.isdigit() and int(speed) > 0:  # the kernel says -1 (or nothing) for a link that is down
        found.speed_mbps = int(speed)
    return found
