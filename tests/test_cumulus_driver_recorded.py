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

from pathlib import Path

import pytest
from napalm import get_network_driver
from napalm.base import models
from napalm.base.exceptions import CommitError, MergeConfigException, ReplaceConfigException
from napalm.base.test.helpers import test_model as complies

from gpufabric.config.context import LinkIndex
from gpufabric.config.secrets import PasswordHasher
from gpufabric.drivers import nvue
from gpufabric.drivers.recording import ReplayTransport, load
from gpufabric.drivers.transport import Output
from gpufabric.intent import load_intent
from gpufabric.lab.topology import topology
from gpufabric.validate import checks, qos_map
from gpufabric.validate.planned import planned

RECORDED = Path(__file__).parent / "recorded" / "cumulus" / "cmp-spine1.yml"
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
def spine_plan():
    plan = topology(load_intent(None)).plan
    index = LinkIndex(plan, PasswordHasher(plan.intent.fabric.name, {"GPUFABRIC_SWITCH_PASSWORD": "unused"}, None))
    return planned(plan, index, ["cmp-spine1"], "compute")["cmp-spine1"]


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


def test_recorded_running_config_carries_the_qos_contract(switch):
    running = switch.get_config(retrieve="running")["running"]
    assert qos_map.dscp_map("cumulus", running) == {26: 3, 48: 6}


def test_sudo_password_goes_only_to_stdin(switch, replay):
    switch.get_bgp_neighbors()
    switch.get_lldp_neighbors()
    sudo = [(c, i) for c, i in replay.sent if c.startswith("sudo ")]
    assert sudo and all(i == f"{PASSWORD}\n" for _, i in sudo)
    assert all(PASSWORD not in c for c, _ in replay.sent)


def test_recorded_compare_stages_and_discard_detaches(switch, replay):
    candidate = Path(__file__).parent.joinpath("golden/multi-vendor/cmp-spine1.yaml").read_text()
    switch.load_replace_candidate(config=candidate)
    assert switch.compare_config() == "nv set interface swp1 link mtu 9216\nnv set interface swp2 link mtu 9216"
    switch.discard_config()
    assert [c for c, _ in replay.sent][-5:] == [
        nvue.PREPARE,
        "cat > .gpufabric/candidate.yaml.tmp && mv -f .gpufabric/candidate.yaml.tmp .gpufabric/candidate.yaml",
        "nv config detach && nv config replace .gpufabric/candidate.yaml",
        nvue.DIFF,
        "nv config detach; rm -f .gpufabric/candidate.yaml",
    ]


# -- transactions, through a fake NVUE ------------------------------------------------------------


class FakeNvue:
    """A stand-in for nvued: applied/pending revisions, a confirm timer on a clock, and a history."""

    def __init__(self, applied: str = "- set: {system: {hostname: old}}\n") -> None:
        self.applied, self.pending, self.files = applied, None, {}
        self.trial: str | None = None  # the revision to return to while a confirm is pending
        self.now, self.deadline = 1000, 0
        self.fail_apply = False
        self.sent: list[str] = []

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append(command)
        if command.startswith("cat > ") and stdin is not None:
            self.files[command.rsplit(maxsplit=1)[-1]] = stdin
        elif command == nvue.PREPARE:
            pass
        elif command.startswith("nv config detach"):
            self.pending = None
        elif command == nvue.SAVE_ROLLBACK:
            self.files[nvue.ROLLBACK] = self.applied
        elif command == nvue.DIFF:
            return Output(0, "" if self.pending in (None, self.applied) else "nv set system hostname new\n", "")
        elif command.startswith("nv config apply --confirm ") and command.endswith("s -y"):
            return self._apply(trial=True)
        elif command == "nv config apply -y":
            return self._apply(trial=False)
        elif command == nvue.CONFIRM:
            self.trial = None
        elif command == nvue.ABORT:
            self.applied, self.trial = self.trial or self.applied, None
        elif command == nvue.PENDING:
            return Output(0, f"{self.deadline}\n{self.now}\n", "")
        elif command.startswith("echo $(( $(date +%s) + "):
            self.deadline = self.now + int(command.split("+ ")[1].split(maxsplit=1)[0])
        elif command == nvue.CLEAR_PENDING:
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

    def _apply(self, trial: bool) -> Output:
        if self.fail_apply:
            return Output(1, "", "Error: invalid config: interface swp99 does not exist\n")
        self.trial = self.applied if trial else None
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
    assert "nv config apply --confirm 90s -y" in fake.sent and fake.applied == CANDIDATE
    assert nv.has_pending_commit()
    with pytest.raises(CommitError, match="pending confirmation"):
        nv.commit_config(revert_in=90)
    nv.confirm_commit()
    assert fake.sent[-2:] == [nvue.CONFIRM, nvue.CLEAR_PENDING] and not nv.has_pending_commit()
    nv.load_replace_candidate(config=CANDIDATE)
    assert nv.compare_config() == ""  # a second identical push changes nothing


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
    nv.load_replace_candidate(config=CANDIDATE)
    nv.commit_config(revert_in=30)
    fake.now += 31
    assert not nv.has_pending_commit()


def test_fake_nvue_failed_apply_detaches_and_raises(nv, fake):
    fake.fail_apply = True
    nv.load_replace_candidate(config=CANDIDATE)
    with pytest.raises(CommitError, match="swp99 does not exist"):
        nv.commit_config(revert_in=60)
    assert fake.sent[-1] == nvue.DETACH and fake.pending is None and not nv.has_pending_commit()


def test_replace_without_the_login_user_is_refused_before_anything_is_sent(nv, fake):
    with pytest.raises(ReplaceConfigException, match="delete the account"):
        nv.load_replace_candidate(config="- set:\n    system:\n      hostname: new\n")
    with pytest.raises(ReplaceConfigException, match="not an NVUE configuration"):
        nv.load_replace_candidate(config="system: {hostname: new}\n")
    with pytest.raises(MergeConfigException, match="not an NVUE configuration"):
        nv.load_merge_candidate(config="[unclosed\n")
    nv.load_merge_candidate(config="- set:\n    system: {hostname: new}\n")  # a merge keeps every user: allowed
    assert fake.sent == []


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
    assert "+      mtu: 1500" in changed and "-      mtu: 9216" in changed
    assert set(switch.commands) == {nvue.SHOW_APPLIED}
