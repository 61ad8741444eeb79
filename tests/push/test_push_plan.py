"""Push planning without devices: batches follow failure domains with a canary first; post-change
checks hold a change to 'no worse'."""

from __future__ import annotations

import yaml

from gpufabric.config.context import LinkIndex
from gpufabric.fleet.expect import Expectation, Health, expectations, health, regressions
from gpufabric.fleet.select import select
from gpufabric.push.targets import batches, narrow


def test_canary_first_then_one_failure_domain_per_batch(default_plan):
    targets = select(default_plan, "compute", (), None)
    plan_batches = batches(default_plan, targets, None)
    assert plan_batches[0].domain.startswith("canary") and len(plan_batches[0].devices) == 1
    domains = {d.name: d.failure_domain for d in targets}
    for b in plan_batches[1:]:
        assert len({domains[n] for n in b.devices}) == 1  # never two failure domains at once
    pushed = [n for b in plan_batches for n in b.devices]
    assert sorted(pushed) == sorted(d.name for d in targets) and len(pushed) == len(set(pushed))
    roles = [default_plan.device(n).role for n in pushed]
    assert roles.index("spine") > max(i for i, r in enumerate(roles) if r == "leaf")  # leaves before spines


def test_batch_size_one_pushes_one_switch_at_a_time(default_plan):
    targets = select(default_plan, "compute", (), "leaf")
    assert all(len(b.devices) == 1 for b in batches(default_plan, targets, 1))


def test_only_switches_that_change_are_batched_and_the_canary_is_one_of_them(default_plan):
    planned = batches(default_plan, select(default_plan, "compute", (), None), None)
    canary = planned[0].devices[0]
    rest_of_its_domain = planned[1].devices
    spines = [n for b in planned for n in b.devices if default_plan.device(n).role == "spine"]
    out = narrow(planned, {*rest_of_its_domain, *spines})  # the planned canary would not change
    assert canary not in {n for b in out for n in b.devices}
    assert out[0].domain.startswith("canary") and out[0].devices == rest_of_its_domain[:1]
    assert [b.number for b in out] == list(range(1, len(out) + 1))
    assert [n for b in out for n in b.devices] == [*rest_of_its_domain, *spines]  # planned order kept
    domains = {d.name: d.failure_domain for d in default_plan.devices()}
    for b in out[1:]:
        assert len({domains[n] for n in b.devices}) == 1
    assert narrow(planned, {canary}) == [planned[0]]  # the planned canary kept as it was
    assert narrow(planned, set()) == []


def _plane_of(plan) -> dict[str, str]:
    return {d.name: d.plane for d in plan.devices()}


def test_data_planes_go_side_by_side_one_domain_of_each_per_batch(default_plan):
    """Every plane: a batch holds at most one failure domain per plane, each plane keeps its own order
    (leaves before spines), the OOB plane goes last and alone; fewer batches than domains."""
    targets = list(default_plan.devices())
    plan_batches = batches(default_plan, targets, None, width=32)
    plane, domain = _plane_of(default_plan), {d.name: d.failure_domain for d in targets}
    assert plan_batches[0].domain.startswith("canary") and len(plan_batches[0].devices) == 1
    for b in plan_batches[1:]:
        planes = [plane[n] for n in b.devices]
        assert all(len({domain[n] for n in b.devices if plane[n] == p}) == 1 for p in planes)
        assert "oob" not in planes or set(planes) == {"oob"}
    assert {plane[n] for n in plan_batches[-1].devices} == {"oob"}
    pushed = [n for b in plan_batches for n in b.devices]
    assert sorted(pushed) == sorted(d.name for d in targets) and len(pushed) == len(set(pushed))
    for p in {d.plane for d in targets}:
        roles = [default_plan.device(n).role for n in pushed if plane[n] == p]
        assert roles == sorted(roles, key=lambda r: {"leaf": 0, "border": 1, "mgmt": 1}.get(r, 2)), p
    mixed = [b for b in plan_batches if len({plane[n] for n in b.devices}) > 1]
    assert mixed and all(" + " in b.domain and len(b.parts) > 1 for b in mixed)
    one_each = batches(default_plan, targets, None, width=32, one_plane_at_a_time=True)
    assert len(plan_batches) < len(one_each)
    assert all(len({domain[n] for n in b.devices}) == 1 for b in one_each[1:])
    assert sorted(n for b in one_each for n in b.devices) == sorted(pushed)


def test_side_by_side_stays_within_the_batch_size_and_the_staging_width(default_plan):
    targets = list(default_plan.devices())
    assert max(len(b.devices) for b in batches(default_plan, targets, 2, width=32)) <= 2
    largest_domain = max(len(fd.devices) for p in default_plan.planes.values() for fd in p.failure_domains)
    width = 1  # batches side by side never need more staging waves than the largest domain alone
    assert max(len(b.devices) for b in batches(default_plan, targets, None, width=width)) <= max(width, largest_domain)


def test_narrowing_a_batch_side_by_side_keeps_each_domain_named(default_plan):
    planned = batches(default_plan, list(default_plan.devices()), None, width=32)
    mixed = next(b for b in planned if len(b.parts) > 2)
    (first_domain, first_devices), (second_domain, second_devices) = mixed.parts[:2]
    out = narrow(planned, {first_devices[0], *second_devices})  # the planned canary would not change
    assert out[0].domain == f"canary ({first_domain})" and out[0].devices == first_devices[:1]
    assert out[1].domain == second_domain and out[1].devices == second_devices and out[1].parts == ()


def test_expectations_name_planned_sessions_and_ports(default_plan):
    index = LinkIndex(default_plan)
    e = expectations(default_plan, index, ["cmp-su1-leaf1"])["cmp-su1-leaf1"]
    spines = {default_plan.device(n).asn for n in ("cmp-spine1", "cmp-spine2")}
    assert set(e.peers.values()) == spines and len(e.peers) == 2
    assert len(e.ports) == 4  # two spine uplinks, two host ports


def test_a_change_is_held_to_no_worse():
    e = Expectation("leaf", {"swp3": 65000, "swp4": 65000}, ("swp1", "swp3", "swp4"))
    bgp = {
        "global": {"peers": {"swp3": {"is_up": True, "remote_as": 65000}, "swp4": {"is_up": False, "remote_as": 65000}}}
    }
    ifaces = {"swp1": {"is_up": True}, "swp3": {"is_up": True}, "swp4": {"is_up": True}}
    before = health(e, bgp, ifaces)
    assert before == Health(frozenset({"swp3"}), frozenset({"swp1", "swp3", "swp4"}))
    assert regressions(e, before, before) == []
    wrong_asn = {"global": {"peers": {"swp3": {"is_up": True, "remote_as": 65099}}}}
    after = health(e, wrong_asn, {**ifaces, "swp1": {"is_up": False}})
    assert regressions(e, before, after) == ["BGP session swp3 (AS 65000) did not re-establish", "port swp1 went down"]
    first_rollout = Health(frozenset(), frozenset({"swp1", "swp3", "swp4"}))
    assert regressions(e, first_rollout, after) == [
        "port swp1 went down"
    ]  # sessions down before are not held against it


def test_a_running_configuration_read_again_is_compared_once(default_plan, monkeypatch):
    """A push polls a switch while its change settles and reads the same configuration each time: it is parsed
    and compared once, and a configuration that changed is compared again, with its own findings."""
    import gpufabric.fleet.expect as expect_module
    from gpufabric.nos.frr.files import SYSCTL_MARKER, join_candidate
    from tests.render_helpers import render_all

    device = "cmp-su1-leaf1"
    files = render_all(default_plan)
    policy = yaml.safe_load(files[f"{device}.system.yaml"])["sysctl"]["net.ipv4.fib_multipath_hash_policy"]
    clean = join_candidate(files[f"{device}.frr.conf"], files.get(f"{device}.nft"))  # as the driver reads it
    clean += f"{SYSCTL_MARKER}\nnet.ipv4.fib_multipath_hash_policy = {policy}\n"
    planted = clean.replace(f"hash_policy = {policy}\n", f"hash_policy = {(int(policy) + 1) % 4}\n")
    assert planted != clean
    parsed: list[str] = []
    real = expect_module.running_facts
    monkeypatch.setattr(expect_module, "running_facts", lambda os, text: parsed.append(text) or real(os, text))
    e = expectations(default_plan, LinkIndex(default_plan), [device])[device]
    assert e.reads_running
    first = [health(e, {}, {}, clean).config_missed for _ in range(4)]
    assert first == [frozenset()] * 4 and parsed == [clean]
    missed = health(e, {}, {}, planted).config_missed
    assert missed == {"load-balancing net.ipv4.fib_multipath_hash_policy"}
    assert health(e, {}, {}, planted).config_missed == missed and parsed == [clean, planted]
    assert health(e, {}, {}, clean).config_missed == frozenset() and parsed == [clean, planted, clean]
