"""Turn FRR, iproute2 and lldpd JSON into NAPALM's getter models. Pure functions, tested on recorded output.

The JSON is a switch's answer: read by RFC 8259 (no NaN, nesting bounded: answers.switch_json), and each
answer's outer shape checked (a list where a list is expected, objects in it). A finding raises
answers.ShapeError naming the command; the driver names the switch (answers.located), and turns a
KeyError or TypeError from a shape nobody checked for into the same named failure.
"""

from __future__ import annotations

from typing import Any

from gpufabric.drivers.answers import as_dict, as_dicts, as_float, as_int, switch_json

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


LINKS = "ip -j link show"
FRR_INTERFACES = "show interface json"
ADDRESSES = "ip -j address show"
BGP_NEIGHBORS = "show bgp vrf all neighbors json"
BGP_SUMMARY = "show bgp vrf all summary json"
LLDP = "lldpcli show neighbors -f json"
ROUTES = "show ip route json"
LINK_STATS = "ip -s -s -j link show"


def _list(text: str, command: str) -> list[dict[str, Any]]:
    """A JSON list of objects (iproute2's answers); nothing read from an empty answer."""
    return as_dicts(switch_json(text, f"`{command}`"), f"`{command}`") if text.strip() else []


def _object(text: str, command: str) -> dict[str, Any]:
    """A JSON object (FRR's and lldpd's answers); nothing read from an empty answer."""
    return as_dict(switch_json(text, f"`{command}`"), f"`{command}`") if text.strip() else {}


def _objects(value: Any, what: str) -> dict[str, dict[str, Any]]:
    """An object whose values are all objects (FRR's per-VRF, per-peer and per-prefix maps)."""
    for name, item in as_dict(value, what).items():
        as_dict(item, f"{what}[{name!r}]")
    return value  # type: ignore[no-any-return]


def os_version(version: str) -> str:
    """FRR's version from vtysh's `show version` ("FRRouting 8.4.4 (leaf1) on Linux(...)" -> "8.4.4")."""
    line = next((ln.split(" on ")[0] for ln in version.splitlines() if ln.startswith("FRRouting")), "")
    return line.replace("FRRouting ", "").split(" (")[0]


def facts(system: str, version: str, links_json: str) -> dict[str, Any]:
    hostname, fqdn, uptime = ([*system.splitlines(), "", "", "0"])[:3]
    return {
        "hostname": hostname,
        "fqdn": fqdn or hostname,
        "vendor": FRR_VENDOR,
        "model": "Linux",
        "os_version": os_version(version),
        "serial_number": "",
        "uptime": as_float(uptime.split()[0], "the uptime in /proc/uptime") if uptime.split() else -1.0,
        "interface_list": sorted(str(link["ifname"]) for link in _list(links_json, LINKS)),
    }


def _states(link: dict[str, Any]) -> dict[str, bool]:
    """A port's carrier (LOWER_UP) and admin state (UP), from its iproute2 flags."""
    flags = link.get("flags", [])
    return {"is_up": "LOWER_UP" in flags, "is_enabled": "UP" in flags}


def port_states(links_json: str) -> dict[str, dict[str, Any]]:
    """Each port's `is_up`, `is_enabled` and `mtu`, as `interfaces` reads them, from iproute2's answer alone."""
    return {
        link["ifname"]: {**_states(link), "mtu": as_int(link.get("mtu", 0), f"`{LINKS}` {link['ifname']} mtu")}
        for link in _list(links_json, LINKS)
    }


def interfaces(links_json: str, frr_json: str) -> dict[str, dict[str, Any]]:
    frr = _objects(_object(frr_json, FRR_INTERFACES), f"`{FRR_INTERFACES}`")
    result = {}
    for link in _list(links_json, LINKS):
        name = link["ifname"]
        info = frr.get(name, {})
        result[name] = {
            **_states(link),
            "description": info.get("description", ""),
            "last_flapped": -1.0,
            "mtu": as_int(link.get("mtu", 0), f"`{LINKS}` {name} mtu"),
            "speed": as_float(info.get("speed", 0) or 0, f"`{FRR_INTERFACES}` {name} speed"),
            "mac_address": link.get("address", "").upper(),
        }
    return result


def interfaces_ip(addr_json: str) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    result: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    for link in _list(addr_json, ADDRESSES):
        for addr in as_dicts(link.get("addr_info", []), f"`{ADDRESSES}` addr_info"):
            family = {"inet": "ipv4", "inet6": "ipv6"}.get(addr.get("family", ""))
            if family:
                entry = result.setdefault(link["ifname"], {})
                prefix_length = as_int(addr["prefixlen"], f"`{ADDRESSES}` prefixlen")
                entry.setdefault(family, {})[addr["local"]] = {"prefix_length": prefix_length}
    return result


def _peer(n: dict[str, Any]) -> dict[str, Any]:
    families = {}
    for af, info in _objects(n.get("addressFamilyInfo", {}), "addressFamilyInfo").items():
        name = {"ipv4Unicast": "ipv4", "ipv6Unicast": "ipv6"}.get(af, af)
        families[name] = {
            "received_prefixes": as_int(info.get("acceptedPrefixCounter", 0), "acceptedPrefixCounter"),
            "accepted_prefixes": as_int(info.get("acceptedPrefixCounter", 0), "acceptedPrefixCounter"),
            "sent_prefixes": as_int(info.get("sentPrefixCounter", 0), "sentPrefixCounter"),
        }
    up = n.get("bgpState") == "Established"
    return {
        "local_as": as_int(n.get("localAs", 0), "localAs"),
        "remote_as": as_int(n.get("remoteAs", 0), "remoteAs"),
        "remote_id": n.get("remoteRouterId", "0.0.0.0"),
        "is_up": up,
        "is_enabled": not n.get("adminShutDown", False),
        "description": n.get("nbrDesc", ""),
        "uptime": as_int(n.get("bgpTimerUpMsec", 0), "bgpTimerUpMsec") // 1000 if up else -1,
        "address_family": families,
    }


def bgp_neighbors(neighbors_json: str, summary_json: str | None) -> dict[str, Any]:
    """Peers keyed by address, or by interface name for unnumbered sessions (they have no address of their own).
    `summary_json` gives each VRF's router id; None (not read) leaves it empty."""
    summary = {} if summary_json is None else _objects(_object(summary_json, BGP_SUMMARY), f"`{BGP_SUMMARY}`")
    result: dict[str, Any] = {}
    for vrf, peers in _objects(_object(neighbors_json, BGP_NEIGHBORS), f"`{BGP_NEIGHBORS}`").items():
        router_id = as_dict(summary.get(vrf, {}).get("ipv4Unicast", {}), f"`{BGP_SUMMARY}` {vrf} ipv4Unicast").get(
            "routerId", ""
        )
        name = "global" if vrf == "default" else vrf
        result[name] = {
            "router_id": router_id,
            "peers": {k: _peer(v) for k, v in peers.items() if isinstance(v, dict) and "bgpState" in v},
        }
    return result or {"global": {"router_id": "", "peers": {}}}


def lldp_neighbors(lldp_json: str) -> dict[str, list[dict[str, str]]]:
    data = _object(lldp_json, LLDP).get("lldp", {})
    ifaces = data.get("interface", []) if isinstance(data, dict) else []
    if isinstance(ifaces, dict):  # lldpcli prints an object for one interface, a list for several
        ifaces = [{k: v} for k, v in ifaces.items()]
    result: dict[str, list[dict[str, str]]] = {}
    for item in as_dicts(ifaces, f"`{LLDP}` lldp.interface"):
        for local, info in _objects(item, f"`{LLDP}` lldp.interface").items():
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
    for prefix, entries in _object(route_json, ROUTES).items():
        for entry in as_dicts(entries, f"`{ROUTES}` {prefix}"):
            preference = as_int(entry.get("distance", 0), f"`{ROUTES}` {prefix} distance")
            for hop in as_dicts(entry.get("nexthops", []), f"`{ROUTES}` {prefix} nexthops"):
                result.setdefault(prefix, []).append(
                    {
                        "protocol": entry.get("protocol", ""),
                        "current_active": bool(entry.get("selected")) and bool(hop.get("fib")),
                        "last_active": bool(entry.get("selected")),
                        "age": 0,
                        "next_hop": hop.get("ip", ""),
                        "outgoing_interface": hop.get("interfaceName", ""),
                        "selected_next_hop": bool(hop.get("fib")),
                        "preference": preference,
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
    for link in _list(stats_json, LINK_STATS):
        name = str(link["ifname"])
        stats = as_dict(link.get("stats64") or link.get("stats") or {}, f"`{LINK_STATS}` {name} stats")
        rx = as_dict(stats.get("rx", {}), f"`{LINK_STATS}` {name} rx")
        tx = as_dict(stats.get("tx", {}), f"`{LINK_STATS}` {name} tx")

        def count(side: dict[str, Any], field: str, direction: str, name: str = name) -> int:
            value = side.get(field, 0)
            if type(value) is int:  # the usual answer, without composing the words of a finding
                return value
            return as_int(value, f"`{LINK_STATS}` {name} {direction} {field}")

        multicast = count(rx, "multicast", "rx")
        counters[name] = {
            "tx_errors": count(tx, "errors", "tx"),
            "rx_errors": count(rx, "errors", "rx"),
            "tx_discards": count(tx, "dropped", "tx"),
            "rx_discards": count(rx, "dropped", "rx"),
            "tx_octets": count(tx, "bytes", "tx"),
            "rx_octets": count(rx, "bytes", "rx"),
            "tx_unicast_packets": count(tx, "packets", "tx"),
            "rx_unicast_packets": count(rx, "packets", "rx") - multicast,
            "tx_multicast_packets": -1,  # Linux counts multicast on receive only
            "rx_multicast_packets": multicast,
            "tx_broadcast_packets": -1,
            "rx_broadcast_packets": -1,
        }
        flaps[name] = count(tx, "carrier_changes", "tx")
    return counters, flaps
