"""An iperf3 result nested without end is an unreadable result, named, never an internal error: the real
iperf3 -J output (tests/acceptance_outputs/iperf3.json) with its `end` replaced by 100,000 nested lists."""

from __future__ import annotations

import json

import pytest
from test_hostile_acceptance import OUTPUTS, _judge, plan, suite  # noqa: F401  (fixtures)

from gpufabric.acceptance.parse import OutputError, iperf3_bw
from gpufabric.acceptance.suite import stand_in

DEPTH = 100_000


def _deep(key: str) -> str:
    doc = json.loads((OUTPUTS / "iperf3.json").read_text())
    doc[key] = "DEEP"
    return json.dumps(doc, indent=2).replace('"DEEP"', "[" * DEPTH + "]" * DEPTH)


@pytest.mark.parametrize("key", ["end", "start"])
def test_a_deeply_nested_iperf3_result_is_a_named_error(key: str):
    with pytest.raises(OutputError, match="iperf3's JSON \\(-J\\) nests deeper than 200 levels"):
        iperf3_bw(_deep(key))


def test_the_report_calls_it_unreadable(suite, tmp_path):  # noqa: F811
    job = next(j for j in stand_in(suite).perf if j.tool == "iperf3" and j.qps == 2)
    verdict = _judge(job, _deep("end"), tmp_path)
    assert verdict.status == "unreadable" and "nests deeper than 200 levels" in verdict.detail


def test_a_deep_document_followed_by_another_is_still_named():
    with pytest.raises(OutputError, match="nests deeper than 200 levels"):
        iperf3_bw(_deep("end") + "\n" + (OUTPUTS / "iperf3.json").read_text())
