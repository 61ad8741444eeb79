"""What an InfiniBand compute fabric is built from, and NVIDIA's published DGX SuperPOD sizes.

A design names the scalable unit (nodes per SU, one adapter per rail), the number of units,
the switch model and the adapters' rate, and how many fabric-manager ports take a node's
place. `superpod()` returns the design NVIDIA's reference architectures describe, and
`PUBLISHED` holds their component tables, which the tests hold the planner to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufabric.ib.errors import fail


@dataclass(frozen=True, slots=True)
class IbDesign:
    name: str
    su_count: int
    nodes_per_su: int = 32
    rails: int = 8  # adapters per node, one leaf per rail per SU
    switch_model: str = "QM9700"
    hca_rate: str = "NDR"  # NDR200 / HDR100 put two nodes on one cage port (split ports)
    # Ports for the fabric manager (UFM, where the subnet manager runs). They take the last
    # node slot of the last SU, one port per rail from rail 1 on, two ports per appliance.
    fabric_manager_ports: int = 0
    fabric_manager_ports_per_host: int = 2
    node_name: str = "dgx{index:03d}"  # index counts nodes from 1 across the SUs
    hca_names: tuple[str, ...] = field(default=())  # per rail; mlx5_<rail-1> when empty
    tiers: int | None = None  # 2 or 3; the fewest that carry the design when None
    # The compute hosts by name, in slot order, when an intent names them (its server groups): they
    # fill the node slots from the first; slots after the last stay free (leaves are still sized
    # for a full SU). Empty: every slot holds a node named by `node_name`.
    hosts: tuple[str, ...] = ()

    def hca_name(self, rail: int) -> str:
        return self.hca_names[rail - 1] if self.hca_names else f"mlx5_{rail - 1}"

    @property
    def node_slots(self) -> int:
        return self.su_count * self.nodes_per_su

    @property
    def slots_for_fabric_manager(self) -> int:
        return 1 if self.fabric_manager_ports else 0

    @property
    def node_count(self) -> int:
        if self.hosts:
            return len(self.hosts)
        return self.node_slots - self.slots_for_fabric_manager


@dataclass(frozen=True, slots=True)
class PublishedCounts:
    """One row of a reference architecture's compute-fabric table."""

    nodes: int
    gpus: int
    leaf: int
    spine: int
    core: int
    node_leaf_cables: int  # compute nodes and, in the DGX H100 table, UFM
    leaf_spine_cables: int
    spine_core_cables: int


# NVIDIA DGX SuperPOD reference architecture with DGX H100 systems, "Network Fabrics",
# Table 4 "Compute fabric component count": 32 node slots per SU, one given up for UFM
# connectivity (its 4 cables are in the node-leaf count).
H100_TABLE = {
    1: PublishedCounts(31, 248, 8, 4, 0, 252, 256, 0),
    2: PublishedCounts(63, 504, 16, 8, 0, 508, 512, 0),
    3: PublishedCounts(95, 760, 24, 16, 0, 764, 768, 0),
    4: PublishedCounts(127, 1016, 32, 16, 0, 1020, 1024, 0),
}

# NVIDIA DGX SuperPOD reference architecture with DGX B200 systems, "DGX SuperPOD
# Architecture", the larger-configuration table: 32 nodes per SU, a core tier from 16 SU.
B200_TABLE = {
    2: PublishedCounts(64, 512, 16, 8, 0, 512, 512, 0),
    4: PublishedCounts(128, 1024, 32, 16, 0, 1024, 1024, 0),
    8: PublishedCounts(256, 2048, 64, 32, 0, 2048, 2048, 0),
    16: PublishedCounts(512, 4096, 128, 128, 64, 4096, 4096, 4096),
    32: PublishedCounts(1024, 8192, 256, 256, 128, 8192, 8192, 8192),
    64: PublishedCounts(2048, 16384, 512, 512, 256, 16384, 16384, 16384),
}

PUBLISHED: dict[str, dict[int, PublishedCounts]] = {"dgx-h100": H100_TABLE, "dgx-b200": B200_TABLE}


def superpod(system: str, su_count: int) -> IbDesign:
    """The DGX SuperPOD compute fabric of `su_count` SUs as NVIDIA publishes it."""
    if system not in PUBLISHED:
        raise fail("design.system", f"no published SuperPOD for {system!r}", f"use one of {', '.join(PUBLISHED)}")
    if su_count < 1:
        raise fail("design.su_count", f"{su_count} scalable units", "use 1 or more")
    # DGX H100: UFM connects through the slot of one DGX (4 cables); the B200 table counts none.
    fm_ports = 4 if system == "dgx-h100" else 0
    return IbDesign(name=f"superpod-{system}-{su_count}su", su_count=su_count, fabric_manager_ports=fm_ports)
