"""The exports `gpufabric export` offers: each kind is one module with a `render(plan) -> str`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpufabric.export import (
    anta,
    bom,
    cabling,
    containerlab,
    drawing,
    ib_topology,
    inventory,
    k8s_labels,
    k8s_network,
    plan_json,
    probe_mesh,
    slurm,
    storage,
    structured,
    ztp,
)
from gpufabric.plan.model import Plan


@dataclass(frozen=True)
class Exporter:
    name: str
    summary: str
    suffix: str
    render: Callable[[Plan], str]


EXPORTERS: dict[str, Exporter] = {
    e.name: e
    for e in (
        Exporter("plan", "the whole plan as JSON (keys in docs/plan-json.md)", ".json", plan_json.render),
        Exporter("cabling", "CSV, one row per cable", ".csv", cabling.render),
        Exporter("bom", "CSV bill of material per plane and in total", ".csv", bom.render),
        Exporter(
            "drawing",
            "Graphviz DOT per plane (a directory with -o, plus SVG when dot is installed)",
            ".dot",
            drawing.render,
        ),
        Exporter(
            "structured",
            "per-switch structured config as JSON: the facts the templates print (a directory with -o)",
            ".json",
            structured.render,
        ),
        Exporter("slurm", "Slurm topology.conf for the tree plugin", ".conf", slurm.render),
        Exporter(
            "slurm-block",
            "Slurm topology.conf for the block plugin: NVLink domains (23.11+)",
            ".conf",
            slurm.render_block,
        ),
        Exporter("slurm-yaml", "Slurm topology.yaml: tree and NVLink blocks (25.05+)", ".yaml", slurm.render_yaml),
        Exporter("k8s-labels", "Kubernetes node labels as YAML", ".yaml", k8s_labels.render),
        Exporter(
            "k8s-network",
            "Kubernetes RDMA networks per rail: Network Operator objects (a directory with -o)",
            ".yaml",
            k8s_network.render,
        ),
        Exporter(
            "k8s-probe-mesh",
            "Kubernetes DaemonSet and ConfigMap of the probe mesh (`gpufabric probe serve` on every RoCE node)",
            ".yaml",
            probe_mesh.render,
        ),
        Exporter(
            "ib-topology",
            "the InfiniBand compute fabric in ibnetdiscover's topology format (what ibsim reads)",
            ".topo",
            ib_topology.render,
        ),
        Exporter("containerlab", "containerlab topology (*.clab.yml)", ".clab.yml", containerlab.render),
        Exporter(
            "ztp",
            "zero-touch provisioning: Kea's configuration (a directory with -o: Kea, dnsmasq and every switch's files)",
            ".json",
            ztp.render,
        ),
        Exporter(
            "anta",
            "ANTA test catalog for the EOS switches (a directory with -o: one catalog per switch)",
            ".yml",
            anta.render,
        ),
        Exporter(
            "storage",
            "storage clients of the GPU servers: NFS over RDMA, Lustre LNet, BeeGFS, cufile.json (a directory with "
            "-o: one folder per server)",
            ".json",
            storage.render,
        ),
        Exporter(
            "ansible-inventory",
            "static Ansible inventory (same groups as the plugin)",
            ".yml",
            inventory.render_ansible,
        ),
    )
}
