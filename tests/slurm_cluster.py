"""A real Slurm cluster on this one machine: munged, slurmctld and one slurmd per node (Debian 12's
Slurm 22.05), for tests that need jobs to really run on named nodes.

Debian builds Slurm without `--enable-multiple-slurmd`, so one machine cannot run several slurmd on
its own addresses by configuration (`NodeName=... Port=` per node). Instead each slurmd runs in a
network namespace of its own (`ip netns exec gfsch-<node> slurmd -D -N <node>`), with its own address
on a veth into a bridge of the root namespace, so every slurmd listens on the same SlurmdPort without
a clash; `-N` gives it its node name; `%n` in SlurmdSpoolDir/SlurmdPidFile/SlurmdLogFile keeps their
files apart. slurmctld, sbatch, squeue, sinfo and scontrol stay in the root namespace and reach the
nodes over the bridge (slurmctld listens on the bridge's address). munged's socket is a file, so one
munged serves every namespace. slurmd 22.05 loads a cgroup plugin even with proctrack/linuxproc and
task/none, and `ip netns exec` gives it a fresh /sys with no cgroup file system: the harness's
cgroup.conf names the plugin so it is not detected from there (without it every slurmd stops at once,
"No filesystem mounted on /sys/fs/cgroup"). A slurmd that ends while the harness waits for the nodes
fails the wait at once with its log. Jobs are `sbatch --wrap` of a shell loop that ends when the test
creates a file: a job ends when the test says, never on a timer.

Everything lives in a temporary folder, the bridge `gfsch0` (10.254.42.1/24) and the namespaces
`gfsch-<node>` (10.254.42.11 up; an xdist worker's carry its tag: `gfschw1-<node>` on 10.254.44.0/24): no
traffic leaves the machine. Teardown cancels the jobs, stops every daemon by its PID, kills what is left in
the namespaces (ip netns pids), and deletes the namespaces, the bridge and the folder, also when the run is
stopped with SIGTERM (`timeout`).
GPUFABRIC_KEEP_SLURM_LOGS=<folder> keeps the daemons' logs. Root only; run under the lab lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab_slot import SLURM_SUBNET, SLURM_TAG

# Each xdist worker's harness beside the other's (tests/lab_slot.py): its names carry the worker's tag.
BRIDGE = f"gfsch{SLURM_TAG or 0}"
PREFIX = f"gfsch{SLURM_TAG}-"
SUBNET = SLURM_SUBNET
CONTROLLER_IP = f"{SUBNET}.1"
NEEDED = ("slurmctld", "slurmd", "scontrol", "sbatch", "squeue", "sinfo", "scancel", "munged", "ip")


def missing() -> list[str]:
    return [d for d in NEEDED if shutil.which(d) is None]


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "0.0.0.0") -> int:
    """A port free now and outside the kernel's ephemeral range: a port inside it can be taken by any
    outgoing connection (a parallel Molecule run makes hundreds) between this check and the daemon's bind,
    which is how a CI run once saw slurmctld stop with "Address already in use"."""
    high = _ephemeral_low() - 1
    while True:
        port = random.randint(min(10240, high - 1000), high)
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        return port


_free_port = free_port


def wait_for(
    ready: Callable[[], bool], what: str, timeout: float = 240.0, log: Path | Sequence[Path] | None = None
) -> None:
    """Poll `ready` until it holds; on a deadline, fail with the last lines of every log given."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    logs = [log] if isinstance(log, Path) else list(log or ())
    tail = "".join(
        f"\n--- {found.name}\n" + found.read_text(errors="replace")[-2000:] for found in logs if found.exists()
    )
    raise AssertionError(f"{what}: not within {timeout:.0f} s{tail}")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class SlurmCluster:
    folder: Path
    conf: Path
    nodes: list[str]

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def command(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=60, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr}")
        return done

    def node(self, name: str) -> dict[str, object]:
        every = json.loads(self.command("sinfo", "--json").stdout)["nodes"]
        return next(n for n in every if n["name"] == name)

    def drained(self, name: str) -> bool:
        return "DRAIN" in self.node(name)["state_flags"]  # type: ignore[operator]

    def submit(self, node: str) -> tuple[int, Path]:
        """A job on `node` that runs until the returned file exists; returns (job id, that file)."""
        stop = self.folder / f"stop-{node}-{random.randint(0, 1 << 30)}"
        done = self.command(
            "sbatch",
            "--parsable",
            "-w",
            node,
            "-N",
            "1",
            "-o",
            "/dev/null",
            "-J",
            "gfsch-hold",
            "--wrap",
            f"while [ ! -e {stop} ]; do sleep 0.2; done",
        )
        job = int(done.stdout.strip().split(";")[0])
        wait_for(lambda: self.job_state(job) == "RUNNING", f"job {job} running on {node}", log=self.folder / "ctld.log")
        return job, stop

    def job_state(self, job: int) -> str:
        for record in json.loads(self.command("squeue", "--json").stdout)["jobs"]:
            if record["job_id"] == job:
                return str(record["job_state"])
        return "GONE"

    def active_jobs(self) -> list[int]:
        """Jobs not yet ended (an ended job stays listed for MinJobAge and until slurmctld purges it)."""
        ended = {
            "COMPLETED",
            "CANCELLED",
            "FAILED",
            "TIMEOUT",
            "NODE_FAIL",
            "PREEMPTED",
            "BOOT_FAIL",
            "DEADLINE",
            "OUT_OF_MEMORY",
        }
        jobs = json.loads(self.command("squeue", "--json").stdout)["jobs"]
        return [int(j["job_id"]) for j in jobs if j["job_state"] not in ended]

    def end(self, job: int, stop: Path) -> None:
        stop.touch()
        wait_for(lambda: job not in self.active_jobs(), f"job {job} ending")

    def reset(self) -> None:
        """Every job cancelled and every node resumed: the next test starts from idle nodes."""
        self.command("scancel", "--full", "-u", "root", check=False)
        wait_for(lambda: not self.active_jobs(), "no job left running")
        for name in self.nodes:
            if self.drained(name):
                self.command("scontrol", "update", f"NodeName={name}", "State=RESUME")
        wait_for(lambda: all(self.node(n)["state"] == "idle" and not self.drained(n) for n in self.nodes), "idle nodes")


def _conf(folder: Path, nodes: list[str], ctld_port: int) -> str:
    lines = [
        "ClusterName=gfsched",
        f"SlurmctldHost={socket.gethostname().split('.')[0]}({CONTROLLER_IP})",
        f"SlurmctldPort={ctld_port}",
        "SlurmdPort=6818",  # the same in every namespace: each slurmd has an address of its own
        "AuthType=auth/munge",
        f"AuthInfo=socket={folder}/munge.sock",
        "CredType=cred/munge",
        f"StateSaveLocation={folder}/state",
        f"SlurmdSpoolDir={folder}/spool-%n",
        f"SlurmdPidFile={folder}/slurmd-%n.pid",
        f"SlurmdLogFile={folder}/slurmd-%n.log",
        f"SlurmctldPidFile={folder}/slurmctld.pid",
        f"SlurmctldLogFile={folder}/ctld.log",
        "SlurmUser=root",
        "SlurmdUser=root",
        "SelectType=select/cons_tres",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none",
        "MpiDefault=none",
        "ReturnToService=2",
        "SlurmdTimeout=300",
        "MinJobAge=2",
        "KillWait=5",
    ]
    for number, name in enumerate(nodes):
        lines.append(f"NodeName={name} NodeAddr={SUBNET}.{11 + number} CPUs=1 RealMemory=100 State=UNKNOWN")
    lines += ["PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]
    return "\n".join(lines)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}: tearing the Slurm cluster down")


def _namespaces() -> set[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


@contextlib.contextmanager
def slurm_cluster(nodes: list[str], netns: dict[str, str] | None = None) -> Iterator[SlurmCluster]:
    """`netns`: node -> a network namespace that exists already (a lab host's), where that node's slurmd
    runs beside what the caller runs there; the harness adds only its control veth (`slurm0`) to it and
    leaves the namespace itself to the caller. Other nodes get a namespace of the harness's own."""
    given = dict(netns or {})
    if len(nodes) > 200:
        raise ValueError("one /24 of node addresses")
    leftovers = {n for n in _namespaces() if n.startswith(PREFIX)}
    bridge = [BRIDGE] if Path(f"/sys/class/net/{BRIDGE}").exists() else []
    if leftovers or bridge:
        removal = [f"ip netns del {n}" for n in sorted(leftovers)] + [f"ip link del {b}" for b in bridge]
        raise AssertionError(
            f"an earlier run (one stopped by SIGKILL) left {', '.join(sorted(leftovers) + bridge)}: remove them first "
            f"({'; '.join(removal)})"
        )
    # `timeout` and CI stop a run with SIGTERM, which would end Python without this `finally`: make it an exception.
    previous = signal.signal(signal.SIGTERM, _terminated)
    folder = Path(tempfile.mkdtemp(prefix="gpufabric-slurmd-"))
    started: list[subprocess.Popen[bytes]] = []
    made: list[str] = []
    made_links: list[str] = []  # the control veths (their other end in a namespace the caller keeps)
    log = (folder / "daemons.out").open("wb")
    cluster = SlurmCluster(folder, folder / "slurm.conf", list(nodes))
    try:
        (folder / "state").mkdir()
        key = folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        cluster.conf.write_text(_conf(folder, nodes, _free_port()))
        # slurmd 22.05 loads a cgroup plugin whatever ProctrackType/TaskPlugin say, and by default picks it
        # from what /sys/fs/cgroup is: `ip netns exec` mounts a fresh /sys with nothing there, and slurmd
        # stops ("No filesystem mounted on /sys/fs/cgroup"). Naming the plugin skips that detection; with
        # proctrack/linuxproc and task/none nothing is ever put in a cgroup. Read from beside slurm.conf.
        (folder / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n")
        _ip("link", "add", BRIDGE, "type", "bridge")
        made.append(BRIDGE)
        _ip("addr", "add", f"{CONTROLLER_IP}/24", "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")
        for number, name in enumerate(nodes):
            ns = given.get(name, f"{PREFIX}{name}")
            inside = "slurm0" if name in given else "eth0"
            if name not in given:
                _ip("netns", "add", ns)
                made.append(ns)
            _ip("link", "add", f"{PREFIX}{number}", "type", "veth", "peer", "name", inside, "netns", ns)
            made_links.append(f"{PREFIX}{number}")
            _ip("link", "set", f"{PREFIX}{number}", "master", BRIDGE, "up")
            _ip("-n", ns, "addr", "add", f"{SUBNET}.{11 + number}/24", "dev", inside)
            _ip("-n", ns, "link", "set", inside, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            (folder / f"spool-{name}").mkdir()
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
        started.append(subprocess.Popen(munged, stdout=log, stderr=subprocess.STDOUT))
        wait_for((folder / "munge.sock").exists, "munged's socket")
        started.append(
            subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(cluster.conf)], stdout=log, stderr=subprocess.STDOUT)
        )
        wait_for(
            lambda: cluster.command("scontrol", "ping", check=False).returncode == 0,
            "slurmctld",
            log=folder / "ctld.log",
        )
        for name in nodes:
            started.append(
                subprocess.Popen(
                    [
                        "ip",
                        "netns",
                        "exec",
                        given.get(name, f"{PREFIX}{name}"),
                        "slurmd",
                        "-D",
                        "-N",
                        name,
                        "-f",
                        str(cluster.conf),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        slurmds = started[-len(nodes) :]

        def registered() -> bool:
            ended = [name for name, proc in zip(nodes, slurmds, strict=True) if proc.poll() is not None]
            if ended:
                logs = [folder / f"slurmd-{n}.log" for n in ended] + [folder / "daemons.out"]
                wait_for(lambda: False, f"slurmd of {', '.join(ended)} ended", timeout=0, log=logs)
            return all(cluster.node(n)["state"] == "idle" for n in nodes)

        wait_for(
            registered,
            "every slurmd registered idle",
            log=[folder / "ctld.log", *(folder / f"slurmd-{n}.log" for n in nodes), folder / "daemons.out"],
        )
        yield cluster
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the teardown short
        if started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(
                    ["scancel", "--full", "-u", "root"], env=cluster.env, capture_output=True, check=False, timeout=60
                )
        for proc in reversed(started):
            _stop(proc)
        for ns in made[1:]:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False).stdout
            for pid in pids.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)  # a job step left in our namespace
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        for link in made_links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, check=False)
        if made:
            subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)
        log.close()
        keep = os.environ.get("GPUFABRIC_KEEP_SLURM_LOGS")  # a folder to copy the daemons' logs into
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            for found in folder.glob("*.log"):
                shutil.copy(found, Path(keep) / found.name)
            with contextlib.suppress(OSError):
                shutil.copy(folder / "daemons.out", Path(keep) / "daemons.out")
        shutil.rmtree(folder, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
