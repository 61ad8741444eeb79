"""`lab up` and `lab down` as a whole: wiring, the lab login, the daemons; and their exact undoing."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gpufabric.lab import daemons, lldp_node, netlink, wiring
from gpufabric.lab.credentials import SECRETS_FILE, ensure_login, ensure_secrets
from gpufabric.lab.hosts import fleet
from gpufabric.lab.hosts.from_plan import lab_specs
from gpufabric.lab.state import AUDIT_FILE, LabState, remove_leftovers, remove_state_dir
from gpufabric.lab.topology import BRIDGE, LabTopology

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
    state = wiring.up(topo, state_dir, hosts=hosts)
    login = ensure_login(state_dir, topo.plan.intent.credentials.switches.username)
    ensure_secrets(state_dir, topo.plan.intent)
    if not (hosts and topo.gateway):
        daemons.start_all(topo, state, state_dir, login)
        return state
    gateway = topo.gateway
    _unstub(topo)
    mtu = {(s.node, s.port): s.mtu for s in topo.stubs if s.server}
    specs = lab_specs(topo.plan, mtu, int(gateway.split("/")[1]))
    # The hosts need only the leaves' namespaces (made by the wiring), not their daemons: both side by side.
    with ThreadPoolExecutor(max_workers=2) as pool:
        started = pool.submit(daemons.start_all, topo, state, state_dir, login)
        booted = pool.submit(fleet.up, specs, state_dir, bridge=BRIDGE, gateway=gateway, say=say)
    booted.result()
    started.result()
    return state


def _unstub(topo: LabTopology) -> None:
    """A lab first brought up without hosts has stubs on the server ports: make room for the hosts' NICs."""
    for stub in topo.stubs:
        if stub.server and stub.far_end in netlink.links(stub.node):
            netlink.delete_link(stub.port, stub.node)


@dataclass
class Teardown:
    """What `down` removed, and what it could not (the state is kept then, so a second `down` finishes)."""

    state: LabState
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        s = self.state
        return (
            f"{len(s.namespaces)} namespaces, {len(s.root_links)} links, {len(s.pids)} processes, "
            f"{len(s.paths)} directories"
        )


def down(state_dir: Path) -> Teardown | None:
    """Stop what runs in the lab's namespaces, remove its links, namespaces and directories, then its state.

    Every step runs whatever the one before did: a part already gone, or one that fails, must not
    leave the rest of the lab behind."""
    state = LabState.load(state_dir)
    if state is None:
        return None
    done = Teardown(state)
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
        ("links and namespaces", lambda: wiring.down(state)),
        ("directories", lambda: daemons.remove_dirs(state)),
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
    if lldp_node.RUN_DIR.is_dir() and not any(lldp_node.RUN_DIR.iterdir()):
        lldp_node.RUN_DIR.rmdir()
    if done.problems:
        return done  # the state stays: `lab down` again removes what is left
    files = ("login.json", SECRETS_FILE, AUDIT_FILE, "known_hosts", "keys/id_ed25519", "keys/id_ed25519.pub")
    remove_leftovers(state_dir, files, ("keys", "nodes"))
    LabState.path(state_dir).unlink()
    remove_state_dir(state_dir)
    return done
