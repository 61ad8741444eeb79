"""What a rendered configuration says, read back from its text, with where it says it.

Every platform's reader produces the same SwitchFacts, so the cross-checks against the
plan are written once. A Fact keeps file and line so a finding can point at the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from gpufabric.inputs import MiB, read_text

# A switch's rendered file is tens of KiB (a 128-port spine's, a few hundred): far more is not one.
MAX_RENDERED = 16 * MiB


def read_rendered(path: str | Path) -> str:
    """A rendered file handed to `verify` or `push --configs`, read the one way outside input is read:
    a regular file (a FIFO or a device is refused, not waited on), at most MAX_RENDERED, UTF-8."""
    return read_text(path, what="a rendered configuration file", max_bytes=MAX_RENDERED)


class Fact(NamedTuple):
    """A value and where the text says it. A tuple: a large fabric's files hold millions of facts,
    and a frozen dataclass takes about twice as long to make."""

    value: Any
    file: str
    line: int


@dataclass(slots=True)
class Finding:
    check: str
    device: str
    file: str
    line: int
    expected: str
    found: str

    def as_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "device": self.device,
            "file": self.file,
            "line": self.line,
            "expected": self.expected,
            "found": self.found,
        }


@dataclass(slots=True)
class SwitchFacts:
    device: str
    platform: str
    files: list[str] = field(default_factory=list)
    hostname: Fact | None = None
    asn: Fact | None = None
    neighbors: dict[str, Fact] = field(default_factory=dict)  # interface or peer address -> remote ASN
    mtu: dict[str, Fact] = field(default_factory=dict)  # port -> MTU
    address: dict[str, Fact] = field(default_factory=dict)  # port -> "a.b.c.d/len"
    max_paths: Fact | None = None
    multipath_relax: Fact | None = None
    trust_dscp: Fact | None = None
    dscp_map: dict[int, Fact] = field(default_factory=dict)  # DSCP -> switch priority / traffic class
    pfc: dict[int, Fact] = field(default_factory=dict)  # no-drop priorities
    ecn: dict[int, Fact] = field(default_factory=dict)  # traffic class -> (min bytes, max bytes)
    strict: dict[int, Fact] = field(default_factory=dict)  # strict-priority traffic classes
    watchdog: Fact | None = None
    qos_ports: dict[str, Fact] = field(default_factory=dict)  # ports the RoCE policy is applied to
    # Load balancing: adaptive routing / dynamic load balancing switched on globally (True) or off (False, or
    # None when the text does not say), the ports it is on where the platform sets it per port, and a Linux
    # switch's ECMP hash policy (net.ipv4.fib_multipath_hash_policy: 0 L3, 1 L4 five-tuple).
    # Cable length (metres) the switch sizes PFC headroom from: per port (SONiC CABLE_LENGTH) or for the
    # switch's PFC profile (Cumulus `qos pfc default-global`, keyed by the profile).
    cable_length: dict[str, Fact] = field(default_factory=dict)
    # Buffer sizes given to the switch for a lossless traffic class: class -> (buffer size, pause threshold,
    # resume threshold) in bytes (NX-OS ingress queuing `pause buffer-size ...`).
    pause_buffer: dict[int, Fact] = field(default_factory=dict)
    # PFC headroom in bytes of the ports, as the switch is given it (EOS: the applied MMU queue profile's
    # `ingress headroom`); None when the text sets none.
    headroom: Fact | None = None
    adaptive: Fact | None = None
    adaptive_ports: dict[str, Fact] = field(default_factory=dict)
    multipath_hash: Fact | None = None
    hash_fields: Fact | None = None  # the ECMP hash's packet fields (ROCE_HASH's names), a tuple, where set
    # BFD on a BGP session: interface or peer address -> (interval ms, multiplier) the session runs with, as the
    # platform resolves it (a neighbor's own timers, its profile's, or the switch-wide ones; None where the text
    # gives none and the platform's default applies).
    bfd: dict[str, Fact] = field(default_factory=dict)
    bgp_timers: Fact | None = None  # (keepalive, hold) in seconds, when the text sets them
    max_med: Fact | None = None  # seconds of max-MED after BGP starts (`bgp max-med on-startup`), when set
    # The (keepalive, hold) the switch runs where the text sets none, where its reader knows them (FRR's running
    # configuration leaves out timers equal to its profile's); None: the text says nothing of them.
    default_bgp_timers: tuple[int, int] | None = None
    routes: list[Fact] = field(default_factory=list)  # (vrf or None, prefix) static routes
    # A converged plane's carried planes: tagged subinterface -> (VRF, VLAN, address or None); "VRF key" -> the
    # remote ASN of a BGP session in a VRF other than the default; traffic class -> its guaranteed bandwidth percent.
    subinterfaces: dict[str, Fact] = field(default_factory=dict)
    vrf_neighbors: dict[str, Fact] = field(default_factory=dict)
    vrf_bfd: dict[str, Fact] = field(default_factory=dict)  # "VRF key" -> (interval ms, multiplier), as `bfd`
    vrf_timers: dict[str, Fact] = field(default_factory=dict)  # VRF -> (keepalive, hold), when the text sets them
    shares: dict[int, Fact] = field(default_factory=dict)
    secrets: list[Fact] = field(default_factory=list)  # lines that would carry a password or community
    problems: list[Finding] = field(default_factory=list)  # the text did not parse as expected
    # Where a section starts ("qos", "bgp", "interface NAME"): a finding about something
    # missing points there, since the missing line itself has no line number.
    anchors: dict[str, Fact] = field(default_factory=dict)

    def problem(self, check: str, file: str, line: int, expected: str, found: str) -> None:
        self.problems.append(Finding(check, self.device, file, line, expected, found))


# A fact as it crosses a process boundary: (value, file, line). Facts as objects pickle ~10x slower.
Row = tuple[Any, str, int]


@dataclass(slots=True)
class LinkEnd:
    """What a switch's links are checked against (port MTUs and addresses, BGP sessions, ASN), as
    plain tuples: the checks of a large fabric's 65,536 links run in the parent process on these,
    without a Fact object per value."""

    device: str
    asn: Row | None
    mtu: dict[str, Row]
    address: dict[str, Row]
    neighbors: dict[str, Row]

    @classmethod
    def of(cls, facts: SwitchFacts, ports: set[str]) -> LinkEnd:
        """The facts of `ports`, the ones on links checked end to end (a leaf's host ports are not)."""

        def rows(d: dict[str, Fact]) -> dict[str, Row]:
            return {k: tuple(f) for k, f in d.items() if k in ports}

        asn = facts.asn
        return cls(
            facts.device,
            None if asn is None else tuple(asn),
            rows(facts.mtu),
            rows(facts.address),
            {k: tuple(f) for k, f in facts.neighbors.items()},
        )
