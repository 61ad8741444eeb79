"""What a push owns of a SONiC switch's CONFIG_DB, and the merge that changes only that.

The push applies with SONiC's generic config updater (`config replace FILE`), which makes CONFIG_DB equal to
FILE: every table, row and field FILE lacks is deleted. The switch's image holds far more than gpufabric
renders (FEATURE, FLEX_COUNTER_TABLE, VERSIONS, CRM, SNMP, DEVICE_METADATA's `mac`, PORT's `subport`, NTP's
defaults...), so the file a push replaces with is the running CONFIG_DB with gpufabric's parts replaced:
`merge(running, planned)`. The updater's patch between the two then names owned parts only.

The rule, table by table (`OWNED`):

- A table not listed is not gpufabric's: it stays as it is, byte for byte.
- In a listed table, gpufabric's *rows* (`rows`) are those it renders or may have rendered before: a row of
  them the plan does not hold is deleted (a port a new breakout removed, a queue range laid out anew, an NTP
  server the intent dropped, the preset's /31 on a port). The other rows stay, except *shared* rows.
- *Shared* rows (`shared`) are the image's rows in which gpufabric sets some fields: `DEVICE_METADATA|
  localhost`, `NTP|global`, the buffer pools and profiles by SONiC's own names... They are never deleted for
  being absent from the plan; only their owned fields change.
- In a row gpufabric renders (its own or shared), gpufabric decides the fields it can render in that table
  (`fields`): each is set as planned, or deleted when the plan no longer renders it (a port's description once
  the port is unused, `pfcwd_sw_enable` once the watchdog is off). Every other field of the row stays
  (`PORT.subport`, `DEVICE_METADATA.mac`, NTP's `authentication`...). A shared row the plan does not render
  loses only its owned fields.
- The QoS and buffer tables are owned only when the plan holds QoS for the switch (a plane without a QoS
  profile leaves the image's QoS as it is); the management addresses (`MGMT_INTERFACE`) only when the plan
  gives the management port an address, so a push never takes away the address it was reached on without
  putting the planned one in its place.

A planned table, row or field outside this rule is refused (`NotOwnedError`): what gpufabric writes, it must
also be able to remove.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpufabric.errors import GpufabricError, printable
from gpufabric.nos.sonic.hwsku import LANES_PER_CAGE, SKUS

Tables = dict[str, dict[str, dict[str, Any]]]


class NotOwnedError(ValueError, GpufabricError):
    """The planned CONFIG_DB holds a table, row or field the ownership rule does not cover."""


class RunningConfigDbError(ValueError, GpufabricError):
    """A CONFIG_DB read (the switch's running one, or the candidate's) is not tables of rows of fields."""


@dataclass(frozen=True)
class Scope:
    """What ownership depends on, read from the planned CONFIG_DB itself: the SKU's ports (every lane a cage can
    break out to), the management port, whether QoS and a management address are planned."""

    ports: frozenset[str]
    mgmt: str | None
    qos: bool
    mgmt_address: bool
    tables: frozenset[str] = frozenset()  # the planned tables: `Owned.planned_only` tables go by them

    def port_of(self, key: str) -> bool:
        """`Ethernet0`, `Ethernet0|10.0.0.1/31`, `Ethernet0|3-4`, `Ethernet0.20|...`: keyed by a SKU port."""
        return key.split("|", 1)[0].split(".", 1)[0] in self.ports


Keys = Callable[[str, Scope], bool]
Fields = Callable[[str, Scope], bool]


def _none(key: str, scope: Scope) -> bool:
    return False


def _all(key: str, scope: Scope) -> bool:
    return True


def _named(*names: str) -> Keys:
    return lambda key, scope: key in names


def _of(*names: str) -> Fields:
    allowed = frozenset(names)
    return lambda name, scope: name in allowed


def _digits(name: str, scope: Scope) -> bool:
    return name.isdigit()  # a map's fields: DSCP 0-63, TC 0-7, PFC priority 0-7


def _ports(key: str, scope: Scope) -> bool:
    return scope.port_of(key)


def _under(*tables: str) -> Keys:
    """ACL_RULE's `TABLE|RULE` keys of gpufabric's own ACL tables."""
    return lambda key, scope: key.split("|", 1)[0] in tables


_VRF = re.compile(r"^Vrf_[A-Z][A-Z0-9_]*$")  # a carried plane's VRF: Vrf_<the intent's upper-case name>


@dataclass(frozen=True)
class Owned:
    rows: Keys = _none
    fields: Fields = _all
    shared: frozenset[str] = frozenset()
    qos: bool = False  # owned only when the plan holds QoS
    planned_only: bool = False  # owned only when the plan renders the table at all


def _shared(*names: str) -> frozenset[str]:
    return frozenset(names)


_QUEUE_FIELDS = _of("scheduler", "wred_profile")
_BINDING = _of("dscp_to_tc_map", "tc_to_queue_map", "tc_to_pg_map", "pfc_to_queue_map", "pfc_enable", "pfcwd_sw_enable")
_WRED = _of(
    "ecn",
    *(f"wred_{c}_enable" for c in ("green", "yellow", "red")),
    *(f"{c}_{f}" for c in ("green", "yellow", "red") for f in ("min_threshold", "max_threshold", "drop_probability")),
)

# What configdb.py renders, table by table (keep the two in step: a planned field outside this is refused).
OWNED: dict[str, Owned] = {
    "DEVICE_METADATA": Owned(
        fields=_of(
            "hostname",
            "hwsku",
            "platform",
            "type",
            "docker_routing_config_mode",
            "buffer_model",
            "bgp_asn",
            "default_pfcwd_status",
        ),
        shared=_shared("localhost"),
    ),
    "PORT": Owned(
        rows=_ports, fields=_of("alias", "index", "lanes", "speed", "mtu", "fec", "admin_status", "description")
    ),
    "BREAKOUT_CFG": Owned(rows=_ports, fields=_of("brkout_mode")),
    "INTERFACE": Owned(rows=_ports, fields=_of("ipv6_use_link_local_only")),
    "LOOPBACK_INTERFACE": Owned(rows=lambda key, scope: key.split("|", 1)[0] == "Loopback0", fields=_none),
    "MGMT_PORT": Owned(rows=_none, fields=_of("admin_status", "alias", "description")),  # shared: the scope's port
    "MGMT_INTERFACE": Owned(
        rows=lambda key, scope: scope.mgmt_address and key.split("|", 1)[0] == scope.mgmt, fields=_of("gwaddr")
    ),
    "MGMT_VRF_CONFIG": Owned(fields=_of("mgmtVrfEnabled"), shared=_shared("vrf_global")),
    "LLDP": Owned(fields=_of("hello_time"), shared=_shared("GLOBAL")),
    "NTP": Owned(fields=_of("vrf"), shared=_shared("global")),
    "NTP_SERVER": Owned(rows=_all, fields=_of("association_type", "iburst")),
    "SYSLOG_SERVER": Owned(rows=_all, fields=_of("vrf")),
    "DNS_NAMESERVER": Owned(rows=_all, fields=_none),
    "ACL_TABLE": Owned(rows=_named("MGMT-IN", "MGMT-GNMI"), fields=_of("type", "stage", "services", "policy_desc")),
    "ACL_RULE": Owned(
        rows=_under("MGMT-IN", "MGMT-GNMI"),
        fields=_of("PRIORITY", "PACKET_ACTION", "SRC_IP", "IP_PROTOCOL", "L4_DST_PORT"),
    ),
    "VRF": Owned(rows=lambda key, scope: bool(_VRF.match(key)), fields=_none),
    "VLAN_SUB_INTERFACE": Owned(rows=_ports, fields=_of("admin_status", "vrf_name", "ipv6_use_link_local_only")),
    # QoS: gpufabric's maps, schedulers and ECN profile go by its own names; the ports' bindings, queues and
    # buffers are gpufabric's on every port of the SKU; pools, profiles and the dynamic model's rows keep
    # SONiC's names and are shared with the image.
    "DSCP_TO_TC_MAP": Owned(rows=_named("ROCE"), fields=_digits, qos=True),
    "TC_TO_QUEUE_MAP": Owned(rows=_named("ROCE"), fields=_digits, qos=True),
    "TC_TO_PRIORITY_GROUP_MAP": Owned(rows=_named("ROCE"), fields=_digits, qos=True),
    "MAP_PFC_PRIORITY_TO_QUEUE": Owned(rows=_named("ROCE"), fields=_digits, qos=True),
    "SCHEDULER": Owned(rows=lambda key, scope: key.startswith("SCHEDULER_"), fields=_of("type", "weight"), qos=True),
    "WRED_PROFILE": Owned(rows=_named("ROCE_ECN"), fields=_WRED, qos=True),
    "PORT_QOS_MAP": Owned(rows=_ports, fields=_BINDING, shared=_shared("global"), qos=True),
    "QUEUE": Owned(rows=_ports, fields=_QUEUE_FIELDS, qos=True),
    "BUFFER_POOL": Owned(
        fields=_of("type", "mode", "size"),
        shared=_shared("ingress_lossless_pool", "egress_lossless_pool", "egress_lossy_pool"),
        qos=True,
    ),
    "BUFFER_PROFILE": Owned(
        fields=_of("pool", "size", "dynamic_th"),
        shared=_shared(
            "ingress_lossless_profile",
            "ingress_lossy_profile",
            "egress_lossless_profile",
            "egress_lossy_profile",
            "q_lossy_profile",
        ),
        qos=True,
    ),
    "BUFFER_PG": Owned(rows=_ports, fields=_of("profile"), qos=True),
    "BUFFER_QUEUE": Owned(rows=_ports, fields=_of("profile"), qos=True),
    "CABLE_LENGTH": Owned(fields=_ports, shared=_shared("AZURE"), qos=True),
    "DEFAULT_LOSSLESS_BUFFER_PARAMETER": Owned(fields=_of("default_dynamic_th"), shared=_shared("AZURE"), qos=True),
    "LOSSLESS_TRAFFIC_PATTERN": Owned(fields=_of("mtu", "small_packet_percentage"), shared=_shared("AZURE"), qos=True),
    "PFC_WD": Owned(
        rows=_ports,
        fields=_of("POLL_INTERVAL", "action", "detection_time", "restoration_time"),
        shared=_shared("GLOBAL"),
        qos=True,
    ),
    "SWITCH_HASH": Owned(fields=_of("ecmp_hash"), shared=_shared("GLOBAL"), qos=True),
    # The buffer watermark groups the telemetry reads (configdb.watermark_counters), rendered on lossless
    # planes only: their rows are the image's too (SONiC's init_cfg lists its flex counter groups), so they
    # are shared rows of which gpufabric sets only the status. The table is owned only where the plan
    # renders it: a switch whose plane reads no watermark keeps the image's counters as they are, and the
    # port, queue and watchdog counter groups are never gpufabric's.
    "FLEX_COUNTER_TABLE": Owned(
        fields=_of("FLEX_COUNTER_STATUS"),
        shared=_shared("QUEUE_WATERMARK", "PG_WATERMARK", "BUFFER_POOL_WATERMARK"),
        planned_only=True,
    ),
}


def scope(planned: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> Scope:
    """The scope of a planned CONFIG_DB: its SKU (DEVICE_METADATA's hwsku) gives the ports gpufabric owns."""
    hwsku = planned.get("DEVICE_METADATA", {}).get("localhost", {}).get("hwsku")
    found = next((s for s in SKUS.values() if s.hwsku == hwsku), None)
    if found is None:
        known = ", ".join(sorted(s.hwsku for s in SKUS.values()))
        raise NotOwnedError(f"the planned CONFIG_DB names hwsku {hwsku!r}; gpufabric knows the ports of {known}")
    ports = frozenset(f"Ethernet{n}" for n in range(found.cages * LANES_PER_CAGE))
    mgmt = sorted(planned.get("MGMT_PORT", {}))
    if len(mgmt) > 1:
        raise NotOwnedError(
            f"the planned CONFIG_DB names {len(mgmt)} management ports ({', '.join(mgmt)}); one at most"
        )
    return Scope(
        ports=ports,
        mgmt=mgmt[0] if mgmt else None,
        qos="DSCP_TO_TC_MAP" in planned,
        mgmt_address=bool(planned.get("MGMT_INTERFACE")),
        tables=frozenset(planned),
    )


def owned_tables(where: Scope) -> dict[str, Owned]:
    """The tables a push owns for this scope (the QoS tables only when QoS is planned, a `planned_only` table
    only when the plan renders it)."""
    return {
        name: own
        for name, own in OWNED.items()
        if (where.qos or not own.qos) and (name in where.tables or not own.planned_only)
    }


def _shared_rows(table: str, own: Owned, where: Scope) -> frozenset[str]:
    if table == "MGMT_PORT" and where.mgmt is not None:
        return frozenset({where.mgmt})
    return own.shared


def merge(running: Tables, planned: Tables) -> Tables:
    """The running CONFIG_DB with the parts gpufabric owns replaced by the plan's (see the module's rule).
    Neither argument is changed; rows and values outside the owned parts are the running ones, unchanged."""
    where = scope(planned)
    tables = owned_tables(where)
    for name in planned:
        if name not in tables:
            raise NotOwnedError(f"the planned CONFIG_DB holds table {printable(name)}, which a push does not own")
    out: Tables = {name: rows for name, rows in running.items() if name not in tables}
    for name, own in tables.items():
        merged = _table(name, own, where, running.get(name, {}), planned.get(name, {}))
        if merged:
            out[name] = merged
    return out


def _table(
    name: str, own: Owned, where: Scope, running: dict[str, dict[str, Any]], planned: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    shared = _shared_rows(name, own, where)
    for key, fields in planned.items():
        if key not in shared and not own.rows(key, where):
            raise NotOwnedError(f"the planned CONFIG_DB holds {printable(f'{name}|{key}')}, a row a push does not own")
        stray = sorted(f for f in fields if not own.fields(f, where))
        if stray:
            raise NotOwnedError(
                f"the planned CONFIG_DB sets {printable(f'{name}|{key}')} {printable(', '.join(stray))}, "
                "fields a push does not own"
            )
    out: dict[str, dict[str, Any]] = {}
    for key in sorted(set(running) | set(planned)):
        row = running.get(key)
        if key in planned:
            out[key] = {**{f: v for f, v in (row or {}).items() if not own.fields(f, where)}, **planned[key]}
        elif row is None:
            continue
        elif key in shared:
            kept = {f: v for f, v in row.items() if not own.fields(f, where)}
            if kept or not row:  # a shared row that held only owned fields goes with them
                out[key] = kept
        elif not own.rows(key, where):
            out[key] = row
    return out


def changed(running: Tables, merged: Tables) -> list[str]:
    """`TABLE|ROW` for every row the merge adds, deletes or changes: what a push will touch."""
    out: list[str] = []
    for name in sorted(set(running) | set(merged)):
        before, after = running.get(name, {}), merged.get(name, {})
        out.extend(f"{name}|{key}" for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key))
    return out


def read_tables(text: str, what: str) -> Tables:
    """A CONFIG_DB as JSON text (`what` names it in a message), checked to be tables of rows of fields."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise RunningConfigDbError(f"{what} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise RunningConfigDbError(f"{what} is not a JSON object of tables")
    for name, rows in doc.items():
        if not isinstance(rows, dict):
            raise RunningConfigDbError(f"{what}: table {printable(str(name))!r} is not an object of rows")
        for key, row in rows.items():
            if not isinstance(row, dict):
                raise RunningConfigDbError(f"{what}: row {printable(f'{name}|{key}')} is not an object of fields")
    return doc
