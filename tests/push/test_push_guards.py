"""What a push refuses before it touches a switch: timeouts that cannot protect a batch, and a
second push of a fabric while one runs."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_in_process

from gpufabric.push.lock import SYSTEM_DIR, FabricBusyError, LockPathError, fabric_lock, lock_dir
from gpufabric.push.timing import TimingError, check_timing, needed_confirm_timeout

DEFAULTS = {"check_timeout": 30.0, "settle": 2.0, "connect_timeout": 10.0, "workers": 32}


def test_the_default_timeouts_protect_a_batch_of_one_wave():
    check_timing(confirm_timeout=120, largest_batch=32, **DEFAULTS)


def test_a_check_longer_than_the_timer_is_refused():
    with pytest.raises(TimingError, match="does not fit"):
        check_timing(confirm_timeout=60, largest_batch=1, **{**DEFAULTS, "check_timeout": 60.0})


def test_a_batch_staged_in_waves_needs_a_longer_timer_and_says_how_long():
    need = needed_confirm_timeout(largest_batch=64, **DEFAULTS)
    assert need > 120
    with pytest.raises(TimingError, match=f"--confirm-timeout {need} or more, or --batch 32"):
        check_timing(confirm_timeout=120, largest_batch=64, **DEFAULTS)
    check_timing(confirm_timeout=need, largest_batch=64, **DEFAULTS)


def test_the_cli_refuses_bad_timeouts_before_any_connection(tmp_path):
    done = run_in_process(
        "nornir",
        "push",
        "--check-timeout",
        "200",
        "--confirm-timeout",
        "120",
        GPUFABRIC_SWITCH_PASSWORD="unused",
    )
    assert done.returncode == 2 and "does not fit" in done.stderr, done.stderr


def test_a_second_push_of_a_fabric_is_refused_while_the_first_holds_the_lock(tmp_path):
    with fabric_lock("lab", tmp_path):
        with pytest.raises(FabricBusyError, match="another push of fabric 'lab'"), fabric_lock("lab", tmp_path):
            pass
        with fabric_lock("other", tmp_path):  # another fabric is another lock
            pass
    with fabric_lock("lab", tmp_path):  # released when the first push ended
        pass


def test_a_lab_of_a_fabric_is_a_target_of_its_own(tmp_path):
    """Two labs of one fabric side by side, and the real switches beside a lab of their fabric: one push each
    at once; a second push to the same lab is refused, naming it."""
    with fabric_lock("lab", tmp_path, target="lab-default"):
        with fabric_lock("lab", tmp_path, target="lab-w1"), fabric_lock("lab", tmp_path):
            pass
        busy = "another push of fabric 'lab' to lab-default"
        with pytest.raises(FabricBusyError, match=busy), fabric_lock("lab", tmp_path, target="lab-default"):
            pass


def test_a_push_that_dies_leaves_the_fabric_unlocked(tmp_path):
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from gpufabric.push.lock import fabric_lock\n"
        f"with fabric_lock('lab', Path({str(tmp_path)!r})):\n"
        "    print('locked', flush=True)\n"
        "    sys.stdin.readline()\n"
        "    os._exit(9)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(FabricBusyError, match=f"pid {holder.pid}"), fabric_lock("lab", tmp_path):
            pass
        holder.communicate("go\n", timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
    with fabric_lock("lab", tmp_path):
        pass


class _Clock:
    """Simulated time: each health poll lasts `poll` seconds, sleeps pass instantly."""

    def __init__(self, poll: float) -> None:
        self.now, self.poll, self.polls = 0.0, poll, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")  # as time.sleep says
        self.now += seconds


def _settle_with(
    monkeypatch, states: list[list[str]], poll: float = 0.37, durations: list[float] | None = None
) -> tuple[list[str], _Clock]:
    """Run the post-commit wait against a switch whose checks give `states` poll by poll (last repeats), each
    poll lasting `poll` seconds, or `durations` poll by poll (last repeats)."""
    import nornir_tasks.push as push

    clock = _Clock(poll)

    def health(_conn, _expect):
        clock.polls.append(clock.now)
        clock.now += durations[min(len(clock.polls), len(durations)) - 1] if durations else clock.poll
        return states[min(len(clock.polls), len(states)) - 1]

    monkeypatch.setattr(push, "time", clock)
    monkeypatch.setattr(push, "_health", health)
    monkeypatch.setattr(push, "regressions", lambda _e, _b, now: now)
    opts = push.PushOptions(check_timeout=30.0, settle=2.0)
    return push._wait_healthy(None, None, None, opts), clock


def test_a_switch_is_staged_only_after_its_checks_held_for_the_whole_settle(monkeypatch):
    problems, clock = _settle_with(monkeypatch, [[]])
    first_healthy = clock.polls[0] + clock.poll
    assert problems == [] and clock.now - first_healthy >= 2.0
    assert clock.now - first_healthy < 2.0 + clock.poll  # the last poll is timed to end as settle is reached
    assert all(b - a <= 0.5 + clock.poll + 1e-9 for a, b in zip(clock.polls, clock.polls[1:], strict=False))


@pytest.mark.parametrize(
    "durations",
    [[0.5, 0.5, 0.49], [0.3, 0.3, 0.28, 0.27], [0.15], [0.9, 0.5, 0.45], [1.7], [1.45], [0.3, 2.2, 0.3, 3.0]],
)
def test_the_settle_ends_once_it_has_held_without_a_poll_more_when_one_is_quicker(monkeypatch, durations):
    """The poll ending the stretch is aimed just past the settle: a poll quicker than those before it no longer
    ends just short of it (and costs one more poll); polls start at most POLL after the last one ended."""
    import nornir_tasks.push as push

    problems, clock = _settle_with(monkeypatch, [[]], durations=durations)
    first_healthy = clock.polls[0] + durations[0]
    assert problems == [] and clock.now - first_healthy >= 2.0
    ends = [start + durations[min(i, len(durations) - 1)] for i, start in enumerate(clock.polls)]
    assert all(0 <= b - a <= push.POLL + 1e-9 for a, b in zip(ends, clock.polls[1:], strict=False))
    if max(durations) < push.POLL:  # polls quicker than POLL: the last one ends just past the settle
        assert clock.now - first_healthy <= 2.0 + push.SETTLE_MARGIN + 1e-9
    else:  # slower ones (a loaded machine): never a sleep of less than nothing, never a poll more than needed
        assert clock.now - first_healthy < 2.0 + push.SETTLE_MARGIN + push.POLL + max(durations)


def test_a_session_that_drops_during_the_settle_starts_it_again(monkeypatch):
    problems, clock = _settle_with(monkeypatch, [[], [], ["spine1 down"], []])
    healthy_again = clock.polls[3] + clock.poll
    assert problems == [] and clock.now - healthy_again >= 2.0


def test_a_switch_that_never_settles_is_reported_with_its_problem(monkeypatch):
    problems, clock = _settle_with(monkeypatch, [["spine1 down"]])
    assert problems == ["spine1 down"] and clock.now >= 30.0


def test_a_link_planted_at_the_lock_path_is_refused_and_its_target_untouched(tmp_path):
    """Someone who can write the lock folder plants a link to a file of the pushing user's: the push
    refuses rather than open (and truncate) the file through it."""
    folder = tmp_path / "locks"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "precious"
    victim.write_text("keep me\n")
    (folder / "gpufabric-push-lab.lock").symlink_to(victim)
    with pytest.raises(LockPathError, match="is a symbolic link"), fabric_lock("lab", folder):
        pass
    assert victim.read_text() == "keep me\n"


def test_a_hard_link_planted_at_the_lock_path_is_refused(tmp_path):
    folder = tmp_path / "locks"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "precious"
    victim.write_text("keep me\n")
    os.link(victim, folder / "gpufabric-push-lab.lock")
    with pytest.raises(LockPathError, match="one name"), fabric_lock("lab", folder):
        pass
    assert victim.read_text() == "keep me\n"


def test_a_lock_folder_others_may_write_or_own_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # what /tmp and /run/lock are: anyone may plant a file there
    with pytest.raises(LockPathError, match=r"writable by others \(mode 1777\)"), fabric_lock("lab", shared):
        pass
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    someone_else = os.geteuid() + 1
    owned = f"belongs to uid {os.geteuid()}, not {someone_else}"
    with pytest.raises(LockPathError, match=owned), fabric_lock("lab", mine, uid=someone_else):
        pass
    link = tmp_path / "link"
    link.symlink_to(mine)
    with pytest.raises(LockPathError, match="is not a folder"), fabric_lock("lab", link):
        pass


def test_the_lock_folder_is_fixed_per_account_and_made_private():
    assert lock_dir(0) == SYSTEM_DIR == Path("/run/lock/gpufabric")
    nobody = pwd.getpwnam("nobody")
    assert lock_dir(nobody.pw_uid) == Path(nobody.pw_dir) / ".gpufabric" / "lock"


def test_a_missing_lock_folder_is_made_0700(tmp_path):
    folder = tmp_path / "new" / "locks"
    with fabric_lock("lab", folder):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_push_id_is_its_utc_start_and_24_random_bits():
    from datetime import UTC, datetime, timedelta, timezone

    from gpufabric.fleet.push_id import PATTERN, describe, new_push_id, started_from_id

    at = datetime(2026, 11, 23, 19, 5, 7, 999, tzinfo=timezone(timedelta(hours=2)))
    one, two = new_push_id(at, "ctl-a"), new_push_id(at, "ctl-a")
    assert PATTERN.fullmatch(one.id) and one.id.startswith("gf-20261123T170507Z-") and one.id != two.id
    assert one.started == started_from_id(one.id) == "2026-11-23T17:05:07Z"
    now = new_push_id()
    assert abs(datetime.fromisoformat(now.started) - datetime.now(UTC)) < timedelta(seconds=5)  # UTC, not local
    assert describe(one.as_dict()) == f"{one.id} (controller ctl-a, started 2026-11-23T17:05:07Z)"
    assert describe({"push_id": "unknown"}) == "unknown (controller unknown, started unknown)"


def test_the_cli_refuses_a_push_while_another_pushs_change_is_pending(tmp_path, monkeypatch, capsys):
    """`nornir push` turns a pending push found on a switch into exit 2 with the rollout's message, and
    gives that rollout its own push id. The switches are not reached: `run` stands in for the rollout."""
    from gpufabric.cli import main
    from gpufabric.push import service as cmd
    from gpufabric.push.rollout import OtherPushPendingError

    seen: dict[str, str] = {}

    def refusing(nr, *, opts, **_):
        seen["push_id"] = opts.push_id
        seen["tagged"] = (
            next(iter(nr.inventory.hosts.values())).connection_options["napalm"].extras["optional_args"]["push_id"]
        )
        other = {"push_id": "gf-20261123T101500Z-a1b2c3", "started": "2026-11-23T10:15:00Z", "controller": "ctl-a"}
        raise OtherPushPendingError(["cmp-spine1"], [other])

    monkeypatch.setattr(cmd, "run", refusing)
    monkeypatch.setattr(cmd, "fabric_lock", lambda fabric, **kw: fabric_lock(fabric, tmp_path / "locks", **kw))
    monkeypatch.setenv("GPUFABRIC_SWITCH_PASSWORD", "unused")
    with pytest.raises(SystemExit) as done:
        main(["push", "--device", "cmp-spine1"])
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert "gf-20261123T101500Z-a1b2c3 (controller ctl-a, started 2026-11-23T10:15:00Z)" in " ".join(err.split())
    assert seen["push_id"] == seen["tagged"] and f"push {seen['push_id']} from " in err


def test_the_push_id_is_in_the_json_and_is_the_one_the_drivers_were_given(tmp_path, monkeypatch, capsys):
    """The rollout is stood in for (no switch is reached); what is shown is the CLI's own wiring."""
    import json

    from gpufabric.cli import main
    from gpufabric.fleet.push_id import PATTERN, started_from_id
    from gpufabric.push import service as cmd
    from gpufabric.push.rollout import Rollout
    from nornir_tasks.push import DeviceOutcome

    given: dict[str, str] = {}

    def unchanged(nr, *, opts, **_):
        given["opts"] = opts.push_id
        given["driver"] = (
            nr.inventory.hosts["cmp-spine1"].connection_options["napalm"].extras["optional_args"]["push_id"]
        )
        return Rollout(outcomes={"cmp-spine1": DeviceOutcome("cmp-spine1", "unchanged")})

    monkeypatch.setattr(cmd, "run", unchanged)
    monkeypatch.setattr(cmd, "fabric_lock", lambda fabric, **kw: fabric_lock(fabric, tmp_path / "locks", **kw))
    monkeypatch.setenv("GPUFABRIC_SWITCH_PASSWORD", "unused")
    with pytest.raises(SystemExit) as done:
        main(["push", "--device", "cmp-spine1", "--wait", "0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert done.value.code == 0 and out["converged"]
    assert PATTERN.fullmatch(out["push_id"]) and out["push_id"] == given["opts"] == given["driver"]
    assert out["started"] == started_from_id(out["push_id"])
    assert out["controller"]
