"""How the NVUE object model spells the same setting in different Cumulus Linux releases.

Read off NVIDIA's published object model of each release (the `nvueschema` package's models,
generated from NVIDIA's NVUE OpenAPI documents); the test suite holds every rendered document
to the model of its pinned release.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

RELEASES = ("5.11", "5.12", "5.13", "5.14", "5.15", "5.16", "5.17", "5.18")
DEFAULT_RELEASE = "5.14"

# The ECMP hash's fields (gpufabric.platforms.spec.ROCE_HASH) by their names under NVUE's `system forwarding
# ecmp-hash` (NVIDIA, Cumulus Linux user guide, "Equal Cost Multipath Load Sharing": `nv set system forwarding
# ecmp-hash source-port on`; `enabled` from 5.15).
NVUE_HASH = {
    "src-ip": "source-ip",
    "dst-ip": "destination-ip",
    "ip-protocol": "ip-protocol",
    "l4-src-port": "source-port",
    "l4-dst-port": "destination-port",
}


@cache
def _key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


@dataclass(frozen=True)
class Dialect:
    release: str

    @property
    def states(self) -> bool:
        """5.15 replaced `enable: on|off` with `state: enabled|disabled` and `on|off` values with
        `enabled|disabled`, renamed `interface/*/ip` to `ipv4` (the VRF moved to `interface/*/vrf`),
        and moved NTP, DNS, LLDP and the time zone under `system`."""
        return _key(self.release) >= (5, 15)

    @property
    def syslog_in_system(self) -> bool:
        """Syslog moved from `service/syslog/<vrf>` to `system/syslog` in 5.13."""
        return _key(self.release) >= (5, 13)

    @property
    def bfd_profiles(self) -> bool:
        """5.15 moved a BGP neighbor's BFD timers into named profiles (`router/bfd/profile/<name>`): the
        neighbor names its profile instead of carrying `enable` and the timers itself."""
        return _key(self.release) >= (5, 15)

    @property
    def relay_groups(self) -> bool:
        """5.14 grouped a DHCP relay's servers into `server-group`s with their upstream interfaces, named the
        client side `downstream-interface`, and spelled its agent's switches `state: enabled` (5.11 to 5.13:
        `server`, `interface`, `enable: on`)."""
        return _key(self.release) >= (5, 14)

    def enabled(self) -> dict[str, str]:
        return {"state": "enabled"} if self.states else {"enable": "on"}

    def flag(self, value: bool) -> str:
        if self.states:
            return "enabled" if value else "disabled"
        return "on" if value else "off"

    @property
    def ip(self) -> str:
        return "ipv4" if self.states else "ip"
