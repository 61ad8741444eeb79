"""The DSCP -> priority map a switch runs, read out of its running configuration.

The same per-platform readers `nornir verify` uses on rendered files read the running text here
(each platform module names its reader), so a rendered config and the config a switch runs are
read one way.
"""

from __future__ import annotations

from typing import Any

from gpufabric.platforms import names, platform


def running_facts(platform_name: str, running: str) -> Any:
    """The facts of a running configuration (gpufabric.verify.facts.SwitchFacts), or None for a platform
    no installed distribution registers."""
    if platform_name not in names():
        return None
    return platform(platform_name).running_reader(running)


def dscp_map(platform_name: str, running: str) -> dict[int, int]:
    facts = running_facts(platform_name, running)
    if facts is None:
        return {}
    return {dscp: int(fact.value) for dscp, fact in facts.dscp_map.items()}
