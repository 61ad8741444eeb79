"""ibsim's size limits from the plan (its defaults: 2048 nodes, 256 switches, 13,312 ports), and how a tool's run
on the simulator takes a MAD timeout (a stand-in tool: a script that says what libibmad says)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from gpufabric.ib import sim
from gpufabric.ib.design import superpod
from gpufabric.ib.errors import IbError
from gpufabric.ib.planner import plan_fabric


def _size(system: str, su: int) -> tuple[int, int, int] | None:
    fabric = plan_fabric(superpod(system, su))
    return sim.limits(len(fabric.nodes), len(fabric.switches), sum(n.ports + 1 for n in fabric.nodes))


def test_fabrics_within_ibsims_defaults_pass_no_limits() -> None:
    assert _size("dgx-h100", 4) is None  # 1068 nodes, 48 switches, 5160 ports


def test_larger_fabrics_get_room_past_their_size() -> None:
    assert _size("dgx-b200", 8) == (2208, 256, 13312)  # 2144 nodes: past the 2048 default
    assert _size("dgx-b200", 64) == (17728, 1296, 116992)  # 17,664 nodes, 1280 switches, 115,968 ports


TIMED_OUT = (
    "ibwarn: [7] _do_madrpc: recv failed: Connection timed out\nibwarn: [7] mad_rpc: _do_madrpc failed; dport (Lid 72)"
)
NO_DEVICE = "ibwarn: [7] mad_rpc_open_port: can't open UMAD port ((null):0)"


def _tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: int, said: str) -> tuple[sim.Simulator, Path]:
    """A `perfquery` that fails its first `fails` runs saying `said`, then answers; each run counted."""
    bin_dir, count = tmp_path / "bin", tmp_path / "runs"
    bin_dir.mkdir()
    tool = bin_dir / "perfquery"
    tool.write_text(
        "#!/bin/sh\n"
        f"n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}\n"
        f"if [ $n -le {fails} ]; then printf '%s\\n' {shlex.quote(said)} >&2; exit 255; fi\n"
        "echo '# Port counters: Lid 72 port 255'\n"
    )
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    simulator = sim.Simulator(tmp_path, tmp_path / "fabric.topo", sockname="test")
    monkeypatch.setattr(simulator, "env", lambda host=None: dict(os.environ))
    return simulator, count


def test_a_tool_whose_mads_timed_out_is_run_once_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    simulator, count = _tool(tmp_path, monkeypatch, 1, TIMED_OUT)
    assert simulator.run("perfquery", "-l", "72", "255").startswith("# Port counters: Lid 72")
    assert count.read_text().strip() == "2"


def test_a_second_timeout_is_the_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    simulator, count = _tool(tmp_path, monkeypatch, 2, TIMED_OUT)
    with pytest.raises(IbError, match="Connection timed out"):
        simulator.run("perfquery", "-l", "72", "255")
    assert count.read_text().strip() == "2"


def test_any_other_failure_is_not_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    simulator, count = _tool(tmp_path, monkeypatch, 1, NO_DEVICE)
    with pytest.raises(IbError, match="UMAD port"):
        simulator.run("perfquery", "-l", "72", "255")
    assert count.read_text().strip() == "1"
