"""`Slurm.sacct(job)`: a job that ended, from Slurm's accounting (`sacct --json -j JOB`), and `job show` / `job
timeline` falling back to it when squeue no longer shows the job running.

sacct answers from slurmdbd, and this machine has none (Debian 12's slurmdbd needs MariaDB; the test cluster,
tests/slurm_cluster.py, runs `AccountingStorageType=accounting_storage/none`). So:

- the real sacct (Debian 12's Slurm 22.05.8) is run here against such a slurm.conf, and what it says (exit 1,
  "Slurm accounting storage is disabled") is what gpufabric reports, exit 2;
- the answers read are NOT recorded: they are WRITTEN from Slurm's job record as Slurm's source declares it,
  one layout per release where they differ: 22.05's src/plugins/openapi/dbv0.0.38/parse.c (`time/start`,
  `time/end` numbers, `state/current` text), 23.02's src/plugins/data_parser/v0.0.39/parsers.c (the same;
  `time.limit` as {set, infinite, number}), 23.11's v0.0.40 on (`state/current` a bit flag array). "None
  assigned" is accounting_storage/mysql/as_mysql_job.c's `nodes` of a job that never ran. A STAND-IN `sacct`
  script on PATH prints them through gpufabric's real process path, beside the STAND-IN squeue printing Slurm
  22.05's recorded, empty answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpufabric.scheduler import SchedulerError, SchedulerOutputError
from gpufabric.scheduler.slurm import AccountedJob, Slurm, read_accounted
from tests.conftest import INVENTORY, run_in_process

ROOT = Path(__file__).resolve().parents[2]
SQUEUE_EMPTY = ROOT / "tests" / "recorded" / "slurm" / "squeue-22.05-empty.json"
START, END, SUBMIT = 1795773600, 1795777200, 1795773000  # 2026-11-27T10:00:00Z, 11:00:00Z (date -u -d @...)


def _meta(plugin: str, major: int, minor: int) -> dict:
    return {
        "plugin": {"type": plugin, "name": f"Slurm OpenAPI {plugin}"},
        "Slurm": {"version": {"major": major, "micro": 1, "minor": minor}, "release": f"{major}.{minor:02}.1"},
    }


def _v0038(job_id: int = 81234, nodes: str = "gpu[01,03]", state: str = "COMPLETED", **times: object) -> dict:
    """Slurm 22.05's sacct --json (openapi/dbv0.0.38): numbers as numbers, the state as text."""
    time = {"elapsed": END - START, "eligible": SUBMIT, "end": END, "start": START, "submission": SUBMIT,
            "suspended": 0, "system": {"seconds": 0, "microseconds": 0}, "limit": 60,
            "total": {"seconds": 3, "microseconds": 0}, "user": {"seconds": 3, "microseconds": 0}}  # fmt: skip
    time.update(times)
    record = {"account": "root", "job_id": job_id, "name": "train", "nodes": nodes, "partition": "gpu",
              "state": {"current": state, "reason": "None"}, "time": time, "user": "alice", "steps": []}  # fmt: skip
    return {"meta": _meta("openapi/dbv0.0.38", 22, 5), "errors": [], "jobs": [record]}


def _v0039() -> dict:
    """Slurm 23.02's (data_parser v0.0.39): the limit as {set, infinite, number}; warnings beside errors."""
    doc = _v0038()
    doc["meta"] = _meta("data_parser/v0.0.39", 23, 2)
    doc["warnings"] = []
    doc["jobs"][0]["time"]["limit"] = {"set": True, "infinite": False, "number": 60}
    return doc


def _v0040() -> dict:
    """Slurm 23.11's on (data_parser v0.0.40 and later): the state a list of flags."""
    doc = _v0039()
    doc["meta"] = _meta("data_parser/v0.0.40", 23, 11)
    doc["jobs"][0]["state"] = {"current": ["COMPLETED"], "reason": "None"}
    return doc


ENDED = AccountedJob(81234, "COMPLETED", ("gpu01", "gpu03"), START, END)


@pytest.mark.parametrize("doc", [_v0038(), _v0039(), _v0040()], ids=["22.05", "23.02", "23.11"])
def test_each_release_s_layout_reads_as_the_same_job(doc):
    assert read_accounted(json.dumps(doc), 81234) == ENDED


def test_times_written_as_numbers_with_flags_and_a_job_still_running():
    newer = _v0040()
    newer["jobs"][0]["time"].update(
        start={"set": True, "infinite": False, "number": START}, end={"set": False, "infinite": False, "number": 0}
    )
    assert read_accounted(json.dumps(newer), 81234).end is None
    running = read_accounted(json.dumps(_v0038(state="RUNNING", end=0)), 81234)
    assert (running.state, running.start, running.end) == ("RUNNING", START, None)
    never = read_accounted(json.dumps(_v0038(nodes="None assigned", state="CANCELLED", start=0, end=0)), 81234)
    assert never == AccountedJob(81234, "CANCELLED", (), None, None)


def test_a_requeued_job_is_its_last_record_and_another_job_is_not_it():
    doc = _v0038()
    later = json.loads(json.dumps(doc["jobs"][0]))
    later["nodes"], later["time"]["start"] = "gpu02", START + 60
    doc["jobs"] += [later, {**later, "job_id": 81235, "nodes": "gpu04"}]
    got = read_accounted(json.dumps(doc), 81234)
    assert (got.nodes, got.start) == (("gpu02",), START + 60)
    with pytest.raises(SchedulerError, match="sacct shows no job 7 "):
        read_accounted(json.dumps(doc), 7)


def _with(path: str, value: object) -> str:
    doc = _v0038()
    where: dict = doc
    *parents, last = path.split(".")
    for key in parents:
        where = where[key][0] if key == "jobs" else where[key]
    where[last] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"errors": [{"error": "Unknown job"}], "jobs": []}', "sacct --json reported"),
        ('{"jobs": {}}', "field 'jobs' missing or not a list of objects"),
        ("[]", "not an object"),
        ('{"jobs": [{"job_id": NaN}]}', "NaN"),
        ("[" * 1000 + "]" * 1000, "nest"),
        (_with("jobs.job_id", "81234"), "field 'job_id' missing or not int"),
        (_with("jobs.nodes", 3), "field 'nodes' missing or not str"),
        (_with("jobs.nodes", "gpu[1-99999999999]"), "field 'nodes': hostlist"),
        (_with("jobs.nodes", "gpu01;rm -rf /"), "field 'nodes': hostlist"),
        (_with("jobs.time", []), "field 'time' missing or not dict"),
        (_with("jobs.time.start", "soon"), "field 'time.start' is not a time"),
        (_with("jobs.time.end", -1), "field 'time.end' is not a time"),
        (_with("jobs.time.end", True), "field 'time.end' is not a time"),
        (_with("jobs.state", "COMPLETED"), "field 'state.current' is not a job state"),
        (_with("jobs.state", {"current": ["COMPLETED", "\x1b[2J"]}), "field 'state.current' is not a job state"),
        (_with("jobs.state", {"current": []}), "field 'state.current' is not a job state"),
    ],
)
def test_an_answer_not_in_slurm_s_layout_is_named(text, message):
    with pytest.raises(SchedulerError, match=None) as caught:
        read_accounted(text, 81234)
    assert message in str(caught.value), str(caught.value)


def _runner(stdout: bytes, returncode: int = 0, stderr: bytes = b""):
    ran: list[list[str]] = []

    def run(args):
        ran.append(list(args))
        return subprocess.CompletedProcess(list(args), returncode, stdout, stderr)

    return run, ran


def test_sacct_asks_for_the_one_job_and_holds_the_answer_to_the_bound():
    run, ran = _runner(json.dumps(_v0038()).encode())
    assert Slurm(runner=run).sacct("81234") == ENDED
    assert ran == [["sacct", "--json", "-j", "81234"]]
    with pytest.raises(SchedulerError, match="is not a Slurm job id"):
        Slurm(runner=run).sacct("81234,1;id")
    assert len(ran) == 1  # refused before any command ran
    big, _ = _runner(b" " * 2048)
    with pytest.raises(SchedulerOutputError, match="printed more than 1,024 bytes"):
        Slurm(runner=big, max_bytes=1024).sacct("1")


def test_the_real_sacct_without_slurmdbd_says_accounting_is_disabled(tmp_path):
    """Debian 12's own sacct (22.05.8) with accounting storage `none`, as the test cluster runs: it cannot answer,
    and says why; that is the error, exit 2, never an empty footprint."""
    if shutil.which("sacct") is None:
        pytest.skip("sacct is not installed (Debian: slurm-client)")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\nSlurmctldHost=localhost(127.0.0.1)\nAccountingStorageType=accounting_storage/none\n"
                    "NodeName=gpu01 State=UNKNOWN\nPartitionName=p Nodes=gpu01 Default=YES\n")  # fmt: skip
    with pytest.raises(SchedulerError, match=r"sacct --json failed \(exit 1\): Slurm accounting storage is disabled"):
        Slurm(conf, timeout=30).sacct("5")
    bin_dir = _stand_ins(tmp_path, None)
    done = run_in_process("gpufabric", "job", "show", "81234", "--intent", INVENTORY / "fabric.yml",
                          "--slurm-conf", conf, PATH=f"{bin_dir}:{os.environ['PATH']}")  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "holds no node now" in done.stderr and "Slurm accounting storage is disabled" in done.stderr


def _stand_ins(tmp_path: Path, sacct: dict | None) -> Path:
    """squeue printing Slurm 22.05's recorded empty answer; sacct printing `sacct` (None: the real one's)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "squeue").write_text(f"#!/bin/sh\ncat {SQUEUE_EMPTY}\n")
    (bin_dir / "squeue").chmod(0o755)
    if sacct is not None:
        (tmp_path / "sacct.json").write_text(json.dumps(sacct))
        (bin_dir / "sacct").write_text(
            f'#!/bin/sh\necho "$*" >> {tmp_path / "sacct.calls"}\ncat {tmp_path / "sacct.json"}\n'
        )
        (bin_dir / "sacct").chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("doc", [_v0038(), _v0040()], ids=["22.05", "23.11"])
def test_an_ended_job_s_timeline_is_its_start_to_its_end(tmp_path, doc):
    bin_dir = _stand_ins(tmp_path, doc)
    done = run_in_process("gpufabric", "job", "timeline", "81234", "--intent", INVENTORY / "fabric.yml",
                          "--audit-log", tmp_path / "none", "--remediation-log", tmp_path / "none", "--json",
                          PATH=f"{bin_dir}:{os.environ['PATH']}")  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert (got["job"], got["nodes"]) == ("81234", ["gpu01", "gpu03"])
    assert (got["since"], got["until"]) == ("2026-11-27T10:00:00.000Z", "2026-11-27T11:00:00.000Z")
    assert datetime.fromtimestamp(START, UTC) == datetime(2026, 11, 27, 10, tzinfo=UTC)
    assert (tmp_path / "sacct.calls").read_text().splitlines() == ["--json -j 81234"]
    assert "job 81234 is not running (sacct: completed, 2026-11-27T10:00:00.000Z to 2026-11-27T11:00:00.000Z)" in (
        done.stderr
    )


def test_an_ended_job_s_footprint_and_a_job_that_never_ran(tmp_path):
    bin_dir = _stand_ins(tmp_path, _v0038())
    path = f"{bin_dir}:{os.environ['PATH']}"
    done = run_in_process("gpufabric", "job", "show", "81234", "--intent", INVENTORY / "fabric.yml", "--json",
                          PATH=path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["nodes"] == ["gpu01", "gpu03"] and any("sacct: completed" in n for n in got["notes"])
    (tmp_path / "sacct.json").write_text(json.dumps(_v0038(nodes="None assigned", state="CANCELLED", start=0, end=0)))
    never = run_in_process("gpufabric", "job", "timeline", "81234", "--intent", INVENTORY / "fabric.yml", PATH=path)
    assert never.returncode == 2 and "never ran (sacct: cancelled" in never.stderr, never.stderr
    (tmp_path / "sacct.json").write_text(_with("jobs.nodes", "gpu[1-99999999]"))
    hostile = run_in_process("gpufabric", "job", "show", "81234", "--intent", INVENTORY / "fabric.yml", PATH=path)
    assert hostile.returncode == 2 and "names more than 65,536 nodes" in hostile.stderr, hostile.stderr
    assert "Traceback" not in never.stderr + hostile.stderr
