"""Buffer occupancy and watermarks, read with each switch OS's own feature, on outputs in the published formats.

No Cumulus, EOS, NX-OS or SONiC switch runs here: the answers in tests/telemetry_outputs were written by hand
in the formats the vendors publish, each from the documentation named below, and go through the platforms'
own readers (Platform.read_buffers) and the exporter:

- cumulus_qos_buffer.txt: `nv show interface <port> qos buffer`, after the example in NVIDIA's Cumulus Linux
  NVUE Command Reference (Show Commands, QoS; 5.4+), which shows the ingress port and priority-group
  tables; the egress tables are written in the same layout (assumed: docs/not-shown.md).
- eos_lanz.json: `show queue-monitor length limit 60 seconds | json`, LANZ in Arista's EOS User Manual
  ("Latency Analyzer (LANZ)"), with the JSON keys of Arista's goeapi `ShowQueueMonitor`.
- nxos_burst_detect.json: `show queuing burst-detect detail | json`, Cisco's Nexus 9000 NX-OS QoS
  Configuration Guide ("Micro-Burst Monitoring"), keys from the 9.3(x) Show Command Reference.
- sonic_queue_watermark.txt, sonic_pg_watermark.txt: `show queue watermark unicast` and `show
  priority-group watermark shared`, SONiC's Command Reference (sonic-utilities doc/Command-Reference.md).

Hostile answers (the wrong shape, NaN, nesting, oversize, counts past 64 bits) are ShapeErrors from the
readers, and cost the exporter only the buffer samples of that switch.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import INVENTORY

from gpufabric.drivers.answers import ShapeError
from gpufabric.drivers.transport import Output
from gpufabric.errors import GpufabricError
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.platforms import platform
from gpufabric.telemetry.buffers import EGRESS, INGRESS, MAX_ANSWER_CHARS, QueueBuffer
from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.read import Sample, read_switch
from gpufabric.telemetry.targets import SwitchTarget, switch_targets

OUTPUTS = Path(__file__).parents[1] / "telemetry_outputs"
KB, MB = 1024, 1024 * 1024
NOW = datetime(2026, 11, 25, 14, 0, 50, tzinfo=UTC).timestamp()  # 10 to 40 s after the NX-OS sample's bursts


def _text(name: str) -> str:
    return (OUTPUTS / name).read_text()


# -- each reader on its published format ----------------------------------------------------------------


def test_cumulus_reads_the_priority_groups_and_traffic_classes_of_nv_show_qos_buffer():
    from gpufabric.nos.cumulus.telemetry import parse_qos_buffer

    found = parse_qos_buffer(_text("cumulus_qos_buffer.txt"))
    assert found == {
        ("0", INGRESS): QueueBuffer(0.0, 0.0),
        ("3", INGRESS): QueueBuffer(320.0 * KB, round(1.43 * MB)),
        ("0", EGRESS): QueueBuffer(0.0, 12.0 * KB),
        ("3", EGRESS): QueueBuffer(round(1.2 * MB), round(1.86 * MB)),
    }  # the pool tables (per port) are not queues: left out


def test_eos_lanz_keeps_each_queues_longest_record_in_the_window():
    from gpufabric.nos.eos.telemetry import parse_lanz

    found = parse_lanz(_text("eos_lanz.json"))
    assert found == {
        "Ethernet1/3": {("3", EGRESS): QueueBuffer(None, 2457600.0)},  # start, update, end: the update was longest
        "Ethernet1/5": {("1", EGRESS): QueueBuffer(None, 512000.0)},
    }
    assert parse_lanz(json.dumps({"lanzEnabled": False, "entryList": []})) is None  # LANZ off: nothing known


def test_nxos_keeps_the_deepest_burst_of_the_last_minute_by_the_switchs_clock():
    from gpufabric.nos.nxos.telemetry import burst_time, parse_bursts

    found = parse_bursts(_text("nxos_burst_detect.json"), NOW)
    # Eth1/2 queue 3: 1.875 MiB 40 s ago and 1 MiB 10 s ago count; the 8 MiB burst 40 minutes ago does not.
    assert found == {
        "Ethernet1/2": {("3", EGRESS): QueueBuffer(None, 1966080.0)},
        "Ethernet1/4": {("0", EGRESS): QueueBuffer(None, 700000.0)},
    }
    assert parse_bursts(_text("nxos_burst_detect.json"), NOW + 3600) == {}  # an hour on: all old
    assert burst_time("2026/11/25 14:00:10:120044", "t") == pytest.approx(NOW - 39.879956)


def test_sonic_reads_the_queue_and_priority_group_watermarks():
    from gpufabric.nos.sonic.telemetry import PG_WATERMARK, parse_watermarks

    queues = parse_watermarks(_text("sonic_queue_watermark.txt"))
    assert queues["Ethernet0"][("3", EGRESS)] == QueueBuffer(None, 1843200.0)
    assert queues["Ethernet0"][("6", EGRESS)] == QueueBuffer(None, 2048.0)
    assert ("7", EGRESS) not in queues["Ethernet8"]  # N/A: the ASIC has no such watermark
    groups = parse_watermarks(_text("sonic_pg_watermark.txt"), PG_WATERMARK)
    assert groups["Ethernet0"][("3", INGRESS)] == QueueBuffer(None, 2097152.0)


class _Answers:
    """A NAPALM connection whose `cli` answers from a table (and records what it was asked, in order)."""

    def __init__(self, answers: dict[str, str], ports: list[str] | None = None) -> None:
        self.answers, self.ports = answers, ports or []
        self.asked: list[str] = []

    def cli(self, commands: list[str]) -> dict[str, str]:
        self.asked += commands
        return {c: self.answers.get(c, "") for c in commands}

    # what read_switch asks of every switch besides
    def get_interfaces(self) -> dict[str, Any]:
        return {p: {"is_up": True} for p in self.ports}

    def get_interfaces_counters(self) -> dict[str, Any]:
        return {}

    def get_bgp_neighbors(self) -> dict[str, Any]:
        return {"global": {"peers": {}}}

    def get_route_to(self) -> dict[str, Any]:
        return {}


def test_each_platform_reads_only_the_queues_asked_and_reports_a_quiet_queue_as_zero():
    cumulus = platform("cumulus").read_buffers(
        _Answers({"nv show interface swp1 qos buffer": _text("cumulus_qos_buffer.txt")}),
        ["swp1", "swp1; reboot"],
        ["3"],
    )
    assert cumulus == {"swp1": {("3", INGRESS): QueueBuffer(320.0 * KB, round(1.43 * MB)),
                                ("3", EGRESS): QueueBuffer(round(1.2 * MB), round(1.86 * MB))}}  # fmt: skip
    eos = platform("eos").read_buffers(
        _Answers({"show queue-monitor length limit 60 seconds | json": _text("eos_lanz.json")}),
        ["Ethernet1/3", "Ethernet1/7"],
        ["3"],
    )
    assert eos == {"Ethernet1/3": {("3", EGRESS): QueueBuffer(None, 2457600.0)},
                   "Ethernet1/7": {("3", EGRESS): QueueBuffer(None, 0.0)}}  # fmt: skip
    sonic_conn = _Answers({
        "show queue watermark unicast": _text("sonic_queue_watermark.txt"),
        "show priority-group watermark shared": _text("sonic_pg_watermark.txt"),
    })  # fmt: skip
    sonic = platform("sonic").read_buffers(sonic_conn, ["Ethernet0"], ["3"])
    assert sonic == {"Ethernet0": {("3", EGRESS): QueueBuffer(None, 1843200.0),
                                   ("3", INGRESS): QueueBuffer(None, 2097152.0)}}  # fmt: skip
    # SONiC's user watermark is cleared right after it is read, so the next scrape sees the next peak.
    assert sonic_conn.asked == [
        "show queue watermark unicast",
        "show priority-group watermark shared",
        "sonic-clear queue watermark unicast",
        "sonic-clear priority-group watermark shared",
    ]
    assert platform("frr").read_buffers(_Answers({}), ["swp1"], ["3"]) is None  # a Linux host has no ASIC buffer


def test_the_nxos_platform_reads_bursts_against_the_time_now(monkeypatch):
    from gpufabric.nos.nxos import telemetry as nxos

    monkeypatch.setattr(nxos.time, "time", lambda: NOW)
    conn = _Answers({"show queuing burst-detect detail | json": _text("nxos_burst_detect.json")})
    found = platform("nxos").read_buffers(conn, ["Ethernet1/2", "Ethernet1/9"], ["3"])
    assert found == {"Ethernet1/2": {("3", EGRESS): QueueBuffer(None, 1966080.0)},
                     "Ethernet1/9": {("3", EGRESS): QueueBuffer(None, 0.0)}}  # fmt: skip


# -- through the exporter, with the plan's labels -----------------------------------------------------------


def _target(example: str, device: str, **changes: Any) -> SwitchTarget:
    plan = build_plan(load_intent(str(INVENTORY / "examples" / example)))
    found = next(t for t in switch_targets(plan) if t.device == device)
    return dataclasses.replace(found, **changes)


def _nxos_now() -> str:
    """The NX-OS sample with its bursts moved to just now (the exporter reads against the clock)."""
    now = datetime.now(UTC)
    doc = json.loads(_text("nxos_burst_detect.json"))
    for row in doc["TABLE_instance"]["ROW_instance"]:
        row["peak-time"] = now.strftime("%Y/%m/%d %H:%M:%S:000000")
    return json.dumps(doc)


CASES = {
    # (example, device, port, the answers, the watermark expected on the port's queue 3 and buffer)
    "cumulus": ("multi-vendor.yml", "cmp-su1-leaf1", "swp1s0",
                {"nv show interface swp1s0 qos buffer": "cumulus_qos_buffer.txt"},
                {EGRESS: round(1.86 * MB), INGRESS: round(1.43 * MB)}),
    "eos": ("multi-vendor.yml", "sto-leaf1a", "Ethernet1/3",
            {"show queue-monitor length limit 60 seconds | json": "eos_lanz.json"}, {EGRESS: 2457600}),
    "nxos": ("multi-vendor.yml", "biz-leaf1", "Ethernet1/2",
             {"show queuing burst-detect detail | json": _nxos_now}, {EGRESS: 8388608}),
    "sonic": ("sonic.yml", "cmp-leaf1a", "Ethernet0", {"show queue watermark unicast": "sonic_queue_watermark.txt",
                                                      "show priority-group watermark shared": "sonic_pg_watermark.txt"},
              {EGRESS: 1843200, INGRESS: 2097152}),
}  # fmt: skip


@pytest.mark.parametrize("os_name", sorted(CASES))
def test_the_exporter_serves_each_os_watermarks_with_the_plans_labels(os_name):
    example, device, port, files, expected = CASES[os_name]
    # The business plane of the example is not lossless; NX-OS's case reads it as a RoCE plane's switch would.
    target = _target(example, device, lossless_queues=("3",), ecn_max_bytes=1_500_000)
    answers = {c: f() if callable(f) else _text(f) for c, f in files.items()}
    samples = read_switch(_Answers(answers, sorted(target.ports)), target)
    marks = {s.labels["buffer"]: s.value for s in samples
             if s.metric == "gpufabric_queue_buffer_watermark_bytes" and s.labels["port"] == port}  # fmt: skip
    assert marks == expected
    labels = {**target.labels, **target.ports[port], "queue": "3", "buffer": EGRESS}
    assert Sample("gpufabric_queue_ecn_max_bytes", labels, 1_500_000.0) in samples
    assert labels["rail"] or labels["peer"]  # the plan's far end names the queue's port
    buffers = [s for s in samples if s.metric.startswith("gpufabric_queue_")]
    assert all(set(s.labels) == set(METRICS[s.metric].labels) and s.labels["queue"] == "3" for s in buffers)


def test_a_switch_on_a_plane_without_lossless_queues_is_not_asked():
    target = _target("multi-vendor.yml", "biz-leaf1")
    assert target.lossless_queues == ()
    conn = _Answers({}, sorted(target.ports))
    read_switch(conn, target)
    assert not any("burst-detect" in c for c in conn.asked)


# -- hostile answers ----------------------------------------------------------------------------------------

LANZ_ENTRY = {"interface": "Et1/3", "trafficClass": 3, "queueLength": 100, "entryType": "U"}
BURST_ROW = {"if-str": "Eth1/2", "queue": "3", "peak": "100", "peak-time": "2026/11/25 14:00:40:000900"}
SONIC_HEAD = "       Port    UC0    UC1\n-----------  -----  -----\n"
PG_HEAD = "    3        2        DYNAMIC  "
HOSTILE = {
    "eos": [
        json.dumps({"entryList": {"Et1/3": LANZ_ENTRY}}),  # a mapping where a list was documented
        json.dumps({"entryList": [{**LANZ_ENTRY, "queueLength": "-5"}]}),
        json.dumps({"entryList": [{**LANZ_ENTRY, "queueLength": 2**70}]}),  # past a 64-bit counter
        json.dumps({"entryList": [{**LANZ_ENTRY, "queueLength": 1.5}]}),
        json.dumps({"entryList": [{k: v for k, v in LANZ_ENTRY.items() if k != "interface"}]}),
        '{"entryList": [{"interface": "Et1/3", "trafficClass": 3, "queueLength": NaN}]}',
        "[" * 10_000 + "]" * 10_000,  # nesting past the JSON bound
        json.dumps(["not", "an", "object"]),
        " " * (MAX_ANSWER_CHARS + 1) + "{}",  # oversize
    ],
    "nxos": [
        json.dumps({"TABLE_instance": {"ROW_instance": [{**BURST_ROW, "peak-time": "yesterday"}]}}),
        json.dumps({"TABLE_instance": {"ROW_instance": [{**BURST_ROW, "peak-time": "2026/13/45 99:00:00"}]}}),
        json.dumps({"TABLE_instance": {"ROW_instance": [{**BURST_ROW, "peak": "1e9"}]}}),
        json.dumps({"TABLE_instance": {"ROW_instance": [{**BURST_ROW, "queue": ["3"]}]}}),
        json.dumps({"TABLE_instance": {"ROW_instance": [{**BURST_ROW, "peak": "9" * 5000}]}}),
        '{"TABLE_instance": Infinity}',
        "x" * (MAX_ANSWER_CHARS + 1),
    ],
    "cumulus": [
        "Buffer Statistics - Ingress Priority Group\n" + PG_HEAD + "320 KB\n",  # one size where three are printed
        "Buffer Statistics - Egress Traffic Class\n" + " " * (MAX_ANSWER_CHARS + 1),
    ],
    "sonic": [
        SONIC_HEAD + "  Ethernet0      0\n",  # a value missing
        SONIC_HEAD + "  Ethernet0      0   12abc\n",
        SONIC_HEAD + "  rm -rf /      0      0\n",
        SONIC_HEAD + "  Ethernet0      0   " + "9" * 30 + "\n",
        "% Error: command not found\n",
        SONIC_HEAD + " " * MAX_ANSWER_CHARS,
    ],
}


def _parse(os_name: str, text: str) -> object:
    if os_name == "eos":
        from gpufabric.nos.eos.telemetry import parse_lanz

        return parse_lanz(text)
    if os_name == "nxos":
        from gpufabric.nos.nxos.telemetry import parse_bursts

        return parse_bursts(text, NOW)
    if os_name == "cumulus":
        from gpufabric.nos.cumulus.telemetry import parse_qos_buffer

        return parse_qos_buffer(text)
    from gpufabric.nos.sonic.telemetry import parse_watermarks

    return parse_watermarks(text)


@pytest.mark.parametrize(("os_name", "text"), [(o, t) for o, texts in HOSTILE.items() for t in texts])
def test_a_hostile_answer_is_a_named_shape_error(os_name, text):
    with pytest.raises(ShapeError) as caught:
        _parse(os_name, text)
    assert isinstance(caught.value, GpufabricError) and len(str(caught.value)) < 400


def test_a_hostile_buffer_answer_costs_only_the_buffer_samples():
    target = _target("multi-vendor.yml", "sto-leaf1a")
    command = "show queue-monitor length limit 60 seconds | json"
    samples = read_switch(_Answers({command: json.dumps({"entryList": 7})}, sorted(target.ports)), target)
    assert not [s for s in samples if s.metric.startswith("gpufabric_queue_buffer")]
    assert [s for s in samples if s.metric == "gpufabric_link_up"]  # the switch's other counters are served


class _Recorder:
    """A transport that records each shell command (and its stdin) and answers with the watermark table."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append((command, stdin))
        return Output(0, _text("sonic_queue_watermark.txt") if "watermark unicast" in command else "", "")

    def close(self) -> None:
        pass


def test_the_sonic_driver_runs_exactly_the_watermark_commands_in_the_shell_and_clears_as_root():
    from gpufabric.nos.sonic.driver import SonicDriver
    from gpufabric.nos.sonic.telemetry import COMMANDS

    transport = _Recorder()
    driver = SonicDriver("192.0.2.30", "admin", "", optional_args={"transport": transport})
    driver.open()
    answers = driver.cli([*COMMANDS, "show queue watermark unicast; reboot"])
    assert answers["show queue watermark unicast"] == _text("sonic_queue_watermark.txt")
    assert transport.sent[:4] == [
        ("show queue watermark unicast", None),
        ("show priority-group watermark shared", None),
        ("sudo -n sh -s", "sonic-clear queue watermark unicast\n"),
        ("sudo -n sh -s", "sonic-clear priority-group watermark shared\n"),
    ]
    # Any other text is a vtysh command, quoted whole: it never reaches the switch's shell as a command.
    assert transport.sent[4][0].endswith("vtysh -c 'show queue watermark unicast; reboot'")


def test_no_answer_is_nothing_known_not_a_quiet_queue():
    assert platform("eos").read_buffers(_Answers({}), ["Ethernet1/3"], ["3"]) is None
    assert platform("nxos").read_buffers(_Answers({}), ["Ethernet1/2"], ["3"]) is None


class _Refusing(_Answers):
    """A switch whose hardware has no LANZ: EOS refuses the command (NAPALM raises CommandErrorException)."""

    def cli(self, commands: list[str]) -> dict[str, str]:
        from napalm.base.exceptions import CommandErrorException

        if any("queue-monitor" in c for c in commands):
            raise CommandErrorException("% Invalid input (at token 1: 'queue-monitor')")
        return super().cli(commands)


def test_a_switch_that_refuses_the_buffer_command_is_still_served():
    target = _target("multi-vendor.yml", "sto-leaf1a")
    samples = read_switch(_Refusing({}, sorted(target.ports)), target)
    assert [s for s in samples if s.metric == "gpufabric_link_up"]
    assert not [s for s in samples if s.metric.startswith("gpufabric_queue_")]
