"""Push and validate through a jump host, where the controller cannot reach the switches itself (root only).

Beside the lab, two namespaces of the test's own: `gfj-bastion`, the jump host (OpenSSH's sshd, its own
host key, public-key login only), with one leg on the lab's OOB bridge; and `gfj-ctl`, the controller,
whose only link leads to the jump host. The controller's route to the management subnet goes through the
jump host, which forwards nothing (nftables answers every forwarded connection with a reset): a direct
login is refused, as at a site where the management network sits behind a bastion. gpufabric runs inside
`gfj-ctl`.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from conftest import INVENTORY, ROOT, run

from gpufabric.fleet.lab.topology import BRIDGE, topology
from gpufabric.intent import load_intent

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)")

CTL, BASTION = "gfj-ctl", "gfj-bastion"
CTL_IP, BASTION_IP = "198.51.100.1", "198.51.100.2"  # the controller's side of the bastion (TEST-NET-2)
TOPO = topology(load_intent(str(INVENTORY / "fabric.yml")))
OOB = ipaddress.ip_interface(TOPO.gateway).network
BASTION_OOB = f"{OOB.broadcast_address - 1}/{OOB.prefixlen}"  # planned for no switch or server
COMPUTE = ("cmp-spine1", "cmp-spine2", "cmp-su1-leaf1", "cmp-su1-leaf2", "cmp-su2-leaf1", "cmp-su2-leaf2")
FORWARD_NOTHING = """
table inet gfjump {
  chain forward {
    type filter hook forward priority 0; policy drop;
    meta l4proto tcp reject with tcp reset
    reject
  }
}
"""


def sh(*args: str) -> None:
    subprocess.run(list(args), check=True, capture_output=True)


def wait_until(condition, what: str, deadline: float = 60.0) -> None:
    ends = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < ends, f"{what}: not within {deadline:g} s"
        time.sleep(0.2)


def _listening() -> bool:
    probe = subprocess.run(
        ["ip", "netns", "exec", CTL, "python3", "-c",
         f"import socket; socket.create_connection(('{BASTION_IP}', 22), timeout=2).close()"],
        capture_output=True, check=False,
    )  # fmt: skip
    return probe.returncode == 0


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    state = tmp_path_factory.mktemp("lab") / "state"
    up = run("gpufabric", "lab", "up", "--no-hosts", "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    yield state
    run("gpufabric", "lab", "down", "--state-dir", str(state))


@pytest.fixture(scope="module")
def bastion(lab, tmp_path_factory):
    """The jump host and the controller's namespace, torn down (namespaces, veths, sshd) whatever happens."""
    here = tmp_path_factory.mktemp("jump")
    existing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert CTL not in existing and BASTION not in existing, "a namespace of this test is left from another run"
    sshd = None
    try:
        sh("ip", "netns", "add", BASTION)
        sh("ip", "netns", "add", CTL)
        for ns in (BASTION, CTL):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        # The jump host's leg on the OOB plane, at an address no switch or server is planned at.
        sh("ip", "link", "add", "gfj-oob", "type", "veth", "peer", "name", "oob0", "netns", BASTION)
        sh("ip", "link", "set", "gfj-oob", "master", BRIDGE, "up")
        sh("ip", "-n", BASTION, "addr", "add", BASTION_OOB, "dev", "oob0")
        sh("ip", "-n", BASTION, "link", "set", "oob0", "up")
        # The controller's only link: to the jump host.
        sh("ip", "link", "add", "ctl0", "netns", CTL, "type", "veth", "peer", "name", "ctl0", "netns", BASTION)
        sh("ip", "-n", CTL, "addr", "add", f"{CTL_IP}/30", "dev", "ctl0")
        sh("ip", "-n", BASTION, "addr", "add", f"{BASTION_IP}/30", "dev", "ctl0")
        sh("ip", "-n", CTL, "link", "set", "ctl0", "up")
        sh("ip", "-n", BASTION, "link", "set", "ctl0", "up")
        sh("ip", "-n", CTL, "route", "add", str(OOB), "via", BASTION_IP)
        # The jump host routes, and refuses to forward anything: a direct login is reset, not lost.
        sh("ip", "netns", "exec", BASTION, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        (here / "forward.nft").write_text(FORWARD_NOTHING)
        sh("ip", "netns", "exec", BASTION, "nft", "-f", str(here / "forward.nft"))
        for key in ("host_key", "id_ops"):
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(here / key))
        (here / "authorized_keys").write_text((here / "id_ops.pub").read_text())
        (here / "sshd_config").write_text(
            "\n".join([
                f"ListenAddress {BASTION_IP}:22", f"HostKey {here / 'host_key'}", f"PidFile {here / 'sshd.pid'}",
                f"AuthorizedKeysFile {here / 'authorized_keys'}", "PermitRootLogin prohibit-password",
                "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
                "AllowTcpForwarding yes", "PermitTTY no", "X11Forwarding no", "ForceCommand /bin/false",
                "LogLevel DEBUG1", "",
            ])
        )  # fmt: skip
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        log = (here / "sshd.log").open("w")
        sshd = subprocess.Popen(
            ["ip", "netns", "exec", BASTION, "/usr/sbin/sshd", "-D", "-e", "-f", str(here / "sshd_config")],
            stdout=log, stderr=log,
        )  # fmt: skip
        wait_until(_listening, "the jump host's sshd listening")
        host_pub = (here / "host_key.pub").read_text().split()
        (here / "known_hosts").write_text(f"{BASTION_IP} {host_pub[0]} {host_pub[1]}\n")
        # The person's SSH config: the jump host by name, and the OOB subnet behind it.
        (here / "ssh_config").write_text(
            f"Host bastion\n  HostName {BASTION_IP}\n  User root\n  IdentityFile {here / 'id_ops'}\n"
            f"  UserKnownHostsFile {here / 'known_hosts'}\n"
            f"Host {'.'.join(str(OOB.network_address).split('.')[:3])}.*\n  ProxyJump bastion\n"
            f"Host {BASTION_IP}\n  IdentityFile {here / 'id_ops'}\n"
        )
        yield here
    finally:
        if sshd is not None:
            sshd.terminate()
            sshd.wait(30)
        for ns in (CTL, BASTION):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        subprocess.run(["ip", "link", "del", "gfj-oob"], capture_output=True, check=False)


def nornir(state: Path, *args: str) -> subprocess.CompletedProcess:
    """A nornir command run in the controller's namespace, against the lab's compute plane."""
    return run("ip", "netns", "exec", CTL, "nornir", *args, "--plane", "compute", "--state-dir", str(state))


def logins(here: Path) -> list[str]:
    return re.findall(r"Accepted publickey for root from (\S+)", (here / "sshd.log").read_text())


def forwarded(here: Path) -> list[str]:
    """The destinations the jump host opened a channel to (sshd's `direct-tcpip` requests, logged at DEBUG1)."""
    return re.findall(r"server_request_direct_tcpip: originator \S+ port \d+, target (\S+ port \d+)",
                      (here / "sshd.log").read_text())  # fmt: skip


def test_without_the_jump_host_the_controller_is_refused(lab, bastion):
    done = nornir(lab, "push", "--json")
    assert done.returncode != 0
    result = json.loads(done.stdout)
    assert [d["status"] for d in result["devices"]] and all(d["status"] == "failed" for d in result["devices"])
    assert "Connection refused" in json.dumps(result), done.stdout[:2000]
    checked = nornir(lab, "validate", "--format", "json")
    assert checked.returncode != 0
    assert "Connection refused" in checked.stdout, checked.stdout[:2000]
    assert logins(bastion) == []


def test_a_jump_host_with_another_key_is_refused_before_any_switch(lab, bastion, tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"{BASTION_IP} {other[0]} {other[1]}\n")
    done = nornir(lab, "push", "--json", "--jump-host", f"root@{BASTION_IP}", "--ssh-config",
                  str(bastion / "ssh_config"), "--known-hosts", str(wrong))  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"jump host root@{BASTION_IP}:22: its host key is not the one in {wrong}" in done.stderr
    assert done.stdout == "" and logins(bastion) == [] and forwarded(bastion) == []


def test_push_through_the_jump_host(lab, bastion):
    done = nornir(lab, "push", "--json", "--jump-host", f"root@{BASTION_IP}", "--ssh-config",
                  str(bastion / "ssh_config"), "--known-hosts", str(bastion / "known_hosts"))  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    result = json.loads(done.stdout)
    assert result["converged"] and {d["device"]: d["status"] for d in result["devices"]} == dict.fromkeys(
        COMPUTE, "changed"
    )
    assert set(logins(bastion)) == {CTL_IP}  # every login came from the controller, to the jump host
    # One login checks the jump host before any switch, then the sessions share one: not one per switch.
    assert len(logins(bastion)) < len(COMPUTE), logins(bastion)
    reached = {f"{str(n.mgmt_ip).split('/')[0]} port 22" for n in TOPO.nodes if n.name in COMPUTE}
    assert set(forwarded(bastion)) == reached  # and every switch was reached from the jump host


def test_validate_through_proxyjump_in_the_ssh_config(lab, bastion):
    """Only the SSH config names the jump host (ProxyJump on the OOB subnet, the jump host's own block)."""
    deadline = time.monotonic() + 180  # BGP settles after the push: generous, a loaded machine is slow
    while True:
        done = nornir(lab, "validate", "--format", "json", "--ssh-config", str(bastion / "ssh_config"))
        results = json.loads(done.stdout)["results"] if done.stdout else []
        failed = [r for r in results if r["verdict"] == "fail"]
        if (done.returncode == 0 and not failed) or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert done.returncode == 0 and results and not failed, (failed[:5], done.stderr[-2000:])
    assert {r["device"] for r in results} >= set(COMPUTE)


def _ansible(lab: Path, here: Path, folder: Path, known: Path) -> subprocess.CompletedProcess:
    """`ansible -m raw` on one lab switch from the controller's namespace, through the inventory plugin's
    jump_host. The jump host's login and key come from an SSH config (`-F`, which ssh hands on to the
    jump host's own ssh process, as it would read ~/.ssh/config); `-o` options reach the switch's only."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ssh_config").write_text(
        f"Host {BASTION_IP}\n  IdentityFile {here / 'id_ops'}\n  UserKnownHostsFile {known}\n"
        "  StrictHostKeyChecking yes\n"
    )
    (folder / "gpufabric.yml").write_text(
        f"plugin: gpufabric\nintent: {INVENTORY / 'fabric.yml'}\nhosts: [cmp-spine1]\njump_host: root@{BASTION_IP}\n"
    )
    login = json.loads((lab / "login.json").read_text())
    extra = f"-F {folder / 'ssh_config'} -o UserKnownHostsFile={lab / 'known_hosts'} -o StrictHostKeyChecking=yes"
    return run(
        "ip", "netns", "exec", CTL, "ansible", "-i", str(folder / "gpufabric.yml"), "cmp-spine1", "-m", "raw",
        "-a", "hostname", "-u", login["username"], "--private-key", login["key_file"],
        "-e", f"ansible_ssh_extra_args='{extra}'",
        cwd=folder, ANSIBLE_INVENTORY_PLUGINS=str(ROOT / "plugins" / "inventory"),
        ANSIBLE_INVENTORY_ENABLED="gpufabric", ANSIBLE_HOST_KEY_CHECKING="True", ANSIBLE_HOME=str(folder / "ah"),
        ANSIBLE_SSH_ARGS="-o ControlMaster=no -o ControlPath=none",  # each run logs in anew: no kept connection
    )  # fmt: skip


def test_ansible_reaches_a_switch_through_the_jump_host_and_refuses_another_key(lab, bastion, tmp_path):
    before = len(forwarded(bastion))
    done = _ansible(lab, bastion, tmp_path / "good", bastion / "known_hosts")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cmp-spine1 | CHANGED | rc=0" in done.stdout and "\ncmp-spine1" in done.stdout
    assert forwarded(bastion)[before:] == [f"{str(TOPO.nodes[0].mgmt_ip).split('/')[0]} port 22"]
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()
    (tmp_path / "wrong").write_text(f"{BASTION_IP} {other[0]} {other[1]}\n")
    refused = _ansible(lab, bastion, tmp_path / "bad", tmp_path / "wrong")
    assert refused.returncode != 0 and "UNREACHABLE" in refused.stdout
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in refused.stdout + refused.stderr
    assert len(forwarded(bastion)) == before + 1  # nothing went through the jump host the second time
