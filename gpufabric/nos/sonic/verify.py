"""A SONiC switch's rendered files read back into facts: config_db.json (ports, addresses, the RoCE
contract in SONiC's QoS tables) and frr.conf (BGP, which FRR owns in split-unified mode)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gpufabric.nos.frr.verify import bgp_facts
from gpufabric.nos.sonic.configdb import SONIC_HASH
from gpufabric.verify.cli_text import parse
from gpufabric.verify.facts import Fact, SwitchFacts, read_rendered

_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def read_sonic(device: str, path: Path) -> SwitchFacts:
    facts = configdb_facts(device, read_rendered(path), path.name)
    frr = path.with_name(path.name.replace(".config_db.json", ".frr.conf"))
    if frr.exists():  # not is_file: a FIFO there is refused by its reader, not skipped
        _frr(facts, frr)
    return facts


def _lines(text: str) -> dict[tuple[str, ...], int]:
    """The line of every key of a pretty-printed JSON document, by its path of keys (tables, rows and
    fields each start a line in config_db.json): a finding points at the text."""
    found: dict[tuple[str, ...], int] = {}
    path: list[str] = []
    depth = 0
    for n, row in enumerate(text.splitlines(), 1):
        m = _KEY.search(row)
        if m:
            del path[max(depth - 1, 0) :]
            path.append(m.group(1))
            found.setdefault(tuple(path), n)
        bare = _STRING.sub("", row)
        depth += bare.count("{") - bare.count("}")
        depth = max(depth, 0)
    return found


def configdb_facts(device: str, text: str, file: str) -> SwitchFacts:
    facts = SwitchFacts(device, "sonic", [file])
    try:
        db = json.loads(text)
    except json.JSONDecodeError as e:
        facts.problem("parse", file, e.lineno, "a CONFIG_DB JSON document", e.msg)
        return facts
    if not isinstance(db, dict):
        facts.problem("parse", file, 1, "a CONFIG_DB JSON document", type(db).__name__)
        return facts
    where = _lines(text)

    def at(*path: str) -> int:
        return where.get(tuple(path), 1)

    meta = _table(db, "DEVICE_METADATA").get("localhost", {})
    if "hostname" in meta:
        facts.hostname = Fact(meta["hostname"], file, at("DEVICE_METADATA", "localhost", "hostname"))
    for name, port in _table(db, "PORT").items():
        facts.anchors[f"interface {name}"] = Fact(name, file, at("PORT", name))
        if str(port.get("mtu", "")).isdigit():
            facts.mtu[name] = Fact(int(port["mtu"]), file, at("PORT", name, "mtu"))
    for key in _table(db, "INTERFACE"):
        if "|" in key:
            name, prefix = key.split("|", 1)
            facts.address[name] = Fact(prefix, file, at("INTERFACE", key))
    _qos(facts, db, file, at)
    _carried(facts, db, file, at)
    hashing = _table(db, "SWITCH_HASH").get("GLOBAL")
    if isinstance(hashing, dict) and isinstance(hashing.get("ecmp_hash"), list):
        named = {v: k for k, v in SONIC_HASH.items()}
        fields = tuple(named[f] for f in hashing["ecmp_hash"] if isinstance(f, str) and f in named)
        facts.hash_fields = Fact(fields, file, at("SWITCH_HASH", "GLOBAL", "ecmp_hash"))
    return facts


def _carried(facts: SwitchFacts, db: dict[str, Any], file: str, at: Any) -> None:
    """A converged plane's tagged subinterfaces (`VLAN_SUB_INTERFACE`: the VRF, the tag of a long name's suffix or
    of its `vlan` field, the address of its `name|prefix` row)."""
    rows = _table(db, "VLAN_SUB_INTERFACE")
    addresses = {k.split("|", 1)[0]: k.split("|", 1)[1] for k in rows if "|" in k}
    for name, row in rows.items():
        if "|" in name or not isinstance(row, dict) or "vrf_name" not in row:
            continue
        tag = str(row.get("vlan", name.rpartition(".")[2]))
        if tag.isdigit():
            value = (str(row["vrf_name"]), int(tag), addresses.get(name))
            facts.subinterfaces[name] = Fact(value, file, at("VLAN_SUB_INTERFACE", name))


def _queues(key: str) -> list[int]:
    """The queues a QUEUE key names: `Ethernet0|3` or a range, `Ethernet0|0-2`."""
    part = key.split("|", 1)[1]
    low, _, high = part.partition("-")
    if not low.isdigit() or (high and not high.isdigit()):
        return []
    return list(range(int(low), int(high or low) + 1))


def _table(db: dict[str, Any], name: str) -> dict[str, Any]:
    table = db.get(name)
    return table if isinstance(table, dict) else {}


def _qos(facts: SwitchFacts, db: dict[str, Any], file: str, at: Any) -> None:
    """The contract as the switch applies it: the DSCP map the ports bind, PFC and its watchdog on
    the bound ports, ECN of the WRED profile on a queue, strict schedulers."""
    bindings = {k: v for k, v in _table(db, "PORT_QOS_MAP").items() if isinstance(v, dict)}
    maps = _table(db, "DSCP_TO_TC_MAP")
    bound = [(k, v["dscp_to_tc_map"]) for k, v in bindings.items() if "dscp_to_tc_map" in v]
    if bound:
        key, name = bound[0]
        facts.trust_dscp = Fact(True, file, at("PORT_QOS_MAP", key, "dscp_to_tc_map"))
        facts.anchors["qos"] = facts.trust_dscp
        for dscp, tc in maps.get(name, {}).items():
            if str(dscp).isdigit() and str(tc).isdigit():
                facts.dscp_map[int(dscp)] = Fact(int(tc), file, at("DSCP_TO_TC_MAP", name, dscp))
    watchdog = _table(db, "PFC_WD")
    for port, v in bindings.items():
        if port == "global":
            continue
        if "dscp_to_tc_map" in v or "pfc_enable" in v:
            facts.qos_ports[port] = Fact(port, file, at("PORT_QOS_MAP", port))
        for p in str(v.get("pfc_enable", "")).split(","):
            if p.isdigit():
                facts.pfc.setdefault(int(p), Fact(int(p), file, at("PORT_QOS_MAP", port, "pfc_enable")))
        if v.get("pfcwd_sw_enable") and port in watchdog and facts.watchdog is None:
            facts.watchdog = Fact(True, file, at("PFC_WD", port))
    for port, length in (_table(db, "CABLE_LENGTH").get("AZURE") or {}).items():
        metres = str(length).removesuffix("m")
        facts.cable_length[port] = Fact(
            int(metres) if metres.isdigit() else str(length), file, at("CABLE_LENGTH", "AZURE", port)
        )
    schedulers = _table(db, "SCHEDULER")
    wred = _table(db, "WRED_PROFILE")
    for key, v in _table(db, "QUEUE").items():
        if not isinstance(v, dict) or "|" not in key:
            continue
        queue = key.split("|", 1)[1]
        if not queue.isdigit():
            continue
        q = int(queue)
        profile = wred.get(v.get("wred_profile", ""), {})
        if profile.get("ecn", "ecn_none") != "ecn_none" and q not in facts.ecn:
            low, high = profile.get("green_min_threshold", ""), profile.get("green_max_threshold", "")
            if str(low).isdigit() and str(high).isdigit():
                facts.ecn[q] = Fact((int(low), int(high)), file, at("WRED_PROFILE", v["wred_profile"]))
        if schedulers.get(v.get("scheduler", ""), {}).get("type") == "STRICT" and q not in facts.strict:
            facts.strict[q] = Fact(True, file, at("QUEUE", key, "scheduler"))
    for key, v in _table(db, "QUEUE").items():
        scheduler = schedulers.get(v.get("scheduler", ""), {}) if isinstance(v, dict) and "|" in key else {}
        weight = str(scheduler.get("weight", ""))
        if scheduler.get("type") == "DWRR" and weight.isdigit():
            for q in _queues(key):
                facts.shares.setdefault(q, Fact(int(weight), file, at("QUEUE", key, "scheduler")))


def _frr(facts: SwitchFacts, path: Path) -> None:
    """BGP from frr.conf, read by the FRR platform's reader (FRR owns BGP in split-unified mode)."""
    facts.files.append(path.name)
    bgp_facts(facts, parse(read_rendered(path).splitlines(), "ios"), path.name)
