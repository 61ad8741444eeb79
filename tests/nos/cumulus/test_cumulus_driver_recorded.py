"""The `cumulus` (NVUE) NAPALM driver against recorded command output. No Cumulus switch runs here.

What the answers are (each carries its `source` in tests/recorded/cumulus/cmp-spine1.yml):
- FRR, iproute2 and lldpd answers: recorded from the lab's cmp-spine1 after a push (the daemons
  Cumulus runs too; re-record on a switch with scripts/record_switch.py);
- NVUE answers (`nv config ...`, lsb-release, platform-detect): written from NVIDIA's NVUE command
  reference, not recorded on a switch. The README lists what is therefore not shown.
The transaction tests drive the driver through a fake NVUE (a state machine over the commands the
driver sends) and assert on the exact commands and on what the driver decides.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from napalm import get_network_driver
from napalm.base import models
from napalm.base.exceptions import CommitError, MergeConfigException, ReplaceConfigException
from napalm.base.test.helpers import test_model as complies

from gpufabric.config.context import LinkIndex
from gpufabric.config.secrets import PasswordHasher
from gpufabric.drivers.recording import ReplayTransport, load
from gpufabric.drivers.transport import Output
from gpufabric.fleet.expect import expectations, health
from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent
from gpufabric.nos.cumulus import nvue
from gpufabric.validate.planned import planned
from gpufabric.verify.running import checks, qos_map
from nornir_tasks.push import _health

RECORDED = Path(__file__).parents[2] / "recorded" / "cumulus" / "cmp-spine1.yml"
PASSWORD = "canary-Pa55-cumulus"  # planted: must reach the switch only on sudo's stdin
USER = "admin"


@pytest.fixture
def replay():
    return ReplayTransport(load(RECORDED))


@pytest.fixture
def switch(replay):
    dev = get_network_driver("cumulus")("192.0.2.10", USER, PASSWORD, optional_args={"transport": replay})
    dev.open()
    return dev


@pytest.fixture(scope="module")
def lab_plan():
    """The lab's plan, of which the recorded FRR answers are, and its link index."""
    plan = topology(load_intent(None)).plan
    return plan, LinkIndex(plan, PasswordHasher(plan.intent.fabric.name, {"GPUFABRIC_SWITCH_PASSWORD": "unused"}, None))


@pytest.fixture(scope="module")
def spine_plan(lab_plan):
    return planned(*lab_plan, ["cmp-spine1"], "compute")["cmp-spine1"]


def test_recorded_getters_follow_napalm_models(switch):
    facts = switch.get_facts()
    assert complies(models.FactsDict, facts)
    assert (facts["hostname"], facts["vendor"], facts["os_version"]) == ("cmp-spine1", "NVIDIA", "Cumulus Linux 5.14.0")
    assert facts["model"] == "mlnx,x86_MSN5600"
    ifaces = switch.get_interfaces()
    assert all(complies(models.InterfaceDict, i) for i in ifaces.values())
    lldp = switch.get_lldp_neighbors()
    assert all(complies(models.LLDPNeighborDict, n) for found in lldp.values() for n in found)
    bgp = switch.get_bgp_neighbors()["global"]
    assert set(bgp) == set(models.BGPStateNeighborsPerVRFDict.__annotations__)
    for peer in bgp["peers"].values():
        assert set(peer) == set(models.BGPStateNeighborDict.__annotations__)


def test_recorded_state_passes_validate_checks_against_the_plan(switch, spine_plan):
    """The recorded spine is the planned spine: every BGP, LLDP, MTU and ECMP check passes on it."""
    routes = switch.get_route_to()
    found = [
        *checks.bgp(spine_plan, switch.get_bgp_neighbors()),
        *checks.lldp(spine_plan, switch.get_lldp_neighbors()),
        *checks.interfaces(spine_plan, switch.get_interfaces()),
        *checks.ecmp(spine_plan, routes),
        *checks.oob_isolation(spine_plan, routes),
    ]
    assert {r.check for r in found} >= {"bgp-session", "lldp-neighbor", "interface", "ecmp-width"}
    assert [r for r in found if not r.ok] == []
    assert len([r for r in found if r.check == "bgp-session"]) == len(spine_plan.peers) == 4


def test_a_health_poll_reads_the_configuration_sessions_and_ports_in_three_commands(switch, replay, lab_plan):
    """A push polls a switch several times while its change settles, each of its batch's switches at once: a
    poll asks for the running configuration, the sessions and the ports' states once each (the full getters
    take two commands for the sessions and two for the ports), and finds what the full getters find."""
    want = expectations(*lab_plan, ["cmp-spine1"])["cmp-spine1"]
    polled = _health(switch, want)
    assert sorted(command for command, _ in replay.sent) == sorted(
        [nvue.SHOW_APPLIED, "ip -j link show", "sudo -S -p '' vtysh -c 'show bgp vrf all neighbors json'"]
    )
    full = health(want, switch.get_bgp_neighbors(), switch.get_interfaces())
    assert polled.peers_up == full.peers_up == set(want.peers) == {"swp1", "swp2", "swp3", "swp4"}
    assert polled.ports_up == full.ports_up == set(want.ports)


def test_recorded_running_config_carries_the_qos_contract(switch):
    running = switch.get_config(retrieve="running")["running"]
    assert qos_map.dscp_map("cumulus", running) == {26: 3, 48: 6}


def test_the_recorded_spine_has_no_change_awaiting_confirmation(switch, replay):
    assert not switch.has_pending_commit() and switch.pending_push() is None
    assert [c for c, _ in replay.sent] == [nvue.CONFIRM_STATUS, nvue.CONFIRM_STATUS]  # NVUE asked, no clock read


def test_sudo_password_goes_only_to_stdin(switch, replay):
    switch.get_bgp_neighbors()
    switch.get_lldp_neighbors()
    sudo = [(c, i) for c, i in replay.sent if c.startswith("sudo ")]
    assert sudo and all(i == f"{PASSWORD}\n" for _, i in sudo)
    assert all(PASSWORD not in c for c, _ in replay.sent)


def test_recorded_compare_stages_and_discard_detaches(switch, replay):
    candidate = Path(__file__).parents[2].joinpath("golden/multi-vendor/cmp-spine1.yaml").read_text()
    switch.load_replace_candidate(config=candidate)
    assert switch.compare_config() == "nv set interface swp1 link mtu 9216\nnv set interface swp2 link mtu 9216"
    switch.discard_config()
    assert replay.sent[-4:] == [
        (nvue.READ_DRAINED, None),  # the drain marker first: a drained switch's candidate keeps its unit
        (
            "mkdir -p .gpufabric && chmod 700 .gpufabric && cat > .gpufabric/candidate.yaml.tmp && mv -f "
            ".gpufabric/candidate.yaml.tmp .gpufabric/candidate.yaml && nv config detach && nv config replace "
            ".gpufabric/candidate.yaml",
            candidate,  # the candidate on the command's stdin, in the one round trip that stages it
        ),
        (nvue.DIFF, None),
        ("nv config detach; rm -f .gpufabric/candidate.yaml", None),
    ]


# -- transactions, through a fake NVUE ------------------------------------------------------------


# What `nv config apply --confirm-status` prints, as the fake answers it. NVIDIA's reference says the
# option shows the time left before the automatic rollback, without showing its layout: these are
# written forms, not recorded on a switch (nvue.confirm_left reads several layouts).
CONFIRM_STATUS_PENDING = "Time left before rollback: {left}s\n"
CONFIRM_STATUS_NONE = "No pending confirmation\n"


MARK_MOVE = f"> {nvue.PUSH_MARK}.tmp && mv -f {nvue.PUSH_MARK}.tmp {nvue.PUSH_MARK}"


class FakeNvue:
    """A test double for nvued: applied/pending revisions, NVUE's own confirm timer (seconds left, run
    down by `elapse`), and a wall clock of its own (`now`, which `date +%s` reads and `clock_step`
    moves without touching the timer, as a clock step does on a switch)."""

    def __init__(self, applied: str = "- set: {system: {hostname: old}}\n") -> None:
        self.applied, self.pending, self.files = applied, None, {}
        self.trial: str | None = None  # the revision to return to while a confirm is pending
        self.left = 0  # NVUE's confirm timer: seconds until it rolls the trial back
        self.now, self.deadline = 1000, 0  # the wall clock, and a deadline a driver may have written by it
        self.fail_apply = False
        self.sent: list[str] = []

    def elapse(self, seconds: int) -> None:
        """Time passes: NVUE's timer runs down and, at zero, NVUE rolls the trial back."""
        self.now += seconds
        if self.trial is not None:
            self.left -= seconds
            if self.left <= 0:
                self.applied, self.trial, self.left = self.trial, None, 0

    def clock_step(self, seconds: int) -> None:
        """The switch's clock is set (NTP's first sync, an operator): NVUE's timer does not move."""
        self.now += seconds

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append(command)
        return self._answer(command, stdin)

    def _answer(self, command: str, stdin: str | None) -> Output:
        if command in (nvue.upload_and_stage(False), nvue.upload_and_stage(True)) and stdin is not None:
            self.files[nvue.CANDIDATE], self.pending = stdin, stdin
        elif command.startswith("cat > ") and stdin is not None:
            self.files[command.rsplit(maxsplit=1)[-1]] = stdin
        elif command == nvue.PREPARE:
            pass
        elif command == nvue.READ_DRAINED:
            return Output(0, self.files.get(nvue.DRAINED, ""), "")
        elif command.startswith("nv config detach"):
            self.pending = None
            if command.endswith(f" {nvue.ROLLBACK}.new"):  # a discard drops a rollback point no commit took
                self.files.pop(nvue.ROLLBACK + ".new", None)
            if command.endswith(f"; {nvue.CLEAR_PENDING}"):
                self.files.pop(nvue.PUSH_MARK, None)
        elif command == nvue.SAVE_NEW_ROLLBACK:
            self.files[nvue.ROLLBACK + ".new"] = self.applied
        elif command == nvue.DROP_NEW_ROLLBACK:
            self.files.pop(nvue.ROLLBACK + ".new", None)
        elif command.startswith(nvue.KEEP_ROLLBACK):
            if nvue.ROLLBACK + ".new" not in self.files:  # as `mv` says of a file that is not there
                return Output(1, "", f"mv: cannot stat '{nvue.ROLLBACK}.new': No such file or directory\n")
            self.files[nvue.ROLLBACK] = self.files.pop(nvue.ROLLBACK + ".new")
            if command != nvue.KEEP_ROLLBACK:  # and what the same round trip goes on with (`&&`)
                return self._answer(command.removeprefix(f"{nvue.KEEP_ROLLBACK} && "), None)
        elif command == nvue.DIFF:
            return Output(0, "" if self.pending in (None, self.applied) else "nv set system hostname new\n", "")
        elif command.startswith("nv config apply --confirm ") and command.endswith("s -y"):
            return self._apply(trial=True, seconds=int(command.split()[4].rstrip("s")))
        elif command == "nv config apply -y":
            return self._apply(trial=False)
        elif command == nvue.CONFIRM_STATUS:
            pending = self.trial is not None and self.left > 0
            return Output(0, CONFIRM_STATUS_PENDING.format(left=self.left) if pending else CONFIRM_STATUS_NONE, "")
        elif command in (nvue.CONFIRM, f"{nvue.CONFIRM} && {nvue.CLEAR_PENDING}"):
            if self.trial is None:
                return Output(1, "", "Error: no pending confirmation\n")
            self.trial, self.left = None, 0
            if command != nvue.CONFIRM:
                self.files.pop(nvue.PUSH_MARK, None)
        elif command == nvue.ABORT:
            self.applied, self.trial, self.left = self.trial or self.applied, None, 0
        elif command.startswith("printf '%s\\n' ") and MARK_MOVE in command:
            mark, _, rest = command.partition(MARK_MOVE)
            self.files[nvue.PUSH_MARK] = shlex.split(mark)[2] + "\n"
            if rest:  # and what the same round trip goes on with (`&&`)
                return self._answer(rest.removeprefix(" && "), None)
        elif command == nvue.READ_MARK:
            return Output(0, self.files.get(nvue.PUSH_MARK, ""), "")
        elif command == nvue.CLEAR_PENDING:
            self.files.pop(nvue.PUSH_MARK, None)
        # A driver that reckons a pending confirm by the wall clock: a deadline written with `date`.
        elif command.endswith("date +%s") and command.startswith("cat "):
            return Output(0, f"{self.deadline}\n{self.now}\n", "")
        elif command.startswith("echo $(( $(date +%s) + "):
            self.deadline = self.now + int(command.split("+ ")[1].split(maxsplit=1)[0])
        elif command.startswith("rm -f ") and "deadline" in command:
            self.deadline = 0
        elif command == f"test -s {nvue.ROLLBACK}":
            return Output(0 if nvue.ROLLBACK in self.files else 1, "", "")
        elif command == nvue.RESTORE:
            self.applied = self.files[nvue.ROLLBACK]
        else:
            raise AssertionError(f"unexpected command {command!r}")
        self._stage(command)
        return Output(0, "", "")

    def _stage(self, command: str) -> None:
        if command.startswith("nv config detach && nv config replace "):
            self.pending = self.files[nvue.CANDIDATE]

    def _apply(self, trial: bool, seconds: int = 0) -> Output:
        if self.fail_apply:
            return Output(1, "", "Error: invalid config: interface swp99 does not exist\n")
        self.trial, self.left = (self.applied, seconds) if trial else (None, 0)
        self.applied, self.pending = self.pending or self.applied, None
        return Output(0, "applied\n", "")

    def close(self) -> None:
        pass


CANDIDATE = (
    f"- set:\n    system:\n      hostname: new\n      aaa:\n        user:\n          {USER}: {{role: system-admin}}\n"
)


@pytest.fixture
def fake():
    return FakeNvue()


@pytest.fixture
def nv(fake):
    dev = get_network_driver("cumulus")("192.0.2.11", USER, PASSWORD, optional_args={"transport": fake})
    dev.open()
    return dev


def test_fake_nvue_commit_with_confirm_timer_then_confirm(nv, fake):
    nv.load_replace_candidate(config=CANDIDATE)
    assert nv.compare_config() == "nv set system hostname new"
    nv.commit_config(revert_in=90)
    assert fake.sent[-1].endswith(" && nv config apply --confirm 90s -y") and fake.applied == CANDIDATE
    assert nv.has_pending_commit()
    with pytest.raises(CommitError, match="pending confirmation"):
        nv.commit_config(revert_in=90)
    nv.confirm_commit()
    assert fake.sent[-1] == f"{nvue.CONFIRM} && {nvue.CLEAR_PENDING}" and not nv.has_pending_commit()
    assert nvue.PUSH_MARK not in fake.files
    nv.load_replace_candidate(config=CANDIDATE)
    assert nv.compare_config() == ""  # a second identical push changes nothing


def test_a_prepared_commit_keeps_the_point_names_the_push_and_applies_in_one_round_trip(nv, fake):
    """The rollback point and NVUE's confirm status read ahead (the push reads them beside the diff): the
    commit is then one command, the point kept and the push named before the apply."""
    before = fake.applied
    nv.load_replace_candidate(config=CANDIDATE)
    nv.prepare_commit()
    assert {nvue.SAVE_NEW_ROLLBACK, nvue.CONFIRM_STATUS} <= set(fake.sent)
    assert nv.compare_config() == "nv set system hostname new"
    sent = len(fake.sent)
    nv.commit_config(revert_in=60)
    (commit,) = fake.sent[sent:]
    assert commit.startswith(f"{nvue.KEEP_ROLLBACK} && printf ")
    assert commit.endswith(f"{MARK_MOVE} && nv config apply --confirm 60s -y")
    assert fake.files[nvue.ROLLBACK] == before and fake.applied == CANDIDATE and nvue.PUSH_MARK in fake.files
    nv.rollback()  # the point read ahead is the one a rollback returns to
    assert fake.applied == before


def test_a_commit_prepared_while_another_is_pending_still_refuses_and_keeps_the_old_point(nv, fake):
    fake.files[nvue.ROLLBACK] = "the point of the push that is pending"
    fake.trial, fake.left = fake.applied, 60  # someone's apply awaits confirmation
    nv.load_replace_candidate(config=CANDIDATE)
    nv.prepare_commit()
    assert nv.compare_config() == "nv set system hostname new"
    with pytest.raises(CommitError, match="pending confirmation"):
        nv.commit_config(revert_in=60)
    assert fake.files[nvue.ROLLBACK] == "the point of the push that is pending"
    assert nvue.ROLLBACK + ".new" not in fake.files and not any("--confirm 60s" in c for c in fake.sent)


def test_a_discard_drops_the_point_read_ahead_and_the_next_commit_reads_its_own(nv, fake):
    nv.load_replace_candidate(config=CANDIDATE)
    nv.prepare_commit()
    nv.compare_config()
    nv.discard_config()
    assert nvue.ROLLBACK + ".new" not in fake.files and fake.sent[-1].endswith(f" {nvue.ROLLBACK}.new")
    since = fake.applied = "- set: {system: {hostname: changed-since}}\n"  # someone applied in between
    nv.load_replace_candidate(config=CANDIDATE)
    nv.compare_config()
    sent = len(fake.sent)
    nv.commit_config(revert_in=60)  # nothing prepared: the commit reads the point now, then applies
    assert nvue.SAVE_NEW_ROLLBACK in fake.sent[sent:] and fake.files[nvue.ROLLBACK] == since


def test_fake_nvue_rollback_while_pending_aborts_the_trial(nv, fake):
    before = fake.applied
    nv.load_replace_candidate(config=CANDIDATE)
    nv.commit_config(revert_in=60)
    nv.rollback()
    assert nvue.ABORT in fake.sent and fake.applied == before and not nv.has_pending_commit()


def test_fake_nvue_rollback_after_confirm_restores_the_saved_revision(nv, fake):
    before = fake.applied
    nv.load_replace_candidate(config=CANDIDATE)
    nv.commit_config()
    assert not nv.has_pending_commit()  # no timer asked for, none recorded
    nv.rollback()
    assert fake.sent[-1] == nvue.RESTORE and fake.applied == before


def test_fake_nvue_expired_timer_is_not_pending(nv, fake):
    before = fake.applied
    nv.load_replace_candidate(config=CANDIDATE)
    nv.commit_config(revert_in=30)
    fake.elapse(31)  # NVUE's timer fired and rolled the trial back
    assert not nv.has_pending_commit() and nv.pending_push() is None and fake.applied == before
    with pytest.raises(CommitError, match="no commit is pending"):
        nv.confirm_commit()


@pytest.mark.parametrize("step", [3600, -3600, 10 * 365 * 86400])
def test_a_clock_step_on_the_switch_neither_ends_nor_extends_a_pending_confirm(step):
    """The switch's clock jumps (forward an hour, back an hour, or ten years: a first NTP sync) between the
    commit and the confirm. NVUE's timer still has its time left: the confirm succeeds and keeps the change;
    the driver never asks the switch's clock."""
    fake = FakeNvue()
    dev = get_network_driver("cumulus")("192.0.2.13", USER, PASSWORD, optional_args={"transport": fake})
    dev.open()
    dev.load_replace_candidate(config=CANDIDATE)
    dev.commit_config(revert_in=120)
    fake.elapse(5)
    fake.clock_step(step)
    assert dev.has_pending_commit()
    dev.confirm_commit()
    assert fake.applied == CANDIDATE and fake.trial is None and f"{nvue.CONFIRM} && {nvue.CLEAR_PENDING}" in fake.sent
    assert not any("date +%s" in c for c in fake.sent)
    fake.elapse(600)  # long past the old timer: nothing reverts a confirmed change
    assert fake.applied == CANDIDATE


def test_confirm_status_layouts():
    """The layouts `nv config apply --confirm-status` may print the time left in, and its none."""
    assert nvue.confirm_left(CONFIRM_STATUS_PENDING.format(left=87)) == 87
    assert nvue.confirm_left("0:01:27") == nvue.confirm_left("01:27") == nvue.confirm_left("1m 27s") == 87
    assert nvue.confirm_left("87") == 87 and nvue.confirm_left("87 seconds") == 87
    for none in ("", CONFIRM_STATUS_NONE, "none", "No pending confirm for revision 12", "0s"):
        assert nvue.confirm_left(none) is None, none


def test_pending_push_names_the_push_from_nvues_state_and_the_marker(fake):
    """A push's apply awaiting confirmation carries its id, start and controller: another controller's
    driver reads them back. Once NVUE has nothing pending, a leftover marker names nothing."""
    args = {"transport": fake, "push_id": "gf-20261123T101500Z-a1b2c3", "push_controller": "ctl-a"}
    first = get_network_driver("cumulus")("192.0.2.14", USER, PASSWORD, optional_args=args)
    first.open()
    first.load_replace_candidate(config=CANDIDATE)
    first.commit_config(revert_in=120)
    other = get_network_driver("cumulus")("192.0.2.14", USER, PASSWORD, optional_args={"transport": fake})
    other.open()
    assert other.pending_push() == {
        "push_id": "gf-20261123T101500Z-a1b2c3",
        "started": "2026-11-23T10:15:00Z",
        "controller": "ctl-a",
    }
    fake.files[nvue.PUSH_MARK + ".kept"] = fake.files[nvue.PUSH_MARK]
    fake.elapse(121)  # NVUE reverted; the marker file is still there
    fake.files[nvue.PUSH_MARK] = fake.files.pop(nvue.PUSH_MARK + ".kept")
    assert other.pending_push() is None
    fake.trial, fake.left = fake.applied, 60  # someone's own `nv config apply --confirm`, no marker
    fake.files.pop(nvue.PUSH_MARK)
    assert other.pending_push() == {"push_id": "unknown", "started": "", "controller": ""}


def test_fake_nvue_failed_apply_detaches_and_raises(nv, fake):
    fake.fail_apply = True
    nv.load_replace_candidate(config=CANDIDATE)
    with pytest.raises(CommitError, match="swp99 does not exist"):
        nv.commit_config(revert_in=60)
    assert fake.sent[-1] == f"{nvue.DETACH}; {nvue.CLEAR_PENDING}" and fake.pending is None
    assert not nv.has_pending_commit() and nvue.PUSH_MARK not in fake.files


def test_replace_without_the_login_user_is_refused_before_anything_is_sent(nv, fake):
    with pytest.raises(ReplaceConfigException, match="delete the account"):
        nv.load_replace_candidate(config="- set:\n    system:\n      hostname: new\n")
    with pytest.raises(ReplaceConfigException, match="not an NVUE configuration"):
        nv.load_replace_candidate(config="system: {hostname: new}\n")
    with pytest.raises(MergeConfigException, match="not an NVUE configuration"):
        nv.load_merge_candidate(config="[unclosed\n")
    nv.load_merge_candidate(config="- set:\n    system: {hostname: new}\n")  # a merge keeps every user: allowed
    assert fake.sent == []


def test_a_candidate_read_again_is_parsed_once(nv, fake, monkeypatch):
    """A push previews and stages each switch's candidate on two sessions: the second check of the same file
    reuses the first's reading; another file, or one the login user left, is read and judged again."""
    read: list[str] = []
    real = nvue.documents
    monkeypatch.setattr(nvue, "documents", lambda text: read.append(text) or real(text))
    nvue._READ_USERS.clear()
    nv.load_replace_candidate(config=CANDIDATE)
    nv.load_replace_candidate(config=CANDIDATE)
    assert read == [CANDIDATE]
    without = CANDIDATE.replace(f"          {USER}:", "          someone-else:", 1)
    assert without != CANDIDATE
    with pytest.raises(ReplaceConfigException, match="delete the account"):
        nv.load_replace_candidate(config=without)
    with pytest.raises(ReplaceConfigException, match="delete the account"):
        nv.load_replace_candidate(config=without)
    for _ in range(2):  # a file that is no configuration is never kept: it is refused each time
        with pytest.raises(ReplaceConfigException, match="not an NVUE configuration"):
            nv.load_replace_candidate(config="system: {hostname: new}\n")
    assert read == [CANDIDATE, without, "system: {hostname: new}\n", "system: {hostname: new}\n"]


def test_rollback_without_a_commit_says_so(nv):
    with pytest.raises(CommitError, match="nothing to roll back"):
        nv.rollback()


class _ShowOnly:
    """A Cumulus switch that answers only `nv config show -r applied`, and remembers every command."""

    def __init__(self, applied: str) -> None:
        self.applied, self.commands = applied, []

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.commands.append(command)
        return Output(0, self.applied if command == nvue.SHOW_APPLIED else "", "")

    def close(self) -> None:
        pass


def test_validate_drift_on_cumulus_stages_nothing():
    """Validate's drift check reads the applied revision and diffs here: no replace, no detach."""
    from nornir_tasks.validate import _drift

    applied = (
        "- set:\n    system:\n      hostname: cmp-spine1\n"
        "    interface:\n      swp1:\n        link:\n          mtu: 9216\n"
    )
    switch = _ShowOnly(applied)
    dev = get_network_driver("cumulus")("192.0.2.12", USER, PASSWORD, optional_args={"transport": switch})
    dev.open()
    header = "- header:\n    rev-id: 1.0\n"
    assert _drift(dev, header + applied) == ""
    changed = _drift(dev, header + applied.replace("9216", "1500"))
    assert changed == "nv set interface swp1 link mtu 1500"  # as `nv config diff -o commands` says it
    assert set(switch.commands) == {nvue.SHOW_APPLIED}
    # Given the applied text validate already read (get_config), the switch is not asked again.
    switch.commands.clear()
    assert _drift(dev, header + applied, running=applied) == ""
    assert switch.commands == []


def test_tree_diff_says_what_would_change_as_nvue_commands():
    """The drift validate reports: every set and unset taking the applied tree to the candidate."""
    swp1 = {"link": {"mtu": 9216, "state": {"up": {}}}}
    applied = {"system": {"hostname": "a"}, "interface": {"swp1": swp1, "swp2": {"link": {"mtu": 9216}}}}
    bgp = {"bgp": {"enable": True}}
    candidate = {"system": {"hostname": "b"}, "interface": {"swp1": swp1, "swp3": {}}, "router": bgp}
    assert nvue.tree_diff(applied, candidate).splitlines() == [
        "nv unset interface swp2",
        "nv set interface swp3",
        "nv set router bgp enable true",
        "nv set system hostname b",
    ]
    assert nvue.tree_diff(candidate, candidate) == ""
