"""`gpufabric job timeline`: the push audit trail, the remediation trail, Alertmanager's alerts and FRR's log
lines on the default fabric's job gpu[01,03] (leaves cmp-su1/su2-leaf1/2, spines cmp-spine1/2, storage and
business leaves), merged in time order within the job's window.

FRR's lines are written from its format strings (FRR's source, bgpd/bgp_fsm.c: `%%ADJCHANGE: neighbor %pBP
in vrf %s Up` and `... Down %s`, %pBP printed by bgpd/bgpd.c printfrr_bp as `host(hostname)`; zebra/if_netlink.c:
`Intf %s(%u) has come UP` / `has gone DOWN`; lib/zlog.c's `[XXXXX-XXXXX]` unique id; lib/zlog_targets.c's log
file prefix), in the layouts a line reaches a file in: the lab's syslog (gpufabric/lab/syslog.py), RFC 3339
syslog, FRR's own `log file`. Alertmanager's hostile answers come from a loopback HTTP server
(tests/http_doubles.py); the real Alertmanager's own answer is read in test_timeline_alertmanager_live.py."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from http_doubles import Reply, redirect, serve

from gpufabric.jobs.footprint import footprint
from gpufabric.jobs.timeline import Sources, TimelineError, Window, event_of, slurm_start, timeline, zone_of
from tests.conftest import INVENTORY, example_plan, run_in_process

ROOT = Path(__file__).resolve().parents[2]
SINCE = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
UNTIL = datetime(2026, 11, 27, 11, 0, tzinfo=UTC)
NODES = ["gpu01", "gpu03"]


def _plan():
    return example_plan(INVENTORY / "fabric.yml")


def _audit(path: Path) -> Path:
    def rec(time: str, switch: str, status: str, **extra: object) -> str:
        base = {"time": time, "push_id": "gf-20261127T100000Z-abc123", "switch": switch, "status": status,
                "reason": "", "dry_run": False, "os_user": "alice", "controller": "ctl1"}  # fmt: skip
        return json.dumps({**base, **extra})

    lines = [
        rec("2026-11-27T10:05:00.000Z", "cmp-su1-leaf1", "changed"),
        rec("2026-11-27T10:05:01.000Z", "cmp-su3-leaf1", "changed"),  # not on the footprint
        rec("2026-11-27T10:05:02.000Z", "cmp-su2-leaf1", "unchanged"),  # touched nothing
        rec("2026-11-27T10:05:03.000Z", "cmp-su2-leaf2", "changed", dry_run=True),  # a dry run
        rec("2026-11-27T09:59:59.000Z", "cmp-spine1", "changed"),  # before the window
        rec("2026-11-27T10:20:00.000Z", "cmp-spine2", "drained", mechanism="bgp"),
        rec("2026-11-27T10:21:00.000Z", "cmp-spine2,cmp-spine1", "scheduler-drained", nodes=["gpu01", "gpu05"]),
        rec("2026-11-27T10:30:00.000Z", "cmp-spine2", "restart done"),
        rec("2026-11-27T10:40:00.000Z", "cmp-spine1", "upgrade done"),
        rec("2026-11-27T11:00:01.000Z", "cmp-spine1", "changed"),  # after the window
        '{"time": "2026-11-27T10:50:00.000Z", "switch": "cmp-spi',  # a torn last line
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _remediation(path: Path) -> Path:
    def rec(time: str, action: str, nodes: list[str], part: str) -> str:
        alert = {"name": "GpufabricLinkDown", "status": "firing", "fingerprint": "0123456789abcdef",
                 "starts_at": time, "labels": {}}  # fmt: skip
        return json.dumps({"time": time, "owner": "remediate", "action": action, "alert": alert, "part": part,
                           "nodes": nodes, "scheduler": "slurm", "detail": "", "dry_run": False})  # fmt: skip

    lines = [
        rec("2026-11-27T10:10:00.000Z", "intent", ["gpu01"], "cmp-su1-leaf1:swp1"),  # its outcome follows
        rec("2026-11-27T10:10:01.000Z", "drain", ["gpu01"], "cmp-su1-leaf1:swp1"),
        rec("2026-11-27T10:10:02.000Z", "drain", ["gpu02"], "cmp-su1-leaf1:swp2"),  # a footprint leaf's part
        rec("2026-11-27T10:10:03.000Z", "drain", ["gpu07"], "cmp-su4-leaf1:swp3"),  # not ours
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _lab_logs(folder: Path) -> Path:
    """A lab state folder's nodes/<switch>/frr.log, as gpufabric/lab/syslog.py writes it."""
    spine = folder / "nodes" / "cmp-spine1"
    spine.mkdir(parents=True)
    (spine / "frr.log").write_bytes(
        b"2026-11-27T10:07:00Z bgpd[311]: [M59KS-A3ZXZ] %ADJCHANGE: neighbor swp1(cmp-su1-leaf1) in vrf default "
        b"Down Interface down\n"
        b"2026-11-27T10:07:00Z zebra[300]: Intf swp1(4) has gone DOWN\n"
        b"2026-11-27T10:07:30Z bgpd[311]: [M59KS-A3ZXZ] %ADJCHANGE: neighbor swp1 in vrf default Up\n"  # no (host)
        b"2026-11-27T10:08:00Z bgpd[311]: [RZMGQ-A03CG] %ADJCHANGE: neighbor swp1(cmp-su1-leaf1) in vrf default Up\n"
        b"2026-11-27T10:08:00Z bgpd[311]: [X] %ADJCHANGE: neighbor \xff\xfe(bad) in vrf default Up\n"
        b"2026-11-27T10:08:01Z bgpd[311]: something else entirely\n"
        b"2026-11-27T12:00:00Z bgpd[311]: %ADJCHANGE: neighbor swp2(cmp-su2-leaf1) in vrf default Up\n"  # after
    )
    # The lab's node folder also holds the namespace's bind mount (`uts`): not a log, never read as one.
    (spine / "uts").write_text("2026-11-27T10:07:10Z bgpd[311]: %ADJCHANGE: not a log line\n")
    other = folder / "nodes" / "cmp-su4-leaf1"  # a switch the job does not cross
    other.mkdir()
    (other / "frr.log").write_text(
        "2026-11-27T10:09:00Z bgpd[9]: %ADJCHANGE: neighbor swp9(cmp-spine1) in vrf default Down Peer closed\n"
    )
    return folder / "nodes"


def _run(tmp_path: Path, **kw) -> dict:
    plan = _plan()
    found = footprint(plan, NODES)
    sources = Sources(
        audit_log=_audit(tmp_path / "audit.jsonl"),
        remediation_log=_remediation(tmp_path / "remediate.jsonl"),
        switch_logs=(_lab_logs(tmp_path / "lab"),),
        **kw,
    )
    return timeline(found, (d.name for d in plan.devices()), Window(SINCE, UNTIL), sources).as_dict()


def test_the_trails_and_the_lab_logs_merge_in_time_order_within_the_window(tmp_path):
    got = _run(tmp_path)
    rows = [(e["time"], e["kind"], e["device"], e["port"], e["node"]) for e in got["events"]]
    assert rows == [
        ("2026-11-27T10:05:00.000Z", "push", "cmp-su1-leaf1", None, None),
        ("2026-11-27T10:07:00.000Z", "bgp", "cmp-spine1", "swp1", None),
        ("2026-11-27T10:07:00.000Z", "link", "cmp-spine1", "swp1", None),
        ("2026-11-27T10:08:00.000Z", "bgp", "cmp-spine1", "swp1", None),
        ("2026-11-27T10:10:01.000Z", "remediation", "cmp-su1-leaf1", "swp1", "gpu01"),
        ("2026-11-27T10:10:02.000Z", "remediation", "cmp-su1-leaf1", "swp2", None),
        ("2026-11-27T10:20:00.000Z", "drain", "cmp-spine2", None, None),
        ("2026-11-27T10:21:00.000Z", "drain", None, None, "gpu01"),
        ("2026-11-27T10:30:00.000Z", "restart", "cmp-spine2", None, None),
        ("2026-11-27T10:40:00.000Z", "upgrade", "cmp-spine1", None, None),
    ]
    bgp = got["events"][1]
    assert bgp["summary"] == "BGP neighbor swp1(cmp-su1-leaf1) vrf default Down (Interface down)"
    assert bgp["source"].endswith("nodes/cmp-spine1/frr.log:1")
    assert got["events"][0]["summary"] == "changed cmp-su1-leaf1 by alice@ctl1 (gf-20261127T100000Z-abc123)"
    assert got["events"][0]["source"].endswith("audit.jsonl:1")
    unread = [(Path(u["source"]).name, u["why"]) for u in got["unread"]]
    assert unread[0] == ("audit.jsonl:11", "not a JSON record (a torn write?)")
    assert [u for u in unread if u[0].startswith("frr.log")] == [
        ("frr.log:3", "names %ADJCHANGE but is not bgpd's 'neighbor HOST(HOSTNAME) in vrf VRF Up|Down REASON'"),
        ("frr.log:5", "not UTF-8 at byte 57"),
    ]
    assert not [u for u in unread if u[0].startswith("uts")]
    assert got["since"] == "2026-11-27T10:00:00.000Z" and got["until"] == "2026-11-27T11:00:00.000Z"
    assert got["job"] is None and got["nodes"] == NODES


def test_a_log_that_opens_but_cannot_be_read_is_bad_input_naming_it(tmp_path, monkeypatch):
    """A namespace's bind mount named as a log opens, then its read fails (EINVAL): exit 2 naming the file,
    never an internal error."""
    import gpufabric.jobs.timeline as tl

    def einval(path):
        raise OSError(22, "Invalid argument")
        yield  # a generator, as the reader it stands in for

    monkeypatch.setattr(tl, "_read_lines", einval)
    with pytest.raises(TimelineError, match=r"frr\.log: cannot be read as a switch's log \(Invalid argument\)"):
        _run(tmp_path)


def test_syslog_layouts_numbered_peers_and_times_without_a_zone(tmp_path):
    logs = tmp_path / "syslog"
    logs.mkdir()
    (logs / "messages").write_text(
        # RFC 3339 syslog (rsyslog's RSYSLOG_FileFormat): the host names the switch.
        "2026-11-27T11:07:00.123456+01:00 cmp-su2-leaf2 bgpd[88]: [M59KS-A3ZXZ] %ADJCHANGE: neighbor "
        "10.0.0.9(Unknown) in vrf default Down BGP Notification received\n"
        "2026-11-27T10:07:00+00:00 some-server sshd[1]: Accepted publickey\n"
        "2026-11-27T10:07:05Z cmp-su2-leaf2.fabric.example bgpd[88]: %ADJCHANGE: neighbor swp2(cmp-spine2) in vrf "
        "default Up\n"
        # RFC 3164: no year, no zone.
        "Nov 27 10:07:00 cmp-su2-leaf2 bgpd[88]: %ADJCHANGE: neighbor swp3(cmp-spine2) in vrf default Up\n"
    )
    (logs / "cmp-su2-leaf1.log").write_text(
        # FRR's own log file: the switch's local time, its zone not written.
        "2026/11/27 11:09:00.123 BGP: [RZMGQ-A03CG] %ADJCHANGE: neighbor swp51(cmp-spine1) in vrf default Up\n"
    )
    plan = _plan()
    found = footprint(plan, NODES)
    names = [d.name for d in plan.devices()]
    window = Window(SINCE, UNTIL)
    no_zone = timeline(found, names, window, Sources(switch_logs=(logs,))).as_dict()
    assert [(e["time"], e["device"], e["port"], e["summary"]) for e in no_zone["events"]] == [
        ("2026-11-27T10:07:00.123Z", "cmp-su2-leaf2", None,
         "BGP neighbor 10.0.0.9 vrf default Down (BGP Notification received)"),
        ("2026-11-27T10:07:05.000Z", "cmp-su2-leaf2", "swp2", "BGP neighbor swp2(cmp-spine2) vrf default Up"),
    ]  # fmt: skip
    assert sorted((Path(u["source"]).name, u["why"].split(":")[0]) for u in no_zone["unread"]) == [
        ("cmp-su2-leaf1.log:1", "FRR's log file writes the switch's local time without its zone"),
        ("messages:4", "an RFC 3164 syslog time has no year nor zone"),
    ]
    zoned = timeline(found, names, window, Sources(switch_logs=(logs,), zone=zone_of("Europe/Berlin"))).as_dict()
    assert ("2026-11-27T10:09:00.000Z", "cmp-su2-leaf1", "swp51") in [
        (e["time"], e["device"], e["port"]) for e in zoned["events"]
    ]


def test_an_overlong_log_line_is_unread_and_the_next_one_is_read(tmp_path):
    log = tmp_path / "cmp-spine2.log"
    long = "2026-11-27T10:01:00Z bgpd[1]: %ADJCHANGE: neighbor swp1(x) in vrf default Down " + "x" * 70_000
    log.write_text(long + "\n2026-11-27T10:02:00Z bgpd[1]: %ADJCHANGE: neighbor swp2(y) in vrf default Up\n")
    plan = _plan()
    got = timeline(footprint(plan, NODES), [d.name for d in plan.devices()], Window(SINCE, UNTIL),
                   Sources(switch_logs=(log,))).as_dict()  # fmt: skip
    assert [(e["port"], e["time"]) for e in got["events"]] == [("swp2", "2026-11-27T10:02:00.000Z")]
    assert [(Path(u["source"]).name, u["why"]) for u in got["unread"]] == [("cmp-spine2.log:1", "longer than 64 KiB")]
    assert len(got["unread"][0]["line"]) <= 203


def _alerts() -> list[dict]:
    def alert(name: str, labels: dict[str, str], starts: str, ends: str, state: str = "active") -> dict:
        return {"labels": {"alertname": name, **labels}, "annotations": {"summary": f"{name} summary"},
                "startsAt": starts, "endsAt": ends, "fingerprint": f"fp-{name}", "status": {"state": state},
                "receivers": [{"name": "x"}], "updatedAt": starts}  # fmt: skip

    return [
        alert(
            "GpufabricLinkDown",
            {"device": "cmp-su1-leaf1", "port": "swp1"},
            "2026-11-27T10:15:00Z",
            "2026-11-27T10:40:00Z",
        ),
        alert("GpufabricJobErrors", {"job_id": "4"}, "2026-11-27T10:16:00Z", "2026-11-27T12:00:00Z"),
        alert("GpufabricSlowPart", {"host": "gpu03"}, "2026-11-27T09:00:00Z", "2026-11-27T12:00:00Z"),  # before
        alert(
            "GpufabricLinkDown",
            {"device": "cmp-su4-leaf1", "port": "swp1"},
            "2026-11-27T10:15:00Z",
            "2026-11-27T10:40:00Z",
        ),
        alert("GpufabricOld", {"device": "cmp-spine1"}, "2026-11-27T08:00:00Z", "2026-11-27T09:00:00Z"),  # ended
    ]


def test_alerts_of_the_footprint_and_the_job_from_alertmanager_s_api(tmp_path):
    body = json.dumps(_alerts()).encode()
    with serve(lambda method, path: Reply(200, body, {"Content-Type": "application/json"})) as server:
        plan = _plan()
        found = footprint(plan, NODES, "4")
        got = timeline(found, [d.name for d in plan.devices()], Window(SINCE, UNTIL),
                       Sources(alertmanager=server.url)).as_dict()  # fmt: skip
        assert [s.path for s in server.seen] == ["/api/v2/alerts"]
    rows = [(e["time"], e["device"], e["port"], e["node"], e["summary"]) for e in got["events"]]
    assert rows == [
        ("2026-11-27T10:00:00.000Z", None, None, "gpu03",
         "GpufabricSlowPart active (firing since 2026-11-27T09:00:00.000Z): GpufabricSlowPart summary"),
        ("2026-11-27T10:15:00.000Z", "cmp-su1-leaf1", "swp1", None,
         "GpufabricLinkDown active: GpufabricLinkDown summary"),
        ("2026-11-27T10:16:00.000Z", None, None, None, "GpufabricJobErrors active: GpufabricJobErrors summary"),
    ]  # fmt: skip
    assert all(
        e["kind"] == "alert" and e["source"].startswith(server.url + "/api/v2/alerts#fp-") for e in got["events"]
    )


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Reply(200, b"[" + b'{"labels": {}},' * 1_200_000 + b"{}]"), "larger than 16777216 bytes"),
        (Reply(200, b'{"alerts": []}'), "not a list of alerts"),
        (Reply(200, b'[{"labels": {"device": 7}, "startsAt": "2026-11-27T10:00:00Z"}]'), "'labels' is not an object"),
        (Reply(200, b'[{"labels": {}, "startsAt": 1764237600}]'), "field 'startsAt' is not text"),
        (Reply(200, b'[{"labels": {}, "startsAt": "yesterday"}]'), "'startsAt' is not an RFC 3339 time"),
        (
            Reply(200, b'[{"labels": {}, "startsAt": "2026-11-27T10:00:00Z", "status": []}]'),
            "'status' is not an object",
        ),
        (Reply(200, b"[NaN]"), "NaN"),
        (Reply(500, b"oops"), "answered HTTP 500"),
        (redirect("http://127.0.0.2:9"), "follows no redirect to another origin"),
    ],
)
def test_a_hostile_alertmanager_answer_is_exit_2_naming_what_is_wrong(tmp_path, answer, message):
    answers = answer if callable(answer) else (lambda method, path: answer)
    with serve(answers) as server:
        done = run_in_process("gpufabric", "job", "timeline", "--nodes", "gpu[01,03]", "--since", "2026-11-27T10:00Z",
                              "--alertmanager", server.url, "--audit-log", tmp_path / "none",
                              "--remediation-log", tmp_path / "none")  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_the_command_prints_the_json_shape_and_refuses_bad_input(tmp_path):
    audit = _audit(tmp_path / "audit.jsonl")
    logs = _lab_logs(tmp_path / "lab")
    done = run_in_process("gpufabric", "job", "timeline", "--nodes", "gpu[01,03]", "--since", "2026-11-27T10:00:00Z",
                          "--until", "2026-11-27T11:00:00Z", "--audit-log", audit, "--remediation-log",
                          tmp_path / "none", "--switch-log", logs, "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert list(got) == ["job", "nodes", "since", "until", "events", "unread"]
    assert list(got["events"][0]) == ["time", "kind", "device", "port", "node", "summary", "source"]
    assert list(got["unread"][0]) == ["source", "line", "why"]
    assert [e["kind"] for e in got["events"]] == ["push", "bgp", "link", "bgp", "drain", "drain", "restart", "upgrade"]
    table = run_in_process("gpufabric", "job", "timeline", "--nodes", "gpu[01,03]", "--since", "2026-11-27T10:00Z",
                           "--until", "2026-11-27T11:00Z", "--audit-log", audit,
                           "--remediation-log", tmp_path / "no")  # fmt: skip
    assert table.returncode == 0 and "cmp-spine2" in table.stdout and "restart" in table.stdout
    for args, said in [
        (["--nodes", "gpu[01,03]"], "--nodes needs --since"),
        (["--nodes", "gpu[01,03]", "--since", "10:00"], "not an ISO 8601 time with its zone"),
        (["--nodes", "gpu[01,03]", "--since", "2026-11-27T10:00:00"], "not an ISO 8601 time with its zone"),
        (["--nodes", "gpu[01,09]", "--since", "2026-11-27T10:00Z"], "gpu09"),
        (["--nodes", "gpu01", "--since", "2026-11-27T10:00Z", "--until", "2026-11-27T09:00Z"], "is before --since"),
        (["--nodes", "gpu01", "--since", "2026-11-27T10:00Z", "--alertmanager", "file:///etc/passwd"], "base URL"),
        (["--nodes", "gpu01", "--since", "2026-11-27T10:00Z", "--switch-log", tmp_path / "missing"], "no such log"),
        (["--nodes", "gpu01", "--since", "2026-11-27T10:00Z", "--log-zone", "Mars/Olympus"], "not a time zone"),
        (["4", "--since", "2026-11-27T10:00Z"], "go with --nodes"),
    ]:
        bad = run_in_process("gpufabric", "job", "timeline", *args, "--audit-log", tmp_path / "none",
                             "--remediation-log", tmp_path / "none")  # fmt: skip
        assert bad.returncode == 2 and said in bad.stderr and "Traceback" not in bad.stderr, (args, bad.stderr)


def test_a_running_slurm_job_s_window_starts_at_its_start_time():
    text = (ROOT / "tests" / "recorded" / "slurm" / "squeue-22.05.json").read_text()
    record = next(r for r in json.loads(text)["jobs"] if r["job_state"] == "RUNNING")
    assert slurm_start(str(record["job_id"]), text) == datetime.fromtimestamp(record["start_time"], UTC)
    newer = json.dumps({"jobs": [{"job_id": 7, "start_time": {"set": True, "infinite": False, "number": 1795622397}}]})
    assert slurm_start("7", newer) == datetime(2026, 11, 25, 15, 59, 57, tzinfo=UTC)  # date -u -d @1795622397
    with pytest.raises(TimelineError, match="field 'start_time': not a time"):
        slurm_start("7", json.dumps({"jobs": [{"job_id": 7, "start_time": "soon"}]}))


def test_a_running_job_s_timeline_reads_its_nodes_and_start_from_one_squeue(tmp_path):
    """`job timeline JOB`: squeue is a STAND-IN script printing Slurm 22.05's recorded answer (the real slurmctld
    runs in the lab tier only), counting its calls: one for the nodes and the start time both."""
    recorded = ROOT / "tests" / "recorded" / "slurm" / "squeue-22.05.json"
    running = next(r for r in json.loads(recorded.read_text())["jobs"] if r["job_state"] == "RUNNING")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    squeue = bin_dir / "squeue"
    squeue.write_text(f'#!/bin/sh\necho "$*" >> {calls}\ncat {recorded}\n')
    squeue.chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    done = run_in_process("gpufabric", "job", "timeline", str(running["job_id"]), "--intent", INVENTORY / "fabric.yml",
                          "--audit-log", tmp_path / "none", "--remediation-log", tmp_path / "none", "--json",
                          PATH=path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    start = datetime.fromtimestamp(running["start_time"], UTC).isoformat(timespec="milliseconds")
    assert got["job"] == str(running["job_id"]) and got["nodes"] == ["gpu01"]
    assert got["since"] == start.replace("+00:00", "Z") and got["until"] is None
    assert calls.read_text().splitlines() == ["--json"]


def _printf(template: bytes, *values: str) -> str:
    """A C format string of FRR's with its conversions filled in order (`%%` is `%`)."""
    text, out, i = template.decode(), [], 0
    parts = re.split(r"(%%|%pBP|%s|%u)", text)
    for part in parts:
        if part == "%%":
            out.append("%")
        elif part in ("%pBP", "%s", "%u"):
            out.append(values[i])
            i += 1
        else:
            out.append(part)
    return "".join(out)


def test_the_formats_read_are_the_ones_in_debian_s_frr_binaries():
    """The format strings timeline.py reads, as they are in the installed FRR's bgpd and zebra (Debian 12's
    8.4): each filled in as FRR fills it is read as its event, so a release whose strings differ fails here."""
    bgpd, zebra = Path("/usr/lib/frr/bgpd"), Path("/usr/lib/frr/zebra")
    if not bgpd.exists() or not zebra.exists():
        pytest.skip("FRR is not installed (the lab's FRR, Debian's frr package)")
    up, down = b"%%ADJCHANGE: neighbor %pBP in vrf %s Up", b"%%ADJCHANGE: neighbor %pBP in vrf %s Down %s"
    came, gone = b"Intf %s(%u) has come UP", b"Intf %s(%u) has gone DOWN"
    assert up in bgpd.read_bytes() and down in bgpd.read_bytes()
    assert came in zebra.read_bytes() and gone in zebra.read_bytes()
    peer = "swp51(cmp-spine1)"  # %pBP: printfrr_bp's "host(hostname)"
    messages = [
        _printf(up, peer, "default"),
        _printf(down, peer, "default", "BFD down received"),
        _printf(came, "swp51", "7"),
        _printf(gone, "swp51", "7"),
    ]
    when = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
    got = [event_of(m, "cmp-su1-leaf1", "x:1", when) for m in messages]
    assert [(e.kind, e.port, e.summary) for e in got] == [  # type: ignore[union-attr]
        ("bgp", "swp51", "BGP neighbor swp51(cmp-spine1) vrf default Up"),
        ("bgp", "swp51", "BGP neighbor swp51(cmp-spine1) vrf default Down (BFD down received)"),
        ("link", "swp51", "link swp51 up"),
        ("link", "swp51", "link swp51 down"),
    ]
