"""One host container: its root filesystem, its network namespace with every NIC, its boot and its stop.

The container boots systemd inside a network namespace made beforehand (so every NIC has its planned
name before systemd starts) and its own mount namespace with a private /run/systemd, since this
machine's /run is not a tmpfs and it has no systemd of its own. /proc/sys stays read-only in the
container except for net, so nothing a role does can change this machine's kernel settings.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

from gpufabric.files import PRIVATE, write_atomic
from gpufabric.inputs import read_text
from gpufabric.lab import netlink, processes
from gpufabric.lab.hosts import rootfs
from gpufabric.lab.hosts.spec import HostSpec


def wire(spec: HostSpec, bridge: str, leader: int) -> None:
    """Name the booted container's network namespace, then add its management veth and data NICs.

    The NICs are added after boot, into the namespace systemd-nspawn made with --private-network:
    only then does nspawn leave /proc/sys/net writable inside (a namespace handed over with
    --network-namespace-path gets a read-only /proc/sys), and networkd picks the NICs up as hotplugged.
    """
    if spec.netns not in netlink.namespaces():
        netlink.run("ip", "netns", "attach", spec.netns, str(leader))
    present = netlink.links(spec.netns)
    cmds = []
    if spec.mgmt_interface not in present:
        cmds.append(f"link add {spec.root_port} type veth peer name {spec.mgmt_interface} netns {spec.netns}")
    for nic in spec.nics:
        if nic.interface not in present:
            cmds.append(
                f"link add {nic.interface} netns {spec.netns} type veth "
                f"peer name {nic.peer_port} netns {nic.peer_netns} mtu {nic.peer_mtu}"
            )
    netlink.batch(cmds)
    netlink.batch([f"link set {spec.root_port} master {bridge} up"])
    for nic in spec.nics:
        peer = [f"link set {nic.peer_port} up"]
        if nic.peer_address and nic.peer_address.split("/")[0] not in _addresses(nic.peer_netns, nic.peer_port):
            peer.insert(0, f"address add {nic.peer_address} dev {nic.peer_port}")
        netlink.batch(peer, nic.peer_netns)


def leader(nspawn_pid: int, timeout: float = 60.0) -> int:
    """The container's init: the child of systemd-nspawn that has become systemd (earlier children are transient)."""
    deadline = time.monotonic() + timeout
    children = Path(f"/proc/{nspawn_pid}/task/{nspawn_pid}/children")
    while time.monotonic() < deadline:
        try:
            found = children.read_text().split()
        except OSError:
            break
        for pid in found:
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "systemd":
                    return int(pid)
            except OSError:
                continue
        time.sleep(0.05)
    raise netlink.LabCommandError(f"systemd-nspawn (PID {nspawn_pid}) booted no container in {timeout:.0f} s")


def _addresses(netns: str, dev: str) -> str:
    return netlink.run("ip", "-n", netns, "-o", "address", "show", "dev", dev, check=False).stdout


def layer(root: Path) -> Path:
    """The container's own upper layer: what it writes, and what the lab writes to make it this host.
    Its root (`root`) is an overlay of this layer on the shared image tree, mounted only where the
    container runs (see `boot`)."""
    return root.parent / "upper"


def prepare_root(spec: HostSpec, root: Path, *, pubkey: str, mirror_host: str, forwarder_ip: str) -> None:
    """Make this host's layer on the image (extracted by `rootfs.base_tree`): name, SSH key and host
    keys, management address, mirror, and logind's keeping of root's user manager."""
    for folder in (root, layer(root), root.parent / "work"):
        folder.mkdir(parents=True, exist_ok=True)
    root = layer(root)  # the files below go into the host's own layer
    (root / "etc/ssh").mkdir(parents=True, exist_ok=True)
    # Written by rename, never through a link: the layer is the container's, and its root may have planted one.
    write_atomic(root / "etc/hostname", spec.name + "\n", mode=0o644)
    # The container has no route out: the mirror's name points at the lab's forwarder on the bridge.
    write_atomic(
        root / "etc/hosts",
        f"127.0.0.1\tlocalhost\n127.0.1.1\t{spec.name}\n{forwarder_ip}\t{mirror_host}\n::1\tlocalhost ip6-localhost\n",
        mode=0o644,
    )
    ssh = root / "root/.ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(ssh / "authorized_keys", pubkey, PRIVATE)  # who may log in: sshd wants it owner-only
    if not any((root / "etc/ssh").glob("ssh_host_*_key")):
        subprocess.run(["ssh-keygen", "-A", "-f", str(root)], check=True, capture_output=True)
    network = root / "etc/systemd/network"
    network.mkdir(parents=True, exist_ok=True)
    write_atomic(
        network / "10-mgmt.network",
        f"# The out-of-band management NIC (made by gpufabric's lab, not by the roles)\n[Match]\n"
        f"Name={spec.mgmt_interface}\n\n[Network]\nAddress={spec.mgmt_address}\nLinkLocalAddressing=no\n"
        f"IPv6AcceptRA=no\n",
        mode=0o644,
    )
    if spec.nics:
        # A cabled server's NICs have a link from the first boot; addresses come from the roles, whose
        # files (60-gpufabric-*) sort before this one and so take the NICs over once written.
        names = " ".join(nic.interface for nic in spec.nics)
        write_atomic(
            network / "90-lab-cabled.network",
            "# The data NICs, up with no address until the roles configure them (made by gpufabric's lab)\n"
            f"[Match]\nName={names}\n\n[Link]\nRequiredForOnline=no\n\n"
            "[Network]\nLinkLocalAddressing=no\nIPv6AcceptRA=no\nConfigureWithoutCarrier=yes\n",
            mode=0o644,
        )
    # logind stops root's user manager (user@0.service) 10 s after the last session ends, and a login that
    # arrives while it stops waits for the stop to end: up to user@.service's TimeoutStopSec, 2 min, exactly the
    # lab's Ansible connection bound. On a loaded machine Ansible's logins land in that gap between two steps
    # (Molecule's idempotence, then verify). Kept running, the manager starts once, at the first login. (Logins
    # open logind sessions only once pam_systemd is installed: NetworkManager's polkitd brings it in.)
    logind = root / "etc/systemd/logind.conf.d"
    logind.mkdir(parents=True, exist_ok=True)
    write_atomic(
        logind / "90-gpufabric-lab.conf",
        "# Made by gpufabric's lab: root's user manager is never stopped between logins\n"
        "[Login]\nUserStopDelaySec=infinity\n",
        mode=0o644,
    )
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / "systemd-networkd.service"
    if not link.is_symlink():
        link.symlink_to("/lib/systemd/system/systemd-networkd.service")


def host_key(root: Path) -> str:
    """The container's ed25519 host key, for a known_hosts line (so SSH checks it, not blindly trusts it)."""
    # Not through a link: the file is in the container's own layer, where its root could have planted one.
    key = read_text(
        layer(root) / "etc/ssh/ssh_host_ed25519_key.pub", what="a container's SSH host key", max_bytes=64 * 1024,
        follow_links=False,
    )  # fmt: skip
    return " ".join(key.split()[:2])


def boot(spec: HostSpec, image: Path, root: Path, log: Path) -> int:
    """Boot systemd in the container, detached; return the PID of systemd-nspawn (what `stop` signals).

    The root is mounted in a mount namespace of the container's own (overlay of its layer on the image
    tree): nothing of it shows in this machine's mounts, and it goes away with the container."""
    Path("/run/systemd").mkdir(exist_ok=True)
    nspawn = [
        "systemd-nspawn",
        "-q",
        "--register=no",
        "--keep-unit",
        "--boot",
        "--console=passive",
        "--private-network",
        "-D",
        str(root),
        "-M",
        spec.name,
    ]
    lower, upper, work = rootfs.base_tree(image), layer(root), root.parent / "work"
    options = f"lowerdir={lower},upperdir={upper},workdir={work}"
    script = (
        f"mount -t overlay overlay -o {shlex.quote(options)} {shlex.quote(str(root))} && "
        f"mount -t tmpfs tmpfs /run/systemd && exec {shlex.join(nspawn)}"
    )
    return processes.spawn(["unshare", "-m", "--propagation", "private", "sh", "-c", script], log)


def stop(pid: int, leader: int, grace: float = 20.0) -> None:
    """The container's init first, killed: that ends every process of its PID namespace at once,
    and systemd-nspawn then exits by itself (SIGTERM, SIGKILL after `grace`, if it does not).

    No orderly shutdown: the container's root is removed right after, so nothing in it needs to be
    saved, and stopping each unit took up to 20 s a host. Killing only systemd-nspawn would orphan
    the container's systemd, which keeps its processes and its network namespace alive.
    """
    if leader and _is_container_init(leader):
        processes.stop([leader], grace=0.0)
    if pid:
        processes.stop([pid], grace=grace)


def _is_container_init(pid: int) -> bool:
    """Still the container's systemd, not a later process that reused the PID."""
    try:
        return processes.alive(pid) and Path(f"/proc/{pid}/comm").read_text().strip() == "systemd"
    except OSError:
        return False


def unwire(spec_netns: str) -> None:
    """Deleting the namespace deletes its veths, and with them their far ends in the leaves."""
    if spec_netns in netlink.namespaces():
        netlink.delete_namespace(spec_netns)
