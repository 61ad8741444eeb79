"""`gpufabric ib ...` as a user runs it: plan, export-topology, discover, configs, diff; bad input
exits 2 with file, line, field and fix."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import BIN, INVENTORY, run_in_process

RECORDED = Path(__file__).parents[1] / "recorded" / "ib" / "mini.ibnetdiscover"
MINI = """\
infiniband:
  name: mini
  su_count: 2
  nodes_per_su: 4
  rails: 2
  fabric_manager_ports: 2
  fabric_manager_ports_per_host: 1
  routing_engine: updn
  partitions:
    - {name: tenant-a, pkey: 0x0101, hosts: [dgx001, dgx002], sl: 1}
"""


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    path = tmp_path / "mini.yml"
    path.write_text(MINI)
    return path


@pytest.mark.parametrize(
    ("example", "counts"),
    [
        ("superpod-h100-1su.yml", {"tiers": 2, "nodes": 31, "leaf": 8, "spine": 4, "core": 0}),
        ("superpod-h100-4su.yml", {"tiers": 2, "nodes": 127, "leaf": 32, "spine": 16, "core": 0}),
        ("superpod-b200-16su.yml", {"tiers": 3, "nodes": 512, "leaf": 128, "spine": 128, "core": 64}),
    ],
)
def test_plan_examples(example: str, counts: dict[str, int]) -> None:
    done = run_in_process(
        "gpufabric", "ib", "plan", str(INVENTORY / "examples" / "infiniband" / example), "--json", check=True
    )
    got = json.loads(done.stdout)
    assert {k: got[k] for k in counts} == counts


@pytest.mark.slow
def test_discover_configs_and_export_from_real_ibnetdiscover_output(mini: Path, tmp_path: Path) -> None:
    disc = tmp_path / "discovery.json"
    run_in_process("gpufabric", "ib", "discover", str(mini), "--from", str(RECORDED), "-o", str(disc), check=True)
    nodes = json.loads(disc.read_text())["nodes"]
    assert nodes["su2-leaf2"] == {"node_guid": "0x0000000000200003", "port_guid": "0x0000000000200003"}
    sm = tmp_path / "sm"
    run_in_process("gpufabric", "ib", "configs", str(mini), "--discovery", str(disc), "-o", str(sm), check=True)
    assert sorted(p.name for p in sm.iterdir()) == [
        "cn-guids.conf",
        "node-name-map",
        "opensm.conf",
        "partitions.conf",
        "qos-policy.conf",
        "root-guids.conf",
    ]
    conf = (sm / "opensm.conf").read_text()
    assert "routing_engine updn\n" in conf and f"root_guid_file {sm.absolute()}/root-guids.conf\n" in conf
    assert "any, pkey 0x0101 : 1" in (sm / "qos-policy.conf").read_text()
    topo = run_in_process("gpufabric", "ib", "export-topology", str(mini), "--discovery", str(disc), check=True).stdout
    assert 'Switch\t64 "S-0000000000200003"\t\t# "su2-leaf2" enhanced port 0 lid 0 lmc 0' in topo


def test_diff_names_a_swapped_cable_and_exits_1(mini: Path, tmp_path: Path) -> None:
    clean = run_in_process("gpufabric", "ib", "diff", str(mini), "--from", str(RECORDED))
    # ibsim 0.10 reports SDR for planned NDR: the diff says so (and nothing else).
    assert clean.returncode == 4 and "planned 4xNDR" in clean.stdout and "missing" not in clean.stdout
    # dgx005's and dgx006's rail-2 adapters swapped on su2-leaf2, as ibnetdiscover would print it.
    text = _swap(RECORDED.read_text(), '"H-0000000000100012"[1](100013)', '"H-0000000000100016"[1](100017)')
    live = tmp_path / "live.topo"
    live.write_text(_swap(text, '"S-0000000000200003"[1]', '"S-0000000000200003"[2]'))
    done = run_in_process("gpufabric", "ib", "diff", str(mini), "--from", str(live))
    assert done.returncode == 4
    assert 'missing cable "dgx005 mlx5_1"[1] - "su2-leaf2"[1]' in done.stdout
    assert 'unplanned cable "dgx005 mlx5_1"[1] - "su2-leaf2"[2]' in done.stdout


def _swap(text: str, a: str, b: str) -> str:
    return text.replace(a, "\0").replace(b, a).replace("\0", b)


def test_discover_refuses_a_fabric_named_otherwise_exit_2(mini: Path, tmp_path: Path) -> None:
    live = tmp_path / "live.topo"
    live.write_text(RECORDED.read_text().replace('"su1-leaf1"', '"leaf-a"'))
    done = run_in_process("gpufabric", "ib", "discover", str(mini), "--from", str(live))
    assert done.returncode == 2
    assert "unplanned node 'leaf-a'" in done.stderr and "planned node 'su1-leaf1' not found" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("infiniband:\n  superpod: dgx-h100\n  ecn: true\n", 3, "infiniband.ecn: 'ecn' is a RoCE (Ethernet) setting"),
        (
            "infiniband:\n  superpod: dgx-h100\n  partitions:\n    - {name: a, pkey: 0x10, hosts: [dgx001]}\n"
            "    - {name: b, pkey: 0x10, hosts: [dgx002]}\n",
            5,
            "PKey 0x0010 already used by a",
        ),
        ("infiniband:\n  su_count: 1\n  hca_rate: HDR\n  switch_model: QM8700\n", 4, "QM8700 has 40"),
        ("infiniband:\n  superpod: dgx-h100\n  routing_engine: lash\n", 3, "routing engine 'lash'"),
        ("infiniband:\n  superpod: dgx-h100\n  spines: 4\n", 3, "unknown field 'spines'"),
        # Without `infiniband:` at the top the file is read as a cluster intent.
        ("fabric:\n  name: x\n", 1, "server_groups: is required"),
    ],
)
def test_bad_fabric_files_exit_2_with_line_and_fix(tmp_path: Path, text: str, line: int | None, says: str) -> None:
    path = tmp_path / "ib.yml"
    path.write_text(text)
    done = run_in_process("gpufabric", "ib", "plan", str(path))
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
    if line is not None:
        assert f"{path}:{line}:" in done.stderr
    assert "fix:" in done.stderr and "Traceback" not in done.stderr


REPLAY = """\
import json, sys
answers = json.load(open({recorded!r}))
edits = json.loads({edits!r})
key = " ".join([sys.argv[1], *sys.argv[2:]])
text = answers[key]
for old, new in edits.get(key, []):
    text = text.replace(old, new)
sys.stdout.write(text)
"""


def _stub_tools(tmp_path: Path, edits: dict[str, list[tuple[str, str]]]) -> str:
    """Test doubles for infiniband-diags: each tool prints what the real one printed in the lab
    (tests/recorded/ib/mini-validate.json), with `edits` applied. Returns a PATH with them first."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recorded = str(Path(__file__).parents[1] / "recorded" / "ib" / "mini-validate.json")
    (bin_dir / "replay.py").write_text(REPLAY.format(recorded=recorded, edits=json.dumps(edits)))
    for tool in ("ibnetdiscover", "iblinkinfo", "sminfo", "smpquery", "ibtracert", "perfquery"):
        stub = bin_dir / tool
        stub.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{bin_dir / "replay.py"}" {tool} "$@"\n')
        stub.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}"  # this venv's gpufabric, as run() gives


@pytest.mark.slow
def test_validate_green_then_a_swapped_cable_named_exit_1(mini: Path, tmp_path: Path) -> None:
    path = _stub_tools(tmp_path, {})
    done = run_in_process("gpufabric", "ib", "validate", str(mini), "--no-rates", "--format", "json", PATH=path)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert all(r["ok"] for r in rows) and {r["check"] for r in rows} >= {"cabling", "sm", "partition", "route"}
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    path = _stub_tools(
        swapped,
        {
            "ibnetdiscover": [
                ('"H-0000000000100012"[1](100013)', "\0"),
                ('"H-0000000000100016"[1](100017)', '"H-0000000000100012"[1](100013)'),
                ("\0", '"H-0000000000100016"[1](100017)'),
                ('"S-0000000000200003"[1]', "\0"),
                ('"S-0000000000200003"[2]', '"S-0000000000200003"[1]'),
                ("\0", '"S-0000000000200003"[2]'),
            ]
        },
    )
    done = run_in_process("gpufabric", "ib", "validate", str(mini), "--no-rates", "--check", "cabling", PATH=path)
    assert done.returncode == 4
    assert 'cabling    FAIL    "dgx005 mlx5_1"[1] - "su2-leaf2"[1]' in done.stdout
    assert "4 failed" in done.stdout


def test_validate_without_the_tools_exits_2(mini: Path, tmp_path: Path) -> None:
    done = run_in_process("gpufabric", "ib", "validate", str(mini), PATH=f"{BIN}{os.pathsep}{tmp_path}")
    assert done.returncode == 2 and "ibnetdiscover not found: install infiniband-diags" in done.stderr


def test_live_discovery_without_the_tools_exits_2(mini: Path, tmp_path: Path) -> None:
    done = run_in_process(
        "gpufabric", "ib", "discover", str(mini), "--from", "live", PATH=f"{BIN}{os.pathsep}{tmp_path}"
    )
    assert done.returncode == 2 and "ibnetdiscover not found: install infiniband-diags" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_metrics_from_the_recorded_tools(mini: Path, tmp_path: Path) -> None:
    done = run_in_process("gpufabric", "ib", "metrics", str(mini), PATH=_stub_tools(tmp_path, {}), check=True)
    assert 'node="su2-leaf2",role="leaf",port="5",peer="spine01",peer_port="13",tier="leaf-spine"' in done.stdout
    assert done.stdout.count("\n") == 2 + (16 + 32) * 6


def test_acceptance_json(mini: Path) -> None:
    done = run_in_process("gpufabric", "ib", "acceptance", str(mini), "--json", check=True)
    body = json.loads(done.stdout)
    assert body["nccl_env"] == {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_NET": "IB"}
    # tenant-a (dgx001, dgx002) is the only partition: every other adapter is a limited member of the
    # default partition and reaches no host, so the pairs stay inside tenant-a, under one leaf.
    assert [(p["rail"], p["path"], p["server"], p["client"]) for p in body["pairs"]] == [
        (1, "leaf", "dgx001", "dgx002"),
        (2, "leaf", "dgx001", "dgx002"),
    ]
    # A tenant across both SUs gets its pair across the spines too.
    mini.write_text(mini.read_text().replace("hosts: [dgx001, dgx002]", "hosts: [dgx001, dgx002, dgx005]"))
    body = json.loads(run_in_process("gpufabric", "ib", "acceptance", str(mini), "--json", check=True).stdout)
    assert body["pairs"][1] == {
        "rail": 1,
        "path": "spine",
        "server": "dgx001",
        "client": "dgx005",
        "device": "mlx5_0",
        "server_command": "ib_write_bw -d mlx5_0 -i 1 -F --report_gbits",
        "client_command": "ib_write_bw -d mlx5_0 -i 1 -F --report_gbits dgx001",
    }
