"""The QoS contract check reads each platform's running config: rendered configs of every platform give
the plan's DSCP -> priority map back, and a changed map is read as changed."""

from __future__ import annotations

import pytest
from conftest import default_doc, plan_doc, set_path
from render_helpers import render_all

from gpufabric.intent.model import QosProfile
from gpufabric.platforms import LoadBalancing, LosslessBuffers
from gpufabric.verify.expect import SwitchExpectation
from gpufabric.verify.running import checks, qos_map
from gpufabric.verify.running.checks import Planned

CONTRACT = {26: 3, 48: 6}


def _rendered(platform: str) -> str:
    doc = default_doc()
    for role in ("leaf", "spine"):
        doc = set_path(doc, ("planes", "compute", "switches", role, "platform"), platform)
    if platform in ("nxos", "eos"):  # their templates peer over /31s
        doc = set_path(doc, ("planes", "compute", "routing", "addressing"), "p2p31")
        doc = set_path(doc, ("planes", "compute", "addressing", "p2p"), "10.20.0.0/24")
    if platform == "eos":  # a model of neither EOS family (SAND, Strata): EOS balances a compute plane dynamically
        doc = set_path(doc, ("planes", "compute", "load_balancing"), "adaptive")
    files = render_all(plan_doc(doc))
    name = next(n for n in sorted(files) if n.startswith("cmp-spine1"))
    return files[name]


@pytest.mark.parametrize("platform", ["eos", "nxos", "cumulus", "frr"])
def test_rendered_config_of_each_platform_reads_back_as_the_contract(platform):
    running = _rendered(platform)
    if platform == "frr":  # the FRR switch's running config carries its nftables section, as the driver shows it
        from gpufabric.nos.frr.files import join_candidate

        files = render_all(plan_doc(default_doc()))
        running = join_candidate(files["cmp-spine1.frr.conf"], files.get("cmp-spine1.nft"))
    # EOS maps every other DSCP to the default class itself (its own map sends DSCP 0-7 to class 1 on Strata)
    rest = {d: 0 for d in range(64) if d not in CONTRACT} if platform == "eos" else {}
    assert qos_map.dscp_map(platform, running) == CONTRACT | rest


@pytest.mark.parametrize(
    ("platform", "old", "new"),
    [
        ("eos", "qos map dscp 26 to traffic-class 3", "qos map dscp 26 to traffic-class 1"),
        ("nxos", "set qos-group 3", "set qos-group 1"),
        ("cumulus", "switch-priority: 3", "switch-priority: 1"),
    ],
)
def test_a_changed_map_fails_the_contract_check(platform, old, new):
    running = _rendered(platform)
    assert old in running
    want = SwitchExpectation(
        "cmp-spine1", platform, LoadBalancing(), LosslessBuffers(), qos=QosProfile(roce_dscp=26, cnp_dscp=48)
    )
    planned = Planned("cmp-spine1", platform, expect=want)
    results = [r for r in checks.config(planned, running.replace(old, new, 1)) if r.check == "qos-dscp-map"]
    assert [r.ok for r in results if r.item == "CNP DSCP 48"] == [True]
    bad = [r for r in results if not r.ok]
    assert [(r.item, r.expected, r.observed) for r in bad] == [("RoCE DSCP 26", "RoCE DSCP 26 -> priority 3", "-> 1")]


def test_nvue_tree_form_reads_like_the_startup_form():
    tree = "qos:\n  mapping:\n    default-global:\n      dscp:\n        '26': {switch-priority: 3}\n"
    assert qos_map.dscp_map("cumulus", tree) == {26: 3}
    assert qos_map.dscp_map("cumulus", "not: [valid") == {}


def test_nft_listing_names_read_as_numbers():
    listing = "! gpufabric: nftables\ntable inet gpufabric {\n chain qos {\n  ip dscp af31 meta priority set 0:3\n"
    assert qos_map.dscp_map("frr", "router bgp 1\n" + listing) == {26: 3}


def test_unknown_platform_maps_nothing():
    assert qos_map.dscp_map("junos", "anything") == {}
