"""The named labs the lab tests bring up on an xdist worker (tests/lab_slot.py): the same intents with their OOB
addresses, and only those, moved into the worker's own space, so `lab up` accepts two of them side by side."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import lab_slot
import pytest
import yaml
from conftest import INVENTORY, ROOT

from gpufabric.fleet.lab import registry
from gpufabric.intent import load_intent_text
from gpufabric.plan import build_plan


def _plan(doc: dict) -> object:
    return build_plan(load_intent_text(yaml.safe_dump(doc, sort_keys=False)))


@pytest.mark.parametrize("intent", [INVENTORY / "fabric.yml", ROOT / "inventory" / "examples" / "sonic.yml"])
def test_only_the_oob_addresses_move_each_to_its_offset(intent: Path) -> None:
    doc = yaml.safe_load(intent.read_text())
    old = ipaddress.ip_network(doc["planes"]["oob"]["subnet"])
    new = ipaddress.ip_network(f"172.29.0.0/{old.prefixlen}")
    moved = lab_slot._walk(doc, old, new)
    assert moved["planes"]["oob"]["subnet"] == str(new)
    before, after = _plan(doc), _plan(moved)
    pairs = list(zip(before.devices(), after.devices(), strict=True))
    with_mgmt = [(a, b) for a, b in pairs if a.mgmt_ip is not None]
    assert with_mgmt, "the intent plans no management address"
    for a, b in pairs:
        assert (a.name, a.loopback) == (b.name, b.loopback)  # nothing outside the OOB subnet moves
        if a.mgmt_ip is not None:
            assert ipaddress.ip_address(b.mgmt_ip) in new
            assert b.mgmt_ip - int(new.network_address) == a.mgmt_ip - int(old.network_address)
    servers = doc.get("management") or {}
    for key in ("ntp_servers", "syslog_servers"):
        for was, now in zip(servers.get(key, []), moved.get("management", {}).get(key, []), strict=True):
            assert (ipaddress.ip_address(was) in old) == (ipaddress.ip_address(now) in new)
    # The two labs' records do not clash: the moved one comes up beside the one as written.
    record = registry.LabRecord("default", "/a", "f", str(old))
    assert registry.clash(registry.LabRecord("w1", "/b", "f", str(new)), [record]) is None
    assert registry.clash(registry.LabRecord("w1", "/b", "f", str(old)), [record]) is not None


def test_a_workers_slot_has_its_own_names_and_space(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.delenv("GPUFABRIC_TEST_LAB", raising=False)
    slot = importlib.reload(lab_slot)
    try:
        assert slot.NAME == "w1" and slot.up_args() == ("--name", "w1") and slot.ns("leaf1") == "w1_leaf1"
        assert ipaddress.ip_network("172.29.0.0/16") == slot.OOB_SPACE
        assert (slot.SLURM_TAG, slot.SLURM_SUBNET) == ("w1", "10.254.44")
    finally:
        monkeypatch.undo()  # the worker's own environment back, then the module as it was imported
        importlib.reload(lab_slot)
