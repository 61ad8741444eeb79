"""`lab up` and `lab down` as a whole: wiring, the lab login, the daemons; and their exact undoing."""

from __future__ import annotations

from pathlib import Path

from gpufabric.lab import daemons, lldp_node, netlink, wiring
from gpufabric.lab.credentials import ensure_login
from gpufabric.lab.state import LabState
from gpufabric.lab.topology import LabTopology

REQUIRED = {
    "/usr/lib/frr/frrinit.sh": "frr",
    "/usr/lib/frr/frr-reload.py": "frr-pythontools",
    "/usr/sbin/sshd": "openssh-server",
    "/usr/sbin/lldpd": "lldpd",
    "/usr/bin/nsenter": "util-linux",
}


def missing_packages() -> list[str]:
    return sorted({pkg for path, pkg in REQUIRED.items() if not Path(path).exists()})


def up(topo: LabTopology, state_dir: Path) -> LabState:
    """Idempotent: a second `up` finds everything in place and starts only what is missing."""
    missing = missing_packages()
    if missing:
        raise netlink.LabCommandError(f"the lab needs {', '.join(missing)}: apt-get install {' '.join(missing)}")
    state = wiring.up(topo, state_dir)
    login = ensure_login(state_dir, topo.plan.intent.credentials.switches.username)
    daemons.start_all(topo, state, state_dir, login)
    return state


def down(state_dir: Path) -> LabState | None:
    """Stop what runs in the lab's namespaces, remove its links, namespaces and directories, then its state."""
    state = LabState.load(state_dir)
    if state is None:
        return None
    daemons.stop_all(state)
    wiring.down(state)
    daemons.remove_dirs(state)
    if lldp_node.RUN_DIR.is_dir() and not any(lldp_node.RUN_DIR.iterdir()):
        lldp_node.RUN_DIR.rmdir()
    for leftover in ("login.json", "known_hosts", "keys/id_ed25519", "keys/id_ed25519.pub"):
        (state_dir / leftover).unlink(missing_ok=True)
    for folder in ("keys", "nodes"):
        if (state_dir / folder).is_dir() and not any((state_dir / folder).iterdir()):
            (state_dir / folder).rmdir()
    LabState.path(state_dir).unlink()
    if not any(state_dir.iterdir()):
        state_dir.rmdir()
    return state
