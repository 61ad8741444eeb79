"""A push to a drained SONiC switch keeps it drained, and the push after the undrain finds nothing to change,
against the SONiC test double (tests/sonic_switch_double.py) with stand-ins for TSA, TSB, TSC and
`sonic-db-cli` that keep TSA's state where SONiC keeps it from 202205: CONFIG_DB's `BGP_DEVICE_GLOBAL|STATE
tsa_enabled` (sonic-buildimage dockers/docker-fpm-frr TSA/TSB, bgpcfgd's managers_device_global.py). As
bgpcfgd does, the double takes a missing field for `false`: TSC reads the running CONFIG_DB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufabric.nos.sonic.candidate import join, split
from gpufabric.nos.sonic.driver import SonicDriver
from tests.sonic_switch_double import SonicSwitchDouble

PUSH = "gf-20261123T221500Z-a1b2c3"
PLANNED = {
    "DEVICE_METADATA": {"localhost": {"hostname": "leaf1", "hwsku": "ACS-MSN4700"}},
    "PORT": {"Ethernet0": {"lanes": "0,1,2,3,4,5,6,7", "speed": "400000", "mtu": "9216"}},
}
FRR = "hostname leaf1\nrouter bgp 65001\n neighbor 10.0.0.0 remote-as 65000\nexit\n"

# What TSA/TSB do to CONFIG_DB on a single-ASIC switch (sonic-db-cli CONFIG_DB HSET "BGP_DEVICE_GLOBAL|STATE"
# tsa_enabled true|false), and `sonic-db-cli CONFIG_DB HDEL`, on the double's running CONFIG_DB.
_DB = r"""
import json, os, sys
from pathlib import Path
running = Path(os.environ["SONIC_DOUBLE"]) / "state" / "running.json"
db = json.loads(running.read_text())
def hset(value):
    db.setdefault("BGP_DEVICE_GLOBAL", {}).setdefault("STATE", {})["tsa_enabled"] = value
tool, args = Path(sys.argv[0]).name, sys.argv[1:]
if tool == "TSA":
    hset("true"); print("System Mode: Normal -> Maintenance")
elif tool == "TSB":
    hset("false"); print("System Mode: Maintenance -> Normal")
elif tool == "TSC":
    on = db.get("BGP_DEVICE_GLOBAL", {}).get("STATE", {}).get("tsa_enabled", "false") == "true"
    print("System Mode: Maintenance" if on else "System Mode: Normal")
elif tool == "sonic-db-cli" and args[:2] == ["CONFIG_DB", "HDEL"]:
    table, row = args[2].split("|")
    fields = db.get(table, {}).get(row, {})
    print(1 if fields.pop(args[3], None) is not None else 0)
    if not fields:
        db.get(table, {}).pop(row, None)
    if table in db and not db[table]:
        del db[table]
else:
    sys.exit(f"{tool}: not in this double: {args}")
running.write_text(json.dumps(db, sort_keys=True))
"""


@pytest.fixture
def switch(tmp_path: Path) -> SonicSwitchDouble:
    sw = SonicSwitchDouble(tmp_path, {"DEVICE_METADATA": PLANNED["DEVICE_METADATA"], "PORT": {}}, "hostname leaf1\n")
    import sys

    for name in ("TSA", "TSB", "TSC", "sonic-db-cli"):
        sw._tool(name, f"#!{sys.executable}\n{_DB}")
    return sw


def _push(dev: SonicDriver, text: str) -> str:
    dev.load_replace_candidate(config=text)
    diff = str(dev.compare_config())
    if diff:
        dev.commit_config(revert_in=120)
        dev.confirm_commit()
    dev.discard_config()
    return diff


@pytest.mark.slow  # four pushes through a switch double: seconds; in the whole suite
def test_a_push_keeps_tsa_and_the_push_after_the_undrain_finds_nothing(switch: SonicSwitchDouble) -> None:
    dev = SonicDriver("192.0.2.30", "admin", "", optional_args={"transport": switch, "push_id": PUSH, "sudo": False})
    dev.open()
    planned = join("leaf1", {"leaf1.config_db.json": json.dumps(PLANNED, indent=4), "leaf1.frr.conf": FRR})
    assert _push(dev, planned)
    assert _push(dev, planned) == ""
    dev.drain(PUSH, "a disruptive change")
    assert switch.running["BGP_DEVICE_GLOBAL"] == {"STATE": {"tsa_enabled": "true"}}
    # The same plan while drained: nothing to change; a change goes in and TSA's state stays.
    assert _push(dev, planned) == ""
    changed = planned.replace('"mtu": "9216"', '"mtu": "9100"')
    assert "/PORT" in _push(dev, changed)
    assert switch.running["BGP_DEVICE_GLOBAL"] == {"STATE": {"tsa_enabled": "true"}}
    assert switch.saved["BGP_DEVICE_GLOBAL"] == {"STATE": {"tsa_enabled": "true"}}  # kept across a reload too
    status = dev.maintenance_status()
    assert status["drained"] and status["applied"] is True
    dev.undrain(PUSH)
    assert "BGP_DEVICE_GLOBAL" not in switch.running and "BGP_DEVICE_GLOBAL" not in switch.saved
    assert dev.maintenance_status()["applied"] is False
    assert _push(dev, changed) == ""


def test_the_kept_candidate_changes_only_tsa_s_row() -> None:
    from gpufabric.platforms import platform
    from gpufabric.platforms.spec import DrainSpec

    planned = join("leaf1", {"leaf1.config_db.json": json.dumps(PLANNED, indent=4), "leaf1.frr.conf": FRR})
    kept = platform("sonic").keep_drain(planned, DrainSpec("202411"))
    config_db, frr = split(kept)
    assert frr == FRR
    doc = json.loads(config_db)
    assert doc.pop("BGP_DEVICE_GLOBAL") == {"STATE": {"tsa_enabled": "true"}}
    assert doc == PLANNED


def test_the_kept_frr_conf_gains_tsa_s_sequences_for_each_v4_route_map_bound_out() -> None:
    """bgpcfgd rewrites every route map bound outbound whose name holds V4 or V6; frr-reload to the planned
    frr.conf would delete its sequences, so a drained switch's candidate carries them (before `end`)."""
    from gpufabric.nos.sonic.drain import keep_frr

    frr = (
        "router bgp 65001\n neighbor 10.0.0.0 remote-as 65000\n address-family ipv4 unicast\n"
        "  neighbor 10.0.0.0 route-map GF-FABRIC-OUT-V4 out\n  neighbor 10.0.0.0 route-map EDGE-OUT out\n"
        " exit-address-family\nexit\n!\nroute-map GF-FABRIC-OUT-V4 permit 100\nexit\n!\nend\n"
    )
    kept = keep_frr(frr)
    assert kept.startswith(frr.removesuffix("end\n")) and kept.endswith("deny 40\nexit\n!\nend\n")
    added = kept[len(frr) - len("end\n") : -len("end\n")]
    assert [line for line in added.splitlines() if line.startswith("route-map")] == [
        "route-map GF-FABRIC-OUT-V4 permit 20",
        "route-map GF-FABRIC-OUT-V4 permit 30",
        "route-map GF-FABRIC-OUT-V4 deny 40",
    ]  # EDGE-OUT holds neither V4 nor V6: TSA leaves it alone
    assert " match ip address prefix-list PL_LoopbackV4\n set community 12345:12345\n" in added
    assert keep_frr(FRR) == FRR  # no route map bound out: nothing for TSA to rewrite
