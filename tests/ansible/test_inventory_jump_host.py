"""The Ansible inventory plugin's `jump_host`: every host gets `-o ProxyJump=...` for ssh, written back from
the checked chain, and a value that is not `[user@]host[:port]` stops the inventory."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, run


def _source(tmp_path, extra: str = "") -> str:
    (tmp_path / "gpufabric.yml").write_text(
        f"plugin: gpufabric\nintent: {ROOT / 'inventory' / 'fabric.yml'}\nhosts: [gpu01, cmp-spine1]\n{extra}"
    )
    return str(tmp_path / "gpufabric.yml")


def _hostvars(source: str, host: str, **env: str) -> dict:
    done = run("ansible-inventory", "-i", source, "--host", host, cwd=ROOT, **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow  # Ansible's own inventory run for every host: seconds; in the whole suite
def test_every_host_goes_through_the_jump_host_named(tmp_path):
    source = _source(tmp_path, "jump_host: ops@bastion.example.net:2222,[fd00::1]\n")
    for host in ("gpu01", "cmp-spine1"):
        assert _hostvars(source, host)["ansible_ssh_common_args"] == (
            "-o ProxyJump=ops@bastion.example.net:2222,[fd00::1]"
        )
    by_env = _hostvars(_source(tmp_path), "gpu01", GPUFABRIC_JUMP_HOST="10.1.0.1")
    assert by_env["ansible_ssh_common_args"] == "-o ProxyJump=10.1.0.1"
    assert "ansible_ssh_common_args" not in _hostvars(_source(tmp_path), "gpu01")  # none named: ssh's own config


def test_a_jump_host_that_could_be_read_as_an_option_stops_the_inventory(tmp_path):
    source = _source(tmp_path, "jump_host: '-oProxyCommand=touch /tmp/x'\n")
    done = run("ansible-inventory", "-i", source, "--host", "gpu01", cwd=ROOT)
    assert done.returncode != 0
    assert "jump_host: '-oProxyCommand=touch /tmp/x' is not a host name or address" in done.stderr
