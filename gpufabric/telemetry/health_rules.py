"""Prometheus alert rules for signals worth acting on: GPU health, host NIC health, lossless buffers.

Each alert names the part it is about with the plan's labels, so that whatever acts on it (a person, or
`gpufabric remediate serve`) knows which node, GPU, NIC, rail or switch port it means:

- **GPUs**, over dcgm-exporter's series (the GPU Operator runs dcgm-exporter with `dcgmExporter.enabled`).
  Metric names are those of dcgm-exporter's `etc/default-counters.csv` (the 3.x to 4.8 releases: the 4.9.0
  release renames some default fields, not these). Of them, DCGM_FI_DEV_XID_ERRORS and
  DCGM_FI_DEV_ROW_REMAP_FAILURE are collected by default; DCGM_FI_DEV_ECC_DBE_VOL_TOTAL and the NVLink error
  counters (DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL) are commented out in that file and must be enabled in
  the counters file dcgm-exporter is given (docs/telemetry.md shows the lines). dcgm-exporter labels a GPU
  `gpu` (its index), `UUID`, `device`, `modelName` and `Hostname`; the rules copy `Hostname` into `node`,
  the plan's server name (a host's name is its plan name: the hosts role sets it).
  - an Xid whose remedy in NVIDIA's Xid catalog is a GPU reset, a reboot or service, not an application
    restart (`xids`, tunable): 48 (double-bit ECC), 64 (row remap or page retirement failed), 74 (NVLink),
    79 (fallen off the bus), 95 (uncontained ECC), 119 and 120 (GSP timeout, GSP error). The gauge holds
    the last Xid until the GPU is reset, so the alert lasts until then;
  - uncorrectable (double-bit) volatile ECC errors above 0: the GPU is unavailable until reset (the
    volatile counter restarts with the driver);
  - NVLink: a recovery error (the link retrained) in the window, or CRC and replay errors above a rate;
  - row remapping failed: the GPU's memory cannot retire a bad row any more (a field replacement).
- **Host NICs**, over the exporter's own reading of each server's data NICs (sysfs operstate and
  carrier_changes, `ip -s` error counters, the NIC device's PCIe AER totals), labelled with host,
  interface, rail and leaf: link down, link flapped, frame errors, fatal or nonfatal AER errors, and
  correctable AER errors at a rate that marks a marginal PCIe link.
- **Server BMCs**, over the exporter's Redfish reading of each server's BMC (labelled node, rack, position
  and the BMC's OOB address): a power supply or a fan the BMC reports Critical, a temperature at or past
  the sensor's own critical threshold (or a sensor reported Critical), the system's health rollup
  Critical; and a BMC that has not been read for a while (a person looks: the server may be fine).
- **Lossless buffers**: a lossless queue whose watermark stays above the plan's ECN maximum threshold,
  scrape after scrape: DCQCN is not holding the queue where it marks, and PFC pauses come next.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.telemetry.durations import check_duration
from gpufabric.telemetry.flapping import flapping

# The dcgm-exporter series the GPU rules read (metric names as its default counters CSV writes them).
XID = "DCGM_FI_DEV_XID_ERRORS"
ECC_DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
NVLINK_RECOVERY = "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"
NVLINK_ERRORS = (
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
)
ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
DCGM_METRICS = (XID, ECC_DBE, NVLINK_RECOVERY, *NVLINK_ERRORS, ROW_REMAP_FAILURE)


@dataclass(frozen=True)
class HealthThresholds:
    xids: tuple[int, ...] = (48, 64, 74, 79, 95, 119, 120)
    nvlink_errors_per_second: float = 1.0  # CRC and replay errors of one GPU's links together
    nic_errors: float = 0  # frame errors in the window above which a NIC alerts
    aer_correctable_per_minute: float = 10.0
    gpu_window: str = "10m"
    nic_window: str = "5m"
    nic_hold: str = "1m"  # a NIC link down this long
    buffer_hold: str = "5m"  # a lossless queue above the ECN maximum this long
    bmc_hold: str = "1m"  # a BMC's failed part this long (one scrape's glitch is not a drain)
    bmc_unread_hold: str = "10m"  # a BMC not read this long

    def __post_init__(self) -> None:
        for text in (self.gpu_window, self.nic_window, self.nic_hold, self.buffer_hold, self.bmc_hold,
                     self.bmc_unread_hold):  # fmt: skip
            check_duration(text)
        if not self.xids or any(not 0 < x < 1 << 16 for x in self.xids):
            raise ValueError("xids: Xid numbers, at least one")


def _rule(name: str, expr: str, summary: str, severity: str, hold: str) -> dict[str, object]:
    return {
        "alert": name,
        "expr": expr,
        "for": hold,
        "labels": {"severity": severity},
        "annotations": {"summary": summary},
    }


def _node(expr: str) -> str:
    """`expr` with dcgm-exporter's Hostname label copied into the plan's `node`."""
    return f'label_replace({expr}, "node", "$1", "Hostname", "(.+)")'


def gpu_group(t: HealthThresholds = HealthThresholds()) -> dict[str, object]:
    gpu = "{{ $labels.node }} GPU {{ $labels.gpu }} ({{ $labels.UUID }})"
    xid = " or ".join(f"{XID} == {x}" for x in sorted(set(t.xids)))
    nvlink = " or ".join(f"rate({m}[{t.gpu_window}]) > {t.nvlink_errors_per_second:g}" for m in NVLINK_ERRORS)
    rules = [
        _rule(
            "GpufabricGpuXidError",
            _node(f"({xid})"),
            f"{gpu}: Xid {{{{ $value }}}}, a fault the GPU needs a reset (or service) to clear",
            "critical",
            "0s",
        ),
        _rule(
            "GpufabricGpuEccUncorrectable",
            _node(f"{ECC_DBE} > 0"),
            f"{gpu}: {{{{ $value }}}} uncorrectable ECC errors since the driver loaded",
            "critical",
            "0s",
        ),
        _rule(
            "GpufabricGpuNvlinkRecovery",
            _node(f"increase({NVLINK_RECOVERY}[{t.gpu_window}]) > 0"),
            f"{gpu}: an NVLink recovered from errors (the link retrained)",
            "critical",
            "0s",
        ),
        _rule(
            "GpufabricGpuNvlinkErrors",
            _node(f"({nvlink})"),
            f"{gpu}: NVLink CRC or replay errors at {{{{ $value | humanize }}}}/s",
            "warning",
            "0s",
        ),
        _rule(
            "GpufabricGpuRowRemapFailure",
            _node(f"{ROW_REMAP_FAILURE} > 0"),
            f"{gpu}: row remapping failed: the GPU's memory cannot retire a bad row any more",
            "critical",
            "0s",
        ),
    ]
    return {"name": "gpufabric-gpu", "rules": rules}


def nic_group(t: HealthThresholds = HealthThresholds()) -> dict[str, object]:
    nic = "{{ $labels.host }} {{ $labels.interface }} (rail {{ $labels.rail }}, to {{ $labels.leaf }})"
    w = t.nic_window
    aer = "gpufabric_nic_pcie_aer_errors_total"
    rules = [
        _rule("GpufabricNicLinkDown", "gpufabric_nic_link_up == 0", f"{nic}: the link is down", "critical", t.nic_hold),
        _rule(
            "GpufabricNicLinkFlapped",
            f"increase(gpufabric_nic_carrier_changes_total[{w}]) > 0",
            f"{nic}: the link went down or up",
            "warning",
            "0s",
        ),
        _rule(
            "GpufabricNicLinkFlapping",
            flapping("gpufabric_nic_carrier_changes_total", w),
            f"{nic}: the link is flapping: down and up again more than once",
            "critical",
            "0s",
        ),
        _rule(
            "GpufabricNicErrors",
            f"increase(gpufabric_nic_errors_total[{w}]) > {t.nic_errors:g}",
            f"{nic}: {{{{ $value | humanize }}}} errored frames ({{{{ $labels.direction }}}})",
            "warning",
            "0s",
        ),
        _rule(
            "GpufabricNicPcieAerUncorrectable",
            f'increase({aer}{{severity=~"fatal|nonfatal"}}[{w}]) > 0',
            f"{nic}: PCIe {{{{ $labels.severity }}}} AER errors: the NIC's PCIe link lost data",
            "critical",
            "0s",
        ),
        _rule(
            "GpufabricNicPcieAerCorrectable",
            f'rate({aer}{{severity="correctable"}}[{w}]) * 60 > {t.aer_correctable_per_minute:g}',
            f"{nic}: {{{{ $value | humanize }}}} correctable PCIe AER errors a minute: a marginal PCIe link",
            "warning",
            "0s",
        ),
    ]
    return {"name": "gpufabric-host-nic", "rules": rules}


def buffer_group(t: HealthThresholds = HealthThresholds()) -> dict[str, object]:
    queue = "{{ $labels.device }} {{ $labels.port }} (to {{ $labels.peer }}) {{ $labels.buffer }} {{ $labels.queue }}"
    rules = [
        _rule(
            "GpufabricLosslessQueueDeep",
            "gpufabric_queue_buffer_watermark_bytes > gpufabric_queue_ecn_max_bytes"
            " or gpufabric_queue_buffer_bytes > gpufabric_queue_ecn_max_bytes",
            f"{queue}: {{{{ $value | humanize1024 }}}}B, above the ECN maximum threshold: DCQCN is not holding "
            "the queue, PFC pauses come next",
            "warning",
            t.buffer_hold,
        )
    ]
    return {"name": "gpufabric-buffers", "rules": rules}


def bmc_group(t: HealthThresholds = HealthThresholds()) -> dict[str, object]:
    """A server's BMC reporting a failed part (Redfish health 2 is Critical)."""
    server = "{{ $labels.node }} (BMC {{ $labels.bmc }})"
    part = "{{ $labels.chassis }} {{ $labels.name }}"
    rules = [
        _rule(
            "GpufabricBmcPsuFailed",
            "gpufabric_bmc_psu_health == 2",
            f"{server}: power supply {part} ({{{{ $labels.psu }}}}) is Critical",
            "critical",
            t.bmc_hold,
        ),
        _rule(
            "GpufabricBmcFanFailed",
            "gpufabric_bmc_fan_health == 2",
            f"{server}: fan {part} ({{{{ $labels.fan }}}}) is Critical",
            "critical",
            t.bmc_hold,
        ),
        _rule(
            "GpufabricBmcTemperatureCritical",
            "gpufabric_bmc_temperature_celsius >= gpufabric_bmc_temperature_critical_celsius"
            " or gpufabric_bmc_temperature_health == 2",
            f"{server}: temperature {part} at or past its critical threshold ({{{{ $value }}}})",
            "critical",
            t.bmc_hold,
        ),
        _rule(
            "GpufabricBmcHealthCritical",
            "gpufabric_bmc_health == 2",
            f"{server}: system {{{{ $labels.system }}}} reports its health rollup Critical",
            "critical",
            t.bmc_hold,
        ),
        _rule(
            "GpufabricBmcUnread",
            "gpufabric_bmc_up == 0",
            f"{server}: the BMC has not been read over Redfish (`gpufabric telemetry bmc --once` says why)",
            "warning",
            t.bmc_unread_hold,
        ),
    ]
    return {"name": "gpufabric-bmc", "rules": rules}


def health_groups(t: HealthThresholds = HealthThresholds()) -> list[dict[str, object]]:
    return [gpu_group(t), nic_group(t), buffer_group(t), bmc_group(t)]
