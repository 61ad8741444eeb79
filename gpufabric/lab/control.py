"""`lab up` and `lab down` as a whole: wiring, the lab login, the daemons; and their exact undoing."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gpufabric.fleet.lab import registry
from gpufabric.fleet.lab.credentials import SECRETS_FILE, ensure_login, ensure_secrets
from gpufabric.fleet.lab.state import AUDIT_FILE, LabState, remove_leftovers, remove_state_dir
from gpufabric.fleet.lab.topology import LabTopology
from gpufabric.ib import lab as ib_lab
from gpufabric.ib import sim
from gpufabric.ib.design_file import IbIntent
from gpufabric.ib.errors import IbError
from gpufabric.lab import daemons, lldp_node, netlink, syslog, wiring
from gpufabric.lab.hosts import fleet
from gpufabric.lab.hosts.from_plan import lab_specs
from gpufabric.plan.infiniband import IbPlan

IB_DIR = "infiniband"

REQUIRED = {
    "/usr/lib/frr/frrinit.sh": "frr",
    "/usr/lib/frr/frr-reload.py": "frr-pythontools",
    "/usr/sbin/sshd": "openssh-server",
    "/usr/sbin/lldpd": "lldpd",
    "/usr/bin/nsenter": "util-linux",
}


def missing_packages() -> list[str]:
    return sorted({pkg for path, pkg in REQUIRED.items() if not Path(path).exists()})


def up(
    topo: LabTopology, state_dir: Path, *, hosts: bool = False, say: Callable[[str], None] = lambda _m: None
) -> LabState:
    """Idempotent: a second `up` finds everything in place and starts only what is missing.

    With `hosts`, the plan's servers boot as containers whose data NICs are cabled into their
    planned leaf ports and whose management NICs sit on the OOB bridge at their planned addresses.
    """
    missing = missing_packages() + (fleet.missing_packages() if hosts else [])
    if missing:
        raise netlink.LabCommandError(f"the lab needs {', '.join(missing)}: apt-get install {' '.join(missing)}")
    # Checked against every other lab up, and recorded, before anything is made (LabClashError: nothing was).
    registry.claim(lab_record(topo, state_dir))
    state = wiring.up(topo, state_dir, hosts=hosts)
    login = ensure_login(state_dir, topo.plan.intent.credentials.switches.username)
    ensure_secrets(state_dir, topo.plan.intent)
    if topo.plan.infiniband is not None:
        infiniband_up(topo.plan.infiniband, state_dir, say)
    if not (hosts and topo.gateway):
        daemons.start_all(topo, state, state_dir, login)
        return state
    gateway = topo.gateway
    _unstub(topo)
    mtu = {(s.node, s.port): s.mtu for s in topo.stubs if s.server}
    specs = lab_specs(topo.plan, mtu, int(gateway.split("/")[1]), prefix=topo.names.host_prefix, netns=topo.ns)
    # The hosts need only the leaves' namespaces (made by the wiring), not their daemons: both side by side.
    with ThreadPoolExecutor(max_workers=2) as pool:
        started = pool.submit(daemons.start_all, topo, state, state_dir, login)
        booted = pool.submit(fleet.up, specs, state_dir, bridge=topo.bridge, gateway=gateway, say=say)
    booted.result()
    started.result()
    return state


def lab_record(topo: LabTopology, state_dir: Path) -> registry.LabRecord:
    """What the machine's other labs are checked against: the name, and what the lab holds in the root namespace."""
    return registry.LabRecord(
        topo.names.name, str(state_dir.absolute()), topo.fabric, topo.oob_subnet, list(topo.loopback_space)
    )


def infiniband_dir(state_dir: Path) -> Path:
    """Where the InfiniBand compute plane's simulator and subnet managers keep their state."""
    return state_dir / IB_DIR


def infiniband_up(ib: IbPlan, state_dir: Path, say: Callable[[str], None]) -> None:
    """The InfiniBand compute plane in ibsim with the real OpenSM (primary and standby), unless already up."""
    folder = infiniband_dir(state_dir)
    running = ib_lab.status(folder)
    if running and all(running.values()):
        return
    if running:  # a process of an earlier `up` is gone: start the plane afresh
        ib_lab.down(folder)
    if missing := sim.missing():
        raise netlink.LabCommandError(
            f"the InfiniBand compute plane needs {', '.join(missing)}: apt-get install ibsim-utils opensm "
            "infiniband-diags"
        )
    try:
        done = ib_lab.up(IbIntent(ib.fabric, ib.settings), folder)
    except IbError as exc:
        raise netlink.LabCommandError(f"InfiniBand compute plane: {exc}") from None
    say(
        f"InfiniBand compute plane: {len(ib.fabric.switches)} switches and {len(ib.fabric.adapters)} adapters in "
        f"ibsim ({done.ibsim_seconds:.1f} s), OpenSM primary and standby, SUBNET UP in {done.subnet_up_seconds:.1f} s"
        + done.restarted
    )


def _unstub(topo: LabTopology) -> None:
    """A lab first brought up without hosts has stubs on the server ports: make room for the hosts' NICs."""
    for stub in topo.stubs:
        if stub.server and stub.far_end in netlink.links(topo.ns(stub.node)):
            netlink.delete_link(stub.port, topo.ns(stub.node))


@dataclass
class Teardown:
    """What `down` removed, and what it could not (the state is kept then, so a second `down` finishes)."""

    state: LabState
    problems: list[str] = field(default_factory=list)
    ib_stopped: list[str] = field(default_factory=list)  # the InfiniBand plane's processes: ibsim, the SMs

    def summary(self) -> str:
        s = self.state
        ib = f", InfiniBand {' and '.join(self.ib_stopped)}" if self.ib_stopped else ""
        return (
            f"{len(s.namespaces)} namespaces, {len(s.root_links)} links, {len(s.pids)} processes, "
            f"{len(s.paths)} directories{ib}"
        )


def down(state_dir: Path) -> Teardown | None:
    """Stop what runs in the lab's namespaces, remove its links, namespaces and directories, then its state.

    Every step runs whatever the one before did: a part already gone, or one that fails, must not
    leave the rest of the lab behind."""
    # The InfiniBand plane's processes run outside the namespaces: stopped first, whatever the rest holds.
    ib_stopped = ib_lab.down(infiniband_dir(state_dir))
    state = LabState.load(state_dir)
    if state is None:
        return None
    done = Teardown(state, ib_stopped=ib_stopped)
    # The hosts and the switches' daemons stop side by side; both before the namespaces go (the hosts'
    # NICs end in the switches' namespaces).
    with ThreadPoolExecutor(max_workers=2) as pool:
        stopping: dict[str, Future[object]] = {
            "hosts": pool.submit(fleet.down, state_dir),
            "daemons": pool.submit(daemons.stop_all, state),
        }
    for what, future in stopping.items():
        failed = future.exception()
        if failed is not None:
            done.problems.append(f"{what}: {type(failed).__name__}: {failed}")
    steps = (
        ("syslog", lambda: daemons.stop_syslog(state.name)),  # after FRR: none of its messages is lost
        ("links and namespaces", lambda: wiring.down(state, frozenset(registry.held_elsewhere(state.name)))),
        ("directories", lambda: daemons.remove_dirs(state)),
        ("candidate folders", lambda: daemons.remove_candidate_folders(state)),
    )
    for what, step in steps:
        if what == "links and namespaces" and any(p.startswith("daemons:") for p in done.problems):
            # A namespace removed with a daemon inside leaves it running where no later `down` can
            # prove it is the lab's: keep the namespaces until their processes are gone.
            done.problems.append("links and namespaces: kept, since their daemons could not all be stopped")
            continue
        try:
            step()
        except Exception as exc:  # reported; the next step still runs
            done.problems.append(f"{what}: {type(exc).__name__}: {exc}")
    _remove_run_dir()
    if done.problems:
        return done  # the state stays (and the lab's record): `lab down` again removes what is left
    files = ("login.json", SECRETS_FILE, AUDIT_FILE, "known_hosts", daemons.SYSLOG_LOG, syslog.GONE_LOG,
             "keys/id_ed25519", "keys/id_ed25519.pub")  # fmt: skip
    remove_leftovers(state_dir, files, ("keys", "nodes"))
    LabState.path(state_dir).unlink()
    remove_state_dir(state_dir)
    try:
        daemons.forget_lab(state.name, state_dir)
    except Exception as exc:  # the lab itself is gone: what is left is the labs' syslog, named
        done.problems.append(f"syslog: {type(exc).__name__}: {exc}")
    _remove_run_dir()
    return done


def _remove_run_dir() -> None:
    """/run/gpufabric-lab once no lab holds anything there (lldpd's sockets, the labs' records)."""
    with contextlib.suppress(OSError):  # another lab's things are there: it stays
        if lldp_node.RUN_DIR.is_dir() and not any(lldp_node.RUN_DIR.iterdir()):
            lldp_node.RUN_DIR.rmdir()
