"""Slurm's answers as outside input: bytes that are not UTF-8, terminal escapes, hostlists of a billion
names, answers of gigabytes, nested without end, or that never end.

The node records are Slurm 22.05's own (tests/recorded/slurm/): `sinfo-22.05-latin1-*.json` is what a real
slurmctld printed with gpu01's reason set to the Latin-1 bytes `caf\\xe9 DIMM` and gpu02's to a terminal
escape, before and after gpufabric drained gpu03 through the real scontrol. `RecordedSlurm` replays those
records and applies `scontrol update` to them the way slurmctld did, printing a reason's bytes unchanged as
Slurm does. Where a size or a time is the point, the commands are STAND-INS: shell scripts named `sinfo`,
`squeue` or `scontrol` first on PATH (no real Slurm prints 3 GiB), run through gpufabric's real process path.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from gpufabric.maintenance import around
from gpufabric.remediate import Guards, Remediator
from gpufabric.remediate.server import Receiver
from gpufabric.scheduler import Mark, SchedulerError, SchedulerOutputError, drain_nodes, resume_owner
from gpufabric.scheduler.slurm import MAX_HOSTLIST, MAX_JOB_NODES, Slurm, expand_hostlist, read_jobs, read_nodes
from tests.conftest import INVENTORY, example_plan, run_in_process
from tests.remediate.remediate_fakes import alert, payload
from tests.remediate.test_remediate_receiver import post
from tests.services.test_around_change import made  # noqa: F401  (the fixture: a change's switches recorded)

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "slurm"
BEFORE = RECORDED / "sinfo-22.05-latin1-before.json"
AFTER = RECORDED / "sinfo-22.05-latin1-after.json"
SQUEUE_EMPTY = RECORDED / "squeue-22.05-empty.json"
MARK = Mark("gf-20261127T080000Z-1a2b3c", "cmp-su1-leaf1")
REPLACED = "caf\N{REPLACEMENT CHARACTER} DIMM"


def test_the_recorded_answer_holds_slurm_s_raw_latin1_byte_and_json_escape():
    """What the test rests on: Slurm prints the reason's byte as it was given, and escapes ESC itself."""
    raw = BEFORE.read_bytes()
    assert b'"reason": "caf\xe9 DIMM"' in raw and b'"reason": "esc \\u001b[2J here"' in raw
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    assert b"gpufabric gf-20261127T080000Z-1a2b3c: cmp-su1-leaf1" in AFTER.read_bytes()


class RecordedSlurm:
    """Slurm's answers replayed from a recorded `sinfo --json`: node records as slurmctld printed them,
    `scontrol update` applied to them, each reason's bytes printed back unchanged (surrogateescape keeps a
    byte that is not UTF-8 as it was)."""

    def __init__(self, sinfo: Path = BEFORE) -> None:
        self.doc = json.loads(sinfo.read_bytes().decode("utf-8", "surrogateescape"))
        self.ran: list[list[str]] = []

    def node(self, name: str) -> dict[str, object]:
        return next(n for n in self.doc["nodes"] if n["name"] == name)

    def __call__(self, args):
        self.ran.append(list(args))
        if args[0] == "sinfo":
            text = json.dumps(self.doc, indent=2, ensure_ascii=False)
            return subprocess.CompletedProcess(args, 0, text.encode("utf-8", "surrogateescape"), b"")
        if args[0] == "squeue":
            return subprocess.CompletedProcess(args, 0, SQUEUE_EMPTY.read_bytes(), b"")
        fields = dict(a.split("=", 1) for a in args[2:])
        record = self.node(fields["NodeName"])
        if fields["State"] == "DRAIN":
            record["state_flags"], record["reason"] = ["DRAIN"], fields["Reason"]
        else:
            record["state_flags"], record["reason"] = [], ""
        return subprocess.CompletedProcess(args, 0, b"", b"")


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str) -> None:
        self.lines.append(text)

    def warn(self, text: str) -> None:
        self.lines.append(text)


def test_a_latin1_reason_on_one_node_does_not_stop_the_drain_of_another():
    slurm = RecordedSlurm()
    seen = Lines()
    drain = drain_nodes(Slurm(runner=slurm), ["gpu01", "gpu02", "gpu03"], MARK, 0, watcher=seen)
    assert drain.ours == ["gpu03"] and drain.clear
    assert slurm.node("gpu03")["reason"] == MARK.text
    assert [(n.node, n.before) for n in drain.others] == [("gpu01", REPLACED), ("gpu02", "esc \\x1b[2J here")]
    # Neither the byte nor the escape reaches a line a person reads: U+FFFD, and ESC written out.
    assert all("\x1b" not in line for line in seen.lines)
    assert f"slurm: gpu01 was out already ({REPLACED}): left as it is" in seen.lines


def test_a_restart_drains_its_leaf_past_a_latin1_reason_and_puts_its_server_back(made):  # noqa: F811
    """What push, maintenance, restart and upgrade do around a batch (gpufabric/maintenance/around.py), over
    the recorded Slurm: the servers behind cmp-su2-leaf1 (gpu03; gpu04 is not in this Slurm) go out, the
    switch is drained, and gpu03 comes back once the switch is back."""
    recorded = RecordedSlurm()
    slurm = Slurm(runner=recorded)
    slurm.log = []  # type: ignore[attr-defined]  (the harness's switches log beside the scheduler's)
    change, _, _ = made(slurm)
    drainer = around.RollDrainer(change)
    assert drainer.drain(["cmp-su2-leaf1"], "x", "restart") == {"cmp-su2-leaf1": None}
    assert slurm.log[0] == "switch-drain cmp-su2-leaf1"  # type: ignore[attr-defined]
    assert recorded.node("gpu03")["reason"] == f"gpufabric {change.ident.id}: cmp-su2-leaf1"
    assert drainer.undrain(["cmp-su2-leaf1"], "x") == {"cmp-su2-leaf1": None}
    assert recorded.node("gpu03")["state_flags"] == [] and recorded.node("gpu01")["reason"] == "caf\udce9 DIMM"


def test_the_recorded_answer_after_the_drain_reads_as_slurm_meant_it():
    nodes = read_nodes(AFTER.read_bytes().decode("utf-8", "replace"))
    assert nodes["gpu03"].mark == MARK and nodes["gpu01"].reason == REPLACED and nodes["gpu01"].mark is None
    assert nodes["gpu02"].reason == "esc \\x1b[2J here"


def test_a_reason_with_a_lone_surrogate_escape_is_text_that_can_be_written():
    slurm = RecordedSlurm()
    slurm.node("gpu01")["reason"] = "caf\udce9"  # json.dumps writes it as the escape \udce9, valid JSON
    state = Slurm(runner=slurm).nodes(["gpu01"])["gpu01"]
    assert state.reason == "caf\N{REPLACEMENT CHARACTER}"
    assert state.reason.encode("utf-8")  # a log, the trail or a terminal can take it


def test_a_reason_that_only_looks_like_our_mark_after_replacement_is_not_ours():
    slurm = RecordedSlurm()
    slurm.node("gpu01")["reason"] = MARK.text.replace("cmp", "cmp\udce9")
    assert Slurm(runner=slurm).nodes(["gpu01"])["gpu01"].mark is None


def _stand_in(folder: Path, name: str, script: str) -> None:
    """A STAND-IN for one of Slurm's commands: a shell script first on PATH."""
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)


@pytest.fixture
def commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


def test_the_latin1_answer_through_the_process_path_is_read(commands: Path):
    """The path the CLI and the receiver take: the command run, its bytes decoded here (a text-mode read
    stopped at the byte with a UnicodeDecodeError, a traceback)."""
    _stand_in(commands, "sinfo", f"exec cat '{BEFORE}'")
    _stand_in(commands, "squeue", f"exec cat '{SQUEUE_EMPTY}'")
    nodes = Slurm().nodes(["gpu01", "gpu03"])
    assert nodes["gpu01"].reason == REPLACED and not nodes["gpu03"].out


def test_an_answer_larger_than_the_bound_stops_the_command(commands: Path, tmp_path: Path):
    done = tmp_path / "wrote-it-all"
    _stand_in(commands, "sinfo", f"echo $$ > '{tmp_path}/pid'; head -c 64M /dev/zero; touch '{done}'")
    start = time.monotonic()
    with pytest.raises(SchedulerOutputError, match=r"sinfo --json printed more than 1,048,576 bytes"):
        Slurm(max_bytes=1 << 20).nodes(["gpu01"])
    assert time.monotonic() - start < 30  # generous: the file below shows the bound
    time.sleep(0.2)
    assert not done.exists()  # stopped at the bound, not read to its end
    pid = int((tmp_path / "pid").read_text())
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped


def test_the_default_bound_is_the_documented_one():
    assert Slurm().max_bytes == 256 << 20 and Slurm().timeout == 60.0


def test_a_command_that_never_ends_is_stopped_at_the_deadline(commands: Path, tmp_path: Path):
    # A byte now and then: an idle timeout would never fire.
    _stand_in(commands, "sinfo", f"echo $$ > '{tmp_path}/pid'; while :; do printf ' '; sleep 0.2; done")
    start = time.monotonic()
    with pytest.raises(SchedulerError, match=r"sinfo --json did not answer within 1 s: stopped"):
        Slurm(timeout=1.0).nodes(["gpu01"])
    assert time.monotonic() - start < 30  # the 1 s deadline, not forever, on a machine however busy
    time.sleep(0.2)
    pid = int((tmp_path / "pid").read_text())
    assert not Path(f"/proc/{pid}").exists()


def test_a_command_s_error_reaches_the_message_without_its_escapes(commands: Path):
    _stand_in(commands, "scontrol", "printf 'slurm_update error: \\033]0;owned\\007\\033[2J\\377 bad\\n' >&2; exit 1")
    with pytest.raises(SchedulerError) as caught:
        Slurm().take_out("gpu01", MARK)
    said = str(caught.value)
    assert "\x1b" not in said and "\x07" not in said
    assert said.startswith("scontrol update failed (exit 1): slurm_update error: \\x1b]0;owned\\x07")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("gpu[0-999999999]", "names more than 65,536 nodes"),
        ("a[0-999]b[0-999]", "names more than 65,536 nodes"),
        ("gpu[0-" + "9" * 5000 + "]", "not ranges of at most 20 digits"),
        ("gpu[1-" + "9" * 20 + "]", "names more than 65,536 nodes"),
        (",".join(f"n{i}[1-1000]" for i in range(66)), "names more than 65,536 nodes"),
        ("a" + "[1-99999999999999999999]" * 200_000, "names more than 65,536 nodes"),
        ("gpu[" + ",".join(["1"] * 1_000_000) + "]", "names more than 65,536 nodes"),
        (",".join(["a[1-2]"] * 1_000_000), "names more than 65,536 nodes"),
    ],
    ids=["billion", "product", "5000-digits", "20-digits", "items", "200k-brackets", "1M-ranges", "1M-items"],
)
def test_a_hostlist_is_counted_before_it_is_expanded(text: str, says: str):
    tracemalloc.start()
    start = time.process_time()
    try:
        with pytest.raises(SchedulerOutputError, match=says):
            expand_hostlist(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # CPU time, not wall time (other work on the machine does not count): the count stops at the bound, no
    # product of huge numbers is made
    assert time.process_time() - start < 5
    assert peak < 16 << 20  # nothing was expanded (a list of 65,537 names alone is 4 MiB and more)


def test_a_hostlist_as_long_as_an_answer_is_read_at_the_speed_of_a_regular_expression():
    start = time.process_time()
    assert expand_hostlist("x" * (32 << 20)) == ["x" * (32 << 20)]
    with pytest.raises(SchedulerOutputError, match="unreadable"):
        expand_hostlist("x" * (32 << 20) + " ")
    assert time.process_time() - start < 5  # a loop over its characters took minutes


def test_a_hostlist_of_the_bound_expands():
    names = expand_hostlist(f"gpu[1-{MAX_HOSTLIST}]")
    assert len(names) == MAX_HOSTLIST and names[-1] == f"gpu{MAX_HOSTLIST}"


def test_the_jobs_of_one_answer_share_one_bound():
    per_job = f"gpu[1-{MAX_HOSTLIST}]"
    jobs = [{"job_id": i, "job_state": "RUNNING", "nodes": per_job} for i in range(MAX_JOB_NODES // MAX_HOSTLIST + 1)]
    text = json.dumps({"errors": [], "jobs": jobs})
    with pytest.raises(SchedulerOutputError, match=r"squeue --json job 16: field 'nodes': .*1,048,576 names in all"):
        read_jobs(text, {"gpu1"})
    assert read_jobs(json.dumps({"errors": [], "jobs": jobs[:-1]}), {"gpu1"})["gpu1"][-1] == "job 15 running"


@pytest.mark.parametrize("command", ["sinfo", "squeue"])
def test_json_nested_without_end_is_a_named_error(command: str):
    slurm = RecordedSlurm()
    deep = b"[" * 100_000 + b"]" * 100_000

    def runner(args):
        if args[0] == command:
            return subprocess.CompletedProcess(args, 0, deep, b"")
        return slurm(args)

    with pytest.raises(SchedulerOutputError, match=rf"{command} --json: the answer nests deeper than 200 levels"):
        Slurm(runner=runner).nodes(["gpu03"])


def test_a_node_name_no_command_accepts_does_not_stop_the_resume_of_the_others():
    slurm = RecordedSlurm()
    slurm.node("gpu02")["name"] = "gpu02\x1b[2J"  # carrying our mark: resume would refuse the name, and stop
    for name in ("gpu02\x1b[2J", "gpu03"):
        slurm.node(name)["state_flags"], slurm.node(name)["reason"] = ["DRAIN"], MARK.text
    [drain] = resume_owner(Slurm(runner=slurm), MARK.owner)
    assert drain.resumed == ["gpu03"] and slurm.node("gpu03")["state_flags"] == []


def test_scheduler_drain_exits_2_naming_the_answer(commands: Path):
    _stand_in(commands, "sinfo", "head -c 100000 /dev/zero | tr '\\0' '['")
    done = run_in_process(
        "gpufabric", "scheduler", "drain", "--device", "cmp-su1-leaf1", "--slurm", "--no-kubernetes",
        "--job-wait", "0", PATH=os.environ["PATH"],
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "error: sinfo --json: the answer nests deeper than 200 levels" in done.stderr
    assert "internal error" not in done.stderr


def test_scheduler_status_reads_past_a_latin1_reason(commands: Path):
    _stand_in(commands, "sinfo", f"exec cat '{AFTER}'")
    path = os.environ["PATH"]
    done = run_in_process("gpufabric", "scheduler", "status", "--slurm", "--no-kubernetes", "--json", PATH=path)
    assert done.returncode == 0, done.stderr
    assert [(r["node"], r["owner"]) for r in json.loads(done.stdout)] == [("gpu03", MARK.owner)]


@pytest.fixture
def receiver(tmp_path: Path):
    served: list[Receiver] = []

    def serve(runner) -> Receiver:
        plan = example_plan(INVENTORY / "fabric.yml")
        loop = Remediator(
            plan, [Slurm(runner=runner)], Guards(1.0, 1.0, 600.0),
            state_path=tmp_path / "s.json", audit_path=tmp_path / "a.jsonl",
        )  # fmt: skip
        server = Receiver(("127.0.0.1", 0), loop)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        served.append(server)
        return server

    yield serve
    for server in served:
        server.shutdown()
        server.server_close()


NOTIFICATION = json.dumps(payload(alert("GpufabricLinkDown", device="cmp-su2-leaf1", port="swp1"))).encode()


def test_the_receiver_drains_past_another_node_s_latin1_reason(receiver, tmp_path: Path):
    slurm = RecordedSlurm()
    code, body = post(receiver(slurm), NOTIFICATION)
    assert code == 200, body
    assert slurm.node("gpu03")["reason"].startswith("gpufabric remediate: GpufabricLinkDown@")
    trail = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [r["action"] for r in trail if r.get("nodes") == ["gpu03"]] == [
        "intent",
        "drain",
    ]  # the intent recorded before the drain


def test_the_receiver_answers_an_unreadable_slurm_with_its_reason_not_a_traceback(receiver):
    slurm = RecordedSlurm()

    def runner(args):
        if args[0] == "sinfo":
            return subprocess.CompletedProcess(args, 0, b"[" * 100_000, b"")
        return slurm(args)

    code, body = post(receiver(runner), NOTIFICATION)
    assert code == 500 and body["error"] == "sinfo --json: the answer nests deeper than 200 levels"
    assert "internal error" not in body["error"]
