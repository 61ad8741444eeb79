"""ibsim running a planned InfiniBand fabric, for the lab tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gpufabric.ib import discovery, sim, topology
from gpufabric.ib.model import IbFabric

# The InfiniBand lab's tests: root, no network namespace (ibsim is a user-space simulator), so CI runs
# them beside the Ethernet lab; skipped with the reason where the packages or root are missing.
LAB_MARKS = [
    pytest.mark.lab,
    pytest.mark.beside_lab,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="the InfiniBand lab runs as root (ibsim's tools preload a library)"),
    pytest.mark.skipif(bool(sim.missing()), reason=f"InfiniBand lab needs: {', '.join(sim.missing())}"),
]


@contextmanager
def simulated(workdir: Path, fabric: IbFabric) -> Iterator[tuple[sim.Simulator, str, discovery.Discovery]]:
    """ibsim on the fabric's planned topology (written into `workdir`) for the `with`; with ibnetdiscover's
    first output and the planned names found in it. ibsim is stopped (by PID) whatever happens."""
    topo = workdir / "fabric.topo"
    topo.write_text(topology.render(fabric))
    with sim.running(workdir, topo) as s:
        before = s.run("ibnetdiscover")
        yield s, before, discovery.discover(fabric, topology.parse(before, "ibnetdiscover"))
