"""Where push and validate go: the lab only when asked for, whatever lab state is lying around."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import BIN, ROOT

from gpufabric.fleet import args as fleet_args
from gpufabric.fleet.errors import NoLabError
from gpufabric.fleet.lab.state import LabState
from gpufabric.fleet.target import FleetArgs, open_fleet

LAB_PASSWORD = "lab-canary-only"
FRR_FILES = {".frr.conf", ".nft", ".system.yaml", ".interfaces"}  # what render writes per frr switch


@pytest.fixture
def lab_state(tmp_path, monkeypatch):
    """A lab of the default fabric that looks up, in a state dir standing in for the default one."""
    LabState("lab", namespaces=["cmp-spine1"]).save(tmp_path)
    (tmp_path / "login.json").write_text(
        json.dumps({"username": "labadmin", "password": LAB_PASSWORD, "key_file": str(tmp_path / "key")})
    )
    monkeypatch.setattr(fleet_args, "DEFAULT_DIR", tmp_path)  # the one place the default lab is named
    return tmp_path


def test_a_lab_that_is_up_is_not_a_target_unless_asked_for(lab_state, monkeypatch, capsys):
    monkeypatch.setenv("GPUFABRIC_SWITCH_PASSWORD", "production-password")
    real = open_fleet(FleetArgs(plane="compute"))
    assert not real.access.lab
    assert real.access.password == "production-password"
    assert {h.platform for h in real.nr.inventory.hosts.values()} != {"frr"} or all(
        d.platform == "frr" for d in real.targets
    )
    # The library leaves the note for the command line to print; it prints nothing itself.
    assert any("pass --lab" in note for note in real.access.notes)
    assert capsys.readouterr().err == ""


def test_asking_for_the_lab_targets_it(lab_state):
    for args in (FleetArgs(plane="compute", lab=True), FleetArgs(plane="compute", state_dir=lab_state)):
        lab = open_fleet(args)
        assert lab.access.lab and lab.access.password == LAB_PASSWORD


def test_asking_for_a_lab_that_is_not_there_is_an_error(tmp_path):
    with pytest.raises(NoLabError, match="no lab of fabric"):
        open_fleet(FleetArgs(state_dir=tmp_path / "nowhere"))


def test_passwords_stay_out_of_the_inventory_dump(lab_state, monkeypatch):
    monkeypatch.setenv("GPUFABRIC_SWITCH_PASSWORD", "production-password")
    dump = json.dumps(open_fleet(FleetArgs(plane="compute")).nr.inventory.dict(), default=str)
    assert "production-password" not in dump


def test_the_lab_renders_with_its_own_secrets_when_none_is_exported(lab_state, monkeypatch):
    """`lab up` keeps a salt key in the lab's state: a push to the lab renders with nothing exported
    (conftest's planted variables removed here, as in a new shell), and an exported one still wins."""
    from gpufabric.fleet.candidates import candidate

    for name in ("GPUFABRIC_SALT_KEY", "GPUFABRIC_SWITCH_PASSWORD", "GPUFABRIC_SNMP_COMMUNITY"):
        monkeypatch.delenv(name, raising=False)
    (lab_state / "secrets.json").write_text(json.dumps({"GPUFABRIC_SALT_KEY": "lab-salt-key-canary"}))
    lab = open_fleet(FleetArgs(plane="compute", lab=True))
    kept = lab.index.hasher.salt("labadmin")
    text = candidate(lab.plan, lab.index, "cmp-spine1", lab.access.secrets)
    assert "lab-salt-key-canary" not in text and LAB_PASSWORD not in text
    monkeypatch.setenv("GPUFABRIC_SALT_KEY", "exported-salt-key")
    exported = open_fleet(FleetArgs(plane="compute", lab=True)).index.hasher.salt("labadmin")
    assert kept != exported


def test_lab_secrets_are_made_once_kept_0600_and_never_replaced(tmp_path):
    from gpufabric.fleet.lab.credentials import SECRETS_FILE, ensure_secrets, load_secrets
    from gpufabric.intent import load_intent

    intent = load_intent(None).intent
    ensure_secrets(tmp_path, intent)
    first = load_secrets(tmp_path)
    assert list(first) == ["GPUFABRIC_SALT_KEY"] and len(first["GPUFABRIC_SALT_KEY"]) == 48
    assert (tmp_path / SECRETS_FILE).stat().st_mode & 0o777 == 0o600
    ensure_secrets(tmp_path, intent)
    assert load_secrets(tmp_path) == first


@pytest.mark.slow
def test_render_for_the_lab_gives_what_a_push_to_the_lab_loads_with_nothing_exported(lab_state, tmp_path, monkeypatch):
    """`gpufabric render --state-dir LAB` in a shell with no GPUFABRIC_* variable: every switch as frr,
    hashed with the lab's password and salt key, byte for byte what `nornir push --lab` loads."""
    from gpufabric.fleet.candidates import candidate
    from gpufabric.nos.frr.files import join_candidate

    (lab_state / "secrets.json").write_text(json.dumps({"GPUFABRIC_SALT_KEY": "lab-salt-key-canary"}))
    for name in [k for k in os.environ if k.startswith("GPUFABRIC_")]:
        monkeypatch.delenv(name)
    out = tmp_path / "configs"
    done = subprocess.run(
        [str(BIN / "gpufabric"), "render", "--state-dir", str(lab_state), "--plane", "compute", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert LAB_PASSWORD not in done.stdout + done.stderr and "lab-salt-key-canary" not in done.stdout + done.stderr
    names = sorted(p.name.removesuffix(".frr.conf") for p in out.glob("*.frr.conf"))
    assert len(names) == 6
    assert {p.name.removeprefix(p.name.split(".")[0]) for p in out.iterdir()} == FRR_FILES
    lab = open_fleet(FleetArgs(plane="compute", lab=True))
    for name in names:
        files = {p.name.removeprefix(name): p.read_text() for p in out.glob(f"{name}.*")}
        rendered = join_candidate(files[".frr.conf"], files[".nft"], files[".system.yaml"], files[".interfaces"])
        assert rendered == candidate(lab.plan, lab.index, name, lab.access.secrets)
