"""Shared reading of indented CLI configurations (EOS, NX-OS, FRR) with ciscoconfparse2."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gpufabric.verify.facts import Fact, SwitchFacts


def parse(lines: list[str], syntax: str) -> Any:
    from ciscoconfparse2 import CiscoConfParse  # ~0.7 s to import: only when verifying

    return CiscoConfParse(lines, syntax=syntax)


def sections(conf: Any, pattern: str) -> Iterator[tuple[Any, re.Match[str]]]:
    rx = re.compile(pattern)
    for obj in conf.find_objects(pattern):
        m = rx.match(obj.text)
        if m:
            yield obj, m


def children(obj: Any, pattern: str, deep: bool = False) -> Iterator[tuple[Any, re.Match[str]]]:
    rx = re.compile(r"^\s+" + pattern + r"\s*$")
    for child in obj.all_children if deep else obj.children:
        m = rx.match(child.text)
        if m:
            yield child, m


def line(obj: Any) -> int:
    return int(obj.linenum) + 1


def read_common(facts: SwitchFacts, conf: Any, file: str, *, mtu: bool = True) -> None:
    """Hostname, interface MTU and addresses, static routes, credential lines: spelled alike on EOS, NX-OS, FRR."""
    for obj, m in sections(conf, r"^hostname (\S+)"):
        facts.hostname = Fact(m.group(1), file, line(obj))
    for obj, m in sections(conf, r"^interface (\S+)"):
        port = m.group(1)
        facts.anchors[f"interface {port}"] = Fact(port, file, line(obj))
        for child, cm in children(obj, r"mtu (\d+)"):
            if mtu:
                facts.mtu[port] = Fact(int(cm.group(1)), file, line(child))
        for child, cm in children(obj, r"ip address (\S+/\d+)"):
            facts.address[port] = Fact(cm.group(1), file, line(child))
    for obj, m in sections(conf, r"^ip route (?:vrf (\S+) )?(\S+/\d+) "):
        facts.routes.append(Fact((m.group(1), m.group(2)), file, line(obj)))
    for obj, _ in sections(conf, r"^(?:username|snmp-server community) "):
        facts.secrets.append(Fact(obj.text, file, line(obj)))
