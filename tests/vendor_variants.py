"""Intents that put every role of the multi-vendor example on one platform, for the vendor oracles.

The examples use EOS only for the storage plane and NX-OS only for the business plane; these
variants give each oracle every role (leaf, spine, border, OOB switch), split ports on 800G cages,
MLAG, RoCE QoS, and both ways of handling the default route.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpufabric.plan import Plan
from tests.conftest import INVENTORY, plan_doc

MULTI_VENDOR = INVENTORY / "examples" / "multi-vendor.yml"


def one_platform(platform: str, default_route: str = "originate") -> dict[str, Any]:
    doc = yaml.safe_load(MULTI_VENDOR.read_text())
    for name, plane in doc["planes"].items():
        for role in plane["switches"].values():
            role["platform"] = platform
        if name == "compute":
            plane["routing"]["addressing"] = "p2p31"  # EOS and NX-OS fabrics peer over /31s
            plane["addressing"]["p2p"] = "10.20.0.0/22"
            if platform == "eos":  # its compute models are of neither EOS family: EOS balances them dynamically
                plane["load_balancing"] = "adaptive"
        if name == "business":
            plane["border"]["default_route"] = default_route
    return doc


def variants(platform: str) -> dict[str, Plan]:
    return {
        f"all-{platform}-{route}": plan_doc(one_platform(platform, route), f"all-{platform}-{route}")
        for route in ("originate", "from-edge")
    }


CONVERGED = INVENTORY / "examples" / "converged-inband.yml"


def converged(platform: str) -> dict[str, Plan]:
    """The converged example (storage and in-band management carried on the business fabric) with its leaves
    and spines on one platform: every carried-plane line of that platform, on both roles."""
    doc = yaml.safe_load(CONVERGED.read_text())
    for role in ("leaf", "spine"):
        doc["planes"]["business"]["switches"][role]["platform"] = platform
    if platform == "sonic":  # SKUs gpufabric knows for SONiC: Spectrum-3 leaves, Spectrum-4 spines split 2x400G
        switches = doc["planes"]["business"]["switches"]
        switches["leaf"] |= {"model": "SN4700", "ports": 32, "port_speed": "400G"}
        switches["spine"] |= {"model": "SN5600", "ports": 64, "port_speed": "800G", "downlink_speed": "400G"}
    return {f"converged-{platform}": plan_doc(doc, f"converged-{platform}")}
