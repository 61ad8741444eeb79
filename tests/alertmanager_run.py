"""Debian's Alertmanager for the tests: the installed one, or the package unpacked into .cache/alertmanager
(scripts/test.sh), run in a mount namespace of its own whose /usr/share is the unpacked tree laid over the
real one (it reads its default template from /usr/share/prometheus/alertmanager/default.tmpl). Root only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UNPACKED = ROOT / ".cache" / "alertmanager"
TEMPLATE = Path("/usr/share/prometheus/alertmanager/default.tmpl")


def alertmanager_command(args: list[str]) -> list[str]:
    """The command line starting Alertmanager with `args`; skips (fails in CI) when it is missing."""
    installed = Path("/usr/bin/prometheus-alertmanager")
    if installed.exists() and TEMPLATE.exists():
        return [str(installed), *args]
    binary = UNPACKED / "usr/bin/prometheus-alertmanager"
    if not binary.exists():
        if os.environ.get("CI"):
            pytest.fail("prometheus-alertmanager is missing: scripts/test.sh unpacks Debian's package")
        pytest.skip("prometheus-alertmanager is not unpacked (scripts/test.sh unpacks it into .cache/alertmanager)")
    overlay = f'mount -t overlay overlay -o lowerdir={UNPACKED / "usr/share"}:/usr/share /usr/share && exec "$0" "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", overlay, str(binary), *args]
