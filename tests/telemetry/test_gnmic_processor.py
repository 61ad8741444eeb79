"""gnmic's event processor from the plan, run by jq (the language of gnmic's `event-jq`, here Debian's jq) on
events in gnmic's documented event format: every value the exporter also reads comes out under the exporter's
metric name with the plan's labels, anything unplanned is dropped, and the series gnmic would then serve make
the project's own alert rules fire under promtool, with the plan's labels in the alert."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import INVENTORY, example_plan, run_in_process

from gpufabric.telemetry.gnmi import PROCESSOR, gnmi_targets, gnmic_config
from gpufabric.telemetry.metrics import METRICS
from tests.telemetry.test_health_alerts import _alert, _run

MULTI = INVENTORY / "examples" / "multi-vendor.yml"
LEAF = "sto-leaf1a"  # an EOS leaf: ports Ethernet5/1, Ethernet6/1 to the spines, sessions to both


def _jq() -> str:
    found = shutil.which("jq")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("jq is missing: scripts/test.sh installs it (Debian's jq)")
        pytest.skip("jq is not installed (scripts/test.sh installs Debian's jq)")
    return found


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    targets, _ = gnmi_targets(example_plan(MULTI))
    return gnmic_config(targets)


def _process(config: dict[str, Any], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    program = config["processors"][PROCESSOR]["event-jq"]["expression"]
    done = subprocess.run(
        [_jq(), "-c", program], input=json.dumps(events), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _event(path_values: dict[str, Any], **tags: str) -> dict[str, Any]:
    """One event as gnmic documents it: the subscription's name, a timestamp, tags (the target as `source`,
    the subscription, the path's keys as <element>_<key>) and values keyed by the path without its keys."""
    return {
        "name": LEAF,
        "timestamp": 1764000000000000000,
        "tags": {"source": "172.16.0.16:6030", "subscription-name": LEAF, **tags},
        "values": path_values,
    }


COUNTERS = "/interfaces/interface/state/counters"


def test_the_output_serves_the_processor_and_plain_names(config, tmp_path: Path) -> None:
    out = config["outputs"]["prometheus"]
    assert out["event-processors"] == [PROCESSOR]
    assert out["metric-prefix"] == "" and out["append-subscription-name"] is False
    written = tmp_path / "gnmic.yml"
    done = run_in_process("gpufabric", "telemetry", "gnmi", str(MULTI), "-o", str(written))
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(written.read_text()) == config  # the file the command writes is this configuration


def test_counters_come_out_as_the_exporter_s_metrics_with_the_plan_s_labels(config) -> None:
    events = [
        _event(
            {f"{COUNTERS}/in-octets": "1000", f"{COUNTERS}/out-octets": "2000", f"{COUNTERS}/in-errors": "3",
             f"{COUNTERS}/out-discards": "4", f"{COUNTERS}/in-unicast-pkts": "99"},
            interface_name="Ethernet5/1",
        ),
        _event({"/interfaces/interface/state/oper-status": "DOWN"}, interface_name="Ethernet6/1"),
        _event({"/interfaces/interface/state/oper-status": "UP"}, interface_name="Ethernet5/1"),
        _event({f"{COUNTERS}/in-octets": "7"}, interface_name="Ethernet9/1"),  # no such planned port
    ]  # fmt: skip
    got = _process(config, events)
    by = {(e["tags"]["port"], next(iter(e["values"])), e["tags"].get("direction")): e for e in got}
    assert set(by) == {
        ("Ethernet5/1", "gpufabric_interface_octets_total", "rx"),
        ("Ethernet5/1", "gpufabric_interface_octets_total", "tx"),
        ("Ethernet5/1", "gpufabric_interface_errors_total", "rx"),
        ("Ethernet5/1", "gpufabric_interface_discards_total", "tx"),
        ("Ethernet6/1", "gpufabric_link_up", None),
        ("Ethernet5/1", "gpufabric_link_up", None),
    }
    assert by[("Ethernet5/1", "gpufabric_interface_octets_total", "tx")]["values"] == {
        "gpufabric_interface_octets_total": "2000"
    }
    assert by[("Ethernet6/1", "gpufabric_link_up", None)]["values"] == {"gpufabric_link_up": 0}
    assert by[("Ethernet5/1", "gpufabric_link_up", None)]["values"] == {"gpufabric_link_up": 1}
    down = by[("Ethernet6/1", "gpufabric_link_up", None)]["tags"]
    assert down["device"] == LEAF and down["peer"] == "sto-spine2" and down["plane"] == "storage"
    for e in got:  # the exporter's label set for the metric, nothing of gnmic's own
        ((metric, _),) = e["values"].items()
        assert set(e["tags"]) == set(METRICS[metric].labels), metric


def test_sessions_and_queues_keyed_by_the_plan_and_module_prefixes_ignored(config) -> None:
    plan = example_plan(MULTI)
    targets, _ = gnmi_targets(plan)
    leaf = next(t for t in targets if t.device == LEAF)
    first, second = sorted(leaf.sessions)
    session = "/openconfig-network-instance:network-instances/network-instance/protocols/protocol/bgp/neighbors/neighbor/state/session-state"  # noqa: E501
    events = [
        _event({session: "ESTABLISHED"}, **{"network-instance_name": "default", "neighbor_neighbor-address": first}),
        _event({session: "ACTIVE"}, **{"network-instance_name": "default", "neighbor_neighbor-address": second}),
        _event({session: "ESTABLISHED"}, **{"neighbor_neighbor-address": "192.0.2.99"}),  # not planned
        _event(
            {"/qos/interfaces/interface/output/queues/queue/state/dropped-pkts": "12"},
            **{"interface_interface-id": "Ethernet5/1", "queue_name": "3"},
        ),
    ]
    got = _process(config, events)
    sessions = {e["tags"]["peer"]: e for e in got if "gpufabric_bgp_session_up" in e["values"]}
    assert set(sessions) == {first, second}
    assert sessions[first]["values"]["gpufabric_bgp_session_up"] == 1
    assert sessions[second]["values"]["gpufabric_bgp_session_up"] == 0
    assert sessions[second]["tags"]["peer_device"] == leaf.sessions[second]
    (queue,) = [e for e in got if "gpufabric_queue_dropped_packets_total" in e["values"]]
    assert queue["tags"]["queue"] == "3" and queue["tags"]["port"] == "Ethernet5/1"


def test_events_of_a_switch_the_plan_does_not_hold_are_dropped(config) -> None:
    stranger = _event({f"{COUNTERS}/in-octets": "1"}, interface_name="Ethernet5/1")
    stranger["tags"]["subscription-name"] = "not-ours"
    assert _process(config, [stranger]) == []


def _prometheus_name(value_name: str) -> str:
    """gnmic's Prometheus output's documented naming with no prefix and no subscription name: the value's name
    with every run of characters outside [a-zA-Z0-9_] made one underscore, leading underscores dropped."""
    import re

    return re.sub(r"[^a-zA-Z0-9_]+", "_", value_name).lstrip("_")


def test_a_streamed_down_link_fires_the_rules_link_alert_with_the_plan_s_labels(config, tmp_path: Path) -> None:
    got = _process(config, [_event({"/interfaces/interface/state/oper-status": "DOWN"}, interface_name="Ethernet6/1")])
    ((event),) = got
    ((value_name, value),) = event["values"].items()
    labels = event["tags"]
    metric = _prometheus_name(value_name)
    series = [{"series": metric + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}",
               "values": f"{value} {value} {value} {value}"}]  # fmt: skip
    fired = {**{k: v for k, v in labels.items() if v}, "severity": "critical"}  # an empty label is no label
    assert labels["cable"]  # the cabling plan's id, streamed as the exporter labels it
    summary = f"{LEAF} Ethernet6/1 to sto-spine2 (cable {labels['cable']}) is down"
    check = _alert("GpufabricLinkDown", "3m", [(fired, summary)])
    assert _run(tmp_path, series, [check]) == ""
