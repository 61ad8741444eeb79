"""The exported topology.conf, read back by Debian's own slurmctld and shown by its scontrol.

Each test starts a munged and a slurmctld of its own in the foreground, on 127.0.0.1 ports above
20000 that were free, with every state, spool, socket and log file in a temporary folder; the
cluster's nodes are declared State=FUTURE, so nothing is ever contacted. `scontrol show topology`
then gives Slurm's view of the switches, which must equal the plan's scalable units and spines.
Both daemons are stopped by their PIDs and the folder removed. Needs root (slurmctld runs as
SlurmUser=root), hence the `lab` and `root` marks; it uses no network namespace.

Debian 12 ships Slurm 22.05, which has no topology/block plugin (23.11) nor topology.yaml
(25.05): the block and YAML exports are checked by structure in test_slurm_topologies.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpufabric.export import slurm
from gpufabric.export.hostlist import compress
from gpufabric.plan import Plan
from tests.conftest import INVENTORY, plan_text, sized
from tests.slurm_cluster import free_port

pytestmark = [pytest.mark.lab, pytest.mark.beside_lab, pytest.mark.root]

DAEMONS = ("slurmctld", "scontrol", "munged")


def _need() -> None:
    if os.geteuid() != 0:
        pytest.skip("slurmctld runs here as SlurmUser=root: run as root")
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (scripts/test.sh installs slurmctld, slurm-client, munge)")


def _free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port("0.0.0.0")
        if port not in ports:
            ports.append(port)
    return ports


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _slurm_conf(folder: Path, nodes: list[str], ports: list[int]) -> str:
    return "\n".join(
        [
            "ClusterName=gpufabric-test",
            f"SlurmctldHost={socket.gethostname().split('.')[0]}(127.0.0.1)",
            f"SlurmctldPort={ports[0]}",
            f"SlurmdPort={ports[1]}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={folder}/munge.sock",
            "CredType=cred/munge",
            f"StateSaveLocation={folder}/state",
            f"SlurmdSpoolDir={folder}/spool",
            f"SlurmctldPidFile={folder}/slurmctld.pid",
            f"SlurmctldLogFile={folder}/slurmctld.log",
            "SlurmUser=root",
            "TopologyPlugin=topology/tree",
            "SelectType=select/cons_tres",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            f"NodeName={compress(nodes)} CPUs=1 State=FUTURE",
            "PartitionName=all Nodes=ALL Default=YES",
            "",
        ]
    )


@contextlib.contextmanager
def controller(topology: str, nodes: list[str]) -> Iterator[dict[str, str]]:
    """A running slurmctld reading `topology`; yields the environment scontrol needs."""
    folder = Path(tempfile.mkdtemp(prefix="gpufabric-slurm-"))
    started: list[subprocess.Popen[bytes]] = []
    log = None
    try:
        (folder / "state").mkdir()
        (folder / "spool").mkdir()
        key = folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (folder / "topology.conf").write_text(topology)
        munged = [
            "munged",
            "--force",
            "--foreground",
            f"--socket={folder}/munge.sock",
            f"--key-file={key}",
            f"--pid-file={folder}/munged.pid",
            f"--log-file={folder}/munged.log",
            f"--seed-file={folder}/munged.seed",
        ]
        log = (folder / "daemons.out").open("wb")
        started.append(subprocess.Popen(munged, stdout=log, stderr=subprocess.STDOUT))
        _wait_for((folder / "munge.sock").exists, "munged's socket", folder)
        env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
        ctld = ["slurmctld", "-D", "-i", "-f", str(folder / "slurm.conf")]
        for _attempt in range(3):
            # A port checked free can still be taken before slurmctld binds it: that one case gets new ports.
            (folder / "slurm.conf").write_text(_slurm_conf(folder, nodes, _free_ports(2)))
            proc = subprocess.Popen(ctld, stdout=log, stderr=subprocess.STDOUT)
            started.append(proc)
            up = lambda p=proc: p.poll() is not None or _scontrol(env, "ping").returncode == 0  # noqa: E731
            _wait_for(up, "slurmctld", folder)
            if proc.poll() is None:
                break
            if "Address already in use" not in (folder / "daemons.out").read_text(errors="replace"):
                pytest.fail(f"slurmctld stopped:\n{(folder / 'daemons.out').read_text(errors='replace')[-2000:]}")
        else:
            pytest.fail("slurmctld found its port taken three times")
        yield env
    finally:
        for proc in reversed(started):
            _stop(proc)
        if log is not None:
            log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_for(ready: Callable[[], bool], what: str, folder: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    out = (folder / "daemons.out").read_text(errors="replace")[-2000:]
    pytest.fail(f"{what} did not come up in {timeout:.0f} s:\n{out}")


def _scontrol(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["scontrol", *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def _hostnames(env: dict[str, str], expression: str) -> set[str]:
    """Slurm's own reading of a hostlist expression."""
    done = _scontrol(env, "show", "hostnames", expression)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def read_back(env: dict[str, str]) -> dict[str, tuple[set[str], set[str]]]:
    """`scontrol show topology`: switch -> (its nodes, its child switches), as slurmctld holds them."""
    done = _scontrol(env, "show", "topology")
    assert done.returncode == 0, done.stderr
    out = {}
    for line in done.stdout.splitlines():
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        if "SwitchName" in fields:
            nodes = _hostnames(env, fields["Nodes"]) if fields.get("Nodes") else set()
            switches = _hostnames(env, fields["Switches"]) if fields.get("Switches") else set()
            out[fields["SwitchName"]] = (nodes, switches)
    return out


def expected(plan: Plan) -> dict[str, tuple[set[str], set[str]]]:
    """From the plan's servers and leaves: a switch per scalable unit with its nodes; above them the
    spines (2 tiers), or a switch per pod and the superspines above the pods (3 tiers)."""
    plane = plan.planes["compute"]
    units: dict[str, set[str]] = {}
    for s in plan.servers:
        if "compute" in s.units:
            units.setdefault(f"{plane.prefix}-su{s.units['compute']}", set()).add(s.name)
    out = {name: (nodes, set()) for name, nodes in units.items()}
    everyone = set().union(*units.values())
    # scontrol lists under an upper switch every node beneath it.
    if plane.tiers == 2:
        out[f"{plane.prefix}-spines"] = (everyone, set(units))
        return out
    pods: dict[str, set[str]] = {}
    for leaf in (d for d in plane.devices if d.role == "leaf" and f"{plane.prefix}-su{d.unit}" in units):
        pods.setdefault(f"{plane.prefix}-pod{leaf.pod}", set()).add(f"{plane.prefix}-su{leaf.unit}")
    for pod, members in pods.items():
        out[pod] = (set().union(*(units[u] for u in members)), members)
    out[f"{plane.prefix}-superspines"] = (everyone, set(pods))
    return out


@pytest.mark.parametrize("name", sized(["fabric.yml", "examples/superpod-4su.yml", "examples/three-tier-32k.yml"]))
def test_slurmctld_reads_the_exported_tree(name: str) -> None:
    _need()
    path = INVENTORY / name
    plan = plan_text(path.read_text(), str(path))
    nodes = [s.name for s in plan.servers if "compute" in s.units]
    with controller(slurm.render(plan), nodes) as env:
        assert read_back(env) == expected(plan)


def test_a_misplaced_node_is_seen() -> None:
    """The comparison is not vacuous: a topology with one node moved reads back different."""
    _need()
    plan = plan_text((INVENTORY / "fabric.yml").read_text(), "fabric.yml")
    nodes = [s.name for s in plan.servers if "compute" in s.units]
    planted = (
        slurm.render(plan).replace("Nodes=gpu[01-02]", "Nodes=gpu01").replace("Nodes=gpu[03-04]", "Nodes=gpu[02-04]")
    )
    with controller(planted, nodes) as env:
        got = read_back(env)
    assert got != expected(plan)
    assert got["cmp-su2"][0] == {"gpu02", "gpu03", "gpu04"}
