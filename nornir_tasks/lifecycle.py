"""Nornir tasks of `nornir restart` and `nornir upgrade`: one switch's reboot and image steps, through the
methods each OS's NAPALM driver has for them (gpufabric/nos/<os>/upgrade.py; FRR's restart.py).

Every task returns its outcome as the Result's `result` and sets `failed` when the step did not hold; none
raises for a switch. A reboot ends the switch's session: the tasks after it open a fresh one.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

from nornir.core.task import Result, Task

from gpufabric.drivers.images import Installed, Restarted
from gpufabric.fleet.expect import Expectation, Health, health, ports_now, regressions, sessions_now
from gpufabric.verify.running.checks import Planned
from nornir_tasks.validate import os_version, validate_device

BACK_SLACK = 5.0  # seconds: a switch whose uptime is below the time since its reboot (plus this) has rebooted


@dataclass(frozen=True)
class Image:
    """The image an upgrade installs: the release it holds, its file name on the switch, where the switch
    fetches it, and the SHA-512 the staged file must have."""

    release: str
    name: str
    url: str
    sha512: str


@dataclass(frozen=True)
class Before:
    """A switch before its reboot: its sessions and ports up, its failing validate checks, what it runs."""

    health: Health
    findings: frozenset[tuple[str, str]]
    os_version: str


@dataclass(frozen=True)
class Back:
    """A switch after its reboot: back (reachable, rebooted, the sessions and ports up before up again)
    or not, and why; the version it runs, and how long it took from the reboot."""

    ok: bool
    problem: str
    os_version: str
    seconds: float


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _connect(task: Task, fresh: bool = False) -> Any:
    if fresh:
        _hang_up(task)
    return task.host.get_connection("napalm", task.nornir.config)


def _hang_up(task: Task) -> None:
    with contextlib.suppress(Exception):
        task.host.close_connection("napalm")


def _findings(task: Task, planned: Planned | None) -> frozenset[tuple[str, str]]:
    """The validate checks this switch fails now (check, item): validate's own task, without the drift."""
    if planned is None:
        return frozenset()
    found = validate_device(task, planned, None).result
    return frozenset((r.check, r.item) for r in found if not r.ok)


def snapshot(task: Task, expect: Expectation, planned: Planned | None) -> Result:
    """What the switch shows before it is touched: a reboot must leave it no worse."""
    try:
        conn = _connect(task)
        shown = health(expect, sessions_now(conn) if expect.peers else {}, ports_now(conn))
        version = os_version(conn)
        found = _findings(task, planned)
    except Exception as exc:
        return Result(host=task.host, result=_reason(exc), failed=True)
    return Result(host=task.host, result=Before(shown, found, version))


def stage_image(task: Task, image: Image) -> Result:
    """Fetch the image onto the switch and check its SHA-512 there; the problem, or None."""
    problem: str | None = None
    try:
        conn = _connect(task)
        conn.stage_image(image.url, image.name)
        got = conn.image_checksum(image.name)
        if got.lower() != image.sha512.lower():
            problem = f"{image.name} on the switch has SHA-512 {got[:16]}..., not {image.sha512[:16]}...: not installed"
    except Exception as exc:
        problem = f"staging {image.name}: {_reason(exc)}"
    return Result(host=task.host, result=problem, failed=problem is not None)


def install_image(task: Task, image: Image) -> Result:
    """Install the staged image as the next boot: Installed (the previous image), or the problem."""
    try:
        installed: Installed = _connect(task).install_image(image.name)
    except Exception as exc:
        return Result(host=task.host, result=f"installing {image.name}: {_reason(exc)}", failed=True)
    return Result(host=task.host, result=installed)


@dataclass(frozen=True)
class Rebooted:
    sent_at: float  # time.monotonic() when the reboot was asked for
    back_already: bool  # the driver returned once the switch was back (FRR's daemons restarted)
    notes: tuple[str, ...] = ()  # what such a restart reported on its way (FRR started again, ...)


def reboot(task: Task, mode: str) -> Result:
    """Ask the switch to reboot in `mode`; Rebooted, or the problem (nothing was rebooted)."""
    sent_at = time.monotonic()
    try:
        answer = _connect(task).reboot(mode)
    except Exception as exc:
        return Result(host=task.host, result=f"reboot ({mode}): {_reason(exc)}", failed=True)
    finally:
        _hang_up(task)  # the session dies with the switch
    notes = answer.notes if isinstance(answer, Restarted) else ()
    return Result(host=task.host, result=Rebooted(sent_at, bool(answer), notes))


def wait_back(
    task: Task,
    *,
    expect: Expectation,
    before: Before,
    rebooted: Rebooted,
    timeout: float,
    poll: float = 2.0,
    settle: float = 2.0,
) -> Result:
    """Wait until the switch is reachable again, has rebooted (its uptime is younger than the reboot), and
    every session and port up before is up again for `settle` seconds; at most `timeout` seconds from the
    reboot. Back, failed when it did not come back so within the bound."""
    deadline = rebooted.sent_at + timeout
    problem = "not reachable since the reboot"
    rebooted_seen = rebooted.back_already
    healthy_since: float | None = None
    version = ""
    while True:
        now = time.monotonic()
        try:
            conn = _connect(task, fresh=not rebooted_seen)
            if not rebooted_seen:
                uptime = float(conn.get_facts().get("uptime", -1))
                rebooted_seen = 0 <= uptime <= now - rebooted.sent_at + BACK_SLACK
                problem = "reachable, but has not rebooted" if not rebooted_seen else problem
            if rebooted_seen:
                version = version or os_version(conn)
                shown = health(expect, sessions_now(conn) if expect.peers else {}, ports_now(conn))
                lost = regressions(expect, before.health, shown)
                problem = "; ".join(lost)
                healthy_since = None if lost else healthy_since or time.monotonic()
        except Exception as exc:
            problem = f"not back: {_reason(exc)}"
            healthy_since = None
            _hang_up(task)  # the next look opens a fresh session
        now = time.monotonic()
        if healthy_since is not None and now - healthy_since >= settle:
            return Result(host=task.host, result=Back(True, "", version, now - rebooted.sent_at))
        if now >= deadline:
            shown_problem = problem or "checks did not settle"
            back = Back(False, f"{shown_problem} ({timeout:g} s after the reboot)", version, now - rebooted.sent_at)
            return Result(host=task.host, result=back, failed=True)
        time.sleep(max(0.0, min(poll, deadline - now)))


def findings(task: Task, planned: Planned | None) -> Result:
    """The validate checks the switch fails now (check, item), or the problem reading it."""
    try:
        _connect(task, fresh=True)
        return Result(host=task.host, result=_findings(task, planned))
    except Exception as exc:
        return Result(host=task.host, result=_reason(exc), failed=True)


def running_version(task: Task) -> Result:
    """What the switch runs (NAPALM's os_version), read over a fresh session; "" when unreachable."""
    try:
        return Result(host=task.host, result=os_version(_connect(task, fresh=True)))
    except Exception as exc:
        return Result(host=task.host, result="", failed=True, stderr=_reason(exc))


def keep_image(task: Task, image: Image) -> Result:
    """The new image stays the one the switch boots (SONiC: the default from now on)."""
    try:
        _connect(task, fresh=True).keep_image(image.name)
    except Exception as exc:
        return Result(host=task.host, result=f"keeping {image.name}: {_reason(exc)}", failed=True)
    return Result(host=task.host, result=None)


def boot_previous(task: Task, previous: str) -> Result:
    """The fallback: make the previous image the next boot and reboot into it. Rebooted, or the problem."""
    sent_at = time.monotonic()
    try:
        conn = _connect(task, fresh=True)
        if not conn.boot_previous(previous):
            conn.reboot("cold")
    except Exception as exc:
        return Result(host=task.host, result=f"booting {previous} again: {_reason(exc)}", failed=True)
    finally:
        _hang_up(task)
    return Result(host=task.host, result=Rebooted(sent_at, False))
