"""validate's expectations and report formats, without devices."""

from __future__ import annotations

import dataclasses
import json
from xml.etree import ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from gpufabric.plan.ecmp import expected_widths
from gpufabric.plan.model import ip
from gpufabric.validate import report
from gpufabric.verify.running.results import result


def test_ecmp_model_follows_ebgp_loop_prevention(default_plan):
    widths = expected_widths(default_plan, "compute", {})
    lo = {d.name: f"{ip(d.loopback)}/32" for d in default_plan.devices()}
    assert widths["cmp-su1-leaf1"][lo["cmp-su2-leaf2"]] == 2  # through both spines
    assert widths["cmp-su1-leaf1"][lo["cmp-spine1"]] == 1
    assert lo["cmp-spine2"] not in widths["cmp-spine1"]  # spines share an ASN: never learned (RFC 7938)
    assert lo["sto-leaf1"] not in widths["cmp-su1-leaf1"]  # planes are separate fabrics
    capped = expected_widths(default_plan, "compute", {"cmp-su1-leaf1": 1})
    assert capped["cmp-su1-leaf1"][lo["cmp-su2-leaf2"]] == 1  # maximum-paths caps the width


def test_a_plane_with_no_bgp_switch_expects_no_paths(default_plan):
    """The OOB plane's switches run no BGP: no origin, no width, on one core or several."""
    assert expected_widths(default_plan, "oob", {}) == {}
    assert expected_widths(default_plan, "oob", {}, processes=2) == {}
    assert expected_widths(default_plan, "no-such-plane", {}, processes=4) == {}


def test_reports_carry_every_field():
    results = [
        result("bgp-session", "leaf1", "swp3", "Established, AS 1", "down, AS 1"),
        result("interface", "leaf1", "swp1", "up", "up"),
    ]
    doc = json.loads(report.as_json(results, 1.0))
    assert doc["ok"] is False and doc["failed"] == 1
    assert doc["results"][0] == {
        "check": "bgp-session",
        "device": "leaf1",
        "item": "swp3",
        "expected": "Established, AS 1",
        "observed": "down, AS 1",
        "ok": False,
        "verdict": "fail",
    }
    xml = ET.fromstring(report.as_junit(results, 1.0).split("\n", 1)[1])
    suites = {s.get("name"): s for s in xml}
    assert suites["bgp-session"].get("failures") == "1" and suites["interface"].get("failures") == "0"
    assert "observed down, AS 1" in suites["bgp-session"][0][0].get("message")


@given(
    st.lists(
        st.tuples(
            st.text(max_size=12), st.text(max_size=12), st.text(max_size=12), st.text(max_size=12), st.booleans()
        ),
        max_size=6,
    ),
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
)
@settings(max_examples=200, deadline=None)
def test_the_json_report_is_what_json_dumps_writes_character_for_character(rows, seconds):
    """report.as_json writes each result itself (a whole fabric is 1.5 million of them): the text must be
    the standard library's json.dumps(indent=2) of the same report, escapes and all."""
    from gpufabric.verify.running.results import CheckResult

    results = [
        CheckResult("ecmp-width", device, item, expected, observed, ok) for device, item, expected, observed, ok in rows
    ]
    failed = [r for r in results if not r.ok]
    oracle = json.dumps(
        {
            "ok": not failed,
            "checked": len(results),
            "failed": len(failed),
            "seconds": round(seconds, 2),
            "results": [{**dataclasses.asdict(r), "verdict": r.verdict} for r in results],
        },
        indent=2,
    )
    assert report.as_json(results, seconds) == oracle
