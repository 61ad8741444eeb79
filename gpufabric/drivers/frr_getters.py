"""Turn FRR, iproute2 and lldpd JSON into NAPALM's getter models. Pure functions, tested on recorded output."""

from __future__ import annotations

import json
from typing import Any

FRR_VENDOR = "FRRouting"


def strip_header(running: str) -> str:
    """`show running-config` without vtysh's 'Building configuration...' preamble."""
    lines = running.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Current configuration:"):
            return "\n".join(lines[i + 1 :]).lstrip("!\n") + "\n"
    return running


def reload_diff(text: str) -> str:
    """`frr-reload.py --test` output as '- line' / '+ line'; empty when nothing would change.

    frr-reload prints each changed line after its whole context (`router bgp 65001` before every
    neighbor it adds): a context line the diff has just shown, at the same depth, is not repeated,
    so the diff reads as the configuration does, each block once."""
    section, out = "", []
    context: list[str] = []  # the lines shown above, by depth (leading spaces): the block being shown
    for raw in text.splitlines():
        line = raw.rstrip()
        if line in ("Lines To Delete", "Lines To Add"):
            section, context = ("-" if line == "Lines To Delete" else "+"), []
        elif section and line and not line.startswith("==="):
            if line.startswith("frr version"):  # frr-reload cannot change it and says so; not a difference
                continue
            depth = len(line) - len(line.lstrip(" "))
            if depth < len(context) and context[depth] == line:
                continue
            context = [*context[:depth], *[""] * (depth - len(context)), line]
            out.append(f"{section} {line}")
    return "\n".join(out)


def facts(system: str, version: str, links_json: str) -> dict[str, Any]:
    hostname, fqdn, uptime = ([*system.splitlines(), "", "", "0"])[:3]
    os_version = next((ln.split(" on ")[0] for ln in version.splitlines() if ln.startswith("FRRouting")), "")
    return {
        "hostname": hostname,
        "fqdn": fqdn or hostname,
        "vendor": FRR_VENDOR,
        "model": "Linux",
        "os_version": os_version.replace("FRRouting ", "").split(" (")[0],
        "serial_number": "",
        "uptime": float(uptime.split()[0]) if uptime.split() else -1.0,
        "interface_list": sorted(link["ifname"] for link in json.loads(links_json or "[]")),
    }


def interfaces(links_json: str, frr_json: str) -> dict[str, dict[str, Any]]:
    frr = json.loads(frr_json or "{}")
    result = {}
    for link in json.loads(links_json or "[]"):
        name = link["ifname"]
        flags = link.get("flags", [])
        info = frr.get(name, {})
        result[name] = {
            "is_up": "LOWER_UP" in flags,
            "is_enabled": "UP" in flags,
            "description": info.get("description", ""),
            "last_flapped": -1.0,
            "mtu": int(link.get("mtu", 0)),
            "speed": float(info.get("speed", 0) or 0),
            "mac_address": link.get("address", "").upper(),
        }
    return result


def interfaces_ip(addr_json: str) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    result: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    for link in json.loads(addr_json or "[]"):
        for addr in link.get("addr_info", []):
            family = {"inet": "ipv4", "inet6": "ipv6"}.get(addr.get("family", ""))
            if family:
                entry = result.setdefault(link["ifname"], {})
                entry.setdefault(family, {})[addr["local"]] = {"prefix_length": int(addr["prefixlen"])}
    return result


def _peer(n: dict[str, Any]) -> dict[str, Any]:
    families = {}
    for af, info in n.get("addressFamilyInfo", {}).items():
        name = {"ipv4Unicast": "ipv4", "ipv6Unicast": "ipv6"}.get(af, af)
        families[name] = {
            "received_prefixes": int(info.get("acceptedPrefixCounter", 0)),
            "accepted_prefixes": int(info.get("acceptedPrefixCounter", 0)),
            "sent_prefixes": int(info.get("sentPrefixCounter", 0)),
        }
    return {
        "local_as": int(n.get("localAs", 0)),
        "remote_as": int(n.get("remoteAs", 0)),
        "remote_id": n.get("remoteRouterId", "0.0.0.0"),
        "is_up": n.get("bgpState") == "Established",
        "is_enabled": not n.get("adminShutDown", False),
        "description": n.get("nbrDesc", ""),
        "uptime": int(n.get("bgpTimerUpMsec", 0)) // 1000 if n.get("bgpState") == "Established" else -1,
        "address_family": families,
    }


def bgp_neighbors(neighbors_json: str, summary_json: str) -> dict[str, Any]:
    """Peers keyed by address, or by interface name for unnumbered sessions (they have no address of their own)."""
    summary = json.loads(summary_json or "{}")
    result: dict[str, Any] = {}
    for vrf, peers in json.loads(neighbors_json or "{}").items():
        router_id = summary.get(vrf, {}).get("ipv4Unicast", {}).get("routerId", "")
        name = "global" if vrf == "default" else vrf
        result[name] = {
            "router_id": router_id,
            "peers": {k: _peer(v) for k, v in peers.items() if isinstance(v, dict) and "bgpState" in v},
        }
    return result or {"global": {"router_id": "", "peers": {}}}


def lldp_neighbors(lldp_json: str) -> dict[str, list[dict[str, str]]]:
    data = json.loads(lldp_json or "{}").get("lldp", {})
    ifaces = data.get("interface", []) if isinstance(data, dict) else []
    if isinstance(ifaces, dict):  # lldpcli prints an object for one interface, a list for several
        ifaces = [{k: v} for k, v in ifaces.items()]
    result: dict[str, list[dict[str, str]]] = {}
    for item in ifaces:
        for local, info in item.items():
            chassis = info.get("chassis", {})
            hostname = next(iter(chassis), "") if isinstance(chassis, dict) else ""
            if "name" in chassis:  # lldpd names the chassis inside when it has no name key
                hostname = (
                    chassis["name"].get("value", hostname) if isinstance(chassis["name"], dict) else chassis["name"]
                )
            port = info.get("port", {}).get("id", {}).get("value", "")
            result.setdefault(local, []).append({"hostname": hostname, "port": port})
    return result


def routes(route_json: str) -> dict[str, list[dict[str, Any]]]:
    result: dict[str, list[dict[str, Any]]] = {}
    for prefix, entries in json.loads(route_json or "{}").items():
        for entry in entries:
            for hop in entry.get("nexthops", []):
                result.setdefault(prefix, []).append(
                    {
                        "protocol": entry.get("protocol", ""),
                        "current_active": bool(entry.get("selected")) and bool(hop.get("fib")),
                        "last_active": bool(entry.get("selected")),
                        "age": 0,
                        "next_hop": hop.get("ip", ""),
                        "outgoing_interface": hop.get("interfaceName", ""),
                        "selected_next_hop": bool(hop.get("fib")),
                        "preference": int(entry.get("distance", 0)),
                        "inactive_reason": "",
                        "routing_table": "default",
                        "protocol_attributes": {},
                    }
                )
    return result


def interfaces_counters(stats_json: str) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """NAPALM's interface counters from `ip -s -s -j link show`, and each port's carrier changes
    (how often its link went down or up: Linux counts them per interface)."""
    counters: dict[str, dict[str, int]] = {}
    flaps: dict[str, int] = {}
    for link in json.loads(stats_json or "[]"):
        stats = link.get("stats64") or link.get("stats") or {}
        rx, tx = stats.get("rx", {}), stats.get("tx", {})
        multicast = int(rx.get("multicast", 0))
        counters[link["ifname"]] = {
            "tx_errors": int(tx.get("errors", 0)),
            "rx_errors": int(rx.get("errors", 0)),
            "tx_discards": int(tx.get("dropped", 0)),
            "rx_discards": int(rx.get("dropped", 0)),
            "tx_octets": int(tx.get("bytes", 0)),
            "rx_octets": int(rx.get("bytes", 0)),
            "tx_unicast_packets": int(tx.get("packets", 0)),
            "rx_unicast_packets": int(rx.get("packets", 0)) - multicast,
            "tx_multicast_packets": -1,  # Linux counts multicast on receive only
            "rx_multicast_packets": multicast,
            "tx_broadcast_packets": -1,
            "rx_broadcast_packets": -1,
        }
        flaps[link["ifname"]] = int(tx.get("carrier_changes", 0))
    return counters, flaps
