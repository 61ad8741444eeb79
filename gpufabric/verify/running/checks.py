"""The read-only checks, as pure functions from what a switch reports to results. Each yields a result
per item (pass or fail), so a report shows what was proven, not only what failed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from typing import Any

from gpufabric.platforms import names, platform
from gpufabric.verify.expect import Session, SwitchExpectation, compare
from gpufabric.verify.running import qos_map
from gpufabric.verify.running.results import CheckResult, result

__all__ = ["CheckResult", "Planned", "result"]


@dataclass(frozen=True)
class Planned:
    """What the plan says about one switch, for validation: its one expectation (what its configuration must
    say, compared by the comparison verify runs on its rendered files) and what only a live switch shows."""

    device: str
    platform: str
    peers: dict[str, tuple[str, int]] = field(default_factory=dict)  # session key -> (peer switch, ASN)
    lldp: dict[str, tuple[str, str]] = field(default_factory=dict)  # local port -> (peer switch, peer port)
    ports: dict[str, int] = field(default_factory=dict)  # port -> MTU
    ecmp: dict[str, int] = field(default_factory=dict)  # remote loopback -> width
    mgmt_port: str | None = None
    mgmt_subnet: str | None = None
    release: str | None = None  # the OS release the intent pins for the switch's platform; None: not checked
    expect: SwitchExpectation | None = None  # None: its configuration is not compared

    @property
    def reads_running(self) -> bool:
        """A check needs the running configuration's text."""
        return self.expect is not None and bool(platform(self.platform).facts.running_facts)

    @property
    def carried_sessions(self) -> tuple[tuple[str, Session], ...]:
        """A converged plane's VRF sessions on this switch: (VRF, session)."""
        return self.expect.carried_sessions if self.expect is not None else ()


def drift(p: Planned, diff: str) -> Iterator[CheckResult]:
    lines = [ln for ln in diff.splitlines() if ln.strip()]
    yield result(
        "config-drift", p.device, "running config", "no difference", "\n".join(lines) if lines else "no difference"
    )


def release(p: Planned, os_version: str, running: str | None) -> Iterator[CheckResult]:
    """The switch runs the release the intent pins: `running` is the release train its platform reads in the
    `os_version` its driver reports (None: none could be read there)."""
    if p.release is None:
        return
    shown = os_version.strip() or "nothing"
    observed = f"release {running} ({shown})" if running is not None else f"no release in {shown!r}"
    yield result("release", p.device, "os release", f"release {p.release}", observed, ok=running == p.release)


def bgp(p: Planned, neighbors: dict[str, Any]) -> Iterator[CheckResult]:
    peers = neighbors.get("global", {}).get("peers", {})
    for key, (peer, asn) in sorted(p.peers.items()):
        got = peers.get(key)
        observed = "absent" if got is None else f"{'Established' if got['is_up'] else 'down'}, AS {got['remote_as']}"
        yield result("bgp-session", p.device, f"{key} ({peer})", f"Established, AS {asn}", observed)


def lldp(p: Planned, neighbors: dict[str, list[dict[str, str]]]) -> Iterator[CheckResult]:
    for port, (peer, peer_port) in sorted(p.lldp.items()):
        seen = neighbors.get(port, [])
        observed = ", ".join(f"{n['hostname']} {n['port']}" for n in seen) or "no neighbour"
        yield result("lldp-neighbor", p.device, port, f"{peer} {peer_port}", observed)


def interfaces(p: Planned, ifaces: dict[str, dict[str, Any]]) -> Iterator[CheckResult]:
    for port, mtu in sorted(p.ports.items()):
        got = ifaces.get(port)
        observed = "absent" if got is None else f"{'up' if got['is_up'] else 'down'}, MTU {got['mtu']}"
        yield result("interface", p.device, port, f"up, MTU {mtu}", observed)


def ecmp(p: Planned, routes: dict[str, list[dict[str, Any]]]) -> Iterator[CheckResult]:
    for prefix, width in sorted(p.ecmp.items()):
        hops = [h for h in routes.get(prefix, []) if h.get("protocol") == "bgp" and h.get("selected_next_hop")]
        yield result("ecmp-width", p.device, prefix, f"{width} paths", f"{len(hops)} paths")


def config(p: Planned, running: str) -> Iterator[CheckResult]:
    """The running configuration held to the switch's expectation by the comparison verify runs on its
    rendered files, every item a result, for the checks whose facts the platform's running reader returns."""
    if p.expect is None or p.platform not in names():
        return
    facts = qos_map.running_facts(p.platform, running)
    if facts is None:
        return
    for o in compare(p.expect, facts, platform(p.platform).facts.running_facts):
        yield result(o.check, p.device, o.item, o.expected, o.found, ok=o.ok)


def oob_isolation(p: Planned, routes: dict[str, list[dict[str, Any]]]) -> Iterator[CheckResult]:
    """No data-plane route into the management subnet, and no data route out of the management port."""
    if p.mgmt_subnet is None:
        return
    mgmt = IPv4Network(p.mgmt_subnet)
    leaks = []
    for prefix, hops in sorted(routes.items()):
        net = IPv4Network(prefix)
        if net.prefixlen == 0:
            continue  # a default route never wins over the connected management subnet
        for h in hops:
            via_mgmt = h.get("outgoing_interface") == p.mgmt_port
            if net.overlaps(mgmt) and not via_mgmt:
                leaks.append(f"{prefix} via {h.get('outgoing_interface') or h.get('next_hop')}")
            elif via_mgmt and not net.subnet_of(mgmt) and h.get("protocol") != "kernel":
                leaks.append(f"{prefix} via {p.mgmt_port}")
    yield result("oob-isolation", p.device, p.mgmt_subnet, "separate", "; ".join(sorted(set(leaks))) or "separate")
