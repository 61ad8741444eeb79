"""A pytest plugin (tests/conftest.py loads it): SIGTERM stops the run as Ctrl-C does
(gpufabric.stopping, as for the command line).

CI and `timeout` stop a run with SIGTERM, and Python's default ends the process on the spot: no fixture's
teardown runs, so a lab's namespaces and FRR daemons, a Slurm cluster and the temporary folders stay on the
machine, and the next run finds them in its way. As KeyboardInterrupt, pytest stops where it is and tears down
what it set up; a second SIGTERM does not cut the teardowns short."""

from __future__ import annotations

import pytest

from gpufabric.stopping import sigterm_interrupts

# pytest-xdist's controller, stopped, gives its workers 10 s to end before it kills them: a worker tearing
# down a lab (its FRR daemons, namespaces, a Slurm cluster) takes longer, and killed it would leave them.
WORKERS_TEARDOWN = 600.0  # seconds


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    sigterm_interrupts()
    try:
        from xdist.workermanage import NodeManager
    except ImportError:  # run without pytest-xdist
        return
    NodeManager.EXIT_TIMEOUT = max(NodeManager.EXIT_TIMEOUT, WORKERS_TEARDOWN)
