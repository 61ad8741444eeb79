"""Acceptance on a converged fabric: the plane's own perftest pairs and incasts use only NICs that have an
address of the plane's own. A NIC on the carried planes only (`native: false`, the storage servers of
converged-north-south) has none: a job there would test an address no host holds."""

from __future__ import annotations

import pytest
from conftest import INVENTORY, example_plan

from gpufabric.acceptance.suite import build_suite
from gpufabric.plan.model import Plan, ip


@pytest.fixture(scope="module")
def converged() -> Plan:
    return example_plan(INVENTORY / "examples" / "converged-north-south.yml")


def test_no_job_uses_a_nic_that_holds_no_address_of_the_plane(converged):
    tagged_only = {(s.name, n.interface) for s in converged.servers for n in s.nics if not n.native}
    assert tagged_only  # the example has such NICs: the storage servers'
    held = {str(ip(n.address)) for s in converged.servers for n in s.nics if n.native and n.address is not None}
    suite = build_suite(converged)
    ends = [e for j in suite.perf for e in (j.client, j.server)]
    ends += [e for j in suite.incast for e in (j.receiver, *j.senders)]
    assert ends  # the plane's own hosts are still tested
    assert not {(e.server, e.interface) for e in ends} & tagged_only
    assert {e.address for e in ends} <= held
