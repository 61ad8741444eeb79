"""`gpufabric telemetry bmc` end to end: the plan's OOB addresses answered, inside a network namespace the
test makes (`unshare --net`, gone with its process), by sushy-tools' emulator (gpu001) and the DMTF-layout
fake with a failed power supply (gpu002); the exit codes of docs/exit-codes.md, and the intent's rules."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpufabric.cli.options import load_plan
from gpufabric.errors import IntentError
from gpufabric.telemetry.bmc import bmc_targets
from tests.telemetry.redfish_doubles import PASSWORD, USER, sushy_emulator_path

ROOT = Path(__file__).resolve().parents[2]
PORT = 8443

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare"),
]


def _intent(tmp_path: Path, **changes) -> Path:
    """The SONiC example cut to two servers whose BMCs are read over http on PORT (a lab's answer)."""
    intent = yaml.safe_load((ROOT / "inventory" / "examples" / "sonic.yml").read_text())
    group = intent["server_groups"][0]
    group["count"] = 2
    group["bmc"] = {"scheme": "http", "port": PORT}
    intent["credentials"]["bmc"] = {"username": USER, "password": {"env": "TEST_BMC_PASSWORD"}}
    for path, value in changes.items():
        node = intent
        keys = path.split(".")
        for key in keys[:-1]:
            node = node[key] if not key.isdigit() else node[int(key)]
        if value is None:
            node.pop(keys[-1])
        else:
            node[keys[-1]] = value
    file = tmp_path / "fabric.yml"
    file.write_text(yaml.safe_dump(intent, sort_keys=False))
    return file


def _in_namespace(tmp_path: Path, bmcs: list[dict], runs: list[dict]) -> list[dict]:
    spec = {"folder": str(tmp_path), "bmcs": bmcs, "runs": runs}
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-m", "tests.telemetry.bmc_netns", json.dumps(spec)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow  # runs a whole tool (the fast tier's budget): the whole suite runs it
@pytest.mark.skipif(sushy_emulator_path() is None, reason="sushy-tools is not installed (the test extra)")
def test_telemetry_bmc_reads_the_plan_s_bmcs_and_exits_with_the_verdict(tmp_path: Path):
    intent = _intent(tmp_path)
    targets = {t.node: t.address for t in bmc_targets(load_plan(str(intent)))}
    assert set(targets) == {"gpu001", "gpu002"}
    good = {"TEST_BMC_PASSWORD": PASSWORD}
    base = ["telemetry", "bmc", str(intent), "--once"]
    results = _in_namespace(
        tmp_path,
        [
            {"address": targets["gpu001"], "port": PORT, "kind": "sushy"},
            {"address": targets["gpu002"], "port": PORT, "kind": "older"},
        ],
        [
            {"argv": [*base, "--plain-http", "--json"], "env": good},
            {"argv": [*base, "--plain-http", "--node", "gpu001"], "env": good},
            {"argv": [*base, "--plain-http"], "env": good},
            {"argv": [*base, "--node", "gpu001"], "env": good},
            {"argv": [*base, "--plain-http", "--node", "gpu001"], "env": {"TEST_BMC_PASSWORD": "wrong-one"}},
            {"argv": [*base, "--plain-http"], "unset": ["TEST_BMC_PASSWORD"]},
        ],
    )
    both, one, text, no_http, wrong, unset = results
    # Both read: gpu002's BMC reports its PSU failed, so the verdict is 4.
    assert both["rc"] == 4, both["stderr"]
    by_node = {r["node"]: r for r in json.loads(both["stdout"])}
    assert by_node["gpu001"]["read"] and by_node["gpu001"]["failures"] == []
    assert by_node["gpu001"]["bmc"] == targets["gpu001"]
    assert by_node["gpu002"]["failures"] == [
        "system 437XR1138R2: health rollup Critical",
        "psu 1U/1 (Power Supply Bay 2): Critical",
    ]
    temps = [p for p in by_node["gpu001"]["parts"] if p["kind"] == "temperature"]
    assert [(p["name"], p["reading"], p["critical"]) for p in temps] == [
        ("CPU Temp", 41.0, 45.0),
        ("Chassis Intake Temp", 25.0, 40.0),
    ]
    # The emulator's server alone is healthy: 0.
    assert one["rc"] == 0, one["stderr"]
    assert one["stdout"].startswith(f"gpu001 {targets['gpu001']}: power ")
    assert text["rc"] == 4 and "  FAILED psu 1U/1 (Power Supply Bay 2): Critical" in text["stdout"]
    # No --plain-http: the login is not sent; the BMC is not read, exit 2, and it says why.
    assert no_http["rc"] == 2
    assert "the BMC is reached over plain http, which would carry the login in clear: refused" in no_http["stderr"]
    # A wrong password is the emulator's 401, exit 2; the password is in no output.
    assert wrong["rc"] == 2 and "GET /redfish/v1/Systems: HTTP 401 (the login was refused)" in wrong["stderr"]
    assert "wrong-one" not in wrong["stdout"] + wrong["stderr"]
    # The variable the intent names is not set: exit 2 before anything is asked.
    assert unset["rc"] == 2 and "TEST_BMC_PASSWORD" in unset["stderr"] and "Traceback" not in unset["stderr"]
    for r in results:
        assert PASSWORD not in r["stdout"] + r["stderr"]


def test_a_group_with_bmc_needs_an_oob_port_and_a_login(tmp_path: Path):
    intent = _intent(tmp_path, **{"server_groups.0.nics.oob": None, "credentials.bmc": None})
    with pytest.raises(IntentError) as caught:
        load_plan(str(intent))
    found = {(p.field, p.message) for p in caught.value.problems}
    assert found == {
        ("server_groups[0].bmc", "the BMCs are read at the servers' OOB addresses, and this group has none"),
        ("server_groups[0].bmc", "the BMCs need a login, and credentials.bmc names none"),
    }


def test_the_command_refuses_an_intent_without_bmcs_and_an_unknown_node(tmp_path: Path):
    without = _intent(tmp_path, **{"server_groups.0.bmc": None, "credentials.bmc": None})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "gpufabric", "telemetry", "bmc", str(without), "--once"],
                          capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert done.returncode == 2 and "no server group has `bmc` in the intent" in done.stderr
    done = subprocess.run([sys.executable, "-m", "gpufabric", "telemetry", "bmc", str(_intent(tmp_path)), "--once",
                           "--node", "gpu999"], capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert done.returncode == 2 and "no BMC is read for gpu999" in done.stderr


def _placed_plan():
    """The default fabric with its GPU servers placed in racks (the source-of-truth tests' intent), BMCs on."""
    from sot_fabric import sot_intent

    from tests.conftest import plan_doc

    doc = sot_intent()
    doc["server_groups"][0]["bmc"] = {}
    doc["credentials"]["bmc"] = {"username": USER, "password": {"env": "TEST_BMC_PASSWORD"}}
    return plan_doc(doc)


def test_the_bmc_labels_carry_the_server_s_rack_and_position():
    plan = _placed_plan()
    targets = {t.node: t.labels for t in bmc_targets(plan)}
    gpu01 = next(s for s in plan.servers if s.name == "gpu01")
    from gpufabric.plan.model import ip

    assert targets["gpu01"] == {"node": "gpu01", "rack": "r01", "position": "2", "bmc": str(ip(gpu01.mgmt_ip))}
    assert targets["gpu03"]["rack"] == "r02" and set(targets) == {"gpu01", "gpu02", "gpu03"}  # installed only


def test_the_exporter_reads_its_shard_s_bmcs_with_the_login_from_the_environment(monkeypatch):
    from gpufabric.config.secrets import SecretUnavailableError
    from gpufabric.fleet.args import FleetArgs
    from gpufabric.telemetry.service import _bmcs
    from gpufabric.telemetry.shards import parse_shard

    plan = _placed_plan()
    monkeypatch.setenv("TEST_BMC_PASSWORD", PASSWORD)
    every = _bmcs(plan, FleetArgs(), None, plain_http=False)
    assert [t.node for t, _ in every] == ["gpu01", "gpu02", "gpu03"]
    target, endpoint = every[0]
    assert (endpoint.host, endpoint.port, endpoint.scheme, endpoint.username) == (target.address, 443, "https", USER)
    assert endpoint.password.reveal() == PASSWORD and PASSWORD not in repr(endpoint)
    shards = [parse_shard(f"{i}/2") for i in range(2)]
    split = [[t.node for t, _ in _bmcs(plan, FleetArgs(), s, plain_http=False)] for s in shards]
    assert sorted(split[0] + split[1]) == ["gpu01", "gpu02", "gpu03"] and all(
        shards[i].owns(n) for i in range(2) for n in split[i]
    )
    monkeypatch.delenv("TEST_BMC_PASSWORD")
    with pytest.raises(SecretUnavailableError, match="TEST_BMC_PASSWORD"):
        _bmcs(plan, FleetArgs(), None, plain_http=False)


@pytest.mark.parametrize(
    ("plane", "devices", "lab", "read"),
    [(None, (), False, True), ("oob", (), False, True), ("compute", (), False, False),
     (None, ("cmp-su1-leaf1",), False, False), (None, (), True, False)],
)  # fmt: skip
def test_the_exporter_reads_bmcs_for_every_plane_or_the_oob_plane_and_never_in_the_lab(
    monkeypatch, plane: str | None, devices: tuple[str, ...], lab: bool, read: bool
):
    """`telemetry serve`'s collector, its reaching of switches replaced (no switch answers here)."""
    from gpufabric.fleet.access import Access
    from gpufabric.fleet.args import FleetArgs
    from gpufabric.telemetry import service

    plan = _placed_plan()
    monkeypatch.setenv("TEST_BMC_PASSWORD", PASSWORD)
    monkeypatch.setattr(service, "reach", lambda args: (plan, Access(lab, "admin", "")))
    monkeypatch.setattr(service, "check_jump", lambda *a: None)
    monkeypatch.setattr(service, "host_shell", lambda *a: None)
    args = FleetArgs(plane=plane, devices=devices)
    collector = service.collector(args, 1, budget=10, deadline=10)
    assert [t.node for t, _ in collector.bmcs] == (["gpu01", "gpu02", "gpu03"] if read else [])
