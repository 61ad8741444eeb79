"""sshd per switch, listening on the switch's management address inside its namespace.

Each sshd runs in a private mount namespace where /etc is an overlay: the machine's /etc below,
a folder of the switch's own above. Whatever a login changes in /etc (the lab admin added to
passwd and shadow at start, the users, time zone, NTP, syslog, DNS and SNMP files a push writes)
lands in that folder, so each switch has its own host settings, as a real switch does, and the
machine's own files are never changed. /etc/frr is the machine's, bound back over the overlay:
FRR's daemons run outside this namespace and read the switch's pathspace there. The admin has a normal shell, because
the FRR driver places candidate files and runs `frr-reload.py` itself (vtysh has no file transfer).
(A shell that execs `vtysh -N` would make the login look like a switch CLI, but then no driver
could place a file.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpufabric.files import PRIVATE, write_atomic
from gpufabric.fleet.lab.credentials import LabLogin
from gpufabric.inputs import MiB, read_text
from gpufabric.lab.processes import spawn

SSHD = "/usr/sbin/sshd"


def _accounts(node_dir: Path, login: LabLogin) -> tuple[Path, Path]:
    passwd, shadow = node_dir / "passwd", node_dir / "shadow"
    base_pw = [ln for ln in _system_file("/etc/passwd").splitlines() if not ln.startswith(f"{login.username}:")]
    base_sh = [ln for ln in _system_file("/etc/shadow").splitlines() if not ln.startswith(f"{login.username}:")]
    # /bin/sh, not bash: bash started by sshd reads ~/.bashrc on every command, 100 ms each.
    admin = f"{login.username}:x:0:0:gpufabric lab admin:/root:/bin/sh"
    write_atomic(passwd, "\n".join([*base_pw, admin]) + "\n", mode=0o644)
    # The password hash: owner-only, as /etc/shadow is.
    entry = f"{login.username}:{login.password_hash}:19000:0:99999:7:::"
    write_atomic(shadow, "\n".join([*base_sh, entry]) + "\n", PRIVATE)
    return passwd, shadow


def _system_file(path: str) -> str:
    return read_text(path, what="this machine's account database", max_bytes=16 * MiB)


def write_config(node: str, node_dir: Path, listen: str, login: LabLogin, lldp_socket: Path) -> Path:
    key = node_dir / "ssh_host_ed25519_key"
    if not key.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    authorized = node_dir / "authorized_keys"
    public_key = read_text(
        f"{login.key_file}.pub", what="the lab's SSH public key", max_bytes=64 * 1024, follow_links=False
    )
    write_atomic(authorized, public_key, PRIVATE)  # who may log in: sshd refuses a file others can change
    config = node_dir / "sshd_config"
    write_atomic(
        config,
        "\n".join(
            [
                f"# gpufabric lab: {node}",
                f"ListenAddress {listen}:22",
                f"HostKey {key}",
                f"PidFile {node_dir / 'sshd.pid'}",
                f"AuthorizedKeysFile {authorized}",
                "PermitRootLogin yes",  # the lab admin is uid 0 so it can run vtysh and nft
                "PasswordAuthentication yes",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "MaxStartups 64:30:128",
                # VTYSH_HISTFILE: the lab admin's home is this machine's root's, where vtysh would
                # otherwise keep every command the drivers send (~/.history_frr).
                f"SetEnv FRR_NS={node} GF_LLDP_SOCKET={lldp_socket} VTYSH_HISTFILE=/dev/null",
                "Subsystem sftp internal-sftp",
                "",
            ]
        ),
        mode=0o644,
    )
    return config


def start(node: str, node_dir: Path, uts: Path, config: Path, login: LabLogin) -> int:
    passwd, shadow = _accounts(node_dir, login)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation directory
    upper, work, frr = node_dir / "etc-upper", node_dir / "etc-work", node_dir / "etc-frr"
    for d in (upper, work, frr):
        d.mkdir(mode=0o700, exist_ok=True)
    script = (
        f"mount --bind /etc/frr {frr} && "
        f"mount -t overlay gpufabric-etc -o lowerdir=/etc,upperdir={upper},workdir={work} /etc && "
        f"mount --bind {frr} /etc/frr && "
        f"cat {passwd} > /etc/passwd && cat {shadow} > /etc/shadow && "
        f"exec nsenter --net=/run/netns/{node} --uts={uts} {SSHD} -D -e -f {config}"
    )
    # unshare and nsenter exec in place, so the PID returned is sshd's own.
    return spawn(["unshare", "-m", "--propagation", "private", "sh", "-c", script], node_dir / "sshd.log")
