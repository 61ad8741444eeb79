"""ibsim running a planned InfiniBand fabric, for the lab tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gpufabric.ib import discovery, sim, topology
from gpufabric.ib.model import IbFabric


@contextmanager
def simulated(workdir: Path, fabric: IbFabric) -> Iterator[tuple[sim.Simulator, str, discovery.Discovery]]:
    """ibsim on the fabric's planned topology (written into `workdir`) for the `with`; with ibnetdiscover's
    first output and the planned names found in it. ibsim is stopped (by PID) whatever happens."""
    topo = workdir / "fabric.topo"
    topo.write_text(topology.render(fabric))
    with sim.running(workdir, topo) as s:
        before = s.run("ibnetdiscover")
        yield s, before, discovery.discover(fabric, topology.parse(before, "ibnetdiscover"))
