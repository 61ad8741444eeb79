"""The host-settings script the FRR driver runs on a switch, run here by a real shell.

/etc is redirected into a temporary folder and the commands that would change this machine
(hostname, usermod, ip, ...) are stand-ins that record their arguments, so the test sees exactly
what a switch would be told, hostile values included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from gpufabric.nos.frr import system as frr_system
from gpufabric.nos.frr.files import candidate_parts, join_candidate

STANDINS = ("hostname", "getent", "useradd", "usermod", "ln", "ip", "chronyc", "systemctl")
HOSTILE = "x'; touch /tmp/pwned-$$; echo '\n$(reboot)`id`"


def _system_yaml(**over: object) -> str:
    doc = {
        "hostname": "leaf1",
        "timezone": "Europe/Paris",
        "users": [{"name": "admin", "hashed_password": "$6$salt$hash"}],
        "ntp_servers": ["192.0.2.10"],
        "syslog_servers": ["192.0.2.20"],
        "dns": {"servers": ["192.0.2.53"], "domain": "example.net"},
        "snmp": {"community": "c0mmunity", "location": "hall 1"},
        "management": {"port": "eth0", "address": "192.0.2.5/24", "allow": ["192.0.2.0/24"]},
    } | over
    return yaml.safe_dump(doc)


INTERFACES = "auto eth0\niface eth0\n    address 192.0.2.5/24\n\nauto swp1\niface swp1\n    mtu 9216\n"


def _run(tmp_path: Path, script: str) -> tuple[dict[str, str], list[list[str]]]:
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    for name in STANDINS:
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\nprintf "%s\\0" {name} "$@" >> {log}\nprintf "\\n" >> {log}\n')
        stub.chmod(0o755)
    root = tmp_path / "root"
    script = re.sub(r"(?<![\w/.])/etc(?=[/\s]|$)", f"{root}/etc", script)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    files = {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}
    calls = [line.split("\0") for line in log.read_text().split("\0\n") if line] if log.exists() else []
    return files, [c for c in calls if c]


def test_the_script_writes_every_host_file_and_tells_each_command_exactly(tmp_path):
    settings = frr_system.parse(_system_yaml(), INTERFACES)
    files, calls = _run(tmp_path, frr_system.apply_script(settings))
    assert files["etc/hostname"] == "leaf1\n" and files["etc/timezone"] == "Europe/Paris\n"
    assert files["etc/chrony/sources.d/gpufabric.sources"] == "server 192.0.2.10 iburst\n"
    assert files["etc/rsyslog.d/90-gpufabric.conf"] == "*.* @192.0.2.20:514\n"
    assert files["etc/resolv.conf"] == "search example.net\nnameserver 192.0.2.53\n"
    assert files["etc/snmp/snmpd.conf.d/gpufabric.conf"] == "rocommunity c0mmunity 192.0.2.0/24\nsysLocation hall 1\n"
    assert files["etc/network/interfaces.d/gpufabric"] == INTERFACES
    assert ["usermod", "-p", "$6$salt$hash", "admin"] in calls
    assert ["hostname", "leaf1"] in calls
    assert ["ip", "link", "set", "dev", "swp1", "mtu", "9216", "up"] in calls
    assert not any(c[:2] == ["ip", "link"] and "eth0" in c for c in calls)  # the management port is left alone


def test_hostile_values_reach_their_files_as_text_and_never_run(tmp_path):
    settings = frr_system.parse(_system_yaml(snmp={"community": HOSTILE, "location": HOSTILE}), INTERFACES)
    settings.users = [("admin", HOSTILE)]
    files, calls = _run(tmp_path, frr_system.apply_script(settings))
    assert files["etc/snmp/snmpd.conf.d/gpufabric.conf"].startswith(f"rocommunity {HOSTILE} 192.0.2.0/24\n")
    assert ["usermod", "-p", HOSTILE, "admin"] in calls
    assert not list(Path("/tmp").glob("pwned-*"))
    assert not any(c[0] in ("reboot", "id", "touch") for c in calls)


def test_diffs_hide_secrets_but_say_they_changed():
    text = _system_yaml()
    shown = frr_system.masked(text)
    assert "c0mmunity" not in shown and "$6$salt$hash" not in shown
    assert "community: <hidden>" in shown and "hashed_password: <hidden>" in shown
    assert sorted(frr_system.secret_values(text).splitlines()) == ["$6$salt$hash", "c0mmunity"]
    assert frr_system.masked("snmp:\n  community: null\n") == "snmp:\n  community: null\n"


def test_candidate_sections_round_trip():
    text = join_candidate("frr version 8.4\n", "table inet x {}\n", "hostname: a\n", "auto lo\n")
    parts = candidate_parts(text)
    assert (parts.frr, parts.nft, parts.system, parts.interfaces) == (
        "frr version 8.4\n",
        "table inet x {}\n",
        "hostname: a\n",
        "auto lo\n",
    )
    assert candidate_parts("frr only\n").system is None


def test_snapshot_and_restore_put_files_back(tmp_path):
    """The rollback pair, run by a real shell on a folder standing in for /etc."""
    etc = tmp_path / "etc"
    (etc / "chrony" / "sources.d").mkdir(parents=True)
    (etc / "hostname").write_text("before\n")
    managed = [str(etc / "hostname"), str(etc / "chrony" / "sources.d" / "gpufabric.sources")]
    archive, absent, host = (str(tmp_path / n) for n in ("r.tar", "r.absent", "r.host"))
    snap = frr_system.snapshot_script(archive, absent, host).replace(" ".join(frr_system.MANAGED), " ".join(managed))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hostname").write_text("#!/bin/sh\n[ $# -eq 0 ] && echo switch-name || true\n")
    (bin_dir / "hostname").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", snap], check=True, env=env)
    (etc / "hostname").write_text("after\n")
    Path(managed[1]).write_text("server 198.51.100.1 iburst\n")
    subprocess.run(["sh", "-c", frr_system.restore_script(archive, absent, host)], check=True, env=env)
    assert (etc / "hostname").read_text() == "before\n"
    assert not Path(managed[1]).exists()  # it did not exist before the commit
    assert Path(host).read_text() == "switch-name\n"
    shutil.rmtree(etc)
