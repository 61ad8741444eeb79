"""Read the DSCP -> priority map a switch runs out of its running configuration, one reader per platform.

The QoS contract check compares this map with the plan's; each reader knows only its platform's idiom.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

from gpufabric.drivers.frr_files import split_candidate

# nftables prints well-known DSCP values by name.
DSCP_NAMES = {
    **{f"cs{i}": 8 * i for i in range(8)},
    **{f"af{c}{d}": 8 * c + 2 * d for c in range(1, 5) for d in range(1, 4)},
    "ef": 46,
    "va": 44,
    "be": 0,
}
_NFT_DSCP = re.compile(r"ip dscp (\w+) meta priority set 0:(\d+)")
_EOS_MAP = re.compile(r"^qos map dscp ([\d ]+) to traffic-class (\d+)", re.M)
_NXOS_CLASS_MAP = re.compile(r"^class-map type qos match-\w+ (\S+)\n((?:[ \t]+.*\n?)*)", re.M)
_NXOS_POLICY = re.compile(r"^policy-map type qos (\S+)\n((?:[ \t]+.*\n?)*)", re.M)
_NXOS_SET = re.compile(r"^\s+class (\S+)\n\s+set qos-group (\d+)", re.M)


def frr(running: str) -> dict[int, int]:
    mapped: dict[int, int] = {}
    for m in _NFT_DSCP.finditer(split_candidate(running)[1] or ""):
        name = m.group(1)
        dscp = int(name) if name.isdigit() else DSCP_NAMES.get(name)
        if dscp is not None:
            mapped[dscp] = int(m.group(2))
    return mapped


def eos(running: str) -> dict[int, int]:
    return {int(d): int(m.group(2)) for m in _EOS_MAP.finditer(running) for d in m.group(1).split()}


def _nxos_class_dscps(body: str) -> list[int]:
    """The DSCP values a class-map's `match dscp 26` / `match dscp 24,26` lines select."""
    found: list[int] = []
    for values in re.findall(r"match dscp ([\d,\s-]+)", body):
        found += [int(v) for v in re.split(r"[,\s]+", values.strip()) if v.isdigit()]
    return found


def nxos(running: str) -> dict[int, int]:
    classes = {m.group(1): _nxos_class_dscps(m.group(2)) for m in _NXOS_CLASS_MAP.finditer(running)}
    mapped: dict[int, int] = {}
    for policy in _NXOS_POLICY.finditer(running):
        for cls in _NXOS_SET.finditer(policy.group(2)):
            for dscp in classes.get(cls.group(1), []):
                mapped[dscp] = int(cls.group(2))
    return mapped


def _nvue_tree(running: str) -> dict[str, Any]:
    """NVUE shows configuration either as the startup file's `- set:` documents or as one tree."""
    data = yaml.safe_load(running) if running.strip() else {}
    if isinstance(data, list):
        tree: dict[str, Any] = {}
        for doc in data:
            if isinstance(doc, dict) and isinstance(doc.get("set"), dict):
                tree.update(doc["set"])
        return tree
    return data if isinstance(data, dict) else {}


def cumulus(running: str) -> dict[int, int]:
    try:
        tree = _nvue_tree(running)
    except yaml.YAMLError:
        return {}
    dscp = ((tree.get("qos") or {}).get("mapping") or {}).get("default-global", {}).get("dscp") or {}
    return {
        int(k): int(v["switch-priority"]) for k, v in dscp.items() if isinstance(v, dict) and "switch-priority" in v
    }


READERS: dict[str, Callable[[str], dict[int, int]]] = {"frr": frr, "eos": eos, "nxos": nxos, "cumulus": cumulus}


def dscp_map(platform: str, running: str) -> dict[int, int]:
    reader = READERS.get(platform)
    return reader(running) if reader else {}
