"""A job's footprint, checked against the plan's own links as the cabling export writes them: the NICs' leaf
ports and cable ids, and the spines and superspines on the shortest paths between the job's leaves (found here
by a plain breadth-first search over the export's fabric rows, apart from the path vector the footprint uses)."""

from __future__ import annotations

import csv
import io
import json
import os
from collections import defaultdict, deque
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpufabric.export.cabling import render as cabling
from gpufabric.jobs.footprint import FootprintError, footprint, slurm_job_nodes
from gpufabric.scheduler.slurm import Slurm
from tests.conftest import example_plan, run_in_process

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "recorded" / "slurm"


def rows(plan):
    return list(csv.DictReader(io.StringIO(cabling(plan))))


def host_cables(plan):
    """(server, interface) -> (leaf, leaf port, cable id), from the cabling export."""
    return {
        (r["a_device"], r["a_port"]): (r["b_device"], r["b_port"], r["cable_id"])
        for r in rows(plan)
        if r["kind"] == "host"
    }


def shortest_between(plan, pairs):
    """The switches (ends left out) and fabric cables on every shortest path between each pair of leaves, by
    breadth-first search over the export's fabric rows."""
    adjacent = defaultdict(set)
    cables = defaultdict(list)
    for r in rows(plan):
        if r["kind"] == "fabric":
            adjacent[r["a_device"]].add(r["b_device"])
            adjacent[r["b_device"]].add(r["a_device"])
            cables[frozenset((r["a_device"], r["b_device"]))].append(r["cable_id"])

    def distances(start):
        seen = {start: 0}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            for there in adjacent[here]:
                if there not in seen:
                    seen[there] = seen[here] + 1
                    queue.append(there)
        return seen

    switches, used = set(), set()
    for a, b in pairs:
        da, db = distances(a), distances(b)
        length = da[b]
        on = {v for v in da if v in db and da[v] + db[v] == length}
        switches |= on - {a, b}
        for u in on:
            for v in adjacent[u]:
                if v in on and da[u] + 1 + db[v] == length:
                    used.update(cables[frozenset((u, v))])
    return switches, used


def same_rail_pairs(f):
    by = defaultdict(list)
    for nic in f.nics:
        if nic.plane.startswith("compute") and nic.leaf not in by[(nic.plane, nic.rail)]:
            by[(nic.plane, nic.rail)].append(nic.leaf)
    return [(a, b) for leaves in by.values() for i, a in enumerate(leaves) for b in leaves[i + 1 :]]


def test_the_default_fabric_nics_leaf_ports_and_cables_are_the_cabling_export_s():
    plan = example_plan(ROOT / "inventory" / "fabric.yml")
    f = footprint(plan, ["gpu01", "gpu03"])
    exported = host_cables(plan)
    assert len(f.nics) == 8  # 2 compute, 1 storage, 1 business NIC each
    for nic in f.nics:
        assert (nic.leaf, nic.leaf_port, nic.cable) == exported[(nic.node, nic.interface)]
    assert {(n.node, n.interface, n.rail) for n in f.nics if n.plane == "compute"} == {
        ("gpu01", "eth1", 1), ("gpu01", "eth2", 2), ("gpu03", "eth1", 1), ("gpu03", "eth2", 2)
    }  # fmt: skip


def test_nodes_of_two_units_cross_the_spines_the_plan_links_give():
    plan = example_plan(ROOT / "inventory" / "fabric.yml")
    f = footprint(plan, ["gpu01", "gpu03"])  # unit 1 and unit 2: every rail's traffic crosses a spine
    switches, cables = shortest_between(plan, same_rail_pairs(f))
    (own,) = f.planes
    assert set(own.spines) == switches == {"cmp-spine1", "cmp-spine2"}
    assert set(own.cables) == cables and len(cables) == 8  # each leaf's two uplinks, 4 leaves
    assert own.superspines == ()


def test_nodes_under_one_leaf_per_rail_cross_no_spine():
    plan = example_plan(ROOT / "inventory" / "fabric.yml")
    (own,) = footprint(plan, ["gpu01", "gpu02"]).planes
    assert own.leaves == ("cmp-su1-leaf1", "cmp-su1-leaf2")
    assert own.spines == () and own.superspines == () and own.cables == ()
    (alone,) = footprint(plan, ["gpu01"]).planes
    assert alone.spines == () and alone.cables == ()


def test_the_storage_path_goes_from_the_job_s_storage_leaf_to_the_storage_servers_leaves():
    plan = example_plan(ROOT / "inventory" / "fabric.yml")
    (way,) = footprint(plan, ["gpu01", "gpu02"]).storage
    assert way.plane == "storage" and way.servers == ("stor01", "stor02")
    assert way.leaves == ("sto-leaf1",) and way.toward == ("sto-leaf2",)
    switches, cables = shortest_between(plan, [("sto-leaf1", "sto-leaf2")])
    assert set(way.spines) == switches == {"sto-spine1", "sto-spine2"}
    assert set(way.cables) == cables


def test_two_pods_of_the_32k_fabric_cross_their_spines_and_the_superspines():
    plan = example_plan(ROOT / "inventory" / "examples" / "three-tier-32k.yml")
    f = footprint(plan, ["gpu0001", "gpu0513"])  # pod 1 and pod 2 (512 nodes a pod)
    switches, cables = shortest_between(plan, same_rail_pairs(f))
    (own,) = f.planes
    assert set(own.spines) | set(own.superspines) == switches
    assert set(own.cables) == cables
    assert all("pod1" in s or "pod2" in s for s in own.spines) and len(own.spines) > 2
    assert own.superspines and all("superspine" in s for s in own.superspines)


def test_a_unit_of_the_superpod_crosses_every_spine_of_its_rail_and_no_other():
    plan = example_plan(ROOT / "inventory" / "examples" / "superpod-4su.yml")
    f = footprint(plan, ["dgx001", "dgx033"])  # units 1 and 2
    switches, cables = shortest_between(plan, same_rail_pairs(f))
    (own,) = f.planes
    assert set(own.spines) == switches and len(switches) > 2
    assert set(own.cables) == cables


def test_a_multiplane_fabric_names_each_nic_s_plane_and_keeps_the_planes_apart():
    plan = example_plan(ROOT / "inventory" / "examples" / "multiplane-b300.yml")
    names = [s.name for s in plan.servers if s.kind == "gpu"]
    f = footprint(plan, [names[0], names[-1]])
    assert {n.plane for n in f.nics} == {"compute-p1", "compute-p2"}
    parts = {c.plane: c for c in f.planes}
    assert set(parts) == {"compute-p1", "compute-p2"}
    for part, c in parts.items():
        prefix = f"cmp-p{part[-1]}-"
        assert all(s.startswith(prefix) for s in (*c.leaves, *c.spines))
    exported = host_cables(plan)
    for nic in f.nics:
        assert (nic.leaf, nic.leaf_port, nic.cable) == exported[(nic.node, nic.interface)]


def test_a_node_the_plan_does_not_hold_is_named():
    plan = example_plan(ROOT / "inventory" / "fabric.yml")
    with pytest.raises(FootprintError, match="gpu09, gpu10"):
        footprint(plan, ["gpu01", "gpu09", "gpu10"])


def test_the_command_line_prints_the_footprint_as_json_and_refuses_an_unknown_node():
    done = run_in_process("gpufabric", "job", "show", "--nodes", "gpu[01,03]", "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["nodes"] == ["gpu01", "gpu03"]
    assert got["planes"][0]["spines"] == ["cmp-spine1", "cmp-spine2"]
    assert got["storage"][0]["servers"] == ["stor01", "stor02"]
    bad = run_in_process("gpufabric", "job", "show", "--nodes", "gpu[01-05]")
    assert bad.returncode == 2 and "gpu05" in bad.stderr and "Traceback" not in bad.stderr
    neither = run_in_process("gpufabric", "job", "show")
    assert neither.returncode == 2 and "JOB id or --nodes" in neither.stderr
    unreadable = run_in_process("gpufabric", "job", "show", "--nodes", "gpu[01-")
    assert unreadable.returncode == 2 and "gpu[01-' is unreadable" in unreadable.stderr


def recorded_slurm():
    """Slurm 22.05's own `squeue --json` answer (tests/recorded/slurm: a job running on gpu01, an ended one on
    gpu02), served to the Slurm reader as its command's output."""
    text = (RECORDED / "squeue-22.05.json").read_text()

    def runner(args):
        assert list(args) == ["squeue", "--json"], args  # read only: no scontrol, no sinfo needed
        return SimpleNamespace(returncode=0, stdout=text, stderr="")

    jobs = {r["job_state"]: str(r["job_id"]) for r in json.loads(text)["jobs"]}
    return Slurm(None, runner), jobs


def test_a_running_slurm_job_s_nodes_come_from_squeue():
    slurm, jobs = recorded_slurm()
    assert slurm_job_nodes(jobs["RUNNING"], slurm) == ["gpu01"]


def test_an_ended_or_malformed_slurm_job_is_refused_with_what_to_do():
    slurm, jobs = recorded_slurm()
    with pytest.raises(FootprintError, match=r"holds no node now.*--nodes"):
        slurm_job_nodes(jobs["COMPLETED"], slurm)
    with pytest.raises(FootprintError, match="not a Slurm job id"):
        slurm_job_nodes("12;rm -rf /", slurm)


def test_job_show_places_a_running_slurm_job_read_through_squeue(tmp_path):
    """`job show JOB` runs `squeue --json` with the given slurm.conf and places the job's nodes. squeue here is a
    STAND-IN script printing Slurm 22.05's recorded answer (the real slurmctld runs in the lab tier only); it
    records its arguments and SLURM_CONF."""
    text = (RECORDED / "squeue-22.05.json").read_text()
    running = next(str(r["job_id"]) for r in json.loads(text)["jobs"] if r["job_state"] == "RUNNING")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    squeue = bin_dir / "squeue"
    squeue.write_text(f'#!/bin/sh\necho "$* $SLURM_CONF" >> {calls}\ncat {RECORDED / "squeue-22.05.json"}\n')
    squeue.chmod(0o755)
    conf = tmp_path / "slurm.conf"
    path = f"{bin_dir}:{os.environ['PATH']}"
    intent = ROOT / "inventory" / "fabric.yml"
    done = run_in_process("gpufabric", "job", "show", running, "--intent", intent, "--slurm-conf", conf, "--json",
                          PATH=path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["job"] == running and got["nodes"] == ["gpu01"]
    assert calls.read_text().split() == ["--json", str(conf)]
    ended = next(str(r["job_id"]) for r in json.loads(text)["jobs"] if r["job_state"] == "COMPLETED")
    # An ended job falls back to sacct: a STAND-IN answering as Slurm 22.05's does without accounting storage,
    # so the test never depends on what the machine's own sacct knows.
    sacct = bin_dir / "sacct"
    sacct.write_text("#!/bin/sh\necho 'Slurm accounting storage is disabled' >&2\nexit 1\n")
    sacct.chmod(0o755)
    done = run_in_process("gpufabric", "job", "show", ended, "--intent", intent, PATH=path)
    assert done.returncode == 2 and "holds no node now" in done.stderr
    assert "accounting storage is disabled" in done.stderr
