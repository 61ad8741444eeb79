"""Fabrics the benchmarks share, beyond the examples."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

EXAMPLES = Path(__file__).resolve().parent.parent / "inventory" / "examples"
# The secrets the examples name. Hashing the password is part of what a render costs, and the labs the
# benchmarks bring up are their own: fixed placeholders, unless the caller set them.
PLACEHOLDER_SECRETS = {"GPUFABRIC_SWITCH_PASSWORD": "bench-not-a-secret", "GPUFABRIC_SALT_KEY": "bench-not-a-secret"}


def use_placeholder_secrets() -> None:
    """The placeholders in this process's environment, and so its children's, where the caller set none."""
    for name, value in PLACEHOLDER_SECRETS.items():
        os.environ.setdefault(name, value)


def eos_32k_text() -> str:
    """The 32k-GPU example with every switch on EOS (/31 links): the platform of Arista's pyavd."""
    doc: Any = yaml.safe_load((EXAMPLES / "three-tier-32k.yml").read_text())
    compute = doc["planes"]["compute"]
    for role in compute["switches"].values():
        role["platform"] = "eos"
    compute["routing"]["addressing"] = "p2p31"
    compute["addressing"]["p2p"] = "10.64.0.0/14"
    return yaml.safe_dump(doc, sort_keys=False)
