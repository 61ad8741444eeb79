"""The README's lab block, run exactly as written (root only), as a user would in a new shell: each
line through bash, with nothing exported but PATH, HOME and LANG (none of the GPUFABRIC_* secrets
the other tests plant in this process's environment). lab up with hosts, push the compute plane
twice, validate it, lab down; then nothing of the lab is left on the machine."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from conftest import BIN, ROOT

from gpufabric.fleet.lab.state import DEFAULT_DIR
from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent
from gpufabric.lab import netlink

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)")


def _readme_lab_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("In the lab (as root", 1)[1].split("```", 2)[1]
    return [line for line in block.splitlines() if line.split("#", 1)[0].strip()]


def _clean_env() -> dict[str, str]:
    """A new root shell: PATH, HOME and LANG only, none of the GPUFABRIC_* secrets conftest plants in
    this process. This test's venv comes after the clone's .venv/ on PATH (it stands in for it where
    the clone has none); PYTHONPATH names the code under test, since that venv may hold an editable
    install of another checkout."""
    return {
        "PATH": f"{BIN}:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT),
    }


def _shell(setup: str, line: str) -> subprocess.CompletedProcess[str]:
    """One line of the block in a new bash that has run the block's PATH line first."""
    return subprocess.run(
        ["bash", "-c", f"{setup}\n{line}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_clean_env(),
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_the_readme_lab_sequence_passes_as_written_with_nothing_exported():
    setup, *lines = _readme_lab_block()
    assert setup.split("#", 1)[0].strip() == "export PATH=$PWD/.venv/bin:$PATH"
    assert [line.split()[:2] for line in lines] == [
        ["gpufabric", "lab"],
        ["nornir", "push"],
        ["nornir", "push"],
        ["nornir", "validate"],
        ["gpufabric", "lab"],
    ]
    assert not any(k.startswith("GPUFABRIC_") for k in _clean_env())
    names = {n.name for n in topology(load_intent(None)).nodes}
    before = set(netlink.namespaces())
    try:
        outputs = []
        for line in lines[:-1]:
            done = _shell(setup, line)
            assert done.returncode == 0, (line, done.stdout[-3000:], done.stderr[-3000:])
            outputs.append(done)
        kept = DEFAULT_DIR / "secrets.json"
        mode = kept.stat()
        assert (mode.st_mode & 0o777, mode.st_uid) == (0o600, 0)  # the lab's secrets: root's, 0600
        salt_key = json.loads(kept.read_text())["GPUFABRIC_SALT_KEY"]
        assert len(salt_key) >= 32
        for done in outputs:
            assert salt_key not in done.stdout + done.stderr
        assert "no changes" in outputs[2].stderr
        # The pushes' audit trail is the lab's: in its state folder, one record per switch of the first push
        # (every record names its push), none holding the salt key; `lab down` takes it away with the lab.
        trail = [json.loads(line) for line in (DEFAULT_DIR / "audit.jsonl").read_text().splitlines()]
        first = {r["push_id"] for r in trail if r["push_id"] in outputs[1].stderr}
        assert len(first) == 1 and sum(r["push_id"] in first for r in trail) >= 1
        assert salt_key not in (DEFAULT_DIR / "audit.jsonl").read_text()
        assert re.search(r"converged: all \d+ BGP sessions", outputs[1].stderr), outputs[1].stderr
    finally:
        down = _shell(setup, lines[-1])
    assert down.returncode == 0, down.stderr
    assert not (names & (set(netlink.namespaces()) - before))
    assert not DEFAULT_DIR.exists()
