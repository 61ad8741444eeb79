"""`nornir push --dry-run` says which switches a push would drain, and why (text and --json); a real push
that needs a drain and has no drainer is refused before any change.

Every platform's driver is a test double whose diff is one written in that platform's own form (NVUE's
`nv set` lines for Cumulus, the session's unified diff for EOS): each switch's platform reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import ROOT
from napalm.base import NetworkDriver
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.cli import main
from gpufabric.fleet import access
from gpufabric.push import service
from gpufabric.push.lock import fabric_lock

INTENT = str(ROOT / "inventory" / "examples" / "multi-vendor.yml")
DIFFS = {
    "cmp-su1-leaf1": "nv set interface swp1s0 link mtu 9000",  # Cumulus: an MTU
    "cmp-su1-leaf2": "nv set interface swp1s0 description host: gpu009 moved",  # Cumulus: hitless
    "sto-leaf1a": (  # EOS: a new router-id resets every session
        "--- system:/running-config\n+++ session:/gf-session-config\n@@ -90,3 +90,3 @@\n router bgp 4200001001\n"
        "-   router-id 10.1.0.3\n+   router-id 10.1.0.99\n    maximum-paths 64 ecmp 64"
    ),
    "sto-leaf1b": "",  # runs its configuration already
}


class Double(NetworkDriver):
    """Each switch's diff is DIFFS[its name]; a commit is recorded (and must not happen here)."""

    NAMES: ClassVar[dict[str, str]] = {}  # hostname (its address) -> switch name
    COMMITS: ClassVar[list[str]] = []

    def __init__(self, hostname: str, username: str, password: str, timeout: int = 60, optional_args: Any = None):
        self.name = self.NAMES[hostname]

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def load_replace_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        pass

    def compare_config(self) -> str:
        return DIFFS[self.name]

    def discard_config(self) -> None:
        pass

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        self.COMMITS.append(self.name)

    def get_bgp_neighbors(self) -> dict[str, Any]:
        return {}

    def get_interfaces(self) -> dict[str, Any]:
        return {}


@pytest.fixture
def fleet(monkeypatch, tmp_path) -> Path:
    from gpufabric.fleet.inventory import inventory_from_plan
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)
    for name in ("GPUFABRIC_SWITCH_PASSWORD", "GPUFABRIC_SNMP_COMMUNITY", "GPUFABRIC_SALT_KEY"):
        monkeypatch.setenv(name, f"canary-{name.lower()}")
    monkeypatch.setenv("GPUFABRIC_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    monkeypatch.setattr(access, "network_driver", lambda platform: Double)
    monkeypatch.setattr(service, "fabric_lock", lambda fabric, **kw: fabric_lock(fabric, tmp_path / "locks", **kw))
    hosts = inventory_from_plan(build_plan(load_intent(INTENT))).hosts
    monkeypatch.setattr(Double, "NAMES", {str(hosts[n].hostname): n for n in DIFFS})
    monkeypatch.setattr(Double, "COMMITS", [])
    return tmp_path


def push(*args: str) -> int:
    with pytest.raises(SystemExit) as done:
        main(["push", INTENT, "--wait", "0", *[a for n in DIFFS for a in ("--device", n)], *args])
    return int(done.value.code or 0)


def test_the_dry_run_lists_the_switches_it_would_drain_and_what_in_their_diff_says_why(fleet, capsys):
    assert push("--dry-run", "--no-diff") == 0
    out = capsys.readouterr().out
    listed = out[out.index("switches would be drained") - 2 :].splitlines()
    assert listed == [
        "2 switches would be drained (--drain auto):",
        "  cmp-su1-leaf1  mtu: a port's MTU changes [nv set interface swp1s0 link mtu 9000]",
        "  sto-leaf1a  bgp-reset: the router-id changes [-   router-id 10.1.0.3]",
    ]
    assert "│ mtu " in out and "│ bgp-reset " in out  # the table's drain column
    assert Double.COMMITS == []


def test_the_dry_runs_json_names_the_drained_switches_and_each_ones_reasons(fleet, capsys):
    assert push("--dry-run", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["drain"] == {"policy": "auto", "switches": ["cmp-su1-leaf1", "sto-leaf1a"]}
    by = {d["device"]: d for d in report["devices"]}
    assert by["cmp-su1-leaf1"]["drain"] is True and by["cmp-su1-leaf2"]["drain"] is False
    assert by["sto-leaf1a"]["disruptions"] == [
        {"reason": "bgp-reset", "detail": "the router-id changes [-   router-id 10.1.0.3]"}
    ]
    assert by["cmp-su1-leaf2"]["disruptions"] == [] and by["sto-leaf1b"]["status"] == "unchanged"


def test_each_diff_printed_says_whether_its_switch_would_be_drained(fleet, capsys):
    assert push("--dry-run") == 0
    out = capsys.readouterr().out
    assert "--- cmp-su1-leaf1 (would change; drained: mtu)" in out
    assert "--- sto-leaf1a (would change; drained: bgp-reset)" in out
    assert "--- cmp-su1-leaf2 (would change)" in out


def test_always_and_never(fleet, capsys):
    assert push("--dry-run", "--json", "--drain", "always") == 0
    always = json.loads(capsys.readouterr().out)["drain"]
    assert always == {"policy": "always", "switches": ["cmp-su1-leaf1", "cmp-su1-leaf2", "sto-leaf1a"]}
    assert push("--dry-run", "--drain", "never", "--no-diff") == 0
    assert "no switch would be drained (--drain never)" in capsys.readouterr().out


def test_a_switch_that_cannot_drain_stops_the_push_before_any_change(fleet, capsys):
    # The push drains through the maintenance tasks; this double's driver has no drain, so the canary's drain
    # fails, its batch is not changed and the rollout stops there.
    assert push("--no-diff") == 4
    assert "drain failed" in capsys.readouterr().out
    assert Double.COMMITS == []
    trail = [json.loads(line) for line in (fleet / "audit.jsonl").read_text().splitlines()]
    assert "committed" not in {r["status"] for r in trail}
