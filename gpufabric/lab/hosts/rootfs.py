"""A minimal booted-Debian root filesystem, built once with debootstrap and cached as .tar.zst.

The cache key is the release, the mirror and the package list: change any of them and a new
image is built (about a minute); otherwise a container's root is one extraction (about a second).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from gpufabric.errors import GpufabricError
from gpufabric.files import write_atomic
from gpufabric.lab.hosts.apt_mirror import Mirror
from gpufabric.owned_files import open_owned

CACHE_DIR = Path(os.environ.get("GPUFABRIC_ROOTFS_CACHE", "/var/cache/gpufabric/rootfs"))

# What a real GPU host has before Ansible runs: systemd, sshd, Python for Ansible (with apt bindings),
# iproute2, ping and kmod; what Debian's installer puts on every server (priority important or
# standard) that a minimal bootstrap leaves out: udev, netbase, perl, pciutils, dmidecode; and iperf3,
# the lab's stand-in for perftest. Everything the roles install, they install themselves.
PACKAGES = (
    "dbus",
    "dmidecode",
    "iperf3",  # the acceptance tests' stand-in for perftest in the lab, which has no RDMA NIC
    "iproute2",
    "iputils-ping",
    "kmod",
    "netbase",
    "openssh-server",
    "pciutils",
    "perl",
    "python3",
    "python3-apt",
    "systemd",
    "systemd-sysv",
    "udev",
)


# Where the image's python3 package puts its interpreter.

# Bumped whenever the way an image is made changes, so an older cached image is not reused.
IMAGE_FORMAT = "3"


class RootfsError(GpufabricError):
    pass


def image_path(mirror: Mirror, packages: tuple[str, ...] = PACKAGES, cache_dir: Path = CACHE_DIR) -> Path:
    key = hashlib.sha256("\n".join([IMAGE_FORMAT, mirror.suite, mirror.url, *sorted(packages)]).encode()).hexdigest()[
        :16
    ]
    return cache_dir / f"debian-{mirror.suite}-{key}.tar.zst"


def ensure_image(
    mirror: Mirror,
    packages: tuple[str, ...] = PACKAGES,
    cache_dir: Path = CACHE_DIR,
    say: Callable[[str], None] = lambda _msg: None,
) -> Path:
    image = image_path(mirror, packages, cache_dir)
    if image.is_file():
        return image
    for tool in ("debootstrap", "zstd"):
        if shutil.which(tool) is None:
            raise RootfsError(f"building the host image needs {tool}: apt-get install {tool}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    # One build at a time (the lab's hosts and Molecule's may start together): the second waits, then
    # finds the image the first built.
    lock = open_owned(cache_dir / ".build.lock", os.geteuid(), os.O_WRONLY, "the image build lock", RootfsError)
    with os.fdopen(lock, "w"):
        fcntl.flock(lock, fcntl.LOCK_EX)
        if image.is_file():
            return image
        _build(image, mirror, packages, cache_dir, say)
        _prune(cache_dir, keep=image)
    return image


def _prune(cache_dir: Path, keep: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> None:
    """Drop the images an older format or package list left, and their extracted trees, unless a
    running container still stands on one (its tree is then an overlay's lower layer)."""
    mounts = mountinfo.read_text(encoding="utf-8", errors="replace")
    for old in cache_dir.glob("debian-*.tar.zst"):
        if old == keep:
            continue
        tree = old.parent / (old.name.removesuffix(".tar.zst") + ".root")
        if str(tree) in mounts:
            continue
        shutil.rmtree(tree, ignore_errors=True)
        old.unlink(missing_ok=True)


def _build(image: Path, mirror: Mirror, packages: tuple[str, ...], cache_dir: Path, say: Callable[[str], None]) -> None:
    say(f"building the host image with debootstrap ({mirror.suite}, {len(packages)} packages; about a minute, once)")
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".build-") as tmp:
        root = Path(tmp) / "root"
        done = subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(packages)}",
                mirror.suite,
                str(root),
                mirror.url,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
            raise RootfsError(f"debootstrap {mirror.suite} from {mirror.url} failed:\n{tail}")
        _generalise(root)
        _container_conventions(root)
        partial = Path(tmp) / "image.tar.zst"
        subprocess.run(["tar", "--zstd", "-C", str(root), "-cpf", str(partial), "."], check=True)
        os.replace(partial, image)  # atomic: a half-built image is never found in the cache


def _generalise(root: Path) -> None:
    """Remove what must differ per container: host keys, machine id, package lists."""
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    write_atomic(root / "etc/machine-id", "", mode=0o444)  # empty: systemd makes one at first boot
    shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
    (root / "var/lib/apt/lists/partial").mkdir(parents=True)
    os.utime(root / "var/lib/apt/lists", (0, 0))  # lists from 1970: apt's cache_valid_time must update them
    shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
    for cache in (root / "var/cache/apt").glob("*.bin"):
        cache.unlink()  # else apt's cache_valid_time takes the image's build time for a fresh update
    (root / "var/cache/apt/archives/partial").mkdir(parents=True)


def _container_conventions(root: Path) -> None:
    """What Debian's own container images set for apt and dpkg: no translated package descriptions
    (apt would fetch and index about 30 MB of them at every first update), and no fsync after each
    file dpkg unpacks (a container's root is thrown away, not recovered, if the machine stops)."""
    write_atomic(root / "etc/apt/apt.conf.d/90gpufabric-container", 'Acquire::Languages "none";\n', mode=0o644)
    write_atomic(root / "etc/dpkg/dpkg.cfg.d/90gpufabric-container", "force-unsafe-io\n", mode=0o644)


def base_tree(image: Path) -> Path:
    """The image extracted once, beside it: the read-only lower layer of every container's root (each
    container writes into its own upper layer), so a lab's hosts cost one extraction, not one each."""
    base = image.parent / (image.name.removesuffix(".tar.zst") + ".root")
    if (base / "etc/os-release").is_file():
        return base
    staging = Path(tempfile.mkdtemp(prefix=f".{base.name}.", dir=image.parent))
    try:
        extract(image, staging)
        os.rename(staging, base)  # whole or not at all; a lab that made it first wins
    except OSError:
        if not (base / "etc/os-release").is_file():
            raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return base


def extract(image: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "--zstd", "-C", str(dest), "-xpf", str(image)], check=True)
