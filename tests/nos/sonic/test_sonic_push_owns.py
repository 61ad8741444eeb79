"""A SONiC push changes only what gpufabric owns, against the SONiC switch double (tests/sonic_switch_double.py),
whose `config replace` makes CONFIG_DB equal to the file it is given, as SONiC's generic config updater does.

The running CONFIG_DB here is written by hand in the shape a SONiC image leaves it (the tables and fields the
image, its factory preset and its migrator install, values as CONFIG_DB keeps them); the planned one is the
SONiC example's rendered leaf and spine (the goldens). After a push and its confirm, every table gpufabric does
not render is byte for byte as it was, and so is every field gpufabric does not render inside the rows it does;
what it renders is as rendered; the rows it owns and no longer renders are gone.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from napalm.base.exceptions import CommitError

from gpufabric.nos.sonic.candidate import join
from gpufabric.nos.sonic.driver import SonicDriver
from gpufabric.nos.sonic.hwsku import SKUS
from gpufabric.nos.sonic.owned import NotOwnedError, merge
from tests.conftest import ROOT
from tests.sonic_switch_double import SonicSwitchDouble

GOLDEN = ROOT / "tests" / "golden" / "sonic"
PUSH = "gf-20261127T080000Z-0a1b2c"
Doc = dict[str, Any]

# Tables a SONiC image holds that gpufabric never renders: each must come through a push byte for byte.
IMAGE_TABLES: Doc = {
    "FEATURE": {
        name: {"auto_restart": "enabled", "delayed": "False", "has_global_scope": "True", "state": "enabled"}
        for name in ("bgp", "database", "lldp", "pmon", "snmp", "swss", "syncd", "teamd", "gnmi")
    },
    "FLEX_COUNTER_TABLE": {
        name: {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": interval}
        for name, interval in (
            ("PORT", "1000"),
            ("QUEUE", "10000"),
            ("PG_WATERMARK", "60000"),
            ("QUEUE_WATERMARK", "60000"),
            ("BUFFER_POOL_WATERMARK", "60000"),
            ("WRED_ECN_QUEUE", "10000"),
            ("WRED_ECN_PORT", "1000"),
            ("PFCWD", "10000"),
        )
    },
    "VERSIONS": {"DATABASE": {"VERSION": "version_202411_01"}},
    "CRM": {
        "Config": {
            "polling_interval": "300",
            "ipv4_route_high_threshold": "85",
            "ipv4_route_threshold_type": "percentage",
        }
    },
    "SNMP": {"LOCATION": {"Location": "public"}},
    "SNMP_COMMUNITY": {"public": {"TYPE": "RO"}},
    "TELEMETRY": {
        "gnmi": {"client_auth": "true", "log_level": "2", "port": "50051"},
        "certs": {"ca_crt": "/etc/sonic/ca.crt"},
    },
    "AAA": {"authentication": {"login": "local"}},
    "KDUMP": {"config": {"enabled": "false", "num_dumps": "3", "memory": "0M-2G:256M,2G-4G:320M"}},
    "SYSLOG_CONFIG": {"GLOBAL": {"rate_limit_interval": "300", "rate_limit_burst": "20000"}},
    "BGP_NEIGHBOR": {"10.0.0.1": {"asn": "65200", "name": "ARISTA01T2", "local_addr": "10.0.0.0", "holdtime": "180"}},
    "BGP_DEVICE_GLOBAL": {"STATE": {"tsa_enabled": "false", "idf_isolation_state": "unisolated"}},
    "SYSTEM_DEFAULTS": {"tunnel_qos_remap": {"status": "disabled"}},
    "PASSW_HARDENING": {"POLICIES": {"state": "disabled", "len_min": "8"}},
}

# Fields of rows gpufabric renders that are not gpufabric's: (table, row, field, value).
IMAGE_FIELDS = [
    ("DEVICE_METADATA", "localhost", "mac", "1c:34:da:00:11:22"),
    ("DEVICE_METADATA", "localhost", "default_bgp_status", "up"),
    ("DEVICE_METADATA", "localhost", "synchronous_mode", "enable"),
    ("DEVICE_METADATA", "localhost", "timezone", "UTC"),
    ("PORT", "Ethernet0", "subport", "0"),
    ("PORT", "Ethernet0", "autoneg", "off"),
    ("PORT", "Ethernet8", "subport", "0"),
    ("NTP", "global", "authentication", "disabled"),
    ("NTP", "global", "dhcp", "enabled"),
    ("NTP", "global", "admin_state", "enabled"),
    ("NTP", "global", "server_role", "disabled"),
    ("LLDP", "GLOBAL", "mode", "RX_AND_TX"),
    ("BUFFER_POOL", "ingress_lossless_pool", "xoff", "0"),
    ("CABLE_LENGTH", "AZURE", "Ethernet512", "5m"),  # a port gpufabric does not render (the SN5600's 65th)
]

# Rows of tables gpufabric renders that are not gpufabric's: (table, row, fields).
IMAGE_ROWS = [
    ("PORT", "Ethernet512", {"alias": "etp65", "lanes": "512", "speed": "25000", "index": "65", "subport": "0"}),
    ("DSCP_TO_TC_MAP", "AZURE", {str(d): "1" if d in (24, 25, 26) else "0" for d in range(64)}),
    ("SCHEDULER", "scheduler.0", {"type": "DWRR", "weight": "14"}),
    ("WRED_PROFILE", "AZURE_LOSSLESS", {"ecn": "ecn_all", "green_min_threshold": "250000"}),
    ("BUFFER_PROFILE", "pg_lossless_custom", {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "1"}),
    ("ACL_TABLE", "DATAACL", {"type": "L3", "stage": "ingress", "policy_desc": "DATAACL"}),
    ("ACL_RULE", "DATAACL|RULE_1", {"PRIORITY": "9999", "PACKET_ACTION": "DROP"}),
    ("LOOPBACK_INTERFACE", "Loopback1", {}),
    ("VRF", "Vrf01", {}),
]

# Rows gpufabric owns that the plan does not hold: the preset's addresses and queue ranges, a dropped NTP
# server, a stale binding of a port's queue. Each must be gone after the push.
STALE_ROWS = [
    ("INTERFACE", "Ethernet8|10.0.0.2/31"),
    ("LOOPBACK_INTERFACE", "Loopback0|10.1.0.1/32"),
    ("NTP_SERVER", "192.0.2.123"),
    ("QUEUE", "Ethernet0|3-4"),
    ("BUFFER_PG", "Ethernet0|3-4"),
    ("PORT_QOS_MAP", "Ethernet4"),  # Ethernet4 is no port of the leaf's plan (its cages are whole)
    ("PORT", "Ethernet4"),
    ("SCHEDULER", "SCHEDULER_OLD"),
]


def _planned(name: str) -> Doc:
    doc: Doc = json.loads((GOLDEN / f"{name}.config_db.json").read_text())
    return doc


def _running(planned: Doc) -> Doc:
    """A running CONFIG_DB as an image leaves it: the image's tables, its fields in the rows gpufabric renders,
    its own rows in gpufabric's tables, and stale rows gpufabric owns; gpufabric's own values are the factory's."""
    run: Doc = copy.deepcopy(IMAGE_TABLES)
    meta = run.setdefault("DEVICE_METADATA", {}).setdefault("localhost", {})
    meta.update(hostname="sonic", hwsku=planned["DEVICE_METADATA"]["localhost"]["hwsku"], type="LeafRouter")
    meta.update(bgp_asn="65100", default_pfcwd_status="disable", buffer_model="traditional")
    hw = next(s for s in SKUS.values() if s.hwsku == meta["hwsku"])
    for cage in range(1, hw.cages + 1):  # the factory's ports: every cage whole, up, MTU 9100, no description
        lanes = ",".join(str(n) for n in range(8 * (cage - 1), 8 * cage))
        run.setdefault("PORT", {})[f"Ethernet{8 * (cage - 1)}"] = {
            "alias": f"etp{cage}",
            "lanes": lanes,
            "speed": str(hw.speed * 1000),
            "index": str(cage),
            "mtu": "9100",
            "admin_status": "up",
        }
    for table, row, field, value in IMAGE_FIELDS:
        run.setdefault(table, {}).setdefault(row, {})[field] = value
    for table, row, fields in IMAGE_ROWS:
        run.setdefault(table, {})[row] = dict(fields)
    for table, row in STALE_ROWS:
        if row not in planned.get(table, {}):
            run.setdefault(table, {})[row] = {"scheduler": "scheduler.1"} if table == "QUEUE" else {}
    run["NTP_SERVER"]["192.0.2.123"] = {"association_type": "server", "iburst": "on"}
    return run


def _push(switch: SonicSwitchDouble, planned: Doc) -> SonicDriver:
    dev = SonicDriver("192.0.2.30", "admin", "", optional_args={"transport": switch, "push_id": PUSH})
    dev.open()
    text = join("sw", {"sw.config_db.json": json.dumps(planned, indent=4), "sw.frr.conf": "hostname sw\n"})
    dev.load_replace_candidate(config=text)
    return dev


@pytest.mark.parametrize("name", ["cmp-leaf1a", "cmp-spine1"])
def test_a_push_changes_only_what_gpufabric_renders(tmp_path: Path, name: str) -> None:
    planned = _planned(name)
    before = _running(planned)
    if name == "cmp-spine1":  # a 1x800G factory port the spine's 2x400G breakout replaces
        assert "Ethernet4" in planned["PORT"] and "Ethernet4" not in before["PORT"]
    switch = SonicSwitchDouble(tmp_path, before, "hostname sonic\n")
    dev = _push(switch, planned)
    diff = dev.compare_config()
    for table in IMAGE_TABLES:  # the dry run's patch names none of the image's tables
        assert f'"/{table}"' not in diff
    dev.commit_config(revert_in=300)
    dev.confirm_commit()
    after = switch.running
    assert switch.saved == after

    # Every table gpufabric does not render: byte for byte.
    for table, rows in IMAGE_TABLES.items():
        assert json.dumps(after.get(table), sort_keys=True) == json.dumps(rows, sort_keys=True), table
    # Every field gpufabric does not render, inside rows it does, and the image's own rows in its tables.
    for table, row, field, value in IMAGE_FIELDS:
        assert after[table][row][field] == value, (table, row, field)
    for table, row, fields in IMAGE_ROWS:
        assert after[table][row] == fields, (table, row)
    # What gpufabric renders: as rendered, field for field.
    for table, rows in planned.items():
        for key, fields in rows.items():
            for field, value in fields.items():
                assert after[table][key][field] == value, (table, key, field)
            assert set(after[table]).issuperset(rows), table
    # Rows gpufabric owns and the plan no longer holds: gone.
    for table, row in STALE_ROWS:
        if row not in planned.get(table, {}):
            assert row not in after.get(table, {}), (table, row)
    # Nothing else: the rows of gpufabric's tables are the image's, the plan's, or both merged.
    for table, rows in after.items():
        for key in rows:
            assert key in planned.get(table, {}) or before.get(table, {}).get(key) == rows[key], (table, key)


def test_an_unused_port_loses_the_description_gpufabric_gave_it(tmp_path: Path) -> None:
    """A field gpufabric renders only sometimes (a used port's description) is its own: once the plan stops
    rendering it, the push deletes it; the image's fields of the same row stay."""
    planned = _planned("cmp-leaf1a")
    unused = next(n for n, p in planned["PORT"].items() if "description" not in p)
    before = _running(planned)
    before["PORT"][unused].update(description="fabric: old-spine Ethernet0", subport="0")
    switch = SonicSwitchDouble(tmp_path, before, "hostname sonic\n")
    dev = _push(switch, planned)
    dev.commit_config()
    port = switch.running["PORT"][unused]
    assert "description" not in port and port["subport"] == "0" and port == {**planned["PORT"][unused], "subport": "0"}


def test_the_rollback_returns_every_table_as_it_was(tmp_path: Path) -> None:
    planned = _planned("cmp-leaf1a")
    before = _running(planned)
    switch = SonicSwitchDouble(tmp_path, before, "hostname sonic\n")
    dev = _push(switch, planned)
    dev.commit_config(revert_in=300)
    assert switch.running != before
    dev.rollback()
    assert switch.running == before and switch.checkpoints() == []


class _ChangingSwitch(SonicSwitchDouble):
    """A switch whose CONFIG_DB someone else changes right after the push read it."""

    def run(self, command: str, stdin: str | None = None):  # type: ignore[no-untyped-def]
        done = super().run(command, stdin)
        if stdin is not None and stdin.startswith("sonic-cfggen -d --print-data"):
            db = self.running
            db["SNMP"] = {"LOCATION": {"Location": "rack 12"}}
            self.running_path.write_text(json.dumps(db, sort_keys=True))
        return done


def test_a_config_db_changed_since_it_was_read_is_not_replaced(tmp_path: Path) -> None:
    """The merge was made from the CONFIG_DB the push read: a change made since would be undone by the replace,
    so the commit refuses and applies nothing."""
    planned = _planned("cmp-leaf1a")
    switch = _ChangingSwitch(tmp_path, _running(planned), "hostname sonic\n")
    dev = _push(switch, planned)
    with pytest.raises(CommitError, match="changed since this push read it"):
        dev.commit_config(revert_in=300)
    assert switch.running["SNMP"] == {"LOCATION": {"Location": "rack 12"}}
    assert "replace armed=True" not in switch.journal and not dev.has_pending_commit()


@pytest.mark.parametrize(
    "change, refused",
    [
        (lambda d: d.update(FEATURE={"snmp": {"state": "disabled"}}), "table FEATURE, which a push does not own"),
        (lambda d: d["DEVICE_METADATA"]["localhost"].update(mac="00:00:00:00:00:01"), "localhost mac"),
        (lambda d: d["ACL_TABLE"].update(DATAACL={"type": "L3"}), "ACL_TABLE|DATAACL"),
    ],
    ids=["table", "field", "row"],
)
def test_a_candidate_setting_what_a_push_does_not_own_is_refused_before_the_switch_changes(
    tmp_path: Path, change: Any, refused: str
) -> None:
    """What a push writes it must also be able to take away: a table, row or field outside the rule is refused."""
    planned = _planned("cmp-leaf1a")
    change(planned)
    before = _running(_planned("cmp-leaf1a"))
    switch = SonicSwitchDouble(tmp_path, before, "hostname sonic\n")
    dev = _push(switch, planned)
    with pytest.raises(CommitError, match=re.escape(refused)):
        dev.commit_config(revert_in=300)
    assert switch.running == before and switch.journal == []


@pytest.mark.parametrize(
    "answer", ["not json", "[]", '{"PORT": []}', '{"PORT": {"Ethernet0": "up"}}'], ids=["text", "list", "table", "row"]
)
def test_a_running_config_db_that_is_not_tables_of_rows_is_refused(tmp_path: Path, answer: str) -> None:
    switch = SonicSwitchDouble(tmp_path, {}, "hostname sonic\n")
    switch.running_path.write_text(answer)
    dev = _push(switch, _planned("cmp-leaf1a"))
    with pytest.raises(CommitError, match="running CONFIG_DB"):
        dev.commit_config(revert_in=300)
    assert switch.journal == []


def _leaf_without(*tables: str) -> Doc:
    planned = _planned("cmp-leaf1a")
    for table in tables:
        planned.pop(table, None)
    return planned


def test_without_planned_qos_the_image_s_qos_is_left_as_it_is() -> None:
    """A plan without QoS for the switch owns no QoS table: the image's maps, bindings and buffers stay."""
    qos = ("DSCP_TO_TC_MAP", "TC_TO_QUEUE_MAP", "TC_TO_PRIORITY_GROUP_MAP", "MAP_PFC_PRIORITY_TO_QUEUE", "SCHEDULER")
    qos += ("WRED_PROFILE", "PORT_QOS_MAP", "QUEUE", "BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE")
    qos += ("CABLE_LENGTH", "DEFAULT_LOSSLESS_BUFFER_PARAMETER", "LOSSLESS_TRAFFIC_PATTERN", "PFC_WD", "SWITCH_HASH")
    planned = _leaf_without(*qos)
    running = _running(_planned("cmp-leaf1a"))
    merged = merge(running, planned)
    for table in qos:
        assert merged.get(table) == running.get(table), table
    assert merge(running, _planned("cmp-leaf1a"))["QUEUE"] != running["QUEUE"]  # with QoS planned, they are owned


def test_the_management_address_is_replaced_only_by_a_planned_one() -> None:
    """Without a planned management address a push keeps the one the switch has (it may be how the push reaches
    it); with one, the planned address replaces the old."""
    running = _running(_planned("cmp-leaf1a"))
    running["MGMT_INTERFACE"] = {"eth0|192.0.2.10/24": {"gwaddr": "192.0.2.1"}}
    assert merge(running, _leaf_without("MGMT_INTERFACE"))["MGMT_INTERFACE"] == running["MGMT_INTERFACE"]
    planned = _planned("cmp-leaf1a")
    assert "eth0|192.0.2.10/24" not in merge(running, planned)["MGMT_INTERFACE"]
    assert merge(running, planned)["MGMT_INTERFACE"] == planned["MGMT_INTERFACE"]


def test_a_shared_row_the_plan_stops_rendering_loses_only_gpufabric_s_fields() -> None:
    """NTP|global is the image's row: with no NTP server planned the push takes back its `vrf` and leaves NTP's
    defaults; the server list is gpufabric's and goes."""
    running = _running(_planned("cmp-leaf1a"))
    running["NTP"]["global"]["vrf"] = "mgmt"
    merged = merge(running, _leaf_without("NTP", "NTP_SERVER"))
    assert merged["NTP"]["global"] == {k: v for k, v in running["NTP"]["global"].items() if k != "vrf"}
    assert "NTP_SERVER" not in merged


def _converged_leaves() -> dict[str, Doc]:
    """config_db.json of the converged in-band example's SONiC leaves (carried planes: VRFs, subinterfaces,
    a class per plane), lossless, lossy (no QoS profile) and unnumbered."""
    from gpufabric.config.context import LinkIndex, build
    from gpufabric.config.render import render_context
    from tests.oracles.test_converged_oracles import _plan

    out: dict[str, Doc] = {}
    for lossless, unnumbered in ((True, False), (False, False), (True, True)):
        plan = _plan("sonic", lossless, unnumbered)
        index = LinkIndex(plan)
        device = next(d for d in plan.planes["business"].devices if d.platform == "sonic" and d.role == "leaf")
        files = render_context(build(plan, device, index))
        out[f"{lossless=} {unnumbered=}"] = json.loads(files[f"{device.name}.config_db.json"])
    return out


def test_what_one_push_writes_the_next_push_takes_away() -> None:
    """Every table, row and field a render holds is owned (the merge refuses anything else), so a push of one
    plan after another leaves the switch as a push of the second alone would: nothing of the first stays. The
    plans: the SONiC example's leaf and the converged example's leaves (VRFs, subinterfaces, other classes)."""
    plain = _planned("cmp-leaf1a")
    running = _running(plain)
    plans = {"sonic example": plain, **_converged_leaves()}
    assert any("VLAN_SUB_INTERFACE" in p and "VRF" in p for p in plans.values())
    for first_name, first in plans.items():
        for second_name, second in plans.items():
            if first is second:
                continue
            once = merge(running, second)
            assert merge(merge(running, first), second) == once, (first_name, second_name)
            assert merge(once, second) == once  # a second push of the same plan changes nothing


def test_the_watermark_groups_are_switched_on_and_the_image_s_other_counters_left_alone() -> None:
    """FLEX_COUNTER_TABLE is the image's: a lossless leaf's push turns on the three watermark groups the telemetry
    reads (their poll intervals and every other group as the image has them), and a plan that renders no
    watermark group leaves the table byte for byte, a disabled group included."""
    planned = _planned("cmp-leaf1a")
    assert set(planned["FLEX_COUNTER_TABLE"]) == {"QUEUE_WATERMARK", "PG_WATERMARK", "BUFFER_POOL_WATERMARK"}
    running = _running(planned)
    running["FLEX_COUNTER_TABLE"]["PG_WATERMARK"]["FLEX_COUNTER_STATUS"] = "disable"
    merged = merge(running, planned)["FLEX_COUNTER_TABLE"]
    assert merged["PG_WATERMARK"] == {"FLEX_COUNTER_STATUS": "enable", "POLL_INTERVAL": "60000"}
    for group in ("PORT", "QUEUE", "WRED_ECN_QUEUE", "WRED_ECN_PORT", "PFCWD"):
        assert merged[group] == running["FLEX_COUNTER_TABLE"][group], group
    untouched = merge(running, _leaf_without("FLEX_COUNTER_TABLE"))["FLEX_COUNTER_TABLE"]
    assert untouched == running["FLEX_COUNTER_TABLE"]


def test_a_counter_group_gpufabric_does_not_render_is_refused_in_a_candidate() -> None:
    planned = _planned("cmp-leaf1a")
    planned["FLEX_COUNTER_TABLE"]["PORT"] = {"FLEX_COUNTER_STATUS": "disable"}
    with pytest.raises(NotOwnedError, match=r"FLEX_COUNTER_TABLE\|PORT"):
        merge(_running(_planned("cmp-leaf1a")), planned)
