"""Bring a set of host containers up (image, wiring, roots, boot, mirror forwarder, SSH ready) and down."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpufabric.files import write_atomic
from gpufabric.fleet.lab.host_state import HostRecord, HostsState
from gpufabric.fleet.lab.state import remove_leftovers, remove_state_dir
from gpufabric.inputs import read_text
from gpufabric.lab import netlink, processes
from gpufabric.lab.hosts import apt_mirror, container, rootfs
from gpufabric.lab.hosts.spec import HostSpec, root_port_of

READY_TIMEOUT = 90.0
REQUIRED = {"systemd-nspawn": "systemd-container", "debootstrap": "debootstrap", "socat": "socat", "zstd": "zstd"}


class HostsError(netlink.LabCommandError):
    pass


def missing_packages() -> list[str]:
    return sorted({pkg for tool, pkg in REQUIRED.items() if shutil.which(tool) is None})


def image_built() -> bool:
    """Whether the hosts' image is in the cache already; `up` builds it first otherwise (about a minute)."""
    try:
        mirror = apt_mirror.debian_mirror(apt_mirror.release())
    except (apt_mirror.MirrorError, OSError):
        return True  # nothing to announce: `up` says what is wrong
    return rootfs.image_path(mirror).is_file()


def up(
    specs: list[HostSpec],
    state_dir: Path,
    *,
    bridge: str,
    gateway: str,
    routers: tuple[str, ...] = (),
    say: Callable[[str], None] = lambda _msg: None,
) -> HostsState:
    """`gateway` ("a.b.c.d/len") sits on `bridge`; `routers` are stand-in namespaces this call makes and owns."""
    missing = missing_packages()
    if missing:
        raise HostsError(f"host containers need {', '.join(missing)}: apt-get install {' '.join(missing)}")
    mirror = apt_mirror.debian_mirror(apt_mirror.release())
    image = rootfs.ensure_image(mirror, say=say)
    rootfs.base_tree(image)  # once, before the hosts that share it are made side by side
    state_dir.mkdir(parents=True, exist_ok=True)
    state = HostsState.load(state_dir) or HostsState(bridge)
    _key(state, state_dir)
    _bridge(state, state_dir, bridge, gateway)
    for ns in routers:
        _router(state, state_dir, ns)
    gateway_ip = gateway.split("/", maxsplit=1)[0]
    pubkey = read_text(
        state.key_file + ".pub", what="the lab's SSH public key", max_bytes=64 * 1024, follow_links=False
    )
    for spec in specs:
        state.hosts.setdefault(
            spec.name, HostRecord(spec.netns, str(state_dir / "hosts" / spec.name / "root"), spec.mgmt_ip)
        )
    state.save(state_dir)  # recorded before they exist, so `down` finds a half-made host

    def prepare(spec: HostSpec) -> None:
        root = Path(state.hosts[spec.name].root)
        container.prepare_root(spec, root, pubkey=pubkey, mirror_host=mirror.host, forwarder_ip=gateway_ip)

    # Making host keys is another program's work (ssh-keygen): side by side.
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(prepare, specs))
    _forwarder(state, state_dir, gateway_ip, mirror)
    for spec in specs:  # every container starts booting before the first is waited for
        record = state.hosts[spec.name]
        if not processes.alive(record.pid):
            record.pid = container.boot(spec, image, Path(record.root), Path(record.root).parent / "console.log")
            state.save(state_dir)
    for spec in specs:
        record = state.hosts[spec.name]
        record.leader = container.leader(record.pid)
        state.save(state_dir)
        container.wire(spec, bridge, record.leader)
    _known_hosts(state, state_dir)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda s: _wait_ssh(s, state), specs))
    return state


def _key(state: HostsState, state_dir: Path) -> None:
    key = state_dir / "keys" / "hosts_ed25519"
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpufabric-hosts", "-f", str(key)], check=True
        )
    state.key_file = str(key)
    state.save(state_dir)


def _bridge(state: HostsState, state_dir: Path, bridge: str, gateway: str) -> None:
    if bridge in netlink.links():
        return
    state.made_bridge = True
    state.save(state_dir)
    netlink.batch([f"link add {bridge} type bridge", f"address add {gateway} dev {bridge}", f"link set {bridge} up"])


def _router(state: HostsState, state_dir: Path, ns: str) -> None:
    if ns in netlink.namespaces():
        if ns not in state.namespaces:
            raise HostsError(f"network namespace {ns} exists but the host lab did not make it")
        return
    state.namespaces.append(ns)
    state.save(state_dir)
    netlink.run("ip", "netns", "add", ns)
    netlink.batch(["link set lo up"], ns)
    netlink.run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")


def _forwarder(state: HostsState, state_dir: Path, listen_ip: str, mirror: apt_mirror.Mirror) -> None:
    """TCP from the bridge to the mirror, so apt works inside containers that have no route out."""
    if processes.alive(state.forwarder_pid):
        return
    listen = f"TCP-LISTEN:{mirror.port},bind={listen_ip},fork,reuseaddr"
    state.forwarder_pid = processes.spawn(
        ["socat", listen, f"TCP:{mirror.host}:{mirror.port}"], state_dir / "forwarder.log"
    )
    state.save(state_dir)


def _known_hosts(state: HostsState, state_dir: Path) -> None:
    lines = [f"{r.address} {container.host_key(Path(r.root))}" for r in state.hosts.values()]
    path = state_dir / "hosts" / "known_hosts"  # the switches' known_hosts is the lab's own, beside it
    write_atomic(path, "\n".join(lines) + "\n", mode=0o644)
    state.known_hosts = str(path)
    state.save(state_dir)


def _wait_ssh(spec: HostSpec, state: HostsState) -> None:
    """Ready means sshd answers with its banner on the management address."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if not processes.alive(state.hosts[spec.name].pid):
            log = Path(state.hosts[spec.name].root).parent / "console.log"
            raise HostsError(f"host {spec.name} stopped while booting; see {log}")
        try:
            with socket.create_connection((spec.mgmt_ip, 22), timeout=1) as sock:
                if sock.recv(4).startswith(b"SSH-"):
                    return
        except OSError:
            time.sleep(0.2)
    raise HostsError(f"host {spec.name}: no SSH on {spec.mgmt_ip} after {READY_TIMEOUT:.0f} s")


def down(state_dir: Path) -> HostsState | None:
    state = HostsState.load(state_dir)
    if state is None:
        return None
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda r: container.stop(r.pid, r.leader), state.hosts.values()))
    if state.forwarder_pid:
        processes.stop([state.forwarder_pid])
    for record in state.hosts.values():
        container.unwire(record.netns)
        # The namespace normally takes the management veth with it; a namespace the kernel has not freed yet
        # would leave the bridge end behind, and the next `up` would find its name taken.
        if root_port_of(record.netns) in netlink.links():
            netlink.delete_link(root_port_of(record.netns))
    with ThreadPoolExecutor(max_workers=8) as pool:  # a root is thousands of files: remove them side by side
        list(pool.map(lambda r: _remove_root(Path(r.root).parent, state_dir), state.hosts.values()))
    for ns in state.namespaces:
        container.unwire(ns)
    if state.made_bridge and state.bridge in netlink.links():
        netlink.delete_link(state.bridge)
    files = ("hosts/known_hosts", "forwarder.log", "keys/hosts_ed25519", "keys/hosts_ed25519.pub")
    remove_leftovers(state_dir, files, ("keys", "hosts"))
    HostsState.path(state_dir).unlink()
    remove_state_dir(state_dir)  # a folder of its own (Molecule's); a lab's folder still holds its state
    return state


def _remove_root(directory: Path, state_dir: Path) -> None:
    """Only a directory the host lab made, and never while anything is mounted below it."""
    directory = directory.resolve()
    if state_dir.resolve() not in directory.parents:
        raise HostsError(f"refusing to remove {directory}: not under {state_dir}")
    mounts = Path("/proc/mounts").read_text().split("\n")
    if any(f" {directory}/" in line or f" {directory} " in line for line in mounts):
        raise HostsError(f"refusing to remove {directory}: something is still mounted below it")
    shutil.rmtree(directory, ignore_errors=True)
