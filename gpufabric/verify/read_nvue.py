"""Cumulus Linux NVUE startup documents, read back into facts (with YAML line numbers)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpufabric.intent.errors import IntentError
from gpufabric.intent.yaml_lines import load_yaml
from gpufabric.verify.facts import Fact, SwitchFacts
from gpufabric.verify.yaml_block import load_block_yaml

# Top-level keys of an NVUE `set` document (Cumulus Linux 5.x object model).
KNOWN_KEYS = frozenset(
    {"system", "service", "interface", "mlag", "bridge", "qos", "acl", "router", "vrf", "evpn", "nve", "platform"}
)


class _Doc:
    def __init__(
        self,
        data: Any,
        line_of: Callable[[tuple[Any, ...]], int | None],
        index: int,
        file: str,
        lines_in: Callable[[Any], dict[Any, int] | None],
    ) -> None:
        self.data, self.line_of, self.index, self.file, self.lines_in = data, line_of, index, file, lines_in

    def get(self, *path: Any) -> Any:
        node = self.data
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def fact(self, value: Any, *path: Any) -> Fact:
        return Fact(value, self.file, self.line_of((self.index, "set", *path)) or 1)

    def fact_in(self, value: Any, node: Any, key: Any, *path: Any) -> Fact:
        """fact(value, *path) where `node` is what path[:-1] leads to and `key` is path[-1]: the block
        reader knows node's lines without walking the path from the top (a leaf has hundreds of facts)."""
        where = self.lines_in(node)
        line = where.get(key) if where is not None else None
        return Fact(value, self.file, line) if line is not None else self.fact(value, *path)


def _not_kept(node: Any) -> None:
    """PyYAML's path -> line map keeps no lines per mapping: facts then look theirs up by path."""


def _nearest(lines: dict[tuple[Any, ...], int]) -> Callable[[tuple[Any, ...]], int | None]:
    """The line of a path, else of its nearest ancestor that has one (PyYAML's path -> line map)."""

    def line_of(path: tuple[Any, ...]) -> int | None:
        while path and path not in lines:
            path = path[:-1]
        return lines.get(path)

    return line_of


def read_nvue(device: str, path: Path) -> SwitchFacts:
    return nvue_facts(device, path.read_text(), path.name)


def nvue_facts(device: str, text: str, file: str, tree_ok: bool = False) -> SwitchFacts:
    """Facts of NVUE configuration text. A file must be startup documents (`- set:`); `tree_ok` also
    takes the single tree NVUE shows a running configuration as."""
    facts = SwitchFacts(device, "cumulus", [file])
    fast = load_block_yaml(text)
    line_of: Callable[[tuple[Any, ...]], int | None]
    lines_in: Callable[[Any], dict[Any, int] | None] = _not_kept
    if fast is not None:
        data, line_of, lines_in = fast[0], fast[1].line, fast[1].lines_in
    else:
        try:
            data, lines = load_yaml(text, file)
        except IntentError as exc:
            first = exc.problems[0]
            facts.problem("parse", file, exc.line_of(first.path) or 1, "an NVUE YAML document", first.message)
            return facts
        line_of = _nearest(lines)
    if tree_ok and isinstance(data, dict):
        tree_line = line_of
        data, line_of = [{"set": data}], lambda path: tree_line(path[2:])
    docs = data if isinstance(data, list) else []
    index = next((i for i, d in enumerate(docs) if isinstance(d, dict) and "set" in d), None)
    if index is None:
        facts.problem("parse", file, 1, "a list with a `- set:` document", type(data).__name__)
        return facts
    doc = _Doc(docs[index]["set"], line_of, index, file, lines_in)
    for key in doc.data:
        if key not in KNOWN_KEYS:
            facts.problem("nvue-keys", file, doc.fact(key, key).line, "an NVUE top-level key", str(key))
    for section in ("qos", "router"):
        if section in doc.data:
            facts.anchors["bgp" if section == "router" else section] = doc.fact(section, section)
    ports = doc.get("interface") or {}
    for port in ports:
        facts.anchors[f"interface {port}"] = doc.fact_in(port, ports, port, "interface", port)
    _system(facts, doc)
    _interfaces(facts, doc)
    _bgp(facts, doc)
    _qos(facts, doc)
    return facts


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
    for port, spec in (doc.get("interface") or {}).items():
        if not isinstance(spec, dict):
            continue
        link = spec.get("link")
        if isinstance(link, dict) and (mtu := link.get("mtu")) is not None:
            facts.mtu[port] = doc.fact_in(int(mtu), link, "mtu", "interface", port, "link", "mtu")
        for ip in ("ip", "ipv4"):  # `ipv4` from Cumulus Linux 5.15
            addresses = spec[ip].get("address") if isinstance(spec.get(ip), dict) else None
            for address in addresses or {}:
                if spec.get("type") == "swp" or port == "lo":
                    where = ("interface", port, ip, "address", address)
                    facts.address[port] = doc.fact_in(str(address), addresses, address, *where)
        if roce_fact is not None and spec.get("type") == "swp":
            # NVUE applies `qos roce` to every switch port: there is no per-port policy to forget.
            facts.qos_ports[port] = roce_fact
        qos = spec.get("qos")
        if facts.watchdog is None and isinstance(qos, dict) and qos.get("pfc-watchdog") is not None:
            facts.watchdog = doc.fact_in(True, qos, "pfc-watchdog", "interface", port, "qos", "pfc-watchdog")


def _bgp(facts: SwitchFacts, doc: _Doc) -> None:
    if (asn := doc.get("router", "bgp", "autonomous-system")) is not None:
        facts.asn = doc.fact(int(asn), "router", "bgp", "autonomous-system")
    bgp = ("vrf", "default", "router", "bgp")
    for key, spec in (doc.get(*bgp, "neighbor") or {}).items():
        if isinstance(spec, dict) and "remote-as" in spec:
            where = (*bgp, "neighbor", key, "remote-as")
            facts.neighbors[str(key)] = doc.fact_in(spec["remote-as"], spec, "remote-as", *where)
    if (paths := doc.get(*bgp, "address-family", "ipv4-unicast", "multipaths", "ebgp")) is not None:
        facts.max_paths = doc.fact(int(paths), *bgp, "address-family", "ipv4-unicast", "multipaths", "ebgp")
    if _on(doc.get(*bgp, "path-selection", "multipath", "aspath-ignore")):
        facts.multipath_relax = doc.fact(True, *bgp, "path-selection", "multipath", "aspath-ignore")


def _qos(facts: SwitchFacts, doc: _Doc) -> None:
    q = ("qos", "mapping", "default-global")
    if doc.get(*q, "trust") == "l3":
        facts.trust_dscp = doc.fact(True, *q, "trust")
    for dscp, spec in (doc.get(*q, "dscp") or {}).items():
        if isinstance(spec, dict) and "switch-priority" in spec:
            facts.dscp_map[int(dscp)] = doc.fact(int(spec["switch-priority"]), *q, "dscp", dscp, "switch-priority")
    for prio in doc.get("qos", "pfc", "default-global", "switch-priority") or {}:
        facts.pfc[int(prio)] = doc.fact(True, "qos", "pfc", "default-global", "switch-priority", prio)
    cc = ("qos", "congestion-control", "default-global", "traffic-class")
    for tc, spec in (doc.get(*cc) or {}).items():
        if isinstance(spec, dict) and spec.get("ecn") == "enable":
            value = (int(spec.get("min-threshold", 0)), int(spec.get("max-threshold", 0)))
            facts.ecn[int(tc)] = doc.fact(value, *cc, tc, "min-threshold")
    sched = ("qos", "egress-scheduler", "default-global", "traffic-class")
    for tc, spec in (doc.get(*sched) or {}).items():
        if isinstance(spec, dict) and spec.get("mode") == "strict":
            facts.strict[int(tc)] = doc.fact(True, *sched, tc, "mode")
