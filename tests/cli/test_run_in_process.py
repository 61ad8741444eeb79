"""`run_in_process` (tests/conftest.py) stands in for `run` in the CLI tests: the same exit code, stdout and
stderr as the command in a process of its own, and nothing of the call left in the test's process."""

from __future__ import annotations

import gc
import logging
import os
import signal
import subprocess
import sys

import pytest
from conftest import INVENTORY, run, run_in_process

from gpufabric.cli.logs import PACKAGES


def test_a_command_gives_what_its_own_process_gives(tmp_path):
    bad = tmp_path / "fabric.yml"
    bad.write_text((INVENTORY / "fabric.yml").read_text().replace("count: 4\n", "count: yes\n", 1))
    cases = [
        ("gpufabric", "plan", "--json", str(INVENTORY / "examples" / "sonic.yml")),  # a result on stdout, exit 0
        ("nornir", "check", str(bad)),  # a located error on stderr, exit 2
        ("gpufabric", "no-such-command"),  # click's usage error, exit 2
    ]
    for args in cases:
        here, there = run_in_process(*args, cwd=tmp_path), run(*args, cwd=tmp_path)
        assert (here.returncode, here.stdout, here.stderr) == (there.returncode, there.stdout, there.stderr), args
    assert run_in_process(*cases[1]).returncode == 2 and "count" in run_in_process(*cases[1]).stderr


def test_the_call_leaves_the_process_as_it_found_it(tmp_path):
    before = (dict(os.environ), os.getcwd(), sys.argv, sys.stdout, sys.stderr, sys.stdin, gc.isenabled())
    loggers = [(lg.level, list(lg.handlers)) for lg in map(logging.getLogger, PACKAGES)]
    sigterm = signal.getsignal(signal.SIGTERM)
    # `plan` switches the cycle collector off for its run, `-vv` configures gpufabric's loggers, and the
    # environment and folder are the call's own.
    done = run_in_process("gpufabric", "-vv", "plan", str(INVENTORY / "fabric.yml"), cwd=tmp_path, GF_PROBE="1")
    assert done.returncode == 0, done.stderr
    assert "compute" in done.stdout
    after = (dict(os.environ), os.getcwd(), sys.argv, sys.stdout, sys.stderr, sys.stdin, gc.isenabled())
    assert after == before and "GF_PROBE" not in os.environ
    assert [(lg.level, list(lg.handlers)) for lg in map(logging.getLogger, PACKAGES)] == loggers
    assert signal.getsignal(signal.SIGTERM) == sigterm


def test_a_failing_command_with_check_raises():
    with pytest.raises(subprocess.CalledProcessError):
        run_in_process("gpufabric", "no-such-command", check=True)
