"""Schedulers see the fabric: Slurm's block topology (NVLink domains), topology.yaml, and the
Kubernetes node labels NVIDIA's topograph writes, all computed here from the plan's objects.

The tree form is read back by Slurm's own slurmctld in test_slurmctld.py; Debian's Slurm (22.05)
predates topology/block (23.11) and topology.yaml (25.05), so those two are checked here against
the formats of their manual pages.
"""

from __future__ import annotations

import pytest
import yaml
from conftest import INVENTORY, default_doc, plan_doc, plan_text, set_path, sized
from test_exports import _expand

from gpufabric.export import k8s_labels, slurm
from gpufabric.plan import Plan

TOPO = "network.topology.nvidia.com"


def _with_domains(size: int) -> Plan:
    doc = default_doc()
    return plan_doc(set_path(doc, ("server_groups", 0, "nvlink_domain"), size))


def _tree_conf(text: str) -> dict[str, tuple[str, list[str]]]:
    out = {}
    for line in text.splitlines():
        if line.startswith("SwitchName="):
            name, child = line.split()
            kind, _, expr = child.partition("=")
            out[name.split("=")[1]] = (kind.lower(), _expand(expr))
    return out


def test_block_form_one_block_per_nvlink_domain() -> None:
    text = slurm.render_block(_with_domains(2))
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == ["BlockName=gpu-nvl1 Nodes=gpu[01-02]", "BlockName=gpu-nvl2 Nodes=gpu[03-04]", "BlockSizes=2"]
    assert "TopologyPlugin=topology/block" in text


def test_a_partial_last_domain_keeps_its_nodes() -> None:
    assert slurm.blocks(_with_domains(3)) == {"gpu-nvl1": ["gpu01", "gpu02", "gpu03"], "gpu-nvl2": ["gpu04"]}


def test_no_domains_no_blocks() -> None:
    plan = plan_doc(default_doc())
    assert slurm.blocks(plan) == {}
    assert "BlockName" not in slurm.render_block(plan)
    tops = yaml.safe_load(slurm.render_yaml(plan))
    assert [t["topology"] for t in tops] == ["fabric"]


def test_topology_yaml_holds_the_same_tree_and_the_blocks() -> None:
    plan = _with_domains(2)
    tops = yaml.safe_load(slurm.render_yaml(plan))
    fabric, nvlink = tops
    # topology.yaml(5): `topology` first, one of block/flat/tree, the tree's switches with nodes or children.
    assert next(iter(fabric)) == "topology" and next(iter(nvlink)) == "topology"
    assert fabric["cluster_default"] is True and nvlink["cluster_default"] is False
    from_yaml = {
        sw["switch"]: ("nodes", _expand(sw["nodes"])) if "nodes" in sw else ("switches", _expand(sw["children"]))
        for sw in fabric["tree"]["switches"]
    }
    assert from_yaml == _tree_conf(slurm.render(plan))
    assert nvlink["block"] == {
        "block_sizes": [2],
        "blocks": [{"block": "gpu-nvl1", "nodes": "gpu[01-02]"}, {"block": "gpu-nvl2", "nodes": "gpu[03-04]"}],
    }


def _expected_topology(plan: Plan) -> dict[str, dict[str, str]]:
    """Node -> topograph keys, from the plan's servers and leaves (not from the exporter)."""
    plane = plan.planes["compute"]
    pods = {d.unit: d.pod for d in plane.devices if d.role == "leaf"}
    out = {}
    for s in plan.servers:
        unit = s.units.get("compute")
        if unit is None:
            continue
        leaf = f"{plane.prefix}-su{unit}"
        labels = {f"{TOPO}/leaf": leaf, f"{TOPO}/block": leaf}
        if plane.tiers == 3:
            labels |= {
                f"{TOPO}/spine": f"{plane.prefix}-pod{pods[unit]}",
                f"{TOPO}/core": f"{plane.prefix}-superspines",
            }
        else:
            labels[f"{TOPO}/spine"] = f"{plane.prefix}-spines"
        out[s.name] = labels
    return out


@pytest.mark.parametrize("name", sized(["fabric.yml", "examples/superpod-4su.yml", "examples/three-tier-32k.yml"]))
def test_topograph_labels_follow_the_plan(name: str) -> None:
    path = INVENTORY / name
    plan = plan_text(path.read_text(), str(path))
    labels = yaml.safe_load(k8s_labels.render(plan))
    for node, want in _expected_topology(plan).items():
        got = {k: v for k, v in labels[node].items() if k.startswith(TOPO)}
        assert got == want, node
    storage_only = [s.name for s in plan.servers if "compute" not in s.units]
    assert all(not any(k.startswith(TOPO) for k in labels[n]) for n in storage_only)


def test_accelerator_label_and_gpu_model() -> None:
    labels = yaml.safe_load(k8s_labels.render(_with_domains(2)))
    assert labels["gpu01"][f"{TOPO}/accelerator"] == "gpu-nvl1"
    assert labels["gpu04"][f"{TOPO}/accelerator"] == "gpu-nvl2"
    assert labels["gpu01"]["gpufabric.io/gpu-model"] == "H100-SXM5"
    assert "gpufabric.io/gpu-model" not in labels["stor01"]  # no GPU model given for storage servers
    assert f"{TOPO}/accelerator" not in labels["stor01"]
