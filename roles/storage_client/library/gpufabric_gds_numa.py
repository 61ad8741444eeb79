#!/usr/bin/python
"""Check that every GPU of a host has a storage NIC of cufile.json's list on its NUMA node; change nothing.

Self-contained (the standard library and AnsibleModule only): Ansible copies it to the host, where gpufabric
is not installed. The tests import it and call `read_placement(root, interfaces)` on prepared trees.

cuFile sends a GPU's I/O through the NIC of `properties.rdma_dev_addr_list` nearest it by PCIe distance
(NVIDIA GDS Troubleshooting Guide, "User-Space RDMA Counters in GPUDirect Storage"). A GPU whose NUMA node
holds none of the listed NICs sends its data across the socket link, at a fraction of the NIC's rate: the plan
cannot see that, the host's PCI tree can.

What it reads, every path under `root` (`/` on a host):
- GPUs: /sys/bus/pci/devices/* whose `vendor` is NVIDIA's (0x10de) and `class` a display or 3D controller
  (0x0300xx, 0x0302xx), with their `numa_node`, in PCI address order (nvidia-smi's index order).
- NICs: /sys/class/net/<interface>/device/numa_node. A machine without NUMA says -1 everywhere: one node.
"""

# The boilerplate ansible-core 2.16's sanity tests ask of every module, line for line (later releases
# no longer do); ruff's UP010, UP001 and I001 are off for these files in pyproject.toml.
from __future__ import absolute_import, division, print_function
from __future__ import annotations

__metaclass__ = type

DOCUMENTATION = r"""
module: gpufabric_gds_numa
short_description: Check that each GPU has one of the listed storage NICs on its NUMA node
description:
  - Reads sysfs under O(root) and returns each GPU's NUMA node and the listed storage NICs on it.
  - Changes nothing on the host.
author:
  - gpufabric maintainers (@gpufabric)
options:
  root:
    type: path
    default: /
    description: Where sys/ is read (a prepared tree in tests).
  interfaces:
    type: list
    elements: str
    required: true
    description: The storage NICs cufile.json lists, by interface name.
"""

EXAMPLES = r"""
- name: Check that each GPU has a storage NIC of cufile.json on its NUMA node
  gpufabric_gds_numa:
    interfaces: [eth3, eth4]
  register: storage_client_numa
"""

RETURN = r"""
gpus:
  description: Each GPU with its PCI address, NUMA node and the listed NICs on that node.
  type: list
  returned: always
nics:
  description: Each listed NIC with its NUMA node (null when it has no PCI function to read).
  type: list
  returned: always
remote:
  description: PCI addresses of the GPUs with no listed NIC on their NUMA node.
  type: list
  returned: always
missing:
  description: Listed NICs the host does not have (or whose NUMA node cannot be read).
  type: list
  returned: always
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

NVIDIA = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")
INTERFACE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$")  # the intent's interface pattern


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(64).strip()
    except OSError:
        return None


def _numa(text: str | None) -> int | None:
    if text is None or not re.fullmatch(r"-?[0-9]{1,4}", text):
        return None
    return max(int(text), -1)


def read_placement(root: str, interfaces: list[str]) -> dict:
    """The GPUs and listed NICs with their NUMA nodes, and the GPUs with no listed NIC on theirs."""
    devices = os.path.join(root, "sys", "bus", "pci", "devices")
    try:
        functions = sorted(os.listdir(devices))
    except OSError:
        functions = []
    nics = []
    for name in interfaces:
        # A name outside the interface pattern never becomes a path (no '..', no '/').
        path = os.path.join(root, "sys", "class", "net", name, "device", "numa_node")
        node = _numa(_read(path)) if INTERFACE.match(name) else None
        nics.append({"name": name, "numa_node": node})
    gpus = []
    for bdf in functions:
        base = os.path.join(devices, bdf)
        vendor = (_read(os.path.join(base, "vendor")) or "").lower()
        cls = (_read(os.path.join(base, "class")) or "").lower()[:6]
        if vendor != NVIDIA or cls not in GPU_CLASSES:
            continue
        node = _numa(_read(os.path.join(base, "numa_node")))
        local = [n["name"] for n in nics if n["numa_node"] is not None and n["numa_node"] == node]
        gpus.append({"pci": bdf, "numa_node": node, "nics": local})
    return {
        "gpus": gpus,
        "nics": nics,
        "remote": [g["pci"] for g in gpus if not g["nics"]],
        "missing": [n["name"] for n in nics if n["numa_node"] is None],
    }


def message(found: dict) -> str:
    """One line for people: what is wrong, or that every GPU has a listed NIC on its node."""
    parts = []
    if found["missing"]:
        parts.append(f"storage NICs not found (or no NUMA node readable): {', '.join(found['missing'])}")
    if found["remote"]:
        nodes = sorted({str(g["numa_node"]) for g in found["gpus"] if not g["nics"]})
        parts.append(
            f"GPUs {', '.join(found['remote'])} (NUMA node {', '.join(nodes)}) have no storage NIC of cufile.json "
            "on their NUMA node: their GPUDirect Storage traffic crosses the socket link"
        )
    if not found["gpus"]:
        parts.append("no NVIDIA GPU found")
    return "; ".join(parts) or f"every GPU ({len(found['gpus'])}) has a storage NIC of cufile.json on its NUMA node"


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "root": {"type": "path", "default": "/"},
            "interfaces": {"type": "list", "elements": "str", "required": True},
        },
        supports_check_mode=True,
    )
    found = read_placement(module.params["root"], module.params["interfaces"])
    module.exit_json(changed=False, msg=message(found), **found)


if __name__ == "__main__":
    main()
