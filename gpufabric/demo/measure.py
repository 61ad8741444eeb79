"""The end-to-end facts, measured in the lab's namespaces (read-only, except the demo's own nftables counters)."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from itertools import permutations

from gpufabric.demo.fact import Fact, fact
from gpufabric.lab.hosts.spec import netns_of
from gpufabric.plan.ecmp import expected_widths
from gpufabric.plan.model import Plan, Server, ip

ROCE_PORT = 4791  # RoCEv2's UDP port
PROBES = 20
DEMO_TABLE = "gpufabric_demo"


def _ns(netns: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", netns, *args], input=stdin, capture_output=True, text=True, check=False
    )


def host_ns(name: str) -> str:
    return netns_of(name)


def gpu_hosts(plan: Plan) -> list[Server]:
    return [s for s in plan.servers if any(n.plane == "compute" for n in s.nics)]


def _rail_nic(server: Server, rail: int) -> tuple[str, int]:
    nic = next(n for n in server.nics if n.plane == "compute" and n.rail == rail)
    return ip(nic.address) or "", nic.mtu


def _ping(src_ns: str, src: str, dst: str, size: int) -> bool:
    return _ns(src_ns, "ping", "-c", "1", "-W", "2", "-M", "do", "-s", str(size), "-I", src, dst).returncode == 0


def jumbo(plan: Plan) -> list[Fact]:
    """Every GPU host to every other on each rail: full-MTU DF packets pass, one byte more does not."""
    hosts = gpu_hosts(plan)
    rails = sorted({n.rail for s in hosts for n in s.nics if n.plane == "compute" and n.rail})
    jobs = []
    for rail in rails:
        for a, b in permutations(hosts, 2):
            src, mtu = _rail_nic(a, rail)
            dst, _ = _rail_nic(b, rail)
            jobs.append((rail, host_ns(a.name), src, dst, mtu))
    with ThreadPoolExecutor(8) as pool:
        fits = list(pool.map(lambda j: _ping(j[1], j[2], j[3], j[4] - 28), jobs))
        over = list(pool.map(lambda j: _ping(j[1], j[2], j[3], j[4] - 27), jobs))
    facts = []
    for rail in rails:
        idx = [i for i, j in enumerate(jobs) if j[0] == rail]
        mtu = jobs[idx[0]][4]
        facts.append(
            fact(
                f"rail {rail}: every GPU host reaches every other with {mtu}-byte packets, DF set "
                f"({mtu - 28}-byte ICMP payload), leaf-spine-leaf",
                f"{len(idx)}/{len(idx)} pairs",
                f"{sum(fits[i] for i in idx)}/{len(idx)} pairs",
                plane="compute",
            )
        )
        facts.append(
            fact(
                f"rail {rail}: {mtu + 1}-byte packets with DF set do not pass",
                f"0/{len(idx)} pairs",
                f"{sum(over[i] for i in idx)}/{len(idx)} pairs",
                plane="compute",
            )
        )
    return facts


def _nft_counter(netns: str) -> int:
    done = _ns(netns, "nft", "-j", "list", "table", "inet", DEMO_TABLE)
    if done.returncode != 0:
        return -1
    for item in json.loads(done.stdout)["nftables"]:
        rule = item.get("rule")
        if rule:
            for expr in rule["expr"]:
                if "counter" in expr:
                    return int(expr["counter"]["packets"])
    return -1


def dscp(plan: Plan) -> Fact:
    """RoCE traffic marked at the sending host arrives at the far leaf with DSCP 26, counted there."""
    hosts = gpu_hosts(plan)
    a = hosts[0]
    b = next((h for h in hosts[1:] if h.units.get("compute") != a.units.get("compute")), hosts[-1])
    rail = min(n.rail for n in a.nics if n.plane == "compute" and n.rail)
    src, _ = _rail_nic(a, rail)
    dst, _ = _rail_nic(b, rail)
    far = next(n for n in b.nics if n.plane == "compute" and n.rail == rail)
    qos = plan.intent.qos_profiles[plan.planes["compute"].qos or ""]
    want = qos.roce_dscp
    # The lab has no ConnectX NIC: the host's RoCE marking (what roce_qos sets on the NIC) is done by nftables.
    mark = (
        f"table inet {DEMO_TABLE} {{\n chain roce_mark {{\n  type filter hook output priority 0;\n"
        f"  udp dport {ROCE_PORT} ip dscp set {want}\n }}\n}}\n"
    )
    count = (
        f"table inet {DEMO_TABLE} {{\n chain roce_count {{\n  type filter hook forward priority -10;\n"
        f'  oifname "{far.leaf_port}" udp dport {ROCE_PORT} ip dscp {want} counter\n }}\n}}\n'
    )
    try:
        _ns(host_ns(a.name), "nft", "-f", "-", stdin=mark)
        _ns(far.leaf, "nft", "-f", "-", stdin=count)
        send = (
            "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"s.bind(('{src}', 0))\n"
            f"for _ in range({PROBES}): s.sendto(b'x' * 64, ('{dst}', {ROCE_PORT}))\n"
        )
        _ns(host_ns(a.name), "python3", "-c", send)
        seen = _nft_counter(far.leaf)
    finally:
        _ns(host_ns(a.name), "nft", "delete", "table", "inet", DEMO_TABLE)
        _ns(far.leaf, "nft", "delete", "table", "inet", DEMO_TABLE)
    return fact(
        f"RoCE packets marked by {a.name} arrive at {far.leaf} ({far.leaf_port}, towards {b.name}) with DSCP {want}",
        f"{PROBES} packets",
        f"{seen} packets",
        plane="compute",
        note="host marking emulated with nftables (no ConnectX NIC in the lab); counted with nftables on the far leaf",
    )


def _nexthops(netns: str, prefix: str) -> int:
    done = subprocess.run(
        ["ip", "-n", netns, "-j", "route", "show", prefix], capture_output=True, text=True, check=False
    )
    routes = json.loads(done.stdout or "[]")
    if not routes:
        return 0
    route = routes[0]
    return len(route["nexthops"]) if "nexthops" in route else 1


def _spread(values: list[int]) -> str:
    return str(values[0]) if min(values) == max(values) else f"{min(values)} to {max(values)}"


def ecmp(plan: Plan) -> list[Fact]:
    """Per plane: each leaf's next hops to every other leaf's loopback, against the plan's paths (one per uplink)."""
    facts = []
    for plane in plan.planes:
        widths = expected_widths(plan, plane, {})
        leaves = [d for d in plan.devices() if d.plane == plane and d.role == "leaf" and d.loopback is not None]
        pairs = [
            (leaf.name, f"{ip(other.loopback)}/32")
            for leaf in leaves
            for other in leaves
            if other is not leaf and f"{ip(other.loopback)}/32" in widths.get(leaf.name, {})
        ]
        if not pairs:
            continue
        planned = [widths[name][prefix] for name, prefix in pairs]
        found = [_nexthops(name, prefix) for name, prefix in pairs]
        spines = sum(d.plane == plane and d.role == "spine" for d in plan.devices())
        facts.append(
            Fact(
                f"{plane}: every leaf has equal-cost next hops to every other leaf's loopback, one per uplink "
                f"({spines} spines, {len(pairs)} leaf pairs)",
                _spread(planned),
                _spread(found),
                planned == found,
                plane,
            )
        )
    return facts


def oob(plan: Plan) -> list[Fact]:
    targets = [ip(d.mgmt_ip) for d in plan.devices() if d.mgmt_ip is not None]
    targets += [ip(s.mgmt_ip) for s in plan.servers if s.mgmt_ip is not None]

    def reach(address: str) -> bool:
        return subprocess.run(["ping", "-c", "1", "-W", "2", address], capture_output=True, check=False).returncode == 0

    with ThreadPoolExecutor(8) as pool:
        reached = sum(pool.map(reach, targets))
    gateway = str(plan.intent.planes.oob.gateway_address) if plan.intent.planes.oob else ""
    probes = []
    for server in plan.servers:
        for nic in server.nics:
            for target in (gateway, *targets[:1]):
                probes.append((host_ns(server.name), ip(nic.address), target))
    with ThreadPoolExecutor(8) as pool:
        leaked = sum(pool.map(lambda p: _ping(p[0], p[1], p[2], 56), probes))
    return [
        fact(
            "the OOB plane reaches every switch and host",
            f"{len(targets)}/{len(targets)}",
            f"{reached}/{len(targets)}",
            plane="oob",
        ),
        fact(
            "no data-plane address reaches the OOB plane (from every host NIC to the OOB gateway and a switch)",
            f"0/{len(probes)}",
            f"{leaked}/{len(probes)}",
            plane="oob",
        ),
    ]
