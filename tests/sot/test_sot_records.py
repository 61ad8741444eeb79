"""What a plan is in the source of truth, offline: every reference resolves, every address has its
prefix, LACP planes' VLANs per leaf pair, edge routers left out."""

from __future__ import annotations

from ipaddress import IPv4Interface, IPv4Network

import pytest
from conftest import INVENTORY, example_plan

from gpufabric.sot.records import Desired, Ref, desired


def refs(want: Desired) -> list[Ref]:
    records = [r for kind in (*want.owned.values(), *want.vocabulary.values()) for r in kind]
    return [v for r in records for v in r.fields.values() if isinstance(v, Ref)]


@pytest.mark.parametrize("intent", ["fabric.yml", "examples/multi-vendor.yml", "examples/sonic.yml"])
def test_every_reference_resolves_and_every_address_has_a_prefix(intent: str) -> None:
    plan = example_plan(INVENTORY / intent)
    want = desired(plan)
    keys = {(kind, r.key) for part in (want.owned, want.vocabulary) for kind, rs in part.items() for r in rs}
    keys.add(("manufacturers", "Unspecified"))
    missing = [ref for ref in refs(want) if (ref.kind, ref.key) not in keys]
    assert not missing
    for kind, records in want.owned.items():
        assert len({r.key for r in records}) == len(records), kind  # one record per key
    prefixes = [IPv4Network(r.key) for r in want.owned["prefixes"]]
    for r in want.owned["ip-addresses"]:
        assert any(IPv4Interface(r.key).ip in p for p in prefixes), r.key
    devices = {r.key for r in want.owned["devices"]}
    assert devices == {d.name for d in plan.devices()} | {s.name for s in plan.servers}
    planned = sum(1 for p in plan.planes.values() for link in p.links if link.kind != "edge")
    assert len(want.owned["cables"]) == planned  # every cable but those to the edge routers
    asns = {r.key: r.fields["custom_fields"]["gpufabric_asn"] for r in want.owned["devices"]}
    assert all(asns[d.name] == d.asn for d in plan.devices())


def test_lacp_planes_get_their_vlans_per_leaf_pair() -> None:
    want = desired(example_plan(INVENTORY / "examples" / "multi-vendor.yml"))
    vlans = {r.key: r.fields["vid"] for r in want.owned["vlans"]}
    assert vlans == {
        "storage-unit1-hosts": 100,
        "storage-unit1-mlag-peer": 4094,
        "storage-unit1-mlag-l3-peer": 4093,  # EOS: AVD's MLAG L3 peering VLAN
        "storage-unit2-hosts": 100,
        "storage-unit2-mlag-peer": 4094,
        "storage-unit2-mlag-l3-peer": 4093,
    }
    assert "vlans" not in desired(example_plan(INVENTORY / "fabric.yml")).owned  # routed planes: none
