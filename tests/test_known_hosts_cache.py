"""known_hosts is read once per version of the file, and a login is given only its own host's keys."""

from __future__ import annotations

import os

import paramiko

from gpufabric.drivers.transport import _known_keys, _trust_known_keys


def _line(name: str, key: paramiko.PKey) -> str:
    return f"{name} {key.get_name()} {key.get_base64()}\n"


def test_a_login_gets_only_its_hosts_keys_and_a_changed_file_is_read_again(tmp_path):
    a, b, c = (paramiko.RSAKey.generate(1024) for _ in range(3))
    known = tmp_path / "known_hosts"
    known.write_text(_line("10.0.0.1", a) + _line("[10.0.0.2]:2222", b))

    client = paramiko.SSHClient()
    _trust_known_keys(client, str(known), "10.0.0.2", 2222)
    assert {n: k.get_base64() for n in client.get_host_keys() for k in client.get_host_keys()[n].values()} == {
        "[10.0.0.2]:2222": b.get_base64()
    }
    other = paramiko.SSHClient()
    _trust_known_keys(other, str(known), "10.0.0.2", 22)  # the same address on port 22 is another entry
    assert len(other.get_host_keys()) == 0
    assert _known_keys(str(known)) is _known_keys(str(known))  # read once while the file is unchanged

    # The switch was replaced and its new key verified into the file: the next login holds the new key.
    known.write_text(_line("10.0.0.1", c) + _line("[10.0.0.2]:2222", b))
    stat = known.stat()
    os.utime(known, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    fresh = paramiko.SSHClient()
    _trust_known_keys(fresh, str(known), "10.0.0.1", 22)
    assert fresh.get_host_keys().lookup("10.0.0.1")["ssh-rsa"].get_base64() == c.get_base64()
