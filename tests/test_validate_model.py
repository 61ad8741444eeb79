"""validate's expectations and report formats, without devices."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from gpufabric.plan.model import ip
from gpufabric.validate import report
from gpufabric.validate.ecmp import expected_widths
from gpufabric.validate.results import result


def test_ecmp_model_follows_ebgp_loop_prevention(default_plan):
    widths = expected_widths(default_plan, "compute", {})
    lo = {d.name: f"{ip(d.loopback)}/32" for d in default_plan.devices()}
    assert widths["cmp-su1-leaf1"][lo["cmp-su2-leaf2"]] == 2  # through both spines
    assert widths["cmp-su1-leaf1"][lo["cmp-spine1"]] == 1
    assert lo["cmp-spine2"] not in widths["cmp-spine1"]  # spines share an ASN: never learned (RFC 7938)
    assert lo["sto-leaf1"] not in widths["cmp-su1-leaf1"]  # planes are separate fabrics
    capped = expected_widths(default_plan, "compute", {"cmp-su1-leaf1": 1})
    assert capped["cmp-su1-leaf1"][lo["cmp-su2-leaf2"]] == 1  # maximum-paths caps the width


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
