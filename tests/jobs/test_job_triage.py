"""`triage job`: suspects on a job's footprint from flows, counters, events and NCCL errors. The readers are fakes
(named so): a probe runner whose flows lose or wait on the links the test chooses, a path reader that hashes each
flow onto one spine by its source port, a counter reader with the test's increases. The tomography, the ranking,
the parts' names and the command's exits are the code under test; the lab test (tests/lab/test_job_triage_lab.py)
runs the same with real switches, real probes and a real Prometheus."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpufabric.jobs.footprint import footprint
from gpufabric.jobs.job_triage import (
    PORT,
    Edge,
    FlowSample,
    Parts,
    Readers,
    TimelineEvent,
    ecmp_edges,
    localise,
    probe_hosts,
    triage_job,
)
from tests.conftest import run_in_process

DEFAULT = Path(__file__).resolve().parents[2] / "inventory" / "fabric.yml"


@pytest.fixture(scope="module")
def job():
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    plan = build_plan(load_intent(str(DEFAULT)))
    return footprint(plan, ["gpu01", "gpu02", "gpu03", "gpu04"])


class FakePaths:
    """A fake path reader: each leaf hashes a flow onto one of its spines by the flow's source port (up) or
    destination port (the answer), the way a switch's L4 hash splits them, deterministically."""

    def __init__(self, found, pinned: dict[str, str] | None = None) -> None:
        self.leaf = {n.address: n.leaf for n in found.nics}
        self.up: dict[str, list] = {}
        for c in found.planes:
            for k in c.links:
                self.up.setdefault(k.a, []).append(k)
        self.pinned = pinned or {}  # leaf -> the one spine it sends everything up to (its other sessions down)

    def _way(self, a: str, b: str, port: int) -> list[Edge]:
        ups = sorted(self.up[a], key=lambda k: k.b)
        k = next(k for k in ups if k.b == self.pinned[a]) if a in self.pinned else ups[port % len(ups)]
        down = next(x for x in self.up[b] if x.b == k.b)
        return [(k.a, k.a_port, k.b, k.b_port), (down.b, down.b_port, down.a, down.a_port)]

    def edges(self, flows: Sequence[FlowSample], dport: int) -> list[dict[Edge, float] | None]:
        out: list[dict[Edge, float] | None] = []
        for f in flows:
            a, b = self.leaf[f.source], self.leaf[f.address]
            out.append(dict.fromkeys(self._way(a, b, f.sport) + self._way(b, a, f.sport // 2), 1.0))
        return out


class FakeProbe:
    """A fake runner: every planned flow's probes, lost on `lossy` (a share) and slowed on `slow` (seconds),
    directed links named (device, port, device, port)."""

    def __init__(self, paths: FakePaths, lossy: dict[Edge, float], slow: dict[Edge, float]) -> None:
        self.paths, self.lossy, self.slow = paths, lossy, slow
        self.asked: dict[str, dict[str, object]] = {}

    def run(self, hosts: dict[str, dict[str, object]], count: int) -> list[FlowSample]:
        self.asked = hosts
        flows = []
        for node, doc in hosts.items():
            for row in doc["probes"]:  # type: ignore[attr-defined]
                for i in range(int(doc["source_ports"])):  # type: ignore[call-overload]
                    flows.append(FlowSample(node, row[1], row[2], row[3], int(doc["source_base"]) + i, count, 0, ()))  # type: ignore[call-overload]
        out = []
        for f, edges in zip(flows, self.paths.edges(flows, PORT), strict=True):
            assert edges is not None
            share = 1.0
            delay = 0.0001
            for e in edges:
                share *= 1 - self.lossy.get(e, 0.0)
                delay += self.slow.get(e, 0.0)
            lost = round(f.sent * (1 - share))
            rtts = tuple(delay + 0.00001 * (i % 3) for i in range(f.sent - lost))
            out.append(FlowSample(f.src, f.source, f.dst, f.address, f.sport, f.sent, lost, rtts))
        return out


class FakeCounters:
    def __init__(self, rose=None, down=None, mesh=None) -> None:
        self.rose, self.down, self.pairs = rose or {}, down or [], mesh or []

    def increases(self, ports, window):
        return {k: v for k, v in self.rose.items() if k in set(ports)}

    def sessions_down(self, switches, window):
        return [d for d in self.down if d[0] in switches]

    def mesh(self, nodes, window):
        return self.pairs


def _edge(found, leaf: str, spine: str, up: bool = True) -> Edge:
    k = next(k for c in found.planes for k in c.links if k.a == leaf and k.b == spine)
    return (k.a, k.a_port, k.b, k.b_port) if up else (k.b, k.b_port, k.a, k.a_port)


def _triage(found, probe=None, paths=None, counters=None, events=None):
    readers = Readers(counters=counters, probe=probe, paths=paths, events=events)
    return triage_job(found, readers, intent=str(DEFAULT), dscp=26, window="5m", count=40)


def test_the_active_probe_covers_every_leaf_pair_of_the_job_across_rails_within_the_bound(job):
    hosts = probe_hosts(job, 26)
    assert sorted(hosts) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    leaf = {n.address: n.leaf for n in job.nics}
    pairs = {frozenset((row[6], row[7])) for doc in hosts.values() for row in doc["probes"]}
    leaves = {n.leaf for n in job.nics if n.plane == "compute"}
    assert pairs == {frozenset((a, b)) for a in leaves for b in leaves if a != b}  # rails crossed too
    for doc in hosts.values():
        assert all(leaf[row[1]] != leaf[row[3]] for row in doc["probes"])
        assert len(doc["probes"]) <= 64
        assert doc["port"] == PORT and doc["format"] == "gpufabric-probe-plan/1"


def test_a_lossy_link_and_a_slow_link_are_the_first_two_suspects_by_their_plan_names(job):
    paths = FakePaths(job)
    lossy = _edge(job, "cmp-su1-leaf1", "cmp-spine1")
    slow = _edge(job, "cmp-su2-leaf2", "cmp-spine2", up=False)  # the spine's way down to the leaf
    probe = FakeProbe(paths, {lossy: 0.05, lossy[2:] + lossy[:2]: 0.05}, {slow: 0.02})
    result = _triage(job, probe=probe, paths=paths)
    first, second = result.suspects[:2]
    named = {(s.part.device, s.part.port, s.part.peer, s.part.peer_port) for s in (first, second)}
    assert named == {lossy, slow[2:] + slow[:2]}  # a link named by its lower end first, as the plan does
    by = {s.part.device: s for s in (first, second)}
    assert "lost" in by["cmp-su1-leaf1"].evidence[0].said
    assert "median round trip" in by["cmp-su2-leaf2"].evidence[0].said
    # The fake's answers take another spine than their probes: the shaped direction is told, and named.
    assert f"{slow[0]} {slow[1]} -> {slow[2]} {slow[3]}" in by["cmp-su2-leaf2"].evidence[0].said
    assert all(s.confirm and s.confirm[0].startswith("nornir validate") for s in (first, second))
    assert first.confirm[0].endswith("--counter-window 300")  # the 5-minute window the evidence was read over
    doc = result.as_dict()
    assert doc["suspects"][0]["kind"] == "link" and doc["suspects"][0]["cable"].startswith("cmp-")
    assert doc["probe"]["source"] == "active" and doc["probe"]["paths_known"] == doc["probe"]["flows"]


class MovingPaths:
    """A fake path reader whose routes change once it has been read `after` times: a BGP session reset while the
    probe runs, the leaf sending everything over its one spine left, then over both again."""

    def __init__(self, during: FakePaths, later: FakePaths, after: int = 1) -> None:
        self.during, self.later, self.after, self.reads = during, later, after, 0

    def edges(self, flows: Sequence[FlowSample], dport: int) -> list[dict[Edge, float] | None]:
        self.reads += 1
        return (self.during if self.reads <= self.after else self.later).edges(flows, dport)


def test_flows_whose_path_moved_while_the_probe_ran_are_left_out_and_said(job):
    """Each flow's path is read before the probe and after it: a flow whose path differs crossed either, so it is
    left out rather than placed on the later one. Here cmp-su1-leaf2's session to cmp-spine1 is down while the
    probe runs: every flow it sends goes over cmp-spine2 and is slowed on cmp-spine2's way down to
    cmp-su2-leaf2. After the probe its routes are whole again; read then alone, half of those slow flows would
    be placed on cmp-spine1's way down instead."""
    slow = _edge(job, "cmp-su2-leaf2", "cmp-spine2", up=False)
    during = FakePaths(job, pinned={"cmp-su1-leaf2": "cmp-spine2"})
    paths = MovingPaths(during, FakePaths(job))
    result = _triage(job, probe=FakeProbe(during, {}, {slow: 0.02}), paths=paths)
    assert paths.reads == 2  # before the probe, and after it
    flows = FakeProbe(during, {}, {}).run(probe_hosts(job, 26), 40)
    pairs = zip(flows, during.edges(flows, PORT), FakePaths(job).edges(flows, PORT), strict=True)
    moved = [f for f, a, b in pairs if a != b]
    behind = {n.address for n in job.nics if n.leaf == "cmp-su1-leaf2"}
    assert moved and all(behind & {f.source, f.address} for f in moved)  # its probes or their answers
    assert result.probed["paths_moved"] == len(moved)
    assert result.probed["paths_known"] == result.probed["flows"] - len(moved)
    [note] = [n for n in result.notes if "took another path after the probe than before it" in n]
    assert note.startswith(f"{len(moved)} of {result.probed['flows']} flow(s)")
    first = result.suspects[0].part
    assert (first.device, first.port, first.peer, first.peer_port) == slow[2:] + slow[:2]
    # Routes that stay put: nothing set aside, nothing said.
    steady = _triage(job, probe=FakeProbe(FakePaths(job), {}, {slow: 0.02}), paths=FakePaths(job))
    assert steady.probed["paths_moved"] == 0 and not [n for n in steady.notes if "another path" in n]


def test_a_clean_fabric_has_no_suspect(job):
    paths = FakePaths(job)
    result = _triage(job, probe=FakeProbe(paths, {}, {}), paths=paths, counters=FakeCounters())
    assert result.suspects == []
    assert result.probed["lost"] == 0


def test_without_paths_the_plan_s_equal_cost_paths_weigh_a_flow_and_say_so(job):
    paths = FakePaths(job)
    lossy = _edge(job, "cmp-su1-leaf1", "cmp-spine1")
    probe = FakeProbe(paths, {lossy: 0.2}, {})
    result = _triage(job, probe=probe)  # no path reader: the plan's ECMP shares
    assert result.suspects, result.sources
    assert any("equal-cost" in n for n in result.notes)
    assert {result.suspects[0].part.device, result.suspects[0].part.peer} & {"cmp-su1-leaf1"}


def test_counters_name_a_nic_and_a_bgp_session_of_the_footprint_and_nothing_outside_it(job):
    nic = next(n for n in job.nics if n.node == "gpu03" and n.plane == "compute" and n.rail == 2)
    counters = FakeCounters(
        rose={(nic.leaf, nic.leaf_port): {"errors": 12.0}, ("sto-leaf1", "swp1"): {"errors": 5.0}},
        down=[("cmp-spine1", "cmp-su1-leaf2", "went down and up 1 time(s)"), ("biz-spine1", "biz-leaf1", "down")],
    )
    result = _triage(job, counters=counters)
    kinds = {(s.part.kind, s.part.device) for s in result.suspects}
    assert kinds == {("nic", "gpu03"), ("bgp", "cmp-su1-leaf2")}
    nic_suspect = next(s for s in result.suspects if s.part.kind == "nic")
    assert nic_suspect.as_dict()["interface"] == nic.interface and nic_suspect.as_dict()["leaf_port"] == nic.leaf_port
    assert "12 errored frames" in nic_suspect.evidence[0].said


def test_timeline_events_on_the_footprint_are_evidence_with_their_time(job):
    link = next(k for c in job.planes for k in c.links)
    events = [
        TimelineEvent("2026-11-27T10:00:00Z", "link", link.a, link.a_port, "", "carrier down"),
        TimelineEvent("2026-11-27T10:00:05Z", "push", "biz-leaf1", "", "", "not the job's"),
    ]
    result = _triage(job, events=events)
    assert len(result.suspects) == 1
    assert result.suspects[0].evidence[0].time == "2026-11-27T10:00:00Z"
    assert result.suspects[0].part.kind == "link"


def test_the_mesh_clean_is_used_without_probing(job):
    leaves = {n.node: n.leaf for n in job.nics if n.plane == "compute" and n.rail == 1}
    mesh = [{"src": "gpu01", "dst": "gpu03", "src_leaf": leaves["gpu01"], "dst_leaf": leaves["gpu03"],
             "sent": 300, "lost": 0, "p99": 0.00008}]  # fmt: skip

    class Refuse:
        def run(self, hosts, count):
            raise AssertionError("probed though the mesh had clean data")

    result = _triage(job, probe=Refuse(), counters=FakeCounters(mesh=mesh))
    assert result.probed["source"] == "mesh" and result.suspects == []
    planned = ecmp_edges(job, {n.address: n.leaf for n in job.nics})
    assert planned.edges([FlowSample("gpu01", "10.99.0.1", "gpu03", "10.99.0.2", 1, 1, 0, ())], PORT) == [None]


def test_the_parts_are_the_footprint_s(job):
    parts = Parts(job)
    assert {p.kind for p in parts.links} == {"link"} and all(p.cable for p in parts.links)
    assert {p.device for p in parts.nics} == {"gpu01", "gpu02", "gpu03", "gpu04"}


def test_the_command_exits_0_with_nothing_read_and_2_on_bad_input(tmp_path):
    done = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu[01-04]", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["suspects"] == []
    bad = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu[01-04],nosuch")
    assert bad.returncode == 2 and "nosuch" in bad.stderr
    both = run_in_process("gpufabric", "triage", "job", "81234", "--nodes", "gpu01")
    assert both.returncode == 2
    timeline = tmp_path / "timeline.json"
    timeline.write_text(json.dumps({"events": [{"time": "t", "kind": "rm -rf", "device": "x"}]}))
    wrong = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu01", "--timeline", str(timeline))
    assert wrong.returncode == 2 and "events[0].kind" in wrong.stderr and "Traceback" not in wrong.stderr
    window = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu01", "--window", "5 minutes")
    assert window.returncode == 2


def test_the_command_exits_4_naming_a_timeline_event_s_link(tmp_path, job):
    link = next(k for c in job.planes for k in c.links)
    timeline = tmp_path / "timeline.json"
    event = {"time": "2026-11-27T10:00:00Z", "kind": "link", "device": link.b, "port": link.b_port,
             "node": None, "summary": "carrier down", "source": "syslog"}  # fmt: skip
    timeline.write_text(json.dumps({"job": None, "events": [event], "unread": []}))
    done = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu[01-04]", "--timeline", str(timeline), "--json")
    assert done.returncode == 4, done.stderr
    first = json.loads(done.stdout)["suspects"][0]
    assert (first["device"], first["port"], first["peer"], first["peer_port"]) == (
        link.a,
        link.a_port,
        link.b,
        link.b_port,
    )


class _Answers:
    """A Prometheus stand-in on loopback (a fake, named so): answers each query with what the test set."""

    def __init__(self, answer) -> None:
        import http.server
        import threading

        outer = self
        self.queries: list[str] = []
        self.answer = answer

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                from urllib.parse import parse_qs, urlsplit

                query = parse_qs(urlsplit(self.path).query)["query"][0]
                outer.queries.append(query)
                body = outer.answer(query)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _vector(rows) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": rows}}).encode()


def test_prometheus_s_counters_name_the_footprint_s_port_and_a_hostile_answer_exits_2(job):
    nic = next(n for n in job.nics if n.node == "gpu01" and n.plane == "compute" and n.rail == 1)

    def answer(query: str) -> bytes:
        if "gpufabric_interface_errors_total" in query:
            return _vector([{"metric": {"device": nic.leaf, "port": nic.leaf_port}, "value": [1, "7"]},
                            {"metric": {"device": nic.leaf, "port": "swp30"}, "value": [1, "9"]}])  # fmt: skip
        return _vector([])

    good = _Answers(answer)
    try:
        done = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu[01-04]", "--prometheus", good.url, "--json")
    finally:
        good.close()
    assert done.returncode == 4, done.stderr
    (suspect,) = json.loads(done.stdout)["suspects"]  # swp30 is on no footprint: not a suspect
    assert (suspect["kind"], suspect["node"], suspect["leaf_port"]) == ("nic", "gpu01", nic.leaf_port)
    assert "7 errored frames" in suspect["evidence"][0]["said"]
    assert any('device=~"' in q and "cmp-su1-leaf1" in q for q in good.queries)
    for hostile in (b"not json", b'{"status": "error"}', b'{"status": "success", "data": {"result": 5}}'):
        bad = _Answers(lambda query, body=hostile: body)
        try:
            done = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu[01-04]", "--prometheus", bad.url)
        finally:
            bad.close()
        assert done.returncode == 2, (hostile, done.stderr)
        assert "Prometheus at" in done.stderr and "Traceback" not in done.stderr


def test_the_job_s_nccl_errors_name_the_nic_in_every_failing_pair(tmp_path):
    # NCCL 2.22-2.27's completion line (src/transport/net_ib.cc), as tests/jobs/test_triage.py writes it.
    def line(host: str, local: str, remote: str) -> str:
        return (f"[2026-11-27 07:58:12] {host}:5120:5301 [0] transport/net_ib.cc:2458 NCCL WARN NET/IB: Got "
                f"completion from peer 10.12.0.5<40613> with status=12 opcode=0 len=0 vendor err 129 (Send) "
                f"localGid ::ffff:{local} remoteGids::ffff:{remote} hca mlx5_0")  # fmt: skip

    log = tmp_path / "slurm-81234.out"
    log.write_text(
        "\n".join(
            [
                line("gpu01", "10.10.0.1", "10.10.0.9"),
                line("gpu03", "10.10.0.9", "10.10.0.1"),
                line("gpu02", "10.10.0.3", "10.10.0.1"),
            ]
        )
        + "\n"
    )
    done = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu[01-04]", "--nccl", str(log), "--json")
    assert done.returncode == 4, done.stderr
    (suspect,) = json.loads(done.stdout)["suspects"]
    assert (suspect["kind"], suspect["node"], suspect["interface"], suspect["cable"]) == (
        "nic", "gpu01", "eth1", "cmp-000009"
    )  # fmt: skip
    assert suspect["evidence"][0]["source"] == "nccl"
    missing = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu01", "--nccl", str(tmp_path / "none.log"))
    assert missing.returncode == 2 and "none.log" in missing.stderr


def test_a_named_lab_s_paths_are_asked_of_that_lab_s_switch_namespaces(job):
    """`triage job --lab-name N`: each flow's way is asked of the kernel in lab N's namespace of its leaf (the
    switch's name with the lab's before it), not of the default lab's switch of the same name. The kernel's
    answer is a fake here (named so): the leaf's first uplink in the plan."""
    import subprocess

    from gpufabric.fleet.lab.names import LabNames
    from gpufabric.jobs.triage_readers import LabPaths

    names, parts = LabNames("w1"), Parts(job)
    asked: list[str] = []

    def ask(netns: str, *args: str) -> subprocess.CompletedProcess[str]:
        asked.append(netns)
        leaf = names.switch_of(netns)
        up = next((p for p in parts.links if leaf in (p.device, p.peer)), None)
        port = "" if up is None else up.port if up.device == leaf else up.peer_port
        return subprocess.CompletedProcess(args, 0 if up else 1, f"{args[2]} via inet6 fe80::1 dev {port} uid 0\n", "")

    a = job.nics[0]
    b = next(n for n in job.nics if n.plane == a.plane and n.leaf != a.leaf)
    flow = FlowSample(a.node, a.address, b.node, b.address, 40000, 1, 0, (0.001,))
    (way,) = LabPaths(job, parts, ask=ask, netns=names.netns).edges([flow], PORT)
    assert (
        sorted(set(asked))
        == sorted({names.netns(a.leaf), names.netns(b.leaf)})
        == sorted({f"w1_{a.leaf}", f"w1_{b.leaf}"})
    )
    assert way and {e[0] for e in way} >= {a.leaf, b.leaf}, way
    wrong = run_in_process("gpufabric", "triage", "job", "--nodes", "gpu01", "--lab-name", "Not_A_Lab")
    assert wrong.returncode == 2 and "--lab-name" in wrong.stderr and "Traceback" not in wrong.stderr


def test_the_slow_link_is_the_one_every_delayed_flow_crosses_not_one_most_of_its_flows_are_delayed_on():
    """A full queue delays every flow that crosses it. Another link crossed by three of the four delayed flows (the
    slowest three) and by nothing else has the higher median: it is still the link all four cross that is named,
    as it explains them all (a near tie the medians alone had settled by which delayed flows were slowest)."""
    slow, other, clean = ("leaf2", "p2", "spine2", "p1"), ("leaf2", "p1", "spine1", "p1"), ("leaf1", "p1", "s1", "p1")

    def flow(sport: int, rtt: float) -> FlowSample:
        return FlowSample("a", "10.0.0.1", "b", "10.0.0.2", sport, 50, 0, (rtt,) * 50)

    delayed = [flow(1, 0.200), flow(2, 0.251), flow(3, 0.252), flow(4, 0.253)]
    rest = [flow(10 + i, 0.0005) for i in range(6)]
    paths = [{slow: 1.0, clean: 1.0}] + [{slow: 1.0, other: 1.0, clean: 1.0}] * 3 + [{clean: 1.0}] * 6
    found = [s for s in localise(delayed + rest, paths) if s.kind == "delay"]
    assert [s.edge for s in found] == [slow], found
