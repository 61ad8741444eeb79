"""Cumulus Linux NVUE startup documents, read back into facts (with YAML line numbers)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.intent.errors import IntentError
from gpufabric.nos.cumulus.dialect import NVUE_HASH
from gpufabric.verify.facts import Fact, SwitchFacts, read_rendered
from gpufabric.verify.yaml_block import Lines, load_block_yaml
from gpufabric.yaml_lines import load_yaml

# Top-level keys of an NVUE `set` document (Cumulus Linux 5.x object model).
KNOWN_KEYS = frozenset(
    {"system", "service", "interface", "mlag", "bridge", "qos", "acl", "router", "vrf", "evpn", "nve", "platform"}
)


LineOf = Callable[[tuple[Any, ...]], int | None]  # the line of a path, else of its nearest ancestor


class _Doc:
    def __init__(self, data: Any, index: int, file: str, lines: Lines, line_of: LineOf) -> None:
        self.data, self.index, self.file, self.line_of, self.line_in = data, index, file, line_of, lines.line_in
        self.by_container = lines.by_container

    def get(self, *path: Any) -> Any:
        node = self.data
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def fact(self, value: Any, *path: Any) -> Fact:
        return Fact(value, self.file, self.line_of((self.index, "set", *path)) or 1)

    def fact_in(self, value: Any, node: Any, key: Any) -> Fact:
        """A fact written as `key` of `node` (a mapping of the document that holds key): its line
        without walking the path from the top, as a leaf has hundreds of facts."""
        return Fact(value, self.file, self.line_in(node, key))


# The last text read and its reading. `verify` hands each file to the reader and then to NVIDIA's
# model (gpufabric.nos.cumulus.judge), which would read the same text again: a third of the time
# of judging a fabric. Only equal text gets the same reading; neither side changes the tree.
_LAST: list[tuple[str, tuple[Any, Lines] | None]] = []


def read_block(text: str) -> tuple[Any, Lines] | None:
    """`load_block_yaml(text)`, read once for the reader and the judge of the same file."""
    if _LAST and _LAST[0][0] == text:
        return _LAST[0][1]
    read = load_block_yaml(text)
    _LAST[:] = [(text, read)]
    return read


def read_nvue(device: str, path: Path) -> SwitchFacts:
    return nvue_facts(device, read_rendered(path), path.name)


def nvue_facts(device: str, text: str, file: str, tree_ok: bool = False) -> SwitchFacts:
    """Facts of NVUE configuration text. A file must be startup documents (`- set:`); `tree_ok` also
    takes the single tree NVUE shows a running configuration as."""
    facts = SwitchFacts(device, "cumulus", [file])
    read = read_block(text)
    if read is None:
        try:
            data, paths = load_yaml(text, file)
        except IntentError as exc:
            first = exc.problems[0]
            facts.problem("parse", file, exc.line_of(first.path) or 1, "an NVUE YAML document", first.message)
            return facts
        read = data, Lines.of_paths(data, paths)
    data, lines = read
    line_of: LineOf = lines.line
    if tree_ok and isinstance(data, dict):
        data, line_of = [{"set": data}], lambda path: lines.line(path[2:])
    docs = data if isinstance(data, list) else []
    index = next((i for i, d in enumerate(docs) if isinstance(d, dict) and "set" in d), None)
    if index is None:
        facts.problem("parse", file, 1, "a list with a `- set:` document", type(data).__name__)
        return facts
    if not isinstance(docs[index]["set"], dict):
        found = type(docs[index]["set"]).__name__
        facts.problem("parse", file, line_of((index, "set")) or 1, "a mapping under `set:`", found)
        return facts
    doc = _Doc(docs[index]["set"], index, file, lines, line_of)
    for key in doc.data:
        if key not in KNOWN_KEYS:
            facts.problem("nvue-keys", file, doc.fact(key, key).line, "an NVUE top-level key", str(key))
    for section in ("qos", "router"):
        if section in doc.data:
            facts.anchors["bgp" if section == "router" else section] = doc.fact(section, section)
    for section, extract in (
        ("system", _system),
        ("interface", _interfaces),
        ("router", _bgp),
        ("qos", _qos),
        ("vrf", _carried),
    ):
        try:
            extract(facts, doc)
        except _WrongValueError as exc:
            where = "/".join(str(p) for p in exc.path)
            facts.problem("parse", file, doc.fact(None, *exc.path).line, f"{where}: {exc.expected}", repr(exc.found))
        except (AttributeError, TypeError) as exc:  # a mapping where NVUE has a value, or the other way round
            line = doc.fact(None, section).line
            facts.problem("parse", file, line, f"`{section}` shaped as NVUE's object model has it", str(exc))
    return facts


class _WrongValueError(GpufabricError):
    """A value NVUE's object model would not hold there (`mtu: abc`): the file does not load."""

    def __init__(self, path: tuple[Any, ...], found: object, expected: str) -> None:
        super().__init__(path, found, expected)
        self.path, self.found, self.expected = path, found, expected


def _int(value: object, *path: Any) -> int:
    """A whole number written as one (`9216`) or as text (`'26'`, as NVUE writes its keys)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise _WrongValueError(path, value, "a whole number")


def _on(value: object) -> bool:
    """`on` (and YAML 1.1's reading of it) until Cumulus Linux 5.14, `enabled` from 5.15."""
    return value in (True, "on", "enabled")


def _system(facts: SwitchFacts, doc: _Doc) -> None:
    if (name := doc.get("system", "hostname")) is not None:
        facts.hostname = doc.fact(name, "system", "hostname")
    for user, spec in (doc.get("system", "aaa", "user") or {}).items():
        for key in ("password", "hashed-password"):
            if isinstance(spec, dict) and key in spec:
                facts.secrets.append(doc.fact(f"{key} {spec[key]}", "system", "aaa", "user", user, key))
    for section in ("system", "service"):  # `system` from Cumulus Linux 5.11, `service` before
        for community in doc.get(section, "snmp-server", "readonly-community") or {}:
            where = (section, "snmp-server", "readonly-community", community)
            facts.secrets.append(doc.fact(f"snmp-server community {community}", *where))


def _interfaces(facts: SwitchFacts, doc: _Doc) -> None:
    roce = _on(doc.get("qos", "roce", "enable")) or _on(doc.get("qos", "roce", "state"))
    roce_fact = doc.fact("roce", "qos", "roce") if roce else None
    ports = doc.get("interface")
    if ports is None:
        return
    if not isinstance(ports, dict):
        raise _WrongValueError(("interface",), ports, "a mapping of interfaces")
    # A large leaf has hundreds of ports, each with a few facts: doc.fact_in inlined (the line of `key` in
    # `node` is by_container[id(node)][key]), and each Fact made as the tuple it is, by C.
    file, by_container, new = doc.file, doc.by_container, tuple.__new__
    port_lines = by_container[id(ports)]
    anchors, mtus, addressed = facts.anchors, facts.mtu, facts.address
    for port, spec in ports.items():
        anchors[f"interface {port}"] = new(Fact, (port, file, port_lines[port]))
        if not isinstance(spec, dict):
            continue
        swp = spec.get("type") == "swp"
        link = spec.get("link")
        if isinstance(link, dict) and (mtu := link.get("mtu")) is not None:
            value = mtu if type(mtu) is int else _int(mtu, "interface", port, "link", "mtu")
            mtus[port] = new(Fact, (value, file, by_container[id(link)]["mtu"]))
        if swp or port == "lo":
            for ip in ("ip", "ipv4"):  # `ipv4` from Cumulus Linux 5.15
                section = spec.get(ip)
                addresses = section.get("address") if isinstance(section, dict) else None
                for address in addresses or {}:
                    addressed[port] = new(Fact, (str(address), file, by_container[id(addresses)][address]))
        if roce_fact is not None and swp:
            # NVUE applies `qos roce` to every switch port: there is no per-port policy to forget.
            facts.qos_ports[port] = roce_fact
        bond = spec.get("bond")
        if roce_fact is not None and isinstance(bond, dict) and isinstance(bond.get("member"), dict):
            for member in bond["member"]:  # bond members (the peerlink's too) are switch ports as well
                facts.qos_ports.setdefault(str(member), roce_fact)
        router = spec.get("router")
        ar = router.get("adaptive-routing") if isinstance(router, dict) else None
        if isinstance(ar, dict) and (_on(ar.get("enable")) or _on(ar.get("state"))):
            facts.adaptive_ports[port] = doc.fact_in(True, router, "adaptive-routing")
        qos = spec.get("qos")
        if facts.watchdog is None and isinstance(qos, dict) and qos.get("pfc-watchdog") is not None:
            facts.watchdog = doc.fact_in(True, qos, "pfc-watchdog")


def _bgp(facts: SwitchFacts, doc: _Doc) -> None:
    where: tuple[Any, ...] = ("router", "bgp", "autonomous-system")
    if (asn := doc.get(*where)) is not None:
        facts.asn = doc.fact(_int(asn, *where), *where)
    hashing = doc.get("system", "forwarding", "ecmp-hash")
    if isinstance(hashing, dict):
        on = tuple(f for f, name in NVUE_HASH.items() if _on(hashing.get(name)))
        facts.hash_fields = doc.fact(on, "system", "forwarding", "ecmp-hash")
    ar = doc.get("router", "adaptive-routing")
    if isinstance(ar, dict):  # `enable: on` until Cumulus Linux 5.14, `state: enabled` from 5.15
        facts.adaptive = doc.fact(_on(ar.get("enable")) or _on(ar.get("state")), "router", "adaptive-routing")
    bgp = ("vrf", "default", "router", "bgp")
    for key, spec in (doc.get(*bgp, "neighbor") or {}).items():
        if isinstance(spec, dict) and "remote-as" in spec:
            facts.neighbors[str(key)] = doc.fact_in(spec["remote-as"], spec, "remote-as")
    if (paths := doc.get(*bgp, "address-family", "ipv4-unicast", "multipaths", "ebgp")) is not None:
        where = (*bgp, "address-family", "ipv4-unicast", "multipaths", "ebgp")
        facts.max_paths = doc.fact(_int(paths, *where), *where)
    if _on(doc.get(*bgp, "path-selection", "multipath", "aspath-ignore")):
        facts.multipath_relax = doc.fact(True, *bgp, "path-selection", "multipath", "aspath-ignore")
    _session_timers(facts, doc, bgp)


# NVUE's BFD defaults (its object model's descriptions; FRR's bfdd underneath): 300 ms both ways, 3 packets.
BFD_DEFAULTS = {"min-tx-interval": 300, "min-rx-interval": 300, "detect-multiplier": 3}


def _bfd_value(timers: Any) -> tuple[Any, int] | None:
    """(interval, multiplier) of a neighbor's or a profile's BFD settings, NVUE's defaults where unset; the
    interval reads `tx/rx` when the two differ, so it never equals a plane's single interval."""
    if not isinstance(timers, dict):
        return None
    got = {k: timers.get(k, v) for k, v in BFD_DEFAULTS.items()}
    tx, rx = got["min-tx-interval"], got["min-rx-interval"]
    return (tx if tx == rx else f"{tx}/{rx}", got["detect-multiplier"])


def _session_timers(facts: SwitchFacts, doc: _Doc, bgp: tuple[Any, ...]) -> None:
    """BFD per neighbor (its own timers until 5.14, a named profile from 5.15) and the BGP timers."""
    facts.bfd.update(_bfd_facts(doc, bgp))
    facts.bgp_timers = _timers_fact(doc, bgp)


def _bfd_facts(doc: _Doc, bgp: tuple[Any, ...]) -> dict[str, Fact]:
    """neighbor -> its BFD (interval, multiplier), under one VRF's `router bgp`."""
    profiles = doc.get("router", "bfd", "profile") or {}
    out: dict[str, Fact] = {}
    for key, spec in (doc.get(*bgp, "neighbor") or {}).items():
        bfd = spec.get("bfd") if isinstance(spec, dict) else None
        if not isinstance(bfd, dict):
            continue
        if "profile" in bfd:
            out[str(key)] = doc.fact_in(_bfd_value(profiles.get(bfd["profile"])), bfd, "profile")
        elif _on(bfd.get("enable")) or _on(bfd.get("state")):
            out[str(key)] = doc.fact_in(_bfd_value(bfd), spec, "bfd")
    return out


def _timers_fact(doc: _Doc, bgp: tuple[Any, ...]) -> Fact | None:
    timers = doc.get(*bgp, "timers")
    if isinstance(timers, dict) and "keepalive" in timers and "hold" in timers:
        where = (*bgp, "timers")
        value = (_int(timers["keepalive"], *where, "keepalive"), _int(timers["hold"], *where, "hold"))
        return doc.fact(value, *where)
    return None


def _qos(facts: SwitchFacts, doc: _Doc) -> None:
    q = ("qos", "mapping", "default-global")
    where: tuple[Any, ...]
    if doc.get(*q, "trust") == "l3":
        facts.trust_dscp = doc.fact(True, *q, "trust")
    for dscp, spec in (doc.get(*q, "dscp") or {}).items():
        if isinstance(spec, dict) and "switch-priority" in spec:
            where = (*q, "dscp", dscp, "switch-priority")
            facts.dscp_map[_int(dscp, *where[:-1])] = doc.fact(_int(spec["switch-priority"], *where), *where)
    where = ("qos", "pfc", "default-global", "cable-length")
    if (length := doc.get(*where)) is not None:
        facts.cable_length["default-global"] = doc.fact(_int(length, *where), *where)
    for prio in doc.get("qos", "pfc", "default-global", "switch-priority") or {}:
        where = ("qos", "pfc", "default-global", "switch-priority", prio)
        facts.pfc[_int(prio, *where)] = doc.fact(True, *where)
    cc = ("qos", "congestion-control", "default-global", "traffic-class")
    for tc, spec in (doc.get(*cc) or {}).items():
        if isinstance(spec, dict) and spec.get("ecn") == "enable":
            low, high = spec.get("min-threshold", 0), spec.get("max-threshold", 0)
            value = (_int(low, *cc, tc, "min-threshold"), _int(high, *cc, tc, "max-threshold"))
            facts.ecn[_int(tc, *cc, tc)] = doc.fact(value, *cc, tc, "min-threshold")
    sched = ("qos", "egress-scheduler", "default-global", "traffic-class")
    for tc, spec in (doc.get(*sched) or {}).items():
        if isinstance(spec, dict) and spec.get("mode") == "strict":
            facts.strict[_int(tc, *sched, tc)] = doc.fact(True, *sched, tc, "mode")
        elif isinstance(spec, dict) and "bw-percent" in spec:
            where = (*sched, tc, "bw-percent")
            facts.shares[_int(tc, *sched, tc)] = doc.fact(_int(spec["bw-percent"], *where), *where)


def _carried(facts: SwitchFacts, doc: _Doc) -> None:
    """Tagged subinterfaces in a VRF (`type: sub`: base interface, VLAN, the VRF under `ip` until 5.14 and on
    the interface from 5.15) and each VRF's BGP sessions but the default's."""
    ports = doc.get("interface")
    for port, spec in (ports if isinstance(ports, dict) else {}).items():  # a wrong shape: `interface`'s finding
        if not isinstance(spec, dict) or spec.get("type") != "sub" or "vlan" not in spec:
            continue
        ip = spec.get("ipv4") if "ipv4" in spec else spec.get("ip")
        ip = ip if isinstance(ip, dict) else {}
        vrf = spec.get("vrf", ip.get("vrf"))
        if vrf is None:
            continue  # a subinterface of the default VRF (an MLAG pair's peerlink.4094)
        addresses = [str(a) for a in ip.get("address") or {}]
        value = (str(vrf), _int(spec["vlan"], "interface", port, "vlan"), addresses[0] if addresses else None)
        facts.subinterfaces[str(port)] = doc.fact(value, "interface", port)
    vrfs = doc.get("vrf")
    for vrf, spec in (vrfs if isinstance(vrfs, dict) else {}).items():
        if vrf == "default" or not isinstance(spec, dict):
            continue
        neighbors = doc.get("vrf", vrf, "router", "bgp", "neighbor")
        for key, n in (neighbors if isinstance(neighbors, dict) else {}).items():
            if isinstance(n, dict) and "remote-as" in n:
                facts.vrf_neighbors[f"{vrf} {key}"] = doc.fact_in(n["remote-as"], n, "remote-as")
        bgp = ("vrf", vrf, "router", "bgp")
        facts.vrf_bfd.update({f"{vrf} {key}": fact for key, fact in _bfd_facts(doc, bgp).items()})
        if (timers := _timers_fact(doc, bgp)) is not None:
            facts.vrf_timers[str(vrf)] = timers
