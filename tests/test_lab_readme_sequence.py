"""The README's lab block, run exactly as written (root only): lab up with hosts, push the compute
plane twice, validate it, lab down; then nothing of the lab is left on the machine."""

from __future__ import annotations

import os
import re

import pytest
from conftest import ROOT, run

from gpufabric.intent import load_intent
from gpufabric.lab import netlink
from gpufabric.lab.topology import topology

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)")


def _readme_lab_block() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    block = text.split("In the lab (as root):", 1)[1].split("```", 2)[1]
    commands = [line.split("#", 1)[0].split() for line in block.splitlines()]
    return [c for c in commands if c]


def test_the_readme_lab_sequence_passes_as_written():
    commands = _readme_lab_block()
    assert [c[:2] for c in commands] == [
        ["gpufabric", "lab"],
        ["nornir", "push"],
        ["nornir", "push"],
        ["nornir", "validate"],
        ["gpufabric", "lab"],
    ]
    names = {n.name for n in topology(load_intent(None)).nodes}
    before = set(netlink.namespaces())
    try:
        outputs = []
        for command in commands[:-1]:
            done = run(*command)
            assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])
            outputs.append(done)
        assert "no changes" in outputs[2].stderr
        assert re.search(r"converged: all \d+ BGP sessions", outputs[1].stderr), outputs[1].stderr
    finally:
        down = run(*commands[-1])
    assert down.returncode == 0, down.stderr
    assert not (names & (set(netlink.namespaces()) - before))
