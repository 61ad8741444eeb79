"""What changes between two plans: devices, cables, numbering, and each switch's configuration.

Cables are known by their lower end (plane, device, port): present in both plans with another far
end, a cable has moved. A device that keeps its name but not its loopback, ASN or management
address is renumbered. Either one touches a switch that carries traffic, so both are disruptive;
additions are not.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from gpufabric.plan.model import Device, Link, Plan, ip

LinkKey = tuple[str, str, str]  # plane, lower device, its port


@dataclass(frozen=True, slots=True)
class Renumbered:
    device: str
    field: str
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class Moved:
    key: LinkKey
    old: tuple[str, str]  # far device, far port
    new: tuple[str, str]


@dataclass(slots=True)
class ConfigChange:
    device: str
    added: int
    removed: int  # lines taken away or changed, not counting lines that only grew (see `extended`)
    diff: str  # unified diff of the rendered text (secrets as references, never values)
    extended: int = 0  # list lines that kept every item and gained some (a bridge's ports)


@dataclass(slots=True)
class PlanDiff:
    devices_added: list[str] = field(default_factory=list)
    devices_removed: list[str] = field(default_factory=list)
    servers_added: list[str] = field(default_factory=list)
    servers_removed: list[str] = field(default_factory=list)
    renumbered: list[Renumbered] = field(default_factory=list)
    links_added: list[Link] = field(default_factory=list)
    links_removed: list[Link] = field(default_factory=list)
    links_moved: list[Moved] = field(default_factory=list)
    configs: list[ConfigChange] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)  # failure domains the change touches

    @property
    def disruptive(self) -> bool:
        """Something that carries traffic today would change: not only additions."""
        existing = set(self.devices_added)
        edits = [c for c in self.configs if c.device not in existing and c.removed]
        return bool(self.devices_removed or self.servers_removed or self.renumbered or self.links_removed
                    or self.links_moved or edits)  # fmt: skip

    @property
    def empty(self) -> bool:
        return not (self.devices_added or self.servers_added or self.links_added or self.configs or self.disruptive)

    def changed_switches(self) -> list[str]:
        """Switches whose configuration the change touches (new ones included), for `push --changed-from`."""
        return sorted({c.device for c in self.configs} - set(self.devices_removed))


def link_key(link: Link) -> LinkKey:
    return (link.plane, link.a, link.a_port)


def _numbers(d: Device) -> dict[str, str]:
    return {"loopback": str(ip(d.loopback)), "asn": str(d.asn), "mgmt_ip": str(ip(d.mgmt_ip))}


def plan_diff(old: Plan, new: Plan, old_configs: dict[str, str], new_configs: dict[str, str]) -> PlanDiff:
    out = PlanDiff()
    od, nd = {d.name: d for d in old.devices()}, {d.name: d for d in new.devices()}
    out.devices_added = sorted(set(nd) - set(od))
    out.devices_removed = sorted(set(od) - set(nd))
    os_, ns = {s.name for s in old.servers}, {s.name for s in new.servers}
    out.servers_added, out.servers_removed = sorted(ns - os_), sorted(os_ - ns)
    for name in sorted(set(od) & set(nd)):
        before, after = _numbers(od[name]), _numbers(nd[name])
        out.renumbered += [Renumbered(name, f, before[f], after[f]) for f in before if before[f] != after[f]]
    ol, nl = {link_key(x): x for x in old.links()}, {link_key(x): x for x in new.links()}
    out.links_added = [nl[k] for k in nl if k not in ol]
    out.links_removed = [ol[k] for k in ol if k not in nl]
    for k in ol.keys() & nl.keys():
        a, b = ol[k], nl[k]
        if (a.b, a.b_port) != (b.b, b.b_port):
            out.links_moved.append(Moved(k, (a.b, a.b_port), (b.b, b.b_port)))
    out.links_moved.sort(key=lambda m: m.key)
    for name in sorted(set(old_configs) | set(new_configs)):
        text_before, text_after = old_configs.get(name, ""), new_configs.get(name, "")
        if text_before != text_after:
            out.configs.append(_config_change(name, text_before, text_after))
    touched = set(out.devices_added) | set(out.devices_removed) | {c.device for c in out.configs}
    domains = {d.failure_domain for d in (*od.values(), *nd.values()) if d.name in touched and d.failure_domain}
    out.domains = sorted(domains)
    return out


def _config_change(name: str, before: str, after: str) -> ConfigChange:
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"{name} (old)", f"{name} (new)",
                                      lineterm="", n=1))  # fmt: skip
    plus = [x[1:] for x in lines if x.startswith("+") and not x.startswith("+++")]
    minus = [x[1:] for x in lines if x.startswith("-") and not x.startswith("---")]
    grown = [x for x in minus if _grew(x, plus)]
    return ConfigChange(name, len(plus) - len(grown), len(minus) - len(grown), "\n".join(lines) + "\n", len(grown))


def _grew(old: str, added: list[str]) -> bool:
    """An added line with the same keyword holds every word of `old`: the line only gained items."""
    words = old.split()
    return bool(words) and any(new.split()[:1] == words[:1] and set(words) < set(new.split()) for new in added)
