"""Shared reading of indented CLI configurations (EOS, NX-OS, FRR): a line's block is the lines below it
indented deeper, up to the next line indented as deep or less. Blank lines belong to no block and end
none; the readers match anchored patterns, so comment lines (`!`) never match what they look for."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpufabric.verify.facts import Fact, SwitchFacts


@dataclass(eq=False, slots=True)
class ConfigLine:
    text: str
    linenum: int  # 0-based, in the lines given
    indent: int
    children: list[ConfigLine] = field(default_factory=list)

    @property
    def all_children(self) -> list[ConfigLine]:
        """Every line of the block, at any depth, in file order."""
        found: list[ConfigLine] = []
        for child in self.children:
            found.append(child)
            found.extend(child.all_children)
        return found


class Config:
    """An indented configuration as a tree of lines (what the readers below ask of it)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines: list[ConfigLine] = []
        open_blocks: list[ConfigLine] = []  # the chain of lines the next one may belong to
        for number, text in enumerate(lines):
            body = text.rstrip("\r\n")
            if not body.strip():
                continue
            line = ConfigLine(body, number, len(body) - len(body.lstrip()))
            while open_blocks and open_blocks[-1].indent >= line.indent:
                open_blocks.pop()
            if open_blocks:
                open_blocks[-1].children.append(line)
            open_blocks.append(line)
            self.lines.append(line)

    def find_objects(self, pattern: str) -> list[ConfigLine]:
        rx = re.compile(pattern)
        return [line for line in self.lines if rx.search(line.text)]


def parse(lines: list[str], syntax: str = "ios") -> Config:
    """`lines` as a tree; `syntax` (ios, nxos) is the dialect's name, spelled alike for this reading."""
    del syntax
    return Config(lines)


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
