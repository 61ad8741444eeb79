"""systemd-networkd's own parser as a judge of .netdev and .network files, with nothing of this machine touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

NETWORKD = Path("/lib/systemd/systemd-networkd")


def networkd_log(folder: Path) -> str:
    """systemd-networkd loading `folder` as its only configuration, in a network and mount namespace of its
    own (only a loopback there; /run, /etc/systemd/network and /usr/lib/systemd/network are empty tmpfs
    but for these files). Stopped by its PID once it has enumerated links (its configuration is loaded
    before that), or after 60 s."""
    if os.geteuid() != 0 or not NETWORKD.exists() or shutil.which("unshare") is None:
        pytest.skip("needs root, unshare and systemd-networkd (Debian's systemd)")
    script = (
        "set -e; for d in /run /etc/systemd/network /usr/lib/systemd/network; do mount -t tmpfs tmpfs $d; done; "
        'mkdir -p /run/systemd/network; cp "$1"/* /run/systemd/network/; '
        f"exec env SYSTEMD_LOG_LEVEL=debug SYSTEMD_LOG_TARGET=console {NETWORKD}"
    )
    proc = subprocess.Popen(
        ["unshare", "--mount", "--net", "--propagation", "private", "sh", "-c", script, "sh", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    deadline = time.monotonic() + 60
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip())
            if "Enumeration completed" in line or time.monotonic() > deadline:
                break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return "\n".join(lines)
