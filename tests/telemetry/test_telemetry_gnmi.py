"""gnmic's configuration from the plan: a target per streaming switch with its vendor's gNMI port, a
subscription holding every planned port's and BGP session's OpenConfig paths, a Prometheus output.
Its shape is checked against the keys gnmic documents (targets, subscriptions, outputs); no gnmic
or switch has read it here."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import run_in_process

from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.telemetry.gnmi import GnmiError, gnmi_port, gnmi_targets, paths
from gpufabric.telemetry.targets import SwitchTarget, switch_targets

EXAMPLES = Path(__file__).resolve().parents[2] / "inventory" / "examples"


@pytest.mark.parametrize("example", ["multi-vendor.yml", "sonic.yml"])
def test_every_streaming_switch_and_every_planned_port_is_subscribed(tmp_path, example):
    plan = build_plan(load_intent(str(EXAMPLES / example)))
    out = tmp_path / "gnmic.yml"
    done = run_in_process(
        "gpufabric", "telemetry", "gnmi", str(EXAMPLES / example), "--interval", "10s", "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    doc = yaml.safe_load(out.read_text())
    assert set(doc) >= {"targets", "subscriptions", "outputs"}
    assert doc["outputs"]["prometheus"]["type"] == "prometheus"
    planned = {t.device: t for t in switch_targets(plan)}
    streaming = {n for n, t in planned.items() if gnmi_port(t.platform) is not None and t.address is not None}
    assert set(doc["targets"]) == streaming and streaming
    for name in streaming:
        t = planned[name]
        target = doc["targets"][name]
        assert target["address"] == f"{t.address}:{gnmi_port(t.platform)}"
        sub = doc["subscriptions"][target["subscriptions"][0]]
        assert sub["mode"] == "stream" and sub["stream-mode"] == "sample" and sub["sample-interval"] == "10s"
        subscribed = {p.split("[name=")[1].split("]")[0] for p in sub["paths"] if p.startswith("/interfaces/")}
        assert subscribed == set(t.ports), name  # every planned port, nothing else
        sessions = {p.split("neighbor-address=")[1].split("]")[0] for p in sub["paths"] if "neighbor-address" in p}
        assert sessions == set(t.sessions), name
    left = set(planned) - streaming
    assert all(gnmi_port(planned[n].platform) is None or planned[n].address is None for n in left)
    if left:
        assert "stay with `telemetry serve`" in done.stderr


def test_a_port_name_unfit_for_a_path_key_is_refused():
    t = SwitchTarget("sw1", "compute", "leaf", "eos", "192.0.2.1", ports={"Ethernet1]/x[": {}})
    with pytest.raises(GnmiError, match="sw1: port"):
        paths(t)


def test_platforms_without_a_gnmi_server_are_left_to_the_exporter():
    plan = build_plan(load_intent(str(Path(__file__).resolve().parents[2] / "inventory" / "fabric.yml")))
    streaming, left = gnmi_targets(plan)
    assert streaming == [] and set(left) == {d.name for d in plan.devices()}  # the lab: FRR on Linux


def test_the_gnmi_command_refuses_bad_input():
    done = run_in_process("gpufabric", "telemetry", "gnmi", str(EXAMPLES / "sonic.yml"), "--interval", "soon")
    assert done.returncode == 2 and "a duration" in done.stderr and "Traceback" not in done.stderr
