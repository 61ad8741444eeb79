"""Fabrics the benchmarks share, beyond the examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

EXAMPLES = Path(__file__).resolve().parent.parent / "inventory" / "examples"


def eos_32k_text() -> str:
    """The 32k-GPU example with every switch on EOS (/31 links): the platform of Arista's pyavd."""
    doc: Any = yaml.safe_load((EXAMPLES / "three-tier-32k.yml").read_text())
    compute = doc["planes"]["compute"]
    for role in compute["switches"].values():
        role["platform"] = "eos"
    compute["routing"]["addressing"] = "p2p31"
    compute["addressing"]["p2p"] = "10.64.0.0/14"
    return yaml.safe_dump(doc, sort_keys=False)
