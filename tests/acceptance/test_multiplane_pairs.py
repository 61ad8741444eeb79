"""Acceptance on a compute plane built as several planes: perftest pairs and incasts stay within a plane
(no path joins two), every plane is tested alike, and the collectives run over every plane's NICs."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import INVENTORY, example_plan

from gpufabric.acceptance import cronjob
from gpufabric.acceptance.suite import build_suite, screen_suite
from gpufabric.plan.model import Plan


@pytest.fixture(scope="module")
def dual() -> Plan:
    return example_plan(INVENTORY / "examples" / "multiplane-b300.yml")


def test_pairs_stay_within_a_plane_and_say_which(dual):
    plane_of = dual.planes["compute"].plane_of
    suite = build_suite(dual)
    for job in [*suite.perf, *suite.incast]:
        ends = [job.client, job.server] if hasattr(job, "client") else [job.receiver, *job.senders]
        planes = {plane_of[e.leaf] for e in ends}
        assert len(planes) == 1, job.id
        k = planes.pop()
        assert job.plane == f"compute-p{k}" and f".compute-p{k}." in job.id
        for switch in getattr(job, "crosses", ()):
            assert plane_of[switch] == k, (job.id, switch)


def test_every_plane_is_tested_alike(dual):
    suite = build_suite(dual)
    by_plane = Counter(j.plane for j in suite.perf)
    assert set(by_plane) == {"compute-p1", "compute-p2"}
    assert by_plane["compute-p1"] == by_plane["compute-p2"] > 0
    paths = {(j.plane, j.path) for j in suite.perf}
    assert {("compute-p1", "spine"), ("compute-p2", "spine"), ("compute-p1", "leaf")} <= paths
    # every leaf and spine of both planes is crossed by some pair
    crossed = {s for j in suite.perf for s in j.crosses}
    assert crossed == {d.name for d in dual.planes["compute"].devices}


def test_collectives_cross_the_planes(dual):
    """NCCL balances a GPU's traffic over its SuperNIC's ports on every plane: a unit's and the cluster's
    runs name all 16 HCAs of a node and expect the bandwidth of both planes together."""
    suite = build_suite(dual)
    cluster = next(j for j in suite.nccl if j.id == "all_reduce_perf.compute.cluster")
    assert len(cluster.env["NCCL_IB_HCA"].split(",")) == 16
    plane_of = dual.planes["compute"].plane_of
    assert {plane_of[s] for s in cluster.crosses} == {1, 2}
    assert cluster.ceiling == 2 * 16 * 400 / 8


def test_the_screen_and_its_cronjob_name_a_resource_per_plane(dual):
    screen = screen_suite(dual)
    assert {j.plane for j in screen.perf} == {"compute-p1", "compute-p2"}
    k8s = cronjob._k8s_suite(dual)
    assert len(k8s.perf) == len(screen.perf)  # every rail of every plane has its network
    names = {cronjob._rail(j) for j in k8s.perf}
    assert ("compute-p2-rail8", "nvidia.com/compute_p2_rail8") in names
