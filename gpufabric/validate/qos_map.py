"""The DSCP -> priority map a switch runs, read out of its running configuration.

The same per-platform readers `nornir verify` uses on rendered files read the running text here,
so a rendered config and the config a switch runs are read one way.
"""

from __future__ import annotations

from collections.abc import Callable

from gpufabric.drivers.frr_files import split_candidate
from gpufabric.verify.facts import SwitchFacts
from gpufabric.verify.read_eos import eos_facts
from gpufabric.verify.read_frr import nft_facts
from gpufabric.verify.read_nvue import nvue_facts
from gpufabric.verify.read_nxos import nxos_facts

RUNNING = "running-config"


def _frr(running: str) -> SwitchFacts:
    facts = SwitchFacts("", "frr", [RUNNING])
    nft_facts(facts, split_candidate(running)[1] or "", RUNNING)
    return facts


READERS: dict[str, Callable[[str], SwitchFacts]] = {
    "frr": _frr,
    "eos": lambda text: eos_facts("", text, RUNNING),
    "nxos": lambda text: nxos_facts("", text, RUNNING),
    "cumulus": lambda text: nvue_facts("", text, RUNNING, tree_ok=True),
}


def dscp_map(platform: str, running: str) -> dict[int, int]:
    reader = READERS.get(platform)
    if reader is None:
        return {}
    return {dscp: int(fact.value) for dscp, fact in reader(running).dscp_map.items()}
