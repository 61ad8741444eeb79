"""Growth in the lab (root): the default fabric at 4 GPU servers of a build-out of 6, pushed; then grown
by one unit: `lab up` cables the new switches in, `push --changed-from` pushes exactly the switches
`gpufabric diff` names, and validate is green on every plane."""

from __future__ import annotations

import copy
import json
import os
import time

import pytest
import yaml
from conftest import INVENTORY, run
from lab_slot import moved, up_args

from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent

pytestmark = [
    pytest.mark.own_lab,  # its lab is its worker's (tests/lab_slot.py): it runs beside the other lab tests
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)"),
]


def _intent(tmp_path, name: str, count: int):
    doc = copy.deepcopy(yaml.safe_load((INVENTORY / "fabric.yml").read_text()))
    doc["server_groups"][0].update(count=count, build_out=6)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(moved(doc), sort_keys=False))
    return path


def test_growing_the_lab_by_a_unit_pushes_only_what_the_diff_names(tmp_path):
    small, grown = _intent(tmp_path, "small.yml", 4), _intent(tmp_path, "grown.yml", 6)
    state = tmp_path / "state"
    lab = ("--state-dir", str(state))
    try:
        done = run("gpufabric", "lab", "up", str(small), "--no-hosts", *up_args(), *lab)
        assert done.returncode == 0, done.stderr
        done = run("nornir", "push", str(small), *lab, "--json")
        assert done.returncode == 0, done.stderr[-2000:]

        diff = run("gpufabric", "diff", str(small), str(grown), "--json")
        assert diff.returncode == 4, diff.stderr  # additions only
        named = set(json.loads(diff.stdout)["changed_switches"])
        assert {"cmp-su3-leaf1", "cmp-su3-leaf2", "cmp-spine1"} <= named and "cmp-su1-leaf1" not in named

        done = run("gpufabric", "lab", "up", str(grown), "--no-hosts", *up_args(), *lab)  # cables in what is new
        assert done.returncode == 0, done.stderr
        done = run("nornir", "push", str(grown), *lab, "--changed-from", str(small), "--json")
        assert done.returncode == 0, done.stderr[-2000:]
        pushed = {d["device"] for d in json.loads(done.stdout)["devices"]}
        # What a push of the lab can target: the lab's plan (every switch as FRR), as `push --lab` reads it.
        in_lab = {d.name for d in topology(load_intent(str(grown))).plan.devices()}
        assert pushed == named & in_lab, sorted(pushed ^ (named & in_lab))
        # The push waited for the BGP sessions; the routes (ECMP width) follow a moment later, and later
        # still on a loaded machine: validate until green, within a bound that only a broken fabric meets.
        deadline = time.monotonic() + 120
        while True:
            check = run("nornir", "validate", str(grown), *lab, "--format", "json")
            results = json.loads(check.stdout)["results"]
            if check.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert check.returncode == 0, [r for r in results if r["verdict"] == "fail"][:5]
    finally:
        run("gpufabric", "lab", "down", *lab)
