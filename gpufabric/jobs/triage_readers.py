"""The readers job triage takes its evidence from (gpufabric/jobs/job_triage.py): Prometheus (the exporter's
counters and the probe mesh's results), and in the lab the switches' own forwarding (`ip route get`) and an
active probe run in the hosts' network namespaces.

Nothing here writes: Prometheus is queried, the switches' kernels are asked which way a flow goes, and the
active probe's agents only open UDP sockets on the hosts' own addresses for a bounded time.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from subprocess import PIPE

from gpufabric.errors import GpufabricError
from gpufabric.files import write_atomic
from gpufabric.http_api import HttpApiError, Request, json_body
from gpufabric.http_guard import Bounds, call
from gpufabric.jobs.footprint import Footprint
from gpufabric.jobs.job_triage import Edge, FlowSample, Parts, flows_of
from gpufabric.outputs import json_dumps

MAX_ANSWER = 32 << 20  # bytes of one Prometheus answer
QUERY_TIMEOUT = 20.0
AGENT = "gpufabric.telemetry.probe_agent"
AGENT_WAIT = 60.0  # seconds for every agent to be ready, and again for their answers beyond the probe's own time
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")  # a name of the plan, as Prometheus labels carry it


class TriageReadError(GpufabricError):
    """A reader that could not be read (Prometheus's answer, a lab namespace, an agent): the message says which."""


def _regex(names: Sequence[str]) -> str:
    """A PromQL regex matching exactly these names (the plan's, each checked: nothing else reaches a query)."""
    for n in names:
        if not NAME.fullmatch(n):
            raise TriageReadError(f"{n[:40]!r} is not a name of the plan")
    return "|".join(re.sub(r"([.])", r"\\\\\1", n) for n in names)


BUCKET = "gpufabric_probe_rtt_seconds_bucket"
COUNTERS = {
    "errors": "gpufabric_interface_errors_total",
    "discards": "gpufabric_interface_discards_total",
    "flaps": "gpufabric_link_carrier_changes_total",
    "fec": "gpufabric_fec_uncorrected_codewords_total",
}


class Prometheus:
    """The exporter's counters and the probe mesh's results, over a window, from Prometheus's HTTP API."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TriageReadError(f"--prometheus {url[:80]!r}: give http(s)://HOST:PORT")
        self.url = url.rstrip("/")

    def query(self, expr: str) -> list[dict[str, object]]:
        request = Request("GET", f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}", {})
        try:
            reply = call(request, Bounds(QUERY_TIMEOUT, time.monotonic() + QUERY_TIMEOUT, MAX_ANSWER))
            doc = json_body(reply, request)
        except HttpApiError as exc:
            raise TriageReadError(f"Prometheus at {self.url}: {exc}") from None
        if reply.status != 200 or not isinstance(doc, dict) or doc.get("status") != "success":
            raise TriageReadError(f"Prometheus at {self.url}: answered {reply.status}, not a query result")
        data = doc.get("data")
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, list):
            raise TriageReadError(f"Prometheus at {self.url}: no result list in the answer")
        out = []
        for row in result:
            if not isinstance(row, dict) or not isinstance(row.get("metric"), dict):
                continue
            value = row.get("value")
            try:
                number = float(value[1])  # type: ignore[index]
            except (TypeError, ValueError, IndexError):
                continue
            out.append({**{str(k): str(v) for k, v in row["metric"].items()}, "value": number})
        return out

    def increases(self, ports: Sequence[tuple[str, str]], window: str) -> dict[tuple[str, str], dict[str, float]]:
        devices = _regex(sorted({d for d, _ in ports}))
        wanted = set(ports)
        out: dict[tuple[str, str], dict[str, float]] = {}
        for kind, metric in COUNTERS.items():
            expr = f'sum by (device, port) (increase({metric}{{device=~"{devices}"}}[{window}])) > 0'
            for row in self.query(expr):
                key = (str(row.get("device")), str(row.get("port")))
                if key in wanted:
                    out.setdefault(key, {})[kind] = float(row["value"])  # type: ignore[arg-type]
        return out

    def sessions_down(self, switches: Sequence[str], window: str) -> list[tuple[str, str, str]]:
        devices = _regex(switches)
        found: dict[tuple[str, str], str] = {}
        changed = f'changes(gpufabric_bgp_session_up{{device=~"{devices}"}}[{window}]) > 0'
        for row in self.query(changed):
            found[(str(row.get("device")), str(row.get("peer_device")))] = f"went down and up {row['value']:g} time(s)"
        low = f'min_over_time(gpufabric_bgp_session_up{{device=~"{devices}"}}[{window}]) == 0'
        for row in self.query(low):
            found.setdefault((str(row.get("device")), str(row.get("peer_device"))), "down")
        return [(a, b, what) for (a, b), what in sorted(found.items())]

    def mesh(self, nodes: Sequence[str], window: str) -> list[dict[str, object]]:
        sel = f'{{src=~"{_regex(nodes)}",dst=~"{_regex(nodes)}"}}'
        by = "src, dst, src_leaf, dst_leaf"
        rows: dict[tuple[str, ...], dict[str, object]] = {}
        for key, expr in (
            ("sent", f"sum by ({by}) (increase(gpufabric_probe_sent_total{sel}[{window}]))"),
            ("lost", f"sum by ({by}) (increase(gpufabric_probe_lost_total{sel}[{window}]))"),
            ("p99", f"histogram_quantile(0.99, sum by (le, {by}) (rate({BUCKET}{sel}[{window}])))"),
        ):  # fmt: skip
            for row in self.query(expr):
                pair = tuple(str(row.get(k)) for k in ("src", "dst", "src_leaf", "dst_leaf"))
                rows.setdefault(pair, dict(zip(("src", "dst", "src_leaf", "dst_leaf"), pair, strict=True)))[key] = (
                    round(float(row["value"])) if key != "p99" else row["value"]  # type: ignore[arg-type]
                )
        return [r for r in rows.values() if "sent" in r and "lost" in r and r["sent"]]


# -- the lab ------------------------------------------------------------------------------------------------


def _ns_run(netns: str, *args: str, timeout: float = 10.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "-n", netns, *args], capture_output=True, text=True, timeout=timeout, check=False)


DEV = re.compile(r"\bdev (\S+)")


class LabPaths:
    """Which way each flow went, asked of the lab switches' kernels: `ip route get` with the flow's addresses,
    protocol and ports, as the packet arrives on its leaf's host port (the leaf's ECMP hash, its own). The
    spine's way down to the far leaf is the one link between them."""

    def __init__(
        self,
        found: Footprint,
        parts: Parts,
        ask: Callable[..., subprocess.CompletedProcess[str]] = _ns_run,
        netns: Callable[[str], str] = str,
    ) -> None:
        self.nic = {n.address: n for n in found.nics}
        self.parts, self.ask = parts, ask
        self.netns = netns  # a switch's namespace: its name in the default lab, with the lab's name in a named one

    def _hop(self, leaf: str, iif: str, flow: tuple[str, str, int, int]) -> list[Edge] | None:
        """The flow (src, dst, sport, dport) as it arrives on `leaf`'s port `iif`: its way up and down."""
        src, dst, sport, dport = flow
        done = self.ask(self.netns(leaf), "route", "get", dst, "from", src, "iif", iif, "ipproto", "udp",
                        "sport", str(sport), "dport", str(dport))  # fmt: skip
        found = DEV.search(done.stdout) if done.returncode == 0 else None
        if found is None:
            return None
        up = self.parts.by_port.get((leaf, found.group(1)))
        far = self.nic.get(dst)
        if up is None or up.kind != "link" or far is None:
            return None
        spine, spine_port = (up.peer, up.peer_port) if up.device == leaf else (up.device, up.port)
        down = self.parts.between.get(frozenset((spine, far.leaf)))
        if down is None:
            return None
        d_spine, d_leaf = (down.peer_port, down.port) if down.peer == spine else (down.port, down.peer_port)
        return [(leaf, found.group(1), spine, spine_port), (spine, d_spine, far.leaf, d_leaf)]

    def edges(self, flows: Sequence[FlowSample], dport: int) -> list[dict[Edge, float] | None]:
        out: list[dict[Edge, float] | None] = []
        for f in flows:
            a, b = self.nic.get(f.source), self.nic.get(f.address)
            if a is None or b is None:
                out.append(None)
                continue
            there = self._hop(a.leaf, a.leaf_port, (f.source, f.address, f.sport, dport))
            back = self._hop(b.leaf, b.leaf_port, (f.address, f.source, dport, f.sport))
            out.append(None if there is None or back is None else dict.fromkeys(there + back, 1.0))
        return out


class LabProbe:
    """The active probe in the lab: one agent (gpufabric/telemetry/probe_agent.py) per host, run in that host's
    network namespace with this Python; started together, told to go once every one is ready, stopped once
    every one has answered. Every agent is stopped by its own PID, on every way out."""

    def __init__(self, netns_of: Callable[[str], str]) -> None:
        self.netns_of = netns_of

    def run(self, hosts: dict[str, dict[str, object]], count: int) -> list[FlowSample]:
        interval = max(float(h["interval"]) for h in hosts.values())  # type: ignore[arg-type]
        timeout = max(float(h["timeout"]) for h in hosts.values())  # type: ignore[arg-type]
        with tempfile.TemporaryDirectory(prefix="gpufabric-triage-") as folder:
            agents: dict[str, subprocess.Popen[str]] = {}
            try:
                for node, doc in hosts.items():
                    plan = Path(folder) / f"{node}.json"
                    write_atomic(plan, json_dumps(doc))
                    command = [
                        sys.executable,
                        "-m",
                        "gpufabric.telemetry.probe_agent",
                        "--plan",
                        str(plan),
                        "--node",
                        node,
                    ]
                    argv = ["ip", "netns", "exec", self.netns_of(node), *command, "--count", str(count)]
                    agents[node] = subprocess.Popen(
                        argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, text=True, env=dict(os.environ)
                    )
                for node, agent in agents.items():
                    said = _answer(agent, AGENT_WAIT)
                    if said.get("ready") is not True:
                        raise TriageReadError(f"the probe agent on {node} did not start: {_why(agent, said)}")
                for agent in agents.values():
                    assert agent.stdin is not None
                    agent.stdin.write("go\n")
                    agent.stdin.flush()
                answers = []
                for node, agent in agents.items():
                    said = _answer(agent, count * interval + timeout + AGENT_WAIT)
                    if "peers" not in said:
                        raise TriageReadError(f"the probe agent on {node} gave no results: {_why(agent, said)}")
                    answers.append(said)
                return flows_of(answers)
            finally:
                for agent in agents.values():
                    _stop(agent)


def _answer(agent: subprocess.Popen[str], wait: float) -> dict[str, object]:
    assert agent.stdout is not None
    ready, _, _ = select.select([agent.stdout], [], [], wait)
    line = agent.stdout.readline() if ready else ""
    try:
        doc = json.loads(line) if line else {}
    except ValueError:
        return {"error": line[:200]}
    return doc if isinstance(doc, dict) else {}


def _why(agent: subprocess.Popen[str], said: dict[str, object]) -> str:
    if "error" in said:
        return str(said["error"])
    if agent.poll() is not None and agent.stderr is not None:
        return f"exit {agent.returncode}: {agent.stderr.read()[-300:]}"
    return "no answer in time"


def _stop(agent: subprocess.Popen[str]) -> None:
    with contextlib.suppress(OSError, ValueError):
        if agent.stdin is not None:
            agent.stdin.close()  # end of input: the agent closes its responder and ends
    try:
        agent.wait(5)
    except subprocess.TimeoutExpired:
        agent.kill()
        agent.wait()
    for stream in (agent.stdout, agent.stderr):
        if stream is not None:
            stream.close()
