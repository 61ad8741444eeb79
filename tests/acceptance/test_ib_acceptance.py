"""Acceptance jobs for an InfiniBand plane: perftest pairs per rail, NCCL's IB environment."""

from __future__ import annotations

from gpufabric.ib import acceptance
from gpufabric.ib.design import IbDesign, superpod
from gpufabric.ib.planner import plan_fabric


def test_pairs_per_rail_same_leaf_and_across_sus_without_gid_options() -> None:
    fabric = plan_fabric(superpod("dgx-h100", 2))
    pairs = acceptance.pairs(fabric)
    assert len(pairs) == 16  # 8 rails x (same leaf, across SUs)
    rail3 = [p for p in pairs if p.rail == 3]
    assert [(p.path, p.server, p.client, p.device) for p in rail3] == [
        ("leaf", "dgx001", "dgx002", "mlx5_2"),
        ("spine", "dgx001", "dgx033", "mlx5_2"),
    ]
    assert rail3[1].server_command == "ib_write_bw -d mlx5_2 -i 1 -F --report_gbits"
    assert rail3[1].client_command == "ib_write_bw -d mlx5_2 -i 1 -F --report_gbits dgx001"
    assert not any(" -x " in p.client_command or "gid" in p.client_command.lower() for p in pairs)


def test_latency_pairs_and_one_su_has_only_leaf_pairs() -> None:
    pairs = acceptance.pairs(plan_fabric(superpod("dgx-h100", 1)), tool="ib_read_lat")
    assert {p.path for p in pairs} == {"leaf"} and len(pairs) == 8
    assert pairs[0].client_command == "ib_read_lat -d mlx5_0 -i 1 -F dgx001"


def test_nccl_uses_every_rails_adapter_exactly_and_no_gid_index() -> None:
    fabric = plan_fabric(IbDesign("x", su_count=1, hca_names=tuple(f"mlx5_{i}" for i in (0, 3, 4, 5, 6, 9, 10, 11))))
    env = acceptance.nccl_env(fabric)
    assert env == {
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1",
        "NCCL_NET": "IB",
    }
    assert "NCCL_IB_GID_INDEX" not in env
