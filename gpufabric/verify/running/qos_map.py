"""The DSCP -> priority map a switch runs, read out of its running configuration.

The same per-platform readers `nornir verify` uses on rendered files read the running text here
(each platform module names its reader), so a rendered config and the config a switch runs are
read one way.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from gpufabric.platforms import names, platform


# The QoS, load-balancing and buffer checks each ask for the same switch's facts: read its text once
# (a data switch's running configuration is 600-2,100 lines). Enough entries for every switch a
# validate reads at once; the facts are only read, never changed.
@lru_cache(maxsize=512)
def running_facts(platform_name: str, running: str) -> Any:
    """The facts of a running configuration (gpufabric.verify.facts.SwitchFacts), or None for a platform
    no installed distribution registers."""
    if platform_name not in names():
        return None
    return platform(platform_name).read_running(running)


def dscp_map(platform_name: str, running: str) -> dict[int, int]:
    facts = running_facts(platform_name, running)
    if facts is None:
        return {}
    return {dscp: int(fact.value) for dscp, fact in facts.dscp_map.items()}
