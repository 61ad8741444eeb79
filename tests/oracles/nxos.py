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
