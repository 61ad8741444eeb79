"""The DSCP -> priority map a switch runs, read out of its running configuration.

The same per-platform readers `nornir verify` uses on rendered files read the running text here
(each platform module names its reader), so a rendered config and the config a switch runs are
read one way.
"""

from __future__ import annotations

from gpufabric.platforms import names, platform


def dscp_map(platform_name: str, running: str) -> dict[int, int]:
    if platform_name not in names():
        return {}
    facts = platform(platform_name).running_reader(running)
    return {dscp: int(fact.value) for dscp, fact in facts.dscp_map.items()}
