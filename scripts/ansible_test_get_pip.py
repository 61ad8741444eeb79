"""Stand-in for pip's get-pip.py, which ansible-test fetches from its own CI file host to put pip into each
virtualenv it makes (that host is not reachable from here; package indexes are). Run as ansible-test runs
get-pip (`python get_pip_<version>.py [pip options] pip==<version> --no-setuptools --no-wheel`), it does
what get-pip does: the Python's own bundled pip first (ensurepip, no download), then that pip installs the
requested pip from the configured package index. scripts/collection_sanity.sh puts it where ansible-test
looks for a cached copy.
"""

from __future__ import annotations

import subprocess
import sys

# get-pip's own options, which `pip install` does not take.
GET_PIP_ONLY = ("--no-setuptools", "--no-wheel")


def main(argv: list[str]) -> int:
    subprocess.run([sys.executable, "-m", "ensurepip", "--upgrade"], check=True, stdout=subprocess.DEVNULL)
    wanted = [a for a in argv if a not in GET_PIP_ONLY]
    return subprocess.run([sys.executable, "-m", "pip", "install", *wanted], check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
