"""`job timeline --prometheus`: Prometheus's answers as outside input. A loopback HTTP server (tests/http_doubles.py)
answers the range queries with what Prometheus must never be trusted to send: each is exit 2 naming the field.
The real Prometheus's own answers are read in test_timeline_prometheus_live.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from http_doubles import Reply, redirect, serve

from gpufabric.jobs.counters import (
    MAX_POINTS,
    MAX_SERIES,
    MAX_STEPS,
    query_of,
    range_of,
    thresholds,
)
from gpufabric.jobs.timeline import TimelineError, Window
from tests.conftest import run_in_process

SINCE = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)


def _matrix(result: list) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


def _point(device: str = "cmp-su1-leaf1", port: str = "swp1", value: str = "12") -> dict:
    return {"metric": {"device": device, "port": port}, "values": [[SINCE.timestamp() + 600, value]]}


def _run(tmp_path, url: str, *extra: str):
    return run_in_process("gpufabric", "job", "timeline", "--nodes", "gpu[01,03]", "--since", "2026-11-27T10:00Z",
                          "--until", "2026-11-27T11:00Z", "--prometheus", url, "--audit-log", tmp_path / "none",
                          "--remediation-log", tmp_path / "none", "--json", *extra)  # fmt: skip


def test_only_the_footprint_s_pairs_over_their_threshold_are_events(tmp_path):
    """An answer holding more than was asked (a pair off the footprint, a value under the threshold) is filtered
    to what was asked; each of the six queries is a POST to /api/v1/query_range."""
    body = _matrix([_point(), _point(port="swp2"), _point(device="cmp-su3-leaf1"), _point(value="0")])
    seen_forms: list[str] = []

    def answer(method: str, path: str) -> Reply:
        seen_forms.append(method + " " + path)
        return Reply(200, body)

    with serve(answer) as server:
        done = _run(tmp_path, server.url, "--counter-threshold", "discards=100000")
    assert done.returncode == 0, done.stderr
    events = json.loads(done.stdout)["events"]
    # Every counter's query got the same answer: the one footprint pair over its threshold is an event for
    # errors (0), flaps (0) and the watchdog (0); not discards (100,000), pauses or ECN (600,000).
    assert sorted((e["summary"].split(":")[0], e["device"], e["port"], e["time"]) for e in events) == [
        (name, "cmp-su1-leaf1", "swp1", "2026-11-27T10:09:00.000Z") for name in ("errors", "flaps", "watchdog")
    ]
    assert seen_forms == ["POST /api/v1/query_range"] * 6


def test_prometheus_s_warnings_are_said(tmp_path):
    body = json.dumps({"status": "success", "warnings": ["partial \x1b[2J data"] * 9,
                       "data": {"resultType": "matrix", "result": []}}).encode()  # fmt: skip
    with serve(lambda method, path: Reply(200, body)) as server:
        done = _run(tmp_path, server.url)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("(errors) warns: partial \\x1b[2J data") == 5, done.stderr


BIG = b'{"status": "success", "data": {"resultType": "matrix", "result": [' + b'{"metric": {}},' * 3_000_000


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Reply(200, BIG + b"{}]}}"), "larger than 33554432 bytes"),
        (Reply(400, b'{"status": "error", "errorType": "bad_data", "error": "parse error"}'), "HTTP 400: parse error"),
        (Reply(200, b'{"status": "error", "error": "no"}'), "field 'status' is not \"success\": no"),
        (Reply(200, b"[]"), "the answer is not an object"),
        (Reply(200, b'{"status": "success", "data": []}'), "field 'data' is not an object"),
        (Reply(200, b'{"status": "success", "data": {"resultType": "vector", "result": []}}'), "'data.resultType'"),
        (Reply(200, b'{"status": "success", "data": {"resultType": "matrix", "result": {}}}'), "'data.result' is not"),
        (Reply(200, _matrix([{"metric": {"device": 7, "port": "swp1"}, "values": []}])), "'metric.device'"),
        (Reply(200, _matrix([{"metric": {"device": "a\nb", "port": "swp1"}, "values": []}])), "'metric.device'"),
        (Reply(200, _matrix([{"metric": {"device": "x"}, "values": []}])), "'metric.port'"),
        (Reply(200, _matrix([{"metric": {"device": "x", "port": "y"}, "values": {}}])), "field 'values' is not"),
        (Reply(200, _matrix([{"metric": {"device": "x", "port": "y"}, "values": [[1, 2, 3]]}])), "values[0]: not a"),
        (Reply(200, _matrix([{"metric": {"device": "x", "port": "y"}, "values": [["1", "2"]]}])), "not seconds"),
        (Reply(200, _matrix([{"metric": {"device": "x", "port": "y"}, "values": [[1, 2]]}])), "not a number written"),
        (Reply(200, _matrix([_point(value="lots")])), "'lots' is not a number"),
        (Reply(200, _matrix([_point(value="NaN")])), "'NaN' is no counter's increase"),
        (Reply(200, _matrix([_point(value="-3")])), "'-3' is no counter's increase"),
        (Reply(200, b"[NaN]"), "NaN"),
        (
            Reply(200, _matrix([{"metric": {"device": "x", "port": "y"}, "values": []}] * (MAX_SERIES + 1))),
            f"more than {MAX_SERIES}",
        ),
        (
            Reply(200, _matrix([{"metric": {"device": "x", "port": "y"}, "values": [[1, "1"]] * (MAX_POINTS + 1)}])),
            f"more than {MAX_POINTS} points",
        ),
        (Reply(500, b"oops"), "answered HTTP 500: oops"),
        (redirect("http://127.0.0.2:9"), "follows no redirect to another origin"),
    ],
)
def test_a_hostile_prometheus_answer_is_exit_2_naming_what_is_wrong(tmp_path, answer, message):
    answers = answer if callable(answer) else (lambda method, path: answer)
    with serve(answers) as server:
        done = _run(tmp_path, server.url)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""  # nothing half-written


def test_a_prometheus_that_never_finishes_its_answer_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr("gpufabric.jobs.counters.DEADLINE", 2.0)
    with serve(lambda method, path: Reply(200, _matrix([]), drip=0.05)) as server:
        done = _run(tmp_path, server.url)
    assert done.returncode == 2 and "no whole answer within" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prometheus", "file:///etc/passwd"], "not a Prometheus base URL"),
        (["--prometheus", "http://127.0.0.1:9", "--counter-threshold", "bogus=1"], "NAME=N"),
        (["--prometheus", "http://127.0.0.1:9", "--counter-threshold", "errors=-1"], "NAME=N"),
        (["--prometheus", "http://127.0.0.1:9", "--counter-threshold", "errors=nan"], "NAME=N"),
        (["--prometheus", "http://127.0.0.1:9", "--counter-step", "0"], "--counter-step"),
    ],
)
def test_bad_options_are_exit_2(tmp_path, args, message):
    done = run_in_process("gpufabric", "job", "timeline", "--nodes", "gpu01", "--since", "2026-11-27T10:00Z",
                          "--audit-log", tmp_path / "none", "--remediation-log", tmp_path / "none", *args)  # fmt: skip
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_thresholds_the_step_and_the_selector():
    assert thresholds(60) == {
        "errors": 0, "discards": 100, "flaps": 0, "watchdog": 0, "pauses": 600_000, "ecn": 600_000,
    }  # fmt: skip
    assert thresholds(60, {"pauses": 5})["pauses"] == 5
    with pytest.raises(TimelineError, match="not a counter"):
        thresholds(60, {"crc": 1})
    # A name's dots are the regex's literal dots, escaped once for RE2 and once for the PromQL string.
    query = query_of("errors", {"leaf.a": {"Ethernet1/1"}}, 60, 0)
    assert query == (
        '(sum by (device, port) (increase(gpufabric_interface_errors_total{device=~"leaf\\\\.a",'
        'port=~"Ethernet1/1"}[60s]))) > 0'
    )
    window = Window(SINCE, SINCE + timedelta(hours=1))
    assert range_of(window, 60) == type(range_of(window, 60))(SINCE + timedelta(minutes=1), window.until, 60)
    assert range_of(Window(SINCE, SINCE + timedelta(seconds=20)), 60).step == 20  # shorter than a step
    year = Window(SINCE, SINCE + timedelta(days=365))
    assert range_of(year, 60).step == -(-365 * 86400 // MAX_STEPS)  # widened to MAX_STEPS steps


def test_every_counter_read_is_a_switch_port_counter_the_exporter_serves():
    """The names the queries ask for are the exporter's own (a renamed series would answer nothing, silently),
    each a counter with `device` and `port` labels, and the pause selector's labels are the series' own."""
    from gpufabric.jobs.counters import COUNTERS
    from gpufabric.telemetry.metrics import METRICS

    for counter, (series, _what) in COUNTERS.items():
        for metric, extra in series:
            served = METRICS[metric]
            assert served.kind == "counter" and {"device", "port"} <= set(served.labels), counter
            for matcher in filter(None, extra.split(",")):
                assert matcher.split("=")[0].rstrip("!") in served.labels, (counter, matcher)


def test_prometheus_is_a_setting_of_job_timeline(tmp_path):
    """`[job.timeline] prometheus` in gpufabric.toml, or GPUFABRIC_JOB_TIMELINE_PROMETHEUS, as every option."""
    body = _matrix([_point()])
    with serve(lambda method, path: Reply(200, body)) as server:
        (tmp_path / "gpufabric.toml").write_text(f'[job.timeline]\nprometheus = "{server.url}"\n')
        done = run_in_process("gpufabric", "job", "timeline", "--nodes", "gpu01", "--since", "2026-11-27T10:00Z",
                              "--until", "2026-11-27T11:00Z", "--audit-log", tmp_path / "none", "--remediation-log",
                              tmp_path / "none", "--json", cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert [e["kind"] for e in json.loads(done.stdout)["events"]] == ["counter"] * 3
        assert len(server.seen) == 6
    done = run_in_process("gpufabric", "job", "timeline", "--nodes", "gpu01", "--since", "2026-11-27T10:00Z",
                          "--audit-log", tmp_path / "none", "--remediation-log", tmp_path / "none",
                          GPUFABRIC_JOB_TIMELINE_PROMETHEUS="ftp://127.0.0.1/")  # fmt: skip
    assert done.returncode == 2 and "not a Prometheus base URL" in done.stderr, done.stderr


def test_a_port_name_the_selector_cannot_hold_is_said_and_never_reaches_promql(monkeypatch):
    from gpufabric.jobs import counters
    from gpufabric.jobs.footprint import footprint
    from gpufabric.jobs.timeline import Timeline, scope_of
    from tests.conftest import INVENTORY, example_plan

    plan = example_plan(INVENTORY / "fabric.yml")
    found = footprint(plan, ["gpu01"], None)
    monkeypatch.setattr(counters, "ports_of", lambda _found: {"cmp-su1-leaf1": {"swp1", 'x"} or vector(1)'}})
    asked: list[str] = []

    def post(url: str, form: dict[str, str], deadline: float) -> object:
        asked.append(form["query"])
        return json.loads(_matrix([]))

    window = Window(SINCE, SINCE + timedelta(hours=1))
    tl = Timeline(None, ("gpu01",), window)
    counters.counter_events("http://127.0.0.1:9", found, scope_of(found, [d.name for d in plan.devices()]), window,
                            tl, post=post)  # fmt: skip
    assert len(asked) == 6 and not any("vector" in q for q in asked) and all('port=~"swp1"' in q for q in asked)
    assert any("1 footprint port(s) named outside" in n for n in tl.notes), tl.notes
