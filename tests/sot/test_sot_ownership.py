"""What `sot push` may remove and what `sot pull` may move, against tests/nautobot_api_double.py (a TEST DOUBLE
of Nautobot's REST API, in memory on loopback; the real Nautobot runs in test_sot_nautobot.py when it is
installed):

- an object the listing returns without the fabric's tag (a proxy dropped the `tags=` filter) is
  reported and left: never updated, never deleted;
- a device cloned in Nautobot carries the original's `gpufabric_index`: `sot pull` refuses, naming both,
  rather than sort the two and move an installed server to another leaf port;
- a value longer than Nautobot keeps is refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_in_process
from nautobot_api_double import Store, fresh_store, nautobot_double

from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.sot.client import Nautobot, SotError
from gpufabric.sot.nautobot import TEXT_MAX, Sync
from gpufabric.sot.records import Record, desired

TOKEN = "canary-sot-token-4d1f8a2b"
FABRIC = ROOT / "inventory" / "fabric.yml"


def sot(*args: str) -> tuple[int, str, str]:
    done = run_in_process("gpufabric", "sot", *args, GPUFABRIC_SOT_TOKEN=TOKEN)
    assert TOKEN not in done.stdout + done.stderr
    return done.returncode, done.stdout, done.stderr


def pushed() -> Store:
    store = fresh_store()
    with nautobot_double(store) as url:
        code, _, stderr = sot("push", str(FABRIC), "--url", url)
        assert code == 0, stderr
    return store


def test_a_second_push_changes_nothing_on_the_double() -> None:
    store = pushed()
    with nautobot_double(store) as url:
        code, out, stderr = sot("push", str(FABRIC), "--url", url, "--json")
    assert code == 0, stderr
    doc = json.loads(out)
    assert (doc["created"], doc["updated"], doc["deleted"], doc["untagged"]) == (0, 0, 0, [])


def test_objects_without_the_fabric_s_tag_are_reported_and_left_when_the_filter_is_dropped() -> None:
    store = pushed()
    other_tag = store.add("extras/tags", name="storage-team")
    device_type = next(iter(store.objects["dcim/device-types"]))
    theirs = {
        "dcim/devices": store.add("dcim/devices", name="db01", device_type=device_type, tags=[other_tag]),
        "dcim/cables": store.add("dcim/cables", label="db-000001", tags=[]),
        "ipam/ip-addresses": store.add("ipam/ip-addresses", address="198.51.100.7/24", tags=[other_tag]),
        "ipam/prefixes": store.add("ipam/prefixes", prefix="198.51.100.0/24"),  # no tags field at all
    }
    store.drop_tag_filter = True  # a proxy between gpufabric and Nautobot drops `?tags=`
    store.calls.clear()
    with nautobot_double(store) as url:
        code, out, stderr = sot("push", str(FABRIC), "--url", url, "--json")
    assert code == 0, stderr
    for endpoint, ident in theirs.items():
        assert ident in store.objects[endpoint], endpoint  # still there
    assert not [c for c in store.calls if c[0] in ("DELETE", "PATCH", "POST")]  # nothing else changed either
    doc = json.loads(out)
    assert doc["deleted"] == 0 and len(doc["untagged"]) == 4
    assert f"devices db01 (id {theirs['dcim/devices']})" in doc["untagged"]
    assert "cables db-000001" in stderr and "does not carry its tag: left alone" in stderr
    assert "4 objects without the fabric's tag" in stderr


def test_the_fabric_s_own_stale_objects_still_go(tmp_path: Path) -> None:
    # The guard keeps others' objects, not the fabric's own: a tagged device the plan no longer has goes.
    store = pushed()
    tag = store.tag_id("gpufabric-lab")
    assert tag is not None
    stale = store.add("dcim/devices", name="old-leaf9", tags=[tag])
    with nautobot_double(store) as url:
        code, out, stderr = sot("push", str(FABRIC), "--url", url, "--json")
    assert code == 0, stderr
    assert stale not in store.objects["dcim/devices"] and json.loads(out)["deleted"] == 1


def test_pull_reads_only_tagged_objects_when_the_filter_is_dropped() -> None:
    store = pushed()
    server = next(o for o in store.objects["dcim/devices"].values() if o["custom_fields"].get("gpufabric_index"))
    store.add("dcim/devices", name="db07", custom_fields=dict(server["custom_fields"], gpufabric_index=99))
    store.drop_tag_filter = True
    with nautobot_double(store) as url:
        code, out, stderr = sot("pull", str(FABRIC), "--url", url)
    assert code == 0, stderr
    assert "db07" not in out and "dcim/devices db07 (id " in stderr and "none of them was read" in stderr


def test_pull_refuses_a_cloned_device_s_index_naming_both() -> None:
    store = pushed()
    devices = store.objects["dcim/devices"]
    original = next(o for o in devices.values() if (o.get("custom_fields") or {}).get("gpufabric_index") == 2)
    clone = dict(original, name=f"{original['name']}-clone")
    del clone["id"]
    store.add("dcim/devices", **clone)
    with nautobot_double(store) as url:
        code, out, stderr = sot("pull", str(FABRIC), "--url", url)
    assert code == 2, stderr
    group = original["custom_fields"]["gpufabric_group"]
    assert (
        f"devices {original['name']} and {original['name']}-clone both have gpufabric_index 2 in group {group}"
        in stderr
    )
    assert out == ""  # no intent written


def test_values_longer_than_nautobot_keeps_are_refused_before_any_request() -> None:
    plan = build_plan(load_intent(str(FABRIC)))
    want = desired(plan)
    want.owned["devices"][0] = Record("x" * 300, {**want.owned["devices"][0].fields, "name": "x" * 300})
    want.owned["cables"][0].fields["length"] = 40_000
    store = fresh_store()
    with nautobot_double(store) as url, pytest.raises(SotError) as caught:
        Sync(Nautobot(url, TOKEN), want, dry_run=False).run()
    message = str(caught.value)
    assert f"name is 300 characters, Nautobot keeps {TEXT_MAX}" in message
    assert "length 40000 is outside Nautobot's 0-32767" in message and "nothing was written" in message
    assert store.calls == []
