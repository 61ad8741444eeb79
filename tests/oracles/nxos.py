"""Cisco's parsers as the judge of gpufabric's NX-OS text (the `cisco.nxos` Ansible collection).

The collection's resource modules read a running configuration into structured data with
`state: parsed`, which needs no device. Here the same facts classes the modules use are called
directly (one Python process for every switch instead of one Ansible run each), each given the
section of the configuration the module would ask the switch for (`show running-config | section
...`), exactly as NX-OS would print it.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

_FACTS = "ansible_collections.cisco.nxos.plugins.module_utils.network.nxos.facts"
# resource -> (facts class, the `| section` filter the module uses on a device)
RESOURCES = {
    "interfaces": ("InterfacesFacts", r"^interface"),
    "l3_interfaces": ("L3_interfacesFacts", r"^interface"),
    "acl_interfaces": ("Acl_interfacesFacts", r"^interface"),
    "acls": ("AclsFacts", r"^ip(v6)* access-list"),
    "bgp_global": ("Bgp_globalFacts", r"^router bgp"),
    "bgp_address_family": ("Bgp_address_familyFacts", r"^router bgp"),
    "bgp_neighbor_address_family": ("Bgp_neighbor_address_familyFacts", r"^router bgp"),
    "prefix_lists": ("Prefix_listsFacts", r"^ip(v6)? prefix-list"),
    "route_maps": ("Route_mapsFacts", r"^route-map"),
    "static_routes": ("Static_routesFacts", r"^(ip route|vrf context)"),
    "hostname": ("HostnameFacts", r"^hostname"),
    "ntp_global": ("Ntp_globalFacts", r"^ntp"),
    "logging_global": ("Logging_globalFacts", r"^logging"),
    "snmp_server": ("Snmp_serverFacts", r"^snmp-server"),
    "vrf_global": ("Vrf_globalFacts", r"^vrf"),
    "vrf_interfaces": ("Vrf_interfacesFacts", r"^interface"),
}


class _Module:
    """What the facts classes ask of an AnsibleModule when they parse offline."""

    params: dict[str, Any] = {}  # noqa: RUF012
    _socket_path = None
    check_mode = False

    def __init__(self) -> None:
        self.no_log_values: set[str] = set()

    def fail_json(self, **kwargs: Any) -> None:
        raise AssertionError(f"cisco.nxos parser failed: {kwargs}")

    def warn(self, *args: Any, **kwargs: Any) -> None:
        pass


def section(text: str, pattern: str) -> str:
    """NX-OS's `| section PATTERN`: top-level lines matching it, with their indented lines."""
    out: list[str] = []
    keep = False
    for line in text.splitlines():
        if not line.strip() or line.startswith("!"):
            continue
        if not line.startswith(" "):
            keep = bool(re.search(pattern, line))
        if keep:
            out.append(line)
    return "\n".join(out)


def parsed(resource: str, text: str) -> Any:
    cls_name, pattern = RESOURCES[resource]
    module = importlib.import_module(f"{_FACTS}.{resource}.{resource}")
    data = section(text, pattern)
    if not data:
        return None  # the switch has nothing of this kind (the facts class would ask a device)
    facts: dict[str, Any] = {"ansible_network_resources": {}}
    getattr(module, cls_name)(_Module()).populate_facts(None, facts, data=data)
    return facts["ansible_network_resources"].get(resource)


# -- which lines no Cisco parser reads ----------------------------------------------------------------
#
# A line family is a configuration line with its values blanked (`mtu <v>` under `interface <v>`),
# prefixed by its parents' families. A family is judged when deleting all its lines (with their
# children) changes what some resource module's parser returns for a switch's configuration; it is
# unjudged when every parser returns the same without it: no Cisco parser reads it.

_VALUE = re.compile(r"[0-9A-Z/.:@$_]")
_FREE_TEXT = {"description", "name", "hostname", "location"}  # the rest of the line is free text


def family(line: str) -> str:
    out: list[str] = []
    for token in line.split():
        prev = out[-1] if out else ""
        if prev in _FREE_TEXT:
            out.append("<v>")
            break
        if prev == "username" or _VALUE.search(token):
            if prev != "<v>":
                out.append("<v>")
            continue
        out.append(token)
    return " ".join(out)


def line_families(text: str) -> list[tuple[str, int, int]]:
    """(family path, first line, end line) of every line of a configuration: the line with its
    children is text.splitlines()[first:end]."""
    lines = text.splitlines()
    out: list[tuple[str, int, int]] = []
    stack: list[tuple[int, str]] = []  # (indent, family path) of the open parents
    for i, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("!"):
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = " > ".join([*(p for _, p in stack[-1:]), family(line)]) if stack else family(line)
        end = i + 1
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
            if lines[end].lstrip().startswith("!"):
                break
            end += 1
        out.append((path, i, end))
        stack.append((indent, path))
    return out


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    drop = {i for first, end in spans for i in range(first, end)}
    return "\n".join(line for i, line in enumerate(text.splitlines()) if i not in drop)


def unjudged_families(texts: list[str]) -> tuple[set[str], set[str], dict[str, int]]:
    """(every family, the families no parser reads, lines per family) over the configurations. Each
    family is tested on the smallest configuration that has it, against the parsers whose section
    holds its top-level line."""
    every: dict[str, int] = {}
    tested: set[str] = set()
    unread: set[str] = set()
    for text in sorted(texts, key=len):  # each family is tested on the smallest configuration that has it
        spans: dict[str, list[tuple[int, int]]] = {}
        lines = text.splitlines()
        for path, first, end in line_families(text):
            spans.setdefault(path, []).append((first, end))
            every[path] = every.get(path, 0) + 1
        baseline: dict[str, Any] = {}
        for path, where in spans.items():
            if path in tested:
                continue
            tested.add(path)
            top = lines[where[0][0] - _depth_up(lines, where[0][0])]
            readers = [r for r, (_, pattern) in RESOURCES.items() if re.search(pattern, top)]
            mutated = _without(text, where)
            if not any(_differs(r, text, mutated, baseline) for r in readers):
                unread.add(path)
    return set(every), unread, every


def _differs(resource: str, text: str, mutated: str, baseline: dict[str, Any]) -> bool:
    if resource not in baseline:
        baseline[resource] = _meaning(parsed(resource, text))
    try:
        return bool(_meaning(parsed(resource, mutated)) != baseline[resource])
    except (KeyError, TypeError, AssertionError):
        return True  # the parser failed without those lines: it reads them


def _meaning(value: Any) -> Any:
    """A parse without entries that hold a name only: the interface parsers list every `interface ...`
    line as a name, `interface breakout module 1 port 1 map 100g-4x` too, without reading it."""
    if isinstance(value, list):
        return [_meaning(v) for v in value if not (isinstance(v, dict) and set(v) == {"name"})]
    if isinstance(value, dict):
        return {k: _meaning(v) for k, v in value.items()}
    return value


def _depth_up(lines: list[str], i: int) -> int:
    """How far above line i its top-level line is."""
    j = i
    while j > 0 and lines[j].startswith(" "):
        j -= 1
    return i - j
