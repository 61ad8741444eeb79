"""ibsim's size limits from the plan (its defaults: 2048 nodes, 256 switches, 13,312 ports)."""

from __future__ import annotations

from gpufabric.ib import sim
from gpufabric.ib.design import superpod
from gpufabric.ib.planner import plan_fabric


def _size(system: str, su: int) -> tuple[int, int, int] | None:
    fabric = plan_fabric(superpod(system, su))
    return sim.limits(len(fabric.nodes), len(fabric.switches), sum(n.ports + 1 for n in fabric.nodes))


def test_fabrics_within_ibsims_defaults_pass_no_limits() -> None:
    assert _size("dgx-h100", 4) is None  # 1068 nodes, 48 switches, 5160 ports


def test_larger_fabrics_get_room_past_their_size() -> None:
    assert _size("dgx-b200", 8) == (2208, 256, 13312)  # 2144 nodes: past the 2048 default
    assert _size("dgx-b200", 64) == (17728, 1296, 116992)  # 17,664 nodes, 1280 switches, 115,968 ports
