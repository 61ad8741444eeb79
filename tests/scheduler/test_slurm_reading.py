"""Slurm's answers read strictly: `sinfo --json` and `squeue --json` in the OpenAPI v0.0.38 form of
Slurm 22.05 (Debian 12; the node record below is the one a real slurmctld printed, trimmed of fields
not read), hostlists, and the mark in a node's reason."""

from __future__ import annotations

import json
import subprocess

import pytest

from gpufabric.scheduler import Mark, SchedulerError, SchedulerOutputError
from gpufabric.scheduler.slurm import Slurm, expand_hostlist, read_jobs, read_nodes

META = {
    "plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
    "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"},
}
OURS = "gpufabric gf-20261125T140000Z-abc123: cmp-su1-leaf1"


def node(name, state="idle", flags=(), reason="", by="root"):
    return {
        "name": name,
        "state": state,
        "state_flags": list(flags),
        "reason": reason,
        "reason_changed_at": 1795615807 if reason else 0,
        "reason_set_by_user": by,
        "address": "10.254.42.11",
        "hostname": name,
        "partitions": ["all"],
        "alloc_cpus": 0,
        "cpus": 1,
    }


def sinfo(*nodes):
    return json.dumps({"meta": META, "errors": [], "nodes": list(nodes)})


def job(job_id, state, nodes):
    return {"job_id": job_id, "job_state": state, "nodes": nodes, "name": "sleep", "user_name": "root"}


def squeue(*jobs):
    return json.dumps({"meta": META, "errors": [], "jobs": list(jobs)})


def test_the_mark_is_written_and_read_back_exactly():
    mark = Mark("gf-20261125T140000Z-abc123", "cmp-su1-leaf1")
    assert mark.text == OURS
    assert Mark.parse(OURS) == mark
    assert Mark.parse("gpufabric gf-1: sto-leaf1,cmp-su1-leaf1") == Mark("gf-1", "sto-leaf1,cmp-su1-leaf1")


@pytest.mark.parametrize(
    "reason",
    [
        "",
        "bad DIMM",
        f"{OURS} and a note",
        f" {OURS}",
        OURS.replace("gpufabric", "GPUFABRIC"),
        "gpufabric : cmp-su1-leaf1",
        "gpufabric gf-1:cmp-su1-leaf1",
        "gpufabric gf-1: cmp su1",
        f"{OURS} [root@2026-11-25T14:10:07]",
    ],
)
def test_a_reason_that_only_resembles_ours_is_not_ours(reason):
    assert Mark.parse(reason) is None


@pytest.mark.parametrize(
    "owner,subject", [("", "leaf"), ("gf 1", "leaf"), ("gf-1", ""), ("gf-1", "a b"), ("gf-1", 'x"y')]
)
def test_a_mark_that_could_not_be_read_back_is_refused(owner, subject):
    with pytest.raises(SchedulerError):
        Mark(owner, subject)


def test_nodes_are_read_with_state_reason_and_who():
    got = read_nodes(sinfo(node("gpu01", "idle", ["DRAIN"], OURS), node("gpu02", "mixed"), node("gpu03", "idle")))
    assert got["gpu01"].out and got["gpu01"].mark == Mark("gf-20261125T140000Z-abc123", "cmp-su1-leaf1")
    assert got["gpu01"].set_by == "root"
    assert not got["gpu02"].out and got["gpu02"].holders == ("node mixed",)
    assert got["gpu03"].holders == () and got["gpu03"].mark is None


def test_a_node_drained_by_a_person_carries_no_mark():
    got = read_nodes(sinfo(node("gpu01", "allocated", ["DRAIN"], "bad DIMM", by="alice")))["gpu01"]
    assert got.out and got.mark is None and got.set_by == "alice"
    assert got.holders == ("node allocated+DRAIN",)


def test_jobs_hold_the_nodes_they_run_on():
    got = read_jobs(
        squeue(
            job(7, "RUNNING", "gpu[01-02]"),
            job(8, "PENDING", ""),
            job(9, "COMPLETED", "gpu03"),
            job(10, "COMPLETING", "gpu03,stor01"),
        )
    )
    assert got == {
        "gpu01": ["job 7 running"],
        "gpu02": ["job 7 running"],
        "gpu03": ["job 10 completing"],
        "stor01": ["job 10 completing"],
    }


@pytest.mark.parametrize(
    "text,names",
    [
        ("gpu01", ["gpu01"]),
        ("gpu[01-03,07]", ["gpu01", "gpu02", "gpu03", "gpu07"]),
        ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),
        ("a[1-2]b[1-2]", ["a1b1", "a1b2", "a2b1", "a2b2"]),
        ("gpu[01-02],stor01", ["gpu01", "gpu02", "stor01"]),
        ("", []),
    ],
)
def test_hostlists_expand_as_slurm_writes_them(text, names):
    assert expand_hostlist(text) == names


@pytest.mark.parametrize(
    "text", ["gpu[01-", "gpu[03-01]", "gpu[a-b]", "gpu]", "gpu[[1]]", ",gpu01", "gpu 01", "gpu[0-99999999]"]
)
def test_an_unreadable_hostlist_is_an_error(text):
    with pytest.raises(SchedulerOutputError):
        expand_hostlist(text)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        json.dumps({"meta": META, "errors": []}),
        json.dumps({"meta": META, "errors": [], "nodes": [{"name": "gpu01"}]}),
        json.dumps({"meta": META, "errors": [], "nodes": [{**node("gpu01"), "state_flags": "DRAIN"}]}),
        json.dumps({"meta": META, "errors": [], "nodes": [{**node("gpu01"), "reason": None}]}),
        json.dumps({"meta": META, "errors": [], "nodes": [{**node("gpu01"), "state_flags": [3]}]}),
    ],
)
def test_a_node_answer_missing_a_field_is_an_error(text):
    with pytest.raises(SchedulerOutputError):
        read_nodes(text)


def test_slurm_s_own_errors_are_reported():
    with pytest.raises(SchedulerError, match="Unable to contact"):
        read_nodes(json.dumps({"meta": META, "errors": [{"error": "Unable to contact slurm controller"}], "nodes": []}))


@pytest.mark.parametrize("bad", [{"job_id": "7"}, {"job_state": None}, {"nodes": 3}, {"job_id": True}])
def test_a_job_answer_missing_a_field_is_an_error(bad):
    with pytest.raises(SchedulerOutputError):
        read_jobs(squeue({**job(7, "RUNNING", "gpu01"), **bad}))


class Commands:
    """Slurm's three commands answering from a table, recording what was run."""

    def __init__(self, nodes):
        self.nodes = {n["name"]: n for n in nodes}
        self.jobs = []
        self.ran = []

    def __call__(self, args):
        self.ran.append(list(args))
        out = ""
        if args[0] == "sinfo":
            out = sinfo(*self.nodes.values())
        elif args[0] == "squeue":
            out = squeue(*self.jobs)
        elif args[:2] == ["scontrol", "update"]:
            fields = dict(a.split("=", 1) for a in args[2:])
            target = self.nodes[fields["NodeName"]]
            if fields["State"] == "DRAIN":
                target["state_flags"], target["reason"] = ["DRAIN"], fields["Reason"]
            else:
                target["state_flags"], target["reason"] = [], ""
        return subprocess.CompletedProcess(args, 0, out, "")


def test_drain_and_resume_are_the_scontrol_commands_with_our_reason():
    commands = Commands([node("gpu01"), node("gpu02", "idle", ["DRAIN"], "bad DIMM")])
    slurm = Slurm(runner=commands)
    mark = Mark("gf-20261125T140000Z-abc123", "cmp-su1-leaf1")
    slurm.take_out("gpu01", mark)
    assert ["scontrol", "update", "NodeName=gpu01", "State=DRAIN", f"Reason={OURS}"] in commands.ran
    assert slurm.put_back("gpu02", mark) is False  # a person's drain is never resumed
    assert slurm.put_back("gpu01", mark) is True
    assert commands.ran[-1] == ["scontrol", "update", "NodeName=gpu01", "State=RESUME"]
    assert [s.name for s in slurm.marked()] == []


def test_a_node_name_that_is_not_one_never_reaches_scontrol():
    commands = Commands([node("gpu01")])
    with pytest.raises(SchedulerError):
        Slurm(runner=commands).take_out("gpu01 State=RESUME", Mark("gf-1", "leaf"))
    assert not [r for r in commands.ran if r[0] == "scontrol"]


class Clock:
    def __init__(self, on_sleep=None):
        self.now, self.on_sleep = 0.0, on_sleep

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        if self.on_sleep:
            self.on_sleep(self.now)


def test_the_service_waits_for_slurm_s_jobs_then_refuses_or_goes(default_plan):
    """The service's rules over Slurm's commands (the real daemons: tests/lab/test_scheduler_slurm.py)."""
    from gpufabric.scheduler import drain_for, resume

    commands = Commands([node("gpu01", "allocated"), node("gpu02", "idle", ["DRAIN"], "bad DIMM")])
    commands.jobs = [job(41, "RUNNING", "gpu01")]
    slurm, clock = Slurm(runner=commands), Clock()
    drain = drain_for(slurm, default_plan, "cmp-su1-leaf1", "gf-1", 10, clock=clock, sleep=clock.sleep)
    assert drain.refused and drain.holding == {"gpu01": ("job 41 running",)} and drain.resumed == ["gpu01"]
    assert commands.nodes["gpu01"]["state_flags"] == [] and commands.nodes["gpu02"]["reason"] == "bad DIMM"

    def job_ends(now):
        if now >= 6:
            commands.jobs, commands.nodes["gpu01"]["state"] = [], "idle"

    clock = Clock(job_ends)
    drain = drain_for(slurm, default_plan, "cmp-su1-leaf1", "gf-2", 10, clock=clock, sleep=clock.sleep)
    assert drain.clear and drain.waited == 6 and drain.ours == ["gpu01"]
    assert commands.nodes["gpu01"]["reason"] == "gpufabric gf-2: cmp-su1-leaf1"
    resume(slurm, drain)
    assert commands.nodes["gpu01"]["state_flags"] == [] and commands.nodes["gpu02"]["state_flags"] == ["DRAIN"]
