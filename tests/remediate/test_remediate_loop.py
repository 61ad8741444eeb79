"""The remediation loop on the default example's plan, against a FAKE scheduler, with an injected clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufabric.remediate import Guards, Remediator, parse_payload, target_of
from tests.conftest import INVENTORY, example_plan
from tests.remediate.remediate_fakes import FakeScheduler, alert, payload

MARK_CABLE = "gpufabric remediate: GpufabricLinkDown@cmp-000009,cmp-su1-leaf1:swp1"  # the cabling plan's label


class Clock:
    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def plan():
    return example_plan(INVENTORY / "fabric.yml")


def make(plan, tmp_path: Path, clock: Clock, **guards) -> tuple[Remediator, FakeScheduler]:
    fake = FakeScheduler([s.name for s in plan.servers])
    settings = {"max_share": 0.5, "max_unit_share": 0.5, "hold_down": 600.0, **guards}
    loop = Remediator(
        plan, [fake], Guards(**settings), state_path=tmp_path / "state.json", audit_path=tmp_path / "audit.jsonl",
        clock=clock,
    )  # fmt: skip
    return loop, fake


def send(loop: Remediator, *alerts):
    return loop.handle(parse_payload(json.dumps(payload(*alerts)).encode()))


def trail(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]


def test_a_server_port_of_a_rail_leaf_names_exactly_its_server(plan):
    target = target_of(plan, {"alertname": "GpufabricLinkDown", "device": "cmp-su1-leaf1", "port": "swp2"})
    assert target is not None and target.nodes == ("gpu02",) and target.part == "cmp-su1-leaf1:swp2"
    cabling = {(r["a_device"], r["a_port"], r["b_device"], r["b_port"]): r["cable_id"] for r in _cabling(plan)}
    assert target.cable == cabling[("gpu02", "eth1", "cmp-su1-leaf1", "swp2")]


def _cabling(plan):
    import csv
    import io

    from gpufabric.export import cabling

    return list(csv.DictReader(io.StringIO(cabling.render(plan))))


def test_a_spine_link_names_nobody(plan):
    for device, port in (("cmp-spine1", "swp1"), ("cmp-su1-leaf1", "swp3")):
        target = target_of(plan, {"alertname": "GpufabricLinkDown", "device": device, "port": port})
        assert target is not None and target.nodes == () and "fabric link" in target.why


def test_a_leaf_that_does_not_answer_names_its_rail_servers_and_a_spine_none(plan):
    leaf = target_of(plan, {"alertname": "GpufabricSwitchUnreachable", "device": "cmp-su2-leaf1"})
    spine = target_of(plan, {"alertname": "GpufabricSwitchUnreachable", "device": "cmp-spine2"})
    assert leaf is not None and leaf.nodes == ("gpu03", "gpu04")
    assert spine is not None and spine.nodes == ()


def test_a_gpu_and_a_host_nic_name_their_node(plan):
    gpu = target_of(plan, {"alertname": "GpufabricGpuEccUncorrectable", "node": "gpu03", "gpu": "2"})
    nic = target_of(plan, {"alertname": "GpufabricNicLinkDown", "host": "gpu04", "interface": "eth2"})
    stranger = target_of(plan, {"alertname": "GpufabricGpuXidError", "node": "elsewhere", "gpu": "0"})
    assert gpu is not None and (gpu.part, gpu.nodes) == ("gpu03:gpu2", ("gpu03",))
    assert nic is not None and (nic.part, nic.nodes) == ("gpu04:eth2", ("gpu04",))
    assert stranger is not None and stranger.nodes == ()
    assert target_of(plan, {"alertname": "GpufabricEcnSurge", "device": "cmp-su1-leaf1", "port": "swp1"}) is None


def test_a_cable_alert_drains_exactly_its_server_and_resumes_it_after_the_hold_down(plan, tmp_path):
    clock = Clock()
    loop, fake = make(plan, tmp_path, clock)
    cut = alert("GpufabricLinkDown", device="cmp-su1-leaf1", port="swp1", peer="gpu01")
    send(loop, cut)
    assert fake.drained == ["gpu01"]
    assert fake.calls == [("take_out", "gpu01", MARK_CABLE)]
    send(loop, {**cut, "status": "resolved"})
    clock.now += 599
    assert loop.tick() == [] and fake.drained == ["gpu01"]
    clock.now += 1
    actions = loop.tick()
    assert [(a.action, a.nodes) for a in actions] == [("resume", ("gpu01",))]
    assert fake.drained == [] and fake.calls[-1] == ("put_back", "gpu01", MARK_CABLE)
    records = trail(tmp_path)
    # Each drain and resume is preceded by its intent, written before the scheduler was asked.
    assert [r["action"] for r in records] == ["intent", "drain", "held", "intent", "resume"]
    assert records[0]["nodes"] == ["gpu01"] and records[0]["detail"].startswith(f"about to drain under {MARK_CABLE!r}")
    assert records[1]["alert"]["labels"]["device"] == "cmp-su1-leaf1" and records[1]["part"] == "cmp-su1-leaf1:swp1"


def test_a_spine_link_drains_nothing(plan, tmp_path):
    loop, fake = make(plan, tmp_path, Clock())
    actions = send(loop, alert("GpufabricLinkDown", device="cmp-spine1", port="swp1"))
    assert fake.calls == [] and [a.action for a in actions] == ["ignored"]


def test_a_flapping_signal_keeps_the_node_out(plan, tmp_path):
    clock = Clock()
    loop, fake = make(plan, tmp_path, clock)
    cut = alert("GpufabricLinkFlapping", device="cmp-su1-leaf1", port="swp1")
    for _ in range(5):
        send(loop, cut)
        clock.now += 100
        send(loop, {**cut, "status": "resolved"})
        clock.now += 300  # back before the hold-down ends
    mark = "gpufabric remediate: GpufabricLinkFlapping@cmp-000009,cmp-su1-leaf1:swp1"
    assert fake.calls == [("take_out", "gpu01", mark)]
    clock.now += 300
    loop.tick()
    assert fake.drained == [] and [c[0] for c in fake.calls] == ["take_out", "put_back"]


def test_the_cluster_cap_stops_drains_and_says_so(plan, tmp_path):
    loop, fake = make(plan, tmp_path, Clock(), max_share=0.05)  # 6 servers: at most one out
    send(loop, alert("GpufabricGpuXidError", fingerprint="b1", node="gpu01", gpu="0"))
    actions = send(loop, alert("GpufabricGpuXidError", fingerprint="b2", node="gpu03", gpu="0"))
    assert fake.drained == ["gpu01"]
    assert [a.action for a in actions] == ["capped"] and "cluster cap" in actions[0].detail
    assert trail(tmp_path)[-1]["action"] == "capped" and trail(tmp_path)[-1]["nodes"] == ["gpu03"]


def test_the_unit_cap_drains_up_to_it_then_alerts(plan, tmp_path):
    loop, fake = make(plan, tmp_path, Clock(), max_share=1.0, max_unit_share=0.5)  # unit 1 of compute: 2 servers
    actions = send(loop, alert("GpufabricSwitchUnreachable", device="cmp-su1-leaf1"))
    assert fake.drained == ["gpu01"]
    assert [a.action for a in actions] == ["capped", "drain"]
    assert "unit cap of compute unit 1" in actions[0].detail


def test_a_node_a_person_drained_stays_drained(plan, tmp_path):
    clock = Clock()
    loop, fake = make(plan, tmp_path, clock, max_unit_share=1.0)  # a person's drain counts against the caps
    fake.person_drains("gpu02", "bad DIMM, ticket 42")
    cut = alert("GpufabricSwitchUnreachable", device="cmp-su1-leaf1")
    send(loop, cut)
    assert fake.calls == [("take_out", "gpu01", "gpufabric remediate: GpufabricSwitchUnreachable@cmp-su1-leaf1")]
    send(loop, {**cut, "status": "resolved"})
    clock.now += 601
    loop.tick()
    assert fake.drained == ["gpu02"] and fake.states["gpu02"].reason == "bad DIMM, ticket 42"
    assert all(node != "gpu02" for method, node, _ in fake.calls if method == "put_back")


def test_a_person_s_drain_counts_against_the_unit_cap(plan, tmp_path):
    loop, fake = make(plan, tmp_path, Clock())
    fake.person_drains("gpu02", "bad DIMM")
    actions = send(loop, alert("GpufabricSwitchUnreachable", device="cmp-su1-leaf1"))
    assert fake.calls == [] and sorted(a.action for a in actions) == ["capped", "kept"]


def test_a_node_re_drained_by_a_person_meanwhile_stays_out(plan, tmp_path):
    clock = Clock()
    loop, fake = make(plan, tmp_path, clock)
    cut = alert("GpufabricNicLinkDown", host="gpu04", interface="eth1")
    send(loop, cut)
    fake.person_drains("gpu04", "replacing the NIC")
    send(loop, {**cut, "status": "resolved"})
    clock.now += 601
    actions = loop.tick()
    assert [a.action for a in actions] == ["kept"] and fake.states["gpu04"].reason == "replacing the NIC"


def test_two_alerts_on_one_node_resume_it_when_both_have_cleared(plan, tmp_path):
    clock = Clock()
    loop, fake = make(plan, tmp_path, clock)
    gpu = alert("GpufabricGpuXidError", fingerprint="c1", node="gpu01", gpu="1")
    nic = alert("GpufabricNicLinkDown", fingerprint="c2", host="gpu01", interface="eth1")
    send(loop, gpu, nic)
    assert [c[0] for c in fake.calls] == ["take_out"]
    send(loop, {**gpu, "status": "resolved"})
    clock.now += 700
    loop.tick()
    assert fake.drained == ["gpu01"]
    send(loop, {**nic, "status": "resolved"})
    clock.now += 600
    loop.tick()
    assert fake.drained == []


def test_the_record_survives_a_restart(plan, tmp_path):
    clock = Clock()
    loop, fake = make(plan, tmp_path, clock)
    cut = alert("GpufabricLinkDown", device="cmp-su2-leaf2", port="swp2")
    send(loop, cut)
    send(loop, {**cut, "status": "resolved"})
    again = Remediator(
        plan, [fake], Guards(0.5, 0.5, 600.0), state_path=tmp_path / "state.json", audit_path=tmp_path / "audit.jsonl",
        clock=clock,
    )  # fmt: skip
    clock.now += 600
    actions = again.tick()
    assert [(a.action, a.nodes) for a in actions] == [("resume", ("gpu04",))] and fake.drained == []
    assert (tmp_path / "state.json").stat().st_mode & 0o077 == 0


def test_dry_run_asks_no_scheduler(plan, tmp_path):
    clock = Clock()
    loop, fake = make(plan, tmp_path, clock, dry_run=True)
    cut = alert("GpufabricLinkDown", device="cmp-su1-leaf1", port="swp2")
    actions = send(loop, cut)
    send(loop, {**cut, "status": "resolved"})
    clock.now += 600
    actions += loop.tick()
    assert fake.calls == []
    assert [(a.action, a.nodes, a.dry_run) for a in actions] == [
        ("drain", ("gpu02",), True),
        ("resume", ("gpu02",), True),
    ]


def test_a_record_that_is_not_one_is_refused(plan, tmp_path):
    (tmp_path / "state.json").write_text('{"version": 9}')
    with pytest.raises(Exception, match="9 is not a remediation record's version"):
        make(plan, tmp_path, Clock())


def test_a_resume_the_scheduler_refused_is_tried_again(plan, tmp_path):
    from gpufabric.scheduler import SchedulerError

    clock = Clock()
    loop, fake = make(plan, tmp_path, clock)
    cut = alert("GpufabricLinkDown", device="cmp-su1-leaf1", port="swp1")
    send(loop, cut)
    send(loop, {**cut, "status": "resolved"})
    clock.now += 600
    real = fake.put_back

    def down(node, mark):
        raise SchedulerError("slurm: slurmctld does not answer")

    fake.put_back = down
    assert [a.action for a in loop.tick()] == ["failed"] and fake.drained == ["gpu01"]
    fake.put_back = real
    clock.now += 30
    assert [(a.action, a.nodes) for a in loop.tick()] == [("resume", ("gpu01",))] and fake.drained == []
    assert loop.tick() == [] and json.loads((tmp_path / "state.json").read_text())["out"] == {}


def test_an_infiniband_port_names_the_adapters_host_by_the_plan_and_a_switch_link_nobody():
    ib = example_plan(INVENTORY / "examples" / "lab-infiniband.yml")
    rows = {r["b_device"] + ":" + r["b_port"]: r for r in _cabling(ib) if r["plane"] == ib.infiniband.plane}
    node = target_of(ib, {"alertname": "GpufabricIbSymbolErrors", "node": "su1-leaf1", "port": "2"})
    assert node is not None and node.nodes == ("gpu02",) and node.part == "su1-leaf1:2"
    assert node.cable == rows["su1-leaf1:2"]["cable_id"] and rows["su1-leaf1:2"]["a_device"] == "gpu02"
    up = target_of(ib, {"alertname": "GpufabricIbLinkDowned", "node": "spine01", "port": "7"})
    assert up is not None and up.nodes == () and "leaf-spine" in up.why and up.cable == rows["spine01:7"]["cable_id"]
    stray = target_of(ib, {"alertname": "GpufabricIbReceiveErrors", "node": "su1-leaf1", "port": "99"})
    assert stray is not None and stray.nodes == ()
    # Congestion is not a failing part: not acted on.
    assert target_of(ib, {"alertname": "GpufabricIbCongestion", "node": "su1-leaf1", "port": "2"}) is None


def test_a_second_alert_on_a_node_already_out_is_written_to_the_trail(plan, tmp_path):
    loop, fake = make(plan, tmp_path, Clock())
    send(loop, alert("GpufabricLinkDown", fingerprint="c1", device="cmp-su1-leaf1", port="swp1"))
    actions = send(loop, alert("GpufabricLinkFlapping", fingerprint="c2", device="cmp-su1-leaf1", port="swp1"))
    assert [(a.action, a.nodes) for a in actions] == [("held", ("gpu01",))] and "holds it too" in actions[0].detail
    assert [r["action"] for r in trail(tmp_path)] == ["intent", "drain", "held"] and len(fake.calls) == 1


def test_a_capped_node_becomes_an_alert_for_alertmanager(plan, tmp_path):
    from datetime import UTC, datetime

    from gpufabric.remediate.page import CAPPED_ALERT, capped_alerts

    loop, _ = make(plan, tmp_path, Clock(), max_share=0.05)
    send(loop, alert("GpufabricGpuXidError", fingerprint="b1", node="gpu01", gpu="0"))
    actions = send(loop, alert("GpufabricGpuXidError", fingerprint="b2", node="gpu03", gpu="0"))
    (paged,) = capped_alerts(actions, datetime(2026, 11, 25, tzinfo=UTC))
    assert paged["labels"] == {"alertname": CAPPED_ALERT, "severity": "critical", "node": "gpu03",
                               "part": "gpu03:gpu0", "cause": "GpufabricGpuXidError"}  # fmt: skip
    assert "cluster cap" in paged["annotations"]["summary"] and paged["endsAt"] > paged["startsAt"]
