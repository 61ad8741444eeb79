"""A switch that lies or breaks meets the drivers' real transports (tests/hostile_switch.py): an SSH
server on 127.0.0.1 for the Linux switches, HTTPS for eAPI and NX-API. Every case ends in bounded
time and memory with a named failure: an error naming the switch, the command and the bound or shape
it did not meet. Never a hang, a shifted answer, an empty answer standing in for a lost one, a
terminal escape in an error, or a KeyError."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from napalm.base.exceptions import ConnectionException

from gpufabric.drivers.answers import (
    AnswerDeadlineError,
    AnswerFramingError,
    AnswerShapeError,
    AnswerTooLargeError,
    ReadBounds,
)
from gpufabric.drivers.transport import CommandFailedError, SSHTransport, check, read_each, read_many
from gpufabric.inputs import MiB
from tests.hostile_switch import (
    ADDRESS,
    PASSWORD,
    USER,
    Body,
    Drip,
    Flood,
    HostileApiSwitch,
    HostileSshSwitch,
    HttpAnswer,
    HttpScript,
    Mute,
    Reply,
    Shell,
    nested,
)

T = TypeVar("T")
HANG = 30.0  # "not hanging forever": generous on a loaded two-core machine


def finishes(seconds: float, work: Callable[[], T]) -> T:
    """`work()`'s result or exception, failing the test when it has not ended after `seconds` (the
    work goes on in its thread: the code it exercises has no way to stop it)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the test below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds:g} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- size ------------------------------------------------------------------------------------------


def test_an_endless_answer_is_refused_at_the_command_bound_in_bounded_memory(tmp_path: Path) -> None:
    bound = 1 * MiB
    with HostileSshSwitch(lambda _: Flood(total=24 * MiB)) as switch:
        session = switch.connect(tmp_path, ReadBounds(command_bytes=bound))
        try:
            tracemalloc.start()
            with pytest.raises(AnswerTooLargeError) as caught:
                finishes(HANG, lambda: session.run("show running-config"))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            session.close()
    message = str(caught.value)
    assert message.startswith(f"{ADDRESS}: `show running-config`: answered more than the bound of 1 MiB")
    # Read up to the bound and a packet, with the SSH window (2 MiB) in flight; never the 24 MiB sent at it.
    assert peak < bound + 8 * MiB, f"peak {peak / MiB:.1f} MiB"
    assert caught.value.size <= bound + 64 * 1024


def test_the_session_budget_bounds_answers_that_each_stay_under_the_command_bound(tmp_path: Path) -> None:
    bounds = ReadBounds(command_bytes=2 * MiB, session_bytes=3 * MiB)
    with HostileSshSwitch(lambda _: Reply(b"y" * (MiB + 1))) as switch:
        session = switch.connect(tmp_path, bounds)
        try:
            assert len(session.run("cat a").stdout) == MiB + 1
            assert len(session.run("cat b").stdout) == MiB + 1
            with pytest.raises(AnswerTooLargeError, match=r"`cat c`: answered more than the session's budget of 3 MiB"):
                session.run("cat c")
        finally:
            session.close()


# -- time ------------------------------------------------------------------------------------------


def test_a_dripping_answer_ends_at_the_commands_deadline_not_at_an_idle_timeout(tmp_path: Path) -> None:
    with HostileSshSwitch(lambda _: Drip(every=0.1, lasting=120)) as switch:
        session = switch.connect(tmp_path, ReadBounds(command_seconds=1), timeout=0.5)
        started = time.monotonic()
        try:
            with pytest.raises(AnswerDeadlineError) as caught:
                finishes(HANG, lambda: session.run("show bgp summary"))
        finally:
            session.close()
    assert time.monotonic() - started < HANG
    assert str(caught.value) == (
        f"{ADDRESS}: `show bgp summary`: no complete answer within the command's deadline of 1 s"
    )


def test_a_switch_that_never_answers_the_exec_request_is_cut_off_at_the_deadline(tmp_path: Path) -> None:
    with HostileSshSwitch(lambda _: Mute()) as switch:
        session = switch.connect(tmp_path, ReadBounds(command_seconds=1), timeout=1)
        try:
            with pytest.raises(AnswerDeadlineError, match=r"`hostname`: no complete answer within .* 1 s"):
                finishes(HANG, lambda: session.run("hostname"))
        finally:
            session.close()


def test_the_session_budget_bounds_commands_that_each_end_just_in_time(tmp_path: Path) -> None:
    """Each answer drips for 0.5 s, well inside its 5 s deadline; run back to back, they pass the
    session burst's 1.2 s budget by the third (the second, on a slow machine)."""
    bounds = ReadBounds(command_seconds=5, session_seconds=1.2)
    with HostileSshSwitch(lambda _: Drip(every=0.1, lasting=0.5)) as switch:
        session = switch.connect(tmp_path, bounds, timeout=1)
        answered: list[str] = []
        try:
            with pytest.raises(AnswerDeadlineError) as caught:
                for n in range(10):
                    answered.append(finishes(HANG, lambda n=n: session.run(f"show {n}")).stdout)
        finally:
            session.close()
    assert 1 <= len(answered) <= 2 and all(a.startswith("xxx") for a in answered)
    assert str(caught.value) in {
        f"{ADDRESS}: `show {len(answered)}`: no complete answer within the session's budget of 1.2 s of answers",
        f"{ADDRESS}: `show {len(answered)}`: not run: the session's budget of 1.2 s of answers is spent",
    }


def test_a_pause_between_commands_renews_the_session_budget(tmp_path: Path) -> None:
    bounds = ReadBounds(command_bytes=2 * MiB, session_bytes=3 * MiB, rest_seconds=0.05)
    with HostileSshSwitch(lambda _: Reply(b"y" * (2 * MiB - 10))) as switch:
        session = switch.connect(tmp_path, bounds)
        try:
            for _ in range(3):  # 6 MiB in all, in bursts of one command each
                assert len(session.run("cat counters").stdout) == 2 * MiB - 10
                time.sleep(0.1)
        finally:
            session.close()


def test_a_switch_slow_to_exchange_keys_gets_the_logins_time_not_the_connect_timeout(tmp_path: Path) -> None:
    """The switch's sshd starts its banner and key exchange 1 s after the TCP connect, with a connect
    timeout of 0.25 s: paramiko bounds the key exchange by that timeout and, past it, logs in with the exchange
    unfinished ("No existing session"), as a restarted spine on a loaded machine was reported unreachable."""
    with HostileSshSwitch(lambda command: Reply(b"answered: " + command.encode()), slow_start=1.0) as switch:
        started = time.monotonic()
        session = finishes(HANG + 60, lambda: switch.connect(tmp_path, ReadBounds(), timeout=0.25))
        try:
            assert time.monotonic() - started >= 1.0  # the login waited for the switch's key exchange
            assert check(session, "show version") == "answered: show version"
        finally:
            session.close()
    assert switch.commands == ["show version"]


def test_a_switch_that_does_not_listen_is_refused_in_the_systems_words(tmp_path: Path) -> None:
    with HostileSshSwitch(lambda _: Reply()) as switch:
        known_hosts = switch.known_hosts(tmp_path)
    with pytest.raises(ConnectionException) as caught:  # its port is closed now: nothing listens on it
        finishes(HANG, lambda: SSHTransport(ADDRESS, USER, PASSWORD, port=switch.port, known_hosts=known_hosts))
    assert str(caught.value).startswith(f"{ADDRESS}:{switch.port}: cannot connect (Connection refused)")


# -- framing ---------------------------------------------------------------------------------------

READS = {"first": "echo one", "second": "printf 'two\\nlines'", "third": "echo three; exit 3", "fourth": "true"}


def test_a_login_banner_shifts_no_answer_of_a_batched_read(tmp_path: Path) -> None:
    with HostileSshSwitch(lambda _: Shell(banner=b"Welcome to sw1\nAuthorized use only\n")) as switch:
        session = switch.connect(tmp_path, ReadBounds())
        try:
            found = read_each(session, READS)
            plain = read_many(session, READS)
        finally:
            session.close()
    assert {k: (v.rc, v.stdout) for k, v in found.items()} == {
        "first": (0, "one\n"),
        "second": (0, "two\nlines"),
        "third": (3, "three\n"),
        "fourth": (0, ""),
    }
    assert plain == {"first": "one\n", "second": "two\nlines", "third": "", "fourth": ""}


def test_a_banner_without_its_newline_still_leaves_every_frame_whole(tmp_path: Path) -> None:
    with HostileSshSwitch(lambda _: Shell(banner=b"Last login: today")) as switch:
        session = switch.connect(tmp_path, ReadBounds())
        try:
            assert read_many(session, {"a": "echo a", "b": "echo b"}) == {"a": "a\n", "b": "b\n"}
        finally:
            session.close()


@pytest.mark.parametrize("lost", [1, 5, -2])  # the first, third and last frames (a blank line between two)
def test_a_lost_line_is_a_named_failure_not_an_empty_answer(tmp_path: Path, lost: int) -> None:
    with HostileSshSwitch(lambda _: Shell(drop_line=lost)) as switch:
        session = switch.connect(tmp_path, ReadBounds())
        try:
            with pytest.raises(AnswerFramingError, match=rf"^{ADDRESS}: `[^`]+`: "):
                read_many(session, READS)
        finally:
            session.close()


@pytest.mark.parametrize(
    ("second", "problem"),
    [
        ("!!!", "its answer's frame is missing or garbled"),
        (base64.b64encode(b"b\n").decode(), "its answer's frame ends without an exit status"),
        ("YQ", "its answer's frame is not base64"),
    ],
)
def test_a_garbled_frame_is_a_named_failure(tmp_path: Path, second: str, problem: str) -> None:
    def script(command: str) -> Reply:
        token = command.split("@gf-", 1)[1].split("-", 1)[0]
        first = base64.b64encode(b"a\n\n0").decode()  # "a\n", exit status 0
        return Reply(f"@gf-{token}-0:{first}:{token}\n@gf-{token}-1:{second}:{token}\n".encode())

    with HostileSshSwitch(script) as switch:
        session = switch.connect(tmp_path, ReadBounds())
        try:
            with pytest.raises(AnswerFramingError, match=f"^{ADDRESS}: `echo b`: {problem}"):
                read_many(session, {"a": "echo a", "b": "echo b"})
        finally:
            session.close()


# -- stderr as text --------------------------------------------------------------------------------

HOSTILE_STDERR = b"\x1b[2J\x1b]0;owned\x07[red]boom[/red] [link=http://x]y[/link]\rhidden\n2nd line"


def test_stderr_is_shown_as_text_in_the_error(tmp_path: Path) -> None:
    with HostileSshSwitch(lambda _: Reply(stderr=HOSTILE_STDERR, rc=1)) as switch:
        session = switch.connect(tmp_path, ReadBounds())
        try:
            with pytest.raises(CommandFailedError) as caught:
                check(session, "nv config apply")
        finally:
            session.close()
    message = str(caught.value)
    assert message == (
        "`nv config apply` exited 1: \\x1b[2J\\x1b]0;owned\\x07[red]boom[/red] [link=http://x]y[/link]"
        "\\rhidden\\n2nd line"
    )
    assert message.isprintable()
    assert caught.value.output.stderr == HOSTILE_STDERR.decode()  # the bytes themselves stay for callers


# -- wrong JSON shapes: the Linux switches' getters (FRR, iproute2, lldpd) over the real SSH transport ---

GOOD = {
    "ip -j link show": b'[{"ifname": "swp1", "flags": ["UP", "LOWER_UP"], "mtu": 9216, "address": "aa:bb:cc:00:00:01"}]',  # noqa: E501
    "show interface json": b'{"swp1": {"speed": 400000, "description": "to spine1"}}',
    "show bgp vrf all summary json": b'{"default": {"ipv4Unicast": {"routerId": "10.0.0.1"}}}',
    "show bgp vrf all neighbors json": b'{"default": {"swp1": {"bgpState": "Established", "remoteAs": 65001}}}',
}


def frr_script(wrong: dict[str, bytes]) -> Callable[[str], Reply]:
    """A switch answering `wrong` to the commands it names, and good JSON to the others."""

    def script(command: str) -> Reply:
        for part, answer in {**GOOD, **wrong}.items():
            if part in command:
                return Reply(answer)
        return Reply(b"", b"no such command in this double\n", 127)

    return script


def frr_driver(switch: HostileSshSwitch, folder: Path) -> Any:
    from gpufabric.nos.frr.driver import FrrDriver

    args = {"transport": switch.connect(folder, ReadBounds()), "pathspace": "", "lldp_socket": "/run/lldpd.socket"}
    driver = FrrDriver(ADDRESS, "admin", "unused", optional_args=args)
    driver.open()
    return driver


# Wrong answers to the commands two getters each ask (the full one and the health poll's): (getter, id prefix).
BOTH_READERS = {
    "ip -j link show": [("get_interfaces", ""), ("get_port_states", "ports-")],
    "show bgp vrf all neighbors json": [("get_bgp_neighbors", ""), ("get_bgp_sessions", "sessions-")],
}
SHARED_SHAPES = [
    ("ip -j link show", b'{"ifname": "swp1"}', r"`ip -j link show`.* is an object, not a JSON list", "object-for-list"),
    ("ip -j link show", b'[{"flags": ["UP"]}]', r"unexpected shape \(KeyError: 'ifname'\)", "missing-key"),
    (
        "show bgp vrf all neighbors json",
        b'{"default": {"swp1": {"bgpTimerUpMsec": NaN}}}',
        r"NaN is not a JSON number",
        "nan",
    ),
    ("show bgp vrf all neighbors json", b'{"default": ["swp1"]}', r"is a list, not a JSON object", "list-for-peers"),
]
SHAPES = [
    *(pytest.param(getter, {command: answer}, problem, id=f"{prefix}{name}")
      for command, answer, problem, name in SHARED_SHAPES for getter, prefix in BOTH_READERS[command]),
    pytest.param("get_interfaces", {"show interface json": b'{"swp1": ["not", "an", "object"]}'},
                 r"`show interface json`\['swp1'\] is a list, not a JSON object", id="list-for-object"),
    pytest.param("get_route_to", {"show ip route json": nested(5000)}, r"nests deeper than 200 levels", id="deep"),
    pytest.param("get_interfaces_counters",
                 {"ip -s -s -j link show": b'[{"ifname": "swp1", "stats64": {"rx": {"bytes": "lots"}}}]'},
                 r"swp1 rx bytes is the string 'lots', not an integer", id="text-for-number"),
    pytest.param("get_lldp_neighbors", {"lldpcli": b"[1, 2]"}, r"is a list, not a JSON object", id="lldp-list"),
    pytest.param("get_interfaces_ip", {"ip -j address show": b'[{"ifname": "swp1", "addr_info": {"local": 1}}]'},
                 r"addr_info is an object, not a JSON list", id="addresses"),
]  # fmt: skip


@pytest.mark.parametrize("pathspace", ["x; rm -rf /", "../../etc", "ns\x1b[2J", "a" * 65], ids=lambda v: repr(v)[:20])
def test_an_frr_pathspace_the_switch_answers_is_refused_unless_it_is_one(tmp_path: Path, pathspace: str) -> None:
    """The pathspace the login reports ($FRR_NS) names files in every command later run on the switch: a
    name a shell would read is refused at open, before any candidate is placed."""
    from gpufabric.nos.frr.driver import FrrDriver

    def script(command: str) -> Reply:
        return Reply(f"{pathspace}\n/run/lldpd.socket\n".encode()) if "FRR_NS" in command else Reply(b"", b"", 127)

    with HostileSshSwitch(script) as switch:
        args = {"transport": switch.connect(tmp_path, ReadBounds())}
        driver = FrrDriver(ADDRESS, "admin", "unused", optional_args=args)
        try:
            with pytest.raises(AnswerShapeError) as caught:
                driver.open()
        finally:
            driver.close()
    message = str(caught.value)
    assert message.isprintable() and "its FRR_NS is not a pathspace: an FRR pathspace is 1 to 64 letters" in message
    assert len(switch.commands) == 1  # nothing run after the answer


def test_an_frr_restarts_repairs_are_its_notes_and_nothing_else_the_switch_wrote(tmp_path: Path) -> None:
    """What the restart reports on stderr reaches the rollout's record only as the restart script's own
    sentences, whole lines: a line that looks like one, carries markup, or adds to one is not taken."""
    from gpufabric.nos.frr.restart import RELOADED, STARTED_AGAIN

    said = f"{STARTED_AGAIN}\n\x1b[2J{RELOADED}\n{RELOADED} (and rm -rf /)\nwarning: daemon slow\n{RELOADED}\n"
    answers = {"systemctl restart frr": Reply(b"", said.encode())}
    with HostileSshSwitch(frr_script_with(answers)) as switch:
        driver = frr_driver(switch, tmp_path)
        try:
            restarted = driver.reboot("daemons")
        finally:
            driver.close()
    assert restarted and restarted.notes == (STARTED_AGAIN, RELOADED)


def test_an_frr_restart_that_failed_raises_with_what_it_said_as_text(tmp_path: Path) -> None:
    from gpufabric.nos.frr.restart import NOT_RUNNING

    answers = {"systemctl restart frr": Reply(b"", f"\x1b]0;owned\x07{NOT_RUNNING}\n".encode(), 1)}
    with HostileSshSwitch(frr_script_with(answers)) as switch:
        driver = frr_driver(switch, tmp_path)
        try:
            with pytest.raises(CommandFailedError) as caught:
                driver.reboot("daemons")
        finally:
            driver.close()
    message = str(caught.value)
    assert message.isprintable() and "exited 1" in message and NOT_RUNNING in message and "\x1b" not in message


def frr_script_with(answers: dict[str, Reply]) -> Callable[[str], Reply]:
    """frr_script's good answers, with whole replies (stderr, exit status) for the commands `answers` names."""
    good = frr_script({})

    def script(command: str) -> Reply:
        return answers.get(command) or good(command)

    return script


@pytest.fixture(scope="module")
def frr_switch() -> Any:
    with HostileSshSwitch(frr_script({})) as switch:
        yield switch


@pytest.mark.parametrize(("getter", "wrong", "problem"), SHAPES)
def test_a_wrong_json_shape_from_a_linux_switch_is_a_named_failure(
    frr_switch: HostileSshSwitch, tmp_path: Path, getter: str, wrong: dict[str, bytes], problem: str
) -> None:
    frr_switch.script = frr_script(wrong)
    driver = frr_driver(frr_switch, tmp_path)
    try:
        with pytest.raises(AnswerShapeError) as caught:
            finishes(HANG, getattr(driver, getter))
    finally:
        driver.close()
    message = str(caught.value)
    assert message.startswith(f"{ADDRESS}: `") and message.isprintable()
    assert re.search(problem, message), message


def test_the_same_getters_read_good_answers_as_before(frr_switch: HostileSshSwitch, tmp_path: Path) -> None:
    frr_switch.script = frr_script({})
    driver = frr_driver(frr_switch, tmp_path)
    try:
        interfaces = driver.get_interfaces()
        peers = driver.get_bgp_neighbors()
    finally:
        driver.close()
    assert interfaces["swp1"]["speed"] == 400000.0 and interfaces["swp1"]["description"] == "to spine1"
    assert interfaces["swp1"]["is_up"] is True and interfaces["swp1"]["mtu"] == 9216
    assert peers["global"]["router_id"] == "10.0.0.1" and peers["global"]["peers"]["swp1"]["remote_as"] == 65001


def test_the_health_polls_getters_read_what_the_full_getters_do(frr_switch: HostileSshSwitch, tmp_path: Path) -> None:
    """A push's health poll reads the ports' states and the sessions in one command each: the same states and
    the same peers as the full getters, only each VRF's router id (the summary's) left out."""
    frr_switch.script = frr_script({})
    driver = frr_driver(frr_switch, tmp_path)
    try:
        interfaces, peers = driver.get_interfaces(), driver.get_bgp_neighbors()
        ports, sessions = driver.get_port_states(), driver.get_bgp_sessions()
    finally:
        driver.close()
    assert ports == {
        n: {"is_up": i["is_up"], "is_enabled": i["is_enabled"], "mtu": i["mtu"]} for n, i in interfaces.items()
    }
    assert ports["swp1"] == {"is_up": True, "is_enabled": True, "mtu": 9216}
    assert sessions["global"]["peers"] == peers["global"]["peers"] and sessions["global"]["router_id"] == ""


def test_a_switch_without_bgpd_has_no_session_up_by_either_getter(frr_switch: HostileSshSwitch, tmp_path: Path) -> None:
    """vtysh's answer when no BGP daemon runs (a switch booting, or one without BGP) is no session, not a
    failure; any other failed BGP command is a named failure."""
    good = frr_script({})

    def answering(failed: Reply) -> Callable[[str], Reply]:
        return lambda command: failed if "show bgp" in command else good(command)

    frr_switch.script = answering(Reply(b"bgpd is not running\n", b"", 1))
    driver = frr_driver(frr_switch, tmp_path)
    try:
        assert driver.get_bgp_sessions() == driver.get_bgp_neighbors() == {"global": {"router_id": "", "peers": {}}}
        frr_switch.script = answering(Reply(b"", b"% Unknown command\n", 1))
        with pytest.raises(CommandFailedError, match="show bgp vrf all neighbors json"):
            driver.get_bgp_sessions()
    finally:
        driver.close()


def test_nvue_yaml_with_aliases_is_a_named_failure(frr_switch: HostileSshSwitch, tmp_path: Path) -> None:
    """A few lines of YAML aliases are a tree of a billion nodes for whoever walks it (validate's drift)."""
    from gpufabric.nos.cumulus.driver import CumulusDriver

    bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n".encode() for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    frr_switch.script = lambda command: Reply(bomb)
    args = {"transport": frr_switch.connect(tmp_path, ReadBounds())}
    driver = CumulusDriver(ADDRESS, "admin", "unused", optional_args=args)
    driver.open()
    try:
        with pytest.raises(AnswerShapeError, match=r"`nv config show -r applied -o yaml`: .*a YAML alias"):
            finishes(HANG, lambda: driver.compare_running("- set:\n    system:\n      hostname: sw1\n"))
    finally:
        driver.close()


# -- eAPI and NX-API over the real HTTPS client ------------------------------------------------------


def eapi(result: Any) -> Body:
    return Body(json.dumps({"jsonrpc": "2.0", "id": "1", "result": result}).encode())


def nxapi(body: Any) -> Body:
    return Body(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"body": body}}).encode())


def nxapi_script(version: Body) -> HttpScript:
    def script(commands: list[str]) -> HttpAnswer:
        return version if commands == ["show version"] else nxapi({"hostname": "sw1"})

    return script


def api_driver(kind: str, api: HostileApiSwitch, bounds: ReadBounds) -> Any:
    from gpufabric.nos.eos.driver import GpufabricEOSDriver
    from gpufabric.nos.nxos.driver import GpufabricNXOSDriver

    cls = GpufabricEOSDriver if kind == "eos" else GpufabricNXOSDriver
    args = {"port": api.port, "tls_ca_file": str(api.pki.ca_file), "read_bounds": bounds}
    return cls(ADDRESS, "admin", "api-pw-91", timeout=0.5, optional_args=args)


API_SHAPES = [
    pytest.param("eos", lambda _: eapi({"version": "4.33.1F"}), AnswerShapeError,
                 r"`enable; show version`: its answer result is an object, not a JSON list", id="eos-object-for-list"),
    pytest.param("eos", lambda _: eapi([{}, {"uptime": 1.0}]), AnswerShapeError,
                 r"`show version`: its answer has no 'version'", id="eos-missing-key"),
    pytest.param("eos", lambda _: Body(b'{"jsonrpc": "2.0", "id": "1", "result": [{}, {"version": NaN}]}'),
                 AnswerShapeError, r"its answer is not valid JSON: NaN is not a JSON number", id="eos-nan"),
    pytest.param("eos", lambda _: Body(nested(100_000)), AnswerShapeError, r"nests deeper than 200 levels",
                 id="eos-deep"),
    pytest.param("eos", lambda _: eapi([{}]), AnswerShapeError, r"result holds 1 answers for 2 commands",
                 id="eos-answer-missing"),
    pytest.param("eos", lambda _: Body(b'{"error": ["not", "an", "object"]}'), AnswerShapeError,
                 r"its error is a list, not a JSON object", id="eos-error-shape"),
    pytest.param("eos", lambda _: Flood(total=64 * MiB), AnswerTooLargeError,
                 r"`enable; show version`: answered more than 1 MiB", id="eos-flood"),
    pytest.param("eos", lambda _: Body(b"{}", length=1 << 40), AnswerTooLargeError,
                 r"`enable; show version`: announced 1,048,576 MiB, more than 1 MiB", id="eos-announced"),
    pytest.param("eos", lambda _: Drip(every=0.1, lasting=120), AnswerDeadlineError,
                 r"`enable; show version`: no complete answer within the deadline of 1 s", id="eos-drip"),
    pytest.param("nxos", lambda _: Body(b'[["not", "an", "object"]]'), AnswerShapeError,
                 r"`show hostname`: its answer \[0\] is a list, not a JSON object", id="nxos-list-for-object"),
    pytest.param("nxos", lambda _: Body(b'{"jsonrpc": "2.0", "id": 1, "result": {"body": {"hostname": NaN}}}'),
                 AnswerShapeError, r"its answer is not valid JSON: NaN", id="nxos-nan"),
    pytest.param("nxos", lambda _: Body(nested(100_000)), AnswerShapeError, r"nests deeper than 200 levels",
                 id="nxos-deep"),
    pytest.param("nxos", nxapi_script(nxapi(["10.4(2)"])), AnswerShapeError,
                 r"`show version`: its answer is a list, not a JSON object", id="nxos-version-list"),
    pytest.param("nxos", lambda _: Body(b'{"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "data": "x"}}'),
                 AnswerShapeError, r"\[0\] error data is the string 'x', not a JSON object", id="nxos-error-shape"),
    pytest.param("nxos", lambda _: Flood(total=64 * MiB), AnswerTooLargeError,
                 r"`show hostname`: answered more than 1 MiB", id="nxos-flood"),
    pytest.param("nxos", lambda _: Drip(every=0.1, lasting=120), AnswerDeadlineError,
                 r"`show hostname`: no complete answer within the deadline of 1 s", id="nxos-drip",
                 marks=pytest.mark.slow),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "script", "error", "problem"), API_SHAPES)
def test_a_hostile_api_answer_is_a_named_failure_in_bounded_time_and_memory(
    tmp_path: Path, kind: str, script: HttpScript, error: type[Exception], problem: str
) -> None:
    bounds = ReadBounds(command_bytes=1 * MiB, command_seconds=1)
    with HostileApiSwitch(script, tmp_path) as api:
        driver = api_driver(kind, api, bounds)
        tracemalloc.start()
        try:
            with pytest.raises(error) as caught:
                finishes(HANG, driver.open)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    message = str(caught.value)
    assert message.startswith(f"{ADDRESS}: `") and message.isprintable(), message
    assert re.search(problem, message), message
    assert peak < 24 * MiB, f"peak {peak / MiB:.1f} MiB"  # never the 64 MiB sent at it


def test_an_eapi_error_message_is_shown_as_text(tmp_path: Path) -> None:
    from pyeapi.eapilib import CommandError

    said = {"code": 1002, "message": "\x1b[31m[red]invalid[/red]\rok", "data": [{"errors": ["x"]}]}
    with HostileApiSwitch(
        lambda _: Body(json.dumps({"jsonrpc": "2.0", "id": "1", "error": said}).encode()), tmp_path
    ) as api:
        driver = api_driver("eos", api, ReadBounds())
        with pytest.raises(CommandError) as caught:
            finishes(HANG, driver.open)
    assert "\\x1b[31m[red]invalid[/red]\\rok" in str(caught.value) and str(caught.value).isprintable()


def test_validates_table_shows_a_switchs_error_as_text_not_markup(tmp_path: Path) -> None:
    from rich.console import Console

    from gpufabric.validate.report import print_table
    from gpufabric.verify.running.results import CheckResult

    with HostileSshSwitch(lambda _: Reply(stderr=HOSTILE_STDERR, rc=1)) as switch:
        session = switch.connect(tmp_path, ReadBounds())
        try:
            with pytest.raises(CommandFailedError) as caught:
                check(session, "vtysh -c 'show version'")
        finally:
            session.close()
    # As validate reports a switch it could not read: the error's first line, observed.
    observed = f"{type(caught.value).__name__}: {str(caught.value).splitlines()[0]}"
    console = Console(record=True, width=400, force_terminal=True, color_system="truecolor")
    print_table(console, [CheckResult("reachable", "sw1", "management", "reachable", observed, False)], False)
    shown = console.export_text(styles=False)
    assert "[red]boom[/red] [link=http://x]y[/link]" in shown
    assert "\\x1b[2J\\x1b]0;owned\\x07" in shown and "\x1b]0;owned" not in console.export_text(styles=True)


def test_a_failed_command_shows_the_end_of_what_it_said():
    """frr-reload.py writes its INFO lines first and its error last: a long answer keeps its end, escaped."""
    from gpufabric.drivers.transport import Output

    said = "".join(f"2026-11-27 17:47:52,436  INFO: line {n}\n" for n in range(40)) + "ERROR: bgpd said \x1b[2J no"
    error = str(CommandFailedError("sh -s", Output(3, "", said)))
    assert error.startswith("`sh -s` exited 3: ...") and error.endswith("ERROR: bgpd said \\x1b[2J no")
    assert "line 0\\n" not in error and len(error) < 700
    short = str(CommandFailedError("sh -s", Output(1, "", "no such file\n")))
    assert short == "`sh -s` exited 1: no such file"
