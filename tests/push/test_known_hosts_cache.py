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


def test_hashed_and_several_name_entries_give_the_keys_paramikos_own_lookup_gives(tmp_path):
    """The index by host name answers as paramiko's HostKeys.lookup does: an entry naming two hosts, a
    hashed name (HashKnownHosts), a host with keys of two types, and a host the file does not name."""
    rsa, ed, other = paramiko.RSAKey.generate(1024), paramiko.ECDSAKey.generate(), paramiko.RSAKey.generate(1024)
    known = tmp_path / "known_hosts"
    known.write_text(
        _line("10.0.0.1,sw1", rsa)
        + _line("10.0.0.1", ed)
        + _line(paramiko.HostKeys.hash_host("10.0.0.9"), other)
        + _line("10.0.0.2", other)
    )
    own = paramiko.HostKeys(str(known))
    for host in ("10.0.0.1", "sw1", "10.0.0.9", "10.0.0.2", "10.0.0.3"):
        client = paramiko.SSHClient()
        _trust_known_keys(client, str(known), host, 22)
        got = client.get_host_keys().lookup(host) or {}
        expected = own.lookup(host) or {}
        assert {t: k.get_base64() for t, k in got.items()} == {t: k.get_base64() for t, k in expected.items()}
    assert _known_keys(str(known)).by_name["10.0.0.1"].keys() == {"ssh-rsa", "ecdsa-sha2-nistp256"}
