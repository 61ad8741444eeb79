"""The FRR driver's diff, from FRR's own frr-reload.py: each block once, not its context per line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpufabric.drivers.frr_getters import reload_diff

FRR_RELOAD = Path("/usr/lib/frr/frr-reload.py")

RUNNING = """frr version 8.4.4
hostname leaf1
!
interface swp1
 description old
exit
!
router bgp 65001
 bgp router-id 10.0.0.1
 neighbor 10.1.0.1 remote-as 65100
 !
 address-family ipv4 unicast
  network 10.0.0.1/32
 exit-address-family
exit
!
"""

CANDIDATE = """frr version 8.4.4
hostname leaf1
!
interface swp1
 description new
exit
!
router bgp 65001
 bgp router-id 10.0.0.1
 neighbor 10.1.0.1 remote-as 65100
 neighbor 10.1.0.3 remote-as 65100
 neighbor 10.1.0.5 remote-as 65100
 !
 address-family ipv4 unicast
  network 10.0.0.1/32
  network 10.0.0.2/32
  network 10.0.0.3/32
 exit-address-family
exit
!
"""


def _frr_reload_test(tmp_path: Path) -> str:
    if not FRR_RELOAD.is_file():
        if os.environ.get("CI"):
            pytest.fail("CI installs frr-pythontools; frr-reload.py should be there")
        pytest.skip("frr-reload.py (frr-pythontools) is not installed")
    (tmp_path / "running.conf").write_text(RUNNING)
    (tmp_path / "candidate.conf").write_text(CANDIDATE)
    done = subprocess.run(
        ["python3", str(FRR_RELOAD), "--test", "--input", "running.conf", "candidate.conf"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "VTYSH_HISTFILE": "/dev/null"},
        check=True,
    )
    return done.stdout


def test_frr_reload_repeats_the_context_per_line_and_the_diff_does_not(tmp_path):
    printed = _frr_reload_test(tmp_path)
    assert printed.count("router bgp 65001") == 4  # what frr-reload itself prints: the context per line
    assert reload_diff(printed).splitlines() == [
        "- interface swp1",
        "-  no description old",
        "+ interface swp1",
        "+  description new",
        "+ router bgp 65001",
        "+  neighbor 10.1.0.3 remote-as 65100",
        "+  neighbor 10.1.0.5 remote-as 65100",
        "+  address-family ipv4 unicast",
        "+   network 10.0.0.2/32",
        "+   network 10.0.0.3/32",
    ]


def test_a_block_reopened_after_another_shows_its_context_again():
    blocks = ["router bgp 1", " neighbor a", "interface x", " description d", "router bgp 1", " neighbor b"]
    printed = "\n".join(["Lines To Add", "============", *blocks])
    assert reload_diff(printed).splitlines() == [
        "+ router bgp 1",
        "+  neighbor a",
        "+ interface x",
        "+  description d",
        "+ router bgp 1",
        "+  neighbor b",
    ]
