"""The rollout benchmark's 131k fleet (bench/rollout_scale.py --example multiplane-131k): the intent it
pushes, and the sharded simulator's counts read as one simulator's."""

from __future__ import annotations

import ipaddress
from fractions import Fraction

from bench.rollout_scale import SUBNET, _summed, intent_text
from gpufabric.intent import load_intent_text
from gpufabric.plan import build_plan


def test_the_131k_fleet_is_the_example_scaled_with_every_switch_on_the_namespaces_subnet():
    plan = build_plan(load_intent_text(intent_text(Fraction(1, 256), example="multiplane-131k"), "fleet"))
    assert plan.intent.fabric.name == "fleet-sim-131k"
    assert sum(s.gpus for s in plan.servers) == 64 * 8
    assert {s.group for s in plan.servers} == {"gpu", "oss", "mds"}  # the storage servers stay whole
    roles = {d.role for d in plan.planes["oob"].devices}
    assert roles == {"mgmt", "spine", "superspine"}  # the example's own OOB plane, its core included
    addresses = [ipaddress.IPv4Address(d.mgmt_ip) for d in plan.devices()]
    assert all(a in SUBNET for a in addresses) and len(set(addresses)) == len(addresses)
    assert SUBNET.network_address + 1 not in addresses  # the namespace's loopback holds the gateway


def test_the_shards_counts_add_up_as_one_simulators():
    parts = [
        {"user_s": 1.5, "sys_s": 0.5, "commands": 10, "logins": 2, "kinds": {"nv": 4, "cat": 6}},
        {"user_s": 2.0, "sys_s": 0.25, "commands": 5, "logins": 1, "kinds": {"nv": 5}},
    ]
    assert _summed(parts) == {
        "user_s": 3.5,
        "sys_s": 0.75,
        "commands": 15,
        "logins": 3,
        "kinds": {"nv": 9, "cat": 6},
    }
