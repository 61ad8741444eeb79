"""Cisco Nexus 9000 NX-OS."""

from __future__ import annotations

from pathlib import Path

from gpufabric.platforms.base import PlatformSpec
from gpufabric.verify.facts import SwitchFacts


def port_name(cage: int, lane: int, split: int) -> str:
    return f"Ethernet1/{cage}" if split == 1 else f"Ethernet1/{cage}/{lane + 1}"


def _read(name: str, folder: Path) -> SwitchFacts:
    from gpufabric.verify.read_nxos import read_nxos

    return read_nxos(name, folder / f"{name}.cfg")


def _running(text: str) -> SwitchFacts:
    from gpufabric.verify.read_nxos import nxos_facts

    return nxos_facts("", text, "running-config")


PLATFORM = PlatformSpec(
    name="nxos",
    title="Cisco NX-OS (Nexus 9000)",
    releases=("10.3", "10.4", "10.5"),
    default_release="10.4",
    mgmt_port="mgmt0",
    mgmt_vrf="management",
    max_mtu=9216,
    hash_algorithm="sha256",
    hash_prefix="$5$",
    numbered_only=True,
    mlag=True,
    outputs=((".cfg", "nxos/config.j2"),),
    candidate_suffix=".cfg",
    napalm_driver="nxos",
    containerlab_kind="cisco_n9kv",
    containerlab_image="vrnetlab/cisco_n9kv:10.4.2",
    eth_numbering=True,
    port_name=port_name,
    reader=_read,
    running_reader=_running,
    confirm_timer=False,
    ecn_unit_bytes=1000,
    docs="Cisco Nexus 9000 NX-OS configuration guides (QoS, interfaces, unicast routing, security)",
)
