"""Every metric the exporter serves: one place for names, help, type and labels.

The tests hold the rules and the dashboard to this table (a renamed metric cannot leave an alert
watching nothing), and docs/telemetry.md's metric table is `markdown()`.
"""

from __future__ import annotations

from dataclasses import dataclass

SWITCH = ("plane", "device", "role")
PORT = (*SWITCH, "port", "peer", "peer_port", "rail", "unit")
NIC = ("plane", "host", "interface", "rail", "leaf")


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
    )
}


def markdown() -> str:
    rows = ["| metric | type | labels | what |", "| --- | --- | --- | --- |"]
    rows += [f"| `{m.name}` | {m.kind} | {', '.join(m.labels)} | {m.help} |" for m in METRICS.values()]
    return "\n".join(rows) + "\n"
