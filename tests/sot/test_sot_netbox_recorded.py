"""`gpufabric sot pull --kind netbox` through pynetbox, against RECORDED NetBox answers (no NetBox runs here):
tests/recorded/netbox/, written in the shape NetBox 4.2's REST API documents (its OpenAPI schema's
PaginatedTagList, PaginatedRackList, PaginatedDeviceWithConfigContextList and PaginatedCableList; the
README there names each), served by a small loopback server that answers only the requests the pull
makes, with the filters NetBox takes (`tag` by slug, `name`, `limit`)."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_in_process
from http_doubles import Reply, redirect, serve
from sot_fabric import sot_intent, write_intent

from gpufabric.sot.client import NetBox, SotError

RECORDED = ROOT / "tests" / "recorded" / "netbox"
TOKEN = "0123456789abcdef0123456789abcdef01234567"  # a NetBox v1 token: 40 hexadecimal digits
FILES = {"/api/extras/tags/": "tags", "/api/dcim/racks/": "racks", "/api/dcim/devices/": "devices",
         "/api/dcim/cables/": "cables"}  # fmt: skip


def netbox(method: str, target: str) -> Reply:
    """The recorded answer to `target`, or NetBox's 400 for a filter it would refuse."""
    parts = urllib.parse.urlsplit(target)
    query = urllib.parse.parse_qs(parts.query)
    name = FILES.get(parts.path)
    if method != "GET" or name is None:
        return Reply(405 if name else 404, b'{"detail": "not recorded"}')
    if name == "tags":
        wanted = query.get("name") == ["gpufabric-lab"]
    else:
        wanted = query.get("tag") == ["gpufabric-lab"] and "tags" not in query  # NetBox: the slug, as `tag`
    if not wanted or query.get("limit") != ["1000"]:
        return Reply(400, json.dumps({"tag": ["Select a valid choice."]}).encode())
    return Reply(200, (RECORDED / f"{name}.json").read_bytes())


def pull(url: str, intent: Path, *extra: str):
    return run_in_process(
        "gpufabric", "sot", "pull", str(intent), "--kind", "netbox", "--url", url, *extra, GPUFABRIC_SOT_TOKEN=TOKEN
    )


def test_pull_from_netbox_reads_the_installed_servers_places_and_measured_cables(tmp_path: Path) -> None:
    intent = write_intent(tmp_path / "fabric.yml", sot_intent(installed=3))
    with serve(netbox) as server:
        done = pull(server.url, intent, "-o", str(tmp_path / "pulled.yml"))
    assert done.returncode == 0, done.stderr
    pulled = yaml.safe_load((tmp_path / "pulled.yml").read_text())
    gpu = next(g for g in pulled["server_groups"] if g["name"] == "gpu")
    assert gpu["hosts"][3] == {"name": "gpu04", "rack": "r02", "position": 10, "serial": "SN-GPU04"}  # installed since
    assert [h["name"] for h in gpu["hosts"]] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert pulled["site"]["racks"][2] == {"name": "r03", "row": 2, "column": 1, "units": 48}
    assert pulled["site"]["switches"]["oob-mgmt1"] == {"rack": "r03", "position": 44, "serial": "SN-OOB1"}
    # 12.5 m is kept as measured (rounded up); 700 cm is the 7 m the positions give, so it is not.
    assert pulled["site"]["cable_lengths"] == {"cmp-000001": 13}
    assert server.authorizations and all(a == f"Token {TOKEN}" for a in server.authorizations)
    assert TOKEN not in done.stdout + done.stderr


def test_push_to_netbox_is_refused_by_name(tmp_path: Path) -> None:
    intent = write_intent(tmp_path / "fabric.yml", sot_intent(installed=3))
    with serve(netbox) as server:
        done = run_in_process("gpufabric", "sot", "push", str(intent), "--kind", "netbox", "--url", server.url,
                              GPUFABRIC_SOT_TOKEN=TOKEN)  # fmt: skip
    assert done.returncode == 2 and "writes to Nautobot only" in done.stderr and "Traceback" not in done.stderr
    assert server.seen == []  # nothing was asked


def test_netbox_s_client_has_the_same_guards(tmp_path: Path) -> None:
    # A redirect elsewhere: refused, the second server never asked; a page past the bound; a position that is
    # not a whole unit; an id that is neither text nor a whole number.
    with serve(netbox) as other, serve(redirect(other.url)) as first:
        with pytest.raises(SotError, match=f"a redirect to {other.url}; gpufabric follows no redirect"):
            NetBox(first.url, TOKEN, timeout=5).objects("dcim/racks", tag="gpufabric-lab")
        assert other.seen == []
    devices = json.loads((RECORDED / "devices.json").read_text())
    devices["results"][0]["position"] = 40.5
    intent = write_intent(tmp_path / "fabric.yml", sot_intent(installed=3))

    def half_unit(method: str, target: str) -> Reply:
        if target.startswith("/api/dcim/devices/"):
            return Reply(200, json.dumps(devices).encode())
        return netbox(method, target)

    with serve(half_unit) as server:
        done = pull(server.url, intent)
    assert done.returncode == 2 and "cmp-su1-leaf1's position is not a whole number" in done.stderr, done.stderr
    racks = json.loads((RECORDED / "racks.json").read_text())
    racks["results"][0]["id"] = True
    with (
        serve(lambda m, t: Reply(200, json.dumps(racks).encode())) as server,
        pytest.raises(SotError, match="without a text id"),
    ):
        NetBox(server.url, TOKEN, timeout=5).objects("dcim/racks", tag="gpufabric-lab")
