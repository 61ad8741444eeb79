"""A converged switch's drain against real FRR (root only): the FRR driver's drain and undrain of a spine that
carries two planes in VRFs, run on this machine's FRR with the spine's rendered frr.conf loaded.

This kernel has no VRF devices, so the VRFs' BGP instances are configured but inactive (FRR keeps their
configuration and answers for them, as it does before a VRF device appears): what is shown is what FRR takes
and what it answers, not traffic. The driver reads the instances from FRR's own `show ip bgp vrf all summary
json`; FRR accepts the drain in every instance (graceful shutdown per instance, the prepend on every
neighbour of each), its running configuration then holds it, and the undrain leaves none of it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from napalm import get_network_driver

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.drivers.transport import Output
from gpufabric.lab import frr_node
from gpufabric.platforms.spec import DRAIN_POLICY
from tests.oracles.test_converged_oracles import _plan

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="real FRR in a network namespace needs root"),
    pytest.mark.own_lab,  # no lab: a namespace and FRR pathspace of its own (NODE), beside any lab
]

NODE = "gf-drain-vrf"  # a namespace and FRR pathspace of this test's own
PUSH = "gf-20261126T040000Z-abc123"


class Shell:
    """The driver's transport: its commands run in this machine's shell, where the test's FRR runs."""

    def run(self, command: str, stdin: str | None = None) -> Output:
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "VTYSH_HISTFILE": "/dev/null"}
        done = subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, text=True, timeout=120,
                              check=False, env=env)  # fmt: skip
        return Output(done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def spine() -> Iterator[list[str]]:
    """The converged example's FRR spine, its frr.conf running in FRR here; its VRFs."""
    if subprocess.run(["which", "vtysh"], capture_output=True, check=False).returncode != 0:
        pytest.skip("FRR is not installed (scripts/test.sh installs it)")
    plan = _plan("frr", lossless=True)
    device = next(d for d in plan.planes["business"].devices if d.platform == "frr" and d.role == "spine")
    conf = render_device(plan, device, LinkIndex(plan)).files[f"{device.name}.frr.conf"]
    vrfs = re.findall(r"^router bgp \d+ vrf (\S+)$", conf, re.MULTILINE)
    subprocess.run(["ip", "netns", "add", NODE], check=True)
    try:
        folder = frr_node.write_pathspace(NODE)
        (folder / "frr.conf").write_text(conf.replace(f"hostname {device.name}", f"hostname {NODE}"))
        frr_node.start(NODE, Path(f"/proc/{os.getpid()}/ns/uts"))
        yield vrfs
    finally:
        subprocess.run([frr_node.FRRINIT, "stop", NODE], capture_output=True, check=False,
                       env={**os.environ, "VTYSH_HISTFILE": "/dev/null"})  # fmt: skip
        subprocess.run(["ip", "netns", "del", NODE], capture_output=True, check=False)
        for leftover in (frr_node.etc_dir(NODE), frr_node.run_dir(NODE)):
            subprocess.run(["rm", "-rf", str(leftover)], check=False)


def _running() -> str:
    return subprocess.run(["vtysh", "-N", NODE, "-c", "show running-config"], capture_output=True, text=True,
                          check=True, env={**os.environ, "VTYSH_HISTFILE": "/dev/null"}).stdout  # fmt: skip


def _instance(running: str, vrf: str | None) -> str:
    head = re.compile(rf"^router bgp \d+{f' vrf {vrf}' if vrf else ''}$", re.MULTILINE)
    found = head.search(running)
    assert found, (vrf, running)
    return running[found.end() : running.index("\nexit", found.end())]


def test_real_frr_takes_the_drain_in_every_vrf_and_the_undrain_takes_it_all_back(spine):
    vrfs = spine
    assert len(vrfs) == 2
    before = _running()
    dev = get_network_driver("frr")("192.0.2.20", "u", "p",
                                    optional_args={"transport": Shell(), "pathspace": NODE})  # fmt: skip
    dev.lldp_socket = "/nonexistent"
    dev.open()
    try:
        dev.drain(PUSH, "converged drain test", by="test@lab")
        drained = _running()
        assert dev.maintenance_status()["drained"] and dev.maintenance_status()["applied"]
        for vrf in [None, *vrfs]:
            block = _instance(drained, vrf)
            sessions = re.findall(r"^ neighbor (\S+) (?:interface )?remote-as ", block, re.MULTILINE)
            bound = re.findall(rf"^  neighbor (\S+) route-map {DRAIN_POLICY} out$", block, re.MULTILINE)
            assert " bgp graceful-shutdown\n" in block, (vrf, block)
            assert sessions and sorted(bound) == sorted(sessions), (vrf, block)
        dev.undrain(PUSH)
        after = _running()
        assert DRAIN_POLICY not in after and "graceful-shutdown" not in after, after
        assert not dev.maintenance_status()["drained"]
        assert [line for line in after.splitlines() if "router bgp" in line] == [
            line for line in before.splitlines() if "router bgp" in line
        ]
    finally:
        dev.close()
