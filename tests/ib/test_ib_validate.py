"""`gpufabric.ib.validate` offline, on the real diagnostics' answers recorded from the lab.

tests/recorded/ib/mini-validate.json holds what ibnetdiscover, iblinkinfo, sminfo, smpquery and
ibtracert (infiniband-diags, Debian 12) printed on ibsim with the real OpenSM (primary and
standby) for the `mini` design below. The runner here is a test double that replays them; a
test that edits an answer shows the check that must then fail. The live runs are in
tests/lab/test_ib_validate_lab.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from gpufabric.ib import counters, opensm, topology, validate
from gpufabric.ib.design import IbDesign
from gpufabric.ib.errors import fail
from gpufabric.ib.planner import plan_fabric

RECORDED = json.loads((Path(__file__).parents[1] / "recorded" / "ib" / "mini-validate.json").read_text())
MINI = IbDesign("mini", su_count=2, nodes_per_su=4, rails=2, fabric_manager_ports=2, fabric_manager_ports_per_host=1)
SETTINGS = opensm.SmSettings(partitions=(opensm.Partition("tenant-a", 0x0101, ("dgx001", "dgx002"), sl=1),))


def _replay(edits: dict[str, tuple[str, str]] | None = None) -> validate.Runner:
    """A test double for the diagnostics: the recorded answer per command line, optionally edited."""
    answers = dict(RECORDED)
    for command, (old, new) in (edits or {}).items():
        assert old in answers[command], (command, old)
        answers[command] = answers[command].replace(old, new)

    def run(args: Sequence[str]) -> str:
        return answers[" ".join(args)]

    return run


def _failed(edits: dict[str, tuple[str, str]] | None = None) -> list[tuple[str, str, str, str]]:
    results = validate.validate(plan_fabric(MINI), SETTINGS, _replay(edits), rates=False)
    return [(r.check, r.item, r.expected, r.observed) for r in results if not r.ok]


def test_recorded_fabric_is_green_and_every_check_ran() -> None:
    results = validate.validate(plan_fabric(MINI), SETTINGS, _replay(), rates=False)
    assert [r for r in results if not r.ok] == []
    assert [r.check for r in results] == [
        "cabling",
        "nodes",
        "lid",
        "port",
        "sm",
        "sm",
        "partition",
        "route",
        "route",
        "counters",
    ]
    table = validate.render_table(results, show_all=True)
    assert "route      ok      rail 2: dgx001 mlx5_1 -> dgx005 mlx5_1" in table
    assert table.endswith("10 results, 0 failed\n")


def test_with_rates_ibsim_speeds_are_named_per_cable() -> None:
    results = validate.validate(plan_fabric(MINI), SETTINGS, _replay(), rates=True)
    rate = [r for r in results if r.check == "rate"]
    assert len(rate) == 32 and {(r.expected, r.observed) for r in rate} == {("4xNDR", "4xSDR")}


def test_a_wrong_master_is_named() -> None:
    failed = _failed({"sminfo": ("sm guid 0x10001d,", "sm guid 0x10001f,")})
    assert [f[:3] for f in failed] == [("sm", "master ufm1 mlx5_0", "0x10001d MASTER")]


def test_a_port_seeing_a_partition_it_is_not_in_is_named() -> None:
    # dgx003 mlx5_0 (LID 11) given tenant-a's PKey: it would see a partition it is not planned in.
    failed = _failed({"smpquery pkeys 11": ("0x7fff 0x0000", "0x7fff 0x8101")})
    assert failed == [("partition", "dgx003 mlx5_0", "0x7fff", "0x7fff 0x8101")]


def test_a_port_down_is_named() -> None:
    text = RECORDED["iblinkinfo --line"]
    line = next(x for x in text.splitlines() if x.split("==")[0].rstrip().endswith(' dgx006 mlx5_1"     18    1[  ]'))
    state = line.split("==(")[1].split(")==>")[0]
    failed = _failed({"iblinkinfo --line": (line, line.replace(state, "               Down/ Polling"))})
    assert failed == [("port", '"dgx006 mlx5_1"[1]', "Active/LinkUp", "Down/ Polling")]


def test_a_route_leaving_its_rail_is_named() -> None:
    failed = _failed({"ibtracert 3 15": ('"su2-leaf1"', '"su2-leaf2"')})
    assert failed[0][:3] == ("route", "rail 1: dgx001 mlx5_0 -> dgx005 mlx5_0", "su1-leaf1 -> spine -> su2-leaf1")
    assert failed[0][3] == "su1-leaf1 -> spine01 -> su2-leaf2"


def test_a_renamed_node_stops_at_the_node_check() -> None:
    failed = _failed({"ibnetdiscover": ('"su1-leaf1"', '"leaf-x"')})
    assert ("nodes", "unplanned node 'leaf-x'", "as planned", "differs") in failed
    assert ("nodes", "planned node 'su1-leaf1' not found", "as planned", "differs") in failed


def _perfquery_key(switch: str) -> str:
    lid = {"su1-leaf1": 2}[switch]
    return f"perfquery -l {lid} 255"


def test_an_error_counter_over_its_limit_is_named_with_the_cable() -> None:
    text = RECORDED[_perfquery_key("su1-leaf1")]
    block = text[text.index("# Port counters: Lid 2 port 5 ") :]
    old = block[: block.index("LinkErrorRecoveryCounter")]
    failed = _failed(
        {
            _perfquery_key("su1-leaf1"): (
                old,
                old.replace("SymbolErrorCounter:..............0", "SymbolErrorCounter:..............7"),
            )
        }
    )
    assert failed == [("counters", '"su1-leaf1"[5] (to "spine01"[1])', "SymbolErrorCounter <= 0", "7")]


def test_metrics_carry_the_plan_labels() -> None:
    fabric = plan_fabric(MINI)
    seen = topology.parse(RECORDED["ibnetdiscover"])
    values = counters.read(fabric, seen, _replay())
    text = counters.metrics(fabric, values)
    assert text.startswith("# HELP gpufabric_ib_port_counter ")
    line = (
        'gpufabric_ib_port_counter{fabric="mini",node="su1-leaf1",role="leaf",port="1",peer="dgx001 mlx5_0",'
        'peer_port="1",tier="node-leaf",rail="1",su="1",counter="PortXmitWait"} 0'
    )
    assert line in text.splitlines()
    # Every planned switch end, six counters each: 16 node-leaf leaf ends + 2 x 16 leaf-spine ends.
    assert sum(1 for x in text.splitlines() if not x.startswith("#")) == (16 + 32) * 6


def test_a_standby_that_does_not_answer_is_a_failure_not_a_crash() -> None:
    replay = _replay()

    def run(args: Sequence[str]) -> str:
        if list(args) == ["sminfo", "21"]:  # ufm2's port: as sminfo fails when no SM runs there
            raise fail("sminfo", "exited 255: ibwarn: mad_rpc: _do_madrpc failed; dport (Lid 21)", "see the log")
        return replay(args)

    results = validate.validate(plan_fabric(MINI), SETTINGS, run, rates=False)
    failed = [(r.check, r.item) for r in results if not r.ok]
    assert failed == [("sm", "standby ufm2 mlx5_0")]
    assert next(r for r in results if not r.ok).observed.startswith("no answer (exited 255: ibwarn")


def test_a_master_that_does_not_answer_is_a_failure_not_a_crash() -> None:
    replay = _replay()

    def run(args: Sequence[str]) -> str:
        if list(args) == ["sminfo"]:  # as sminfo fails when the SM's MAD answer does not come in its timeout
            raise fail("sminfo", "exited 255: ibwarn: _do_madrpc: recv failed: Connection timed out", "see the log")
        return replay(args)

    results = validate.validate(plan_fabric(MINI), SETTINGS, run, rates=False)
    failed = [(r.check, r.item, r.observed) for r in results if not r.ok]
    assert len(failed) == 1 and failed[0][:2] == ("sm", "master ufm1 mlx5_0"), failed
    assert failed[0][2].startswith("no answer (exited 255: ibwarn: _do_madrpc: recv failed"), failed
