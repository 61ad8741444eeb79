"""Every metric the exporter serves: one place for names, help, type and labels.

The tests hold the rules and the dashboard to this table (a renamed metric cannot leave an alert
watching nothing), and docs/telemetry.md's metric table is `markdown()`.
"""

from __future__ import annotations

from dataclasses import dataclass

SWITCH = ("plane", "device", "role")
# `cable`: the label of the cable plugged into the port, as the cabling plan writes it (what a technician
# finds on it; the remediation loop names it in a drain's reason).
PORT = (*SWITCH, "port", "peer", "peer_port", "rail", "unit", "cable")
NIC = ("plane", "host", "interface", "rail", "leaf")
# One end of a cable, on a switch port or a server NIC alike (a server's `device` is the host, its
# `role` "server", its `peer` the leaf): the optics and FEC alerts then need one expression, not two.
OPTICS = ("plane", "device", "role", "port", "peer", "rail")
# One lossless queue of a switch port: its traffic class and which buffer (egress-queue, ingress-pg).
QUEUE = (*PORT, "queue", "buffer")
# A planned InfiniBand switch port, labelled as `gpufabric ib metrics` labels it (gpufabric/ib/counters.py).
# A server's BMC, read over Redfish: the plan's server name, its rack and position when the intent places it,
# and the BMC's address on the OOB plane; a part adds its chassis, its id and the BMC's name for it.
BMC = ("node", "rack", "position", "bmc")
BMC_SYSTEM = (*BMC, "system")
BMC_PSU = (*BMC, "chassis", "psu", "name")
BMC_FAN = (*BMC, "chassis", "fan", "name")
BMC_SENSOR = (*BMC, "chassis", "sensor", "name")
IB_PORT = ("fabric", "node", "role", "port", "peer", "peer_port", "tier", "rail", "su", "counter")


@dataclass(frozen=True)
class Metric:
    name: str
    kind: str  # gauge | counter
    labels: tuple[str, ...]
    help: str


METRICS = {
    m.name: m
    for m in (
        Metric("gpufabric_scrape_ok", "gauge", SWITCH, "1 when the switch answered the last scrape"),
        Metric("gpufabric_link_up", "gauge", PORT, "1 when the planned link is up at this end"),
        Metric("gpufabric_link_carrier_changes_total", "counter", PORT, "times the link went down or up"),
        Metric("gpufabric_interface_octets_total", "counter", (*PORT, "direction"), "bytes through the port"),
        Metric("gpufabric_interface_errors_total", "counter", (*PORT, "direction"), "errored frames"),
        Metric("gpufabric_interface_discards_total", "counter", (*PORT, "direction"), "frames dropped"),
        Metric(
            "gpufabric_bgp_session_up",
            "gauge",
            (*SWITCH, "peer", "peer_device"),
            "1 when the planned session is established",
        ),
        Metric(
            "gpufabric_ecmp_paths",
            "gauge",
            (*SWITCH, "destination", "destination_device"),
            "installed equal-cost paths to a remote loopback",
        ),
        Metric(
            "gpufabric_ecmp_planned_paths",
            "gauge",
            (*SWITCH, "destination", "destination_device"),
            "equal-cost paths the plan implies",
        ),
        Metric("gpufabric_pfc_pause_frames_total", "counter", (*PORT, "priority", "direction"), "PFC pause frames"),
        Metric("gpufabric_pfc_watchdog_events_total", "counter", PORT, "PFC watchdog (pause storm) events"),
        Metric("gpufabric_ecn_marked_packets_total", "counter", PORT, "packets marked CE by the switch"),
        Metric(
            "gpufabric_queue_dropped_packets_total",
            "counter",
            (*PORT, "queue"),
            "packets an egress queue (QoS group) dropped",
        ),
        Metric("gpufabric_nic_octets_total", "counter", (*NIC, "direction"), "bytes through the host NIC"),
        Metric(
            "gpufabric_nic_pause_frames_total",
            "counter",
            (*NIC, "priority", "direction"),
            "PFC pause frames at the host NIC",
        ),
        Metric(
            "gpufabric_nic_pause_storm_events_total",
            "counter",
            (*NIC, "level"),
            "ConnectX pause storm warnings and errors",
        ),
        Metric(
            "gpufabric_nic_cnp_sent_total", "counter", NIC, "congestion notifications sent (DCQCN notification point)"
        ),
        Metric("gpufabric_nic_cnp_handled_total", "counter", NIC, "congestion notifications acted on (reaction point)"),
        Metric("gpufabric_nic_ecn_marked_roce_packets_total", "counter", NIC, "RoCE packets received with CE"),
        Metric("gpufabric_nic_out_of_sequence_total", "counter", NIC, "RoCE packets out of sequence (loss)"),
        Metric("gpufabric_optics_temperature_celsius", "gauge", OPTICS, "transceiver temperature"),
        Metric(
            "gpufabric_optics_temperature_high_warning_celsius",
            "gauge",
            OPTICS,
            "the transceiver's own high-temperature warning threshold",
        ),
        Metric("gpufabric_optics_rx_power_dbm", "gauge", (*OPTICS, "lane"), "optical power received on a lane"),
        Metric("gpufabric_optics_tx_power_dbm", "gauge", (*OPTICS, "lane"), "optical power sent on a lane"),
        Metric("gpufabric_optics_bias_milliamperes", "gauge", (*OPTICS, "lane"), "laser bias current of a lane"),
        Metric(
            "gpufabric_optics_rx_power_low_warning_dbm",
            "gauge",
            OPTICS,
            "the transceiver's own low receive-power warning threshold",
        ),
        Metric("gpufabric_fec_corrected_codewords_total", "counter", OPTICS, "codewords FEC corrected"),
        Metric(
            "gpufabric_fec_uncorrected_codewords_total",
            "counter",
            OPTICS,
            "codewords FEC could not correct (frames lost)",
        ),
        Metric("gpufabric_fec_corrected_bits_total", "counter", OPTICS, "bits FEC corrected (pre-FEC bit errors)"),
        Metric("gpufabric_phy_received_bits_total", "counter", OPTICS, "bits received at the PHY, where counted"),
        Metric("gpufabric_symbol_errors_total", "counter", OPTICS, "symbol errors FEC did not correct"),
        Metric("gpufabric_link_speed_bits_per_second", "gauge", OPTICS, "the link's rate as the OS reports it"),
        # -- signals worth acting on (GPU, host NIC, buffers) ----------------------------------------------------
        Metric(
            "gpufabric_queue_buffer_bytes",
            "gauge",
            QUEUE,
            "bytes a lossless queue (or priority group) holds now, where the OS says",
        ),
        Metric(
            "gpufabric_queue_buffer_watermark_bytes",
            "gauge",
            QUEUE,
            "the most bytes a lossless queue (or priority group) held in the OS's window",
        ),
        Metric(
            "gpufabric_queue_ecn_max_bytes",
            "gauge",
            QUEUE,
            "the plan's ECN maximum threshold for the queue: past it every packet is marked",
        ),
        Metric("gpufabric_nic_link_up", "gauge", NIC, "1 when the host NIC's link is up (operstate)"),
        Metric("gpufabric_nic_carrier_changes_total", "counter", NIC, "times the host NIC's carrier went down or up"),
        Metric("gpufabric_nic_errors_total", "counter", (*NIC, "direction"), "errored frames at the host NIC"),
        Metric(
            "gpufabric_nic_pcie_aer_errors_total",
            "counter",
            (*NIC, "severity"),
            "PCIe AER errors the host NIC's device reported (correctable, nonfatal, fatal)",
        ),
        # -- servers' BMCs (Redfish); a health is 0 OK, 1 Warning, 2 Critical ------------------------------------
        Metric("gpufabric_bmc_up", "gauge", BMC, "1 when the server's BMC was read whole over Redfish"),
        Metric("gpufabric_bmc_health", "gauge", BMC_SYSTEM, "the system's health rollup: 0 OK, 1 Warning, 2 Critical"),
        Metric("gpufabric_bmc_power_on", "gauge", BMC_SYSTEM, "1 when the system's PowerState is On"),
        Metric("gpufabric_bmc_psu_health", "gauge", BMC_PSU, "a power supply's health: 0 OK, 1 Warning, 2 Critical"),
        Metric("gpufabric_bmc_fan_health", "gauge", BMC_FAN, "a fan's health: 0 OK, 1 Warning, 2 Critical"),
        Metric("gpufabric_bmc_fan_rpm", "gauge", BMC_FAN, "a fan's speed, where the BMC gives it in RPM"),
        Metric(
            "gpufabric_bmc_temperature_health",
            "gauge",
            BMC_SENSOR,
            "a temperature sensor's health: 0 OK, 1 Warning, 2 Critical",
        ),
        Metric("gpufabric_bmc_temperature_celsius", "gauge", BMC_SENSOR, "a temperature the BMC reads"),
        Metric(
            "gpufabric_bmc_temperature_critical_celsius",
            "gauge",
            BMC_SENSOR,
            "the sensor's upper critical threshold, as the BMC sets it",
        ),
        Metric(
            "gpufabric_ib_port_counter",
            "gauge",
            IB_PORT,
            "a planned InfiniBand switch port's PortCounters value (perfquery), by counter",
        ),
    )
}


def markdown() -> str:
    rows = ["| metric | type | labels | what |", "| --- | --- | --- | --- |"]
    rows += [f"| `{m.name}` | {m.kind} | {', '.join(m.labels)} | {m.help} |" for m in METRICS.values()]
    return "\n".join(rows) + "\n"
