"""Prepared sysfs and procfs trees of a GPU host, for the host_baseline role's checks (no GPU, no
ConnectX and no PCIe switch here). The layout is the kernel's: each PCI function a folder under
/sys/devices/pci<domain>:<bus>/ nested under its bridges (root port, switch upstream port, downstream
port), /sys/bus/pci/devices/<bdf> and /sys/class/net/<nic>/device relative links to it, the
attributes the kernel gives (vendor, class, numa_node, current_/max_link_speed and _width,
msi_irqs/<n>, iommu_group -> /sys/kernel/iommu_groups/<n> with its type) and a 4096-byte `config`
with an ACS extended capability at 0x100 on the switch ports (control register at +6, what
`setpci ECAP_ACS+6.w` reads); /sys/devices/system/{cpu,node} and /proc/irq, /proc/cmdline.

The default host: two sockets (NUMA nodes 0 and 1), two PCIe switches on each, two GPUs under each
switch (GPU0-3 on node 0, GPU4-7 on node 1), the rail NICs under the first switch of a socket.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

ACS_CAP = 0x000D
GEN5 = "32.0 GT/s PCIe"


@dataclass
class Host:
    """What to build; the defaults are a good host."""

    sockets: int = 2
    switches_per_socket: int = 2
    gpus_per_switch: int = 2
    nics: dict[str, tuple[int, int]] = field(default_factory=lambda: {"eth1": (0, 0), "eth2": (1, 0)})
    nic_class: str = "net"  # net (RoCE) or infiniband (RDMA device names)
    cpus_per_socket: int = 16
    width: dict[str, int] = field(default_factory=dict)  # device name (GPU3, eth1) -> current width
    speed: dict[str, str] = field(default_factory=dict)  # device name -> current speed
    acs: dict[tuple[int, int], int] = field(default_factory=dict)  # (socket, switch) -> ACS control of its ports
    governor: str = "performance"
    deep_cstates_disabled: bool = True
    iommu_type: str | None = "identity"  # None: no IOMMU
    irq_cpus: dict[str, str] = field(default_factory=dict)  # NIC -> smp_affinity_list of its IRQs
    cmdline: str = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro iommu=pt"


def _config(acs: int | None) -> bytes:
    data = bytearray(4096)
    data[0:4] = (0x1000 | (0x10B5 << 0)).to_bytes(4, "little")  # a PCIe switch vendor's IDs; not read
    if acs is not None:
        # A vendor-specific capability first, then ACS: the reader walks the list.
        data[0x100:0x104] = (0x000B | (1 << 16) | (0x148 << 20)).to_bytes(4, "little")
        data[0x148:0x14C] = (ACS_CAP | (1 << 16)).to_bytes(4, "little")
        data[0x14C:0x14E] = (0x005F).to_bytes(2, "little")  # capability: SV, TB, RR, CR, UF, DT
        data[0x14E:0x150] = acs.to_bytes(2, "little")
    return bytes(data)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def build(root: Path, host: Host | None = None) -> dict[str, str]:
    """The tree under `root` (sys/, proc/); returns device name -> PCI address (GPU0.., NICs, the
    switches' upstream ports as sw<socket>.<switch>)."""
    h = host or Host()
    sys_dir = root / "sys"
    names: dict[str, str] = {}
    irq = 100
    gpu = 0
    group = 0

    def function(parent: Path, bdf: str, numa: int, name: str, *, vendor: str, cls: str, acs: int | None) -> Path:
        nonlocal group
        d = parent / bdf
        d.mkdir(parents=True)
        for attr, value in (("vendor", vendor), ("class", cls), ("numa_node", str(numa))):
            _write(d / attr, value)
        _write(d / "max_link_speed", GEN5)
        _write(d / "max_link_width", "16")
        _write(d / "current_link_speed", h.speed.get(name, GEN5))
        _write(d / "current_link_width", str(h.width.get(name, 16)))
        (d / "config").write_bytes(_config(acs))
        link = sys_dir / "bus" / "pci" / "devices" / bdf
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(d, link.parent))
        if h.iommu_type is not None:
            g = sys_dir / "kernel" / "iommu_groups" / str(group)
            _write(g / "type", h.iommu_type)
            (d / "iommu_group").symlink_to(os.path.relpath(g, d))
            group += 1
        names[name] = bdf
        return d

    bus = 0
    for socket in range(h.sockets):
        domain_bus = socket * 0x80
        host_bridge = sys_dir / "devices" / f"pci0000:{domain_bus:02x}"
        for sw in range(h.switches_per_socket):
            acs = h.acs.get((socket, sw), 0)
            bus = domain_bus + 1 + sw * 0x10
            rp = function(host_bridge, f"0000:{domain_bus:02x}:{sw + 1:02x}.0", socket, f"rp{socket}.{sw}",
                          vendor="0x8086", cls="0x060400", acs=None)  # fmt: skip
            up = function(rp, f"0000:{bus:02x}:00.0", socket, f"sw{socket}.{sw}", vendor="0x1000",
                          cls="0x060400", acs=None)  # fmt: skip
            members = [("gpu", None)] * h.gpus_per_switch
            members += [("nic", n) for n, place in h.nics.items() if place == (socket, sw)]
            for port, (kind, nic) in enumerate(members):
                down = function(up, f"0000:{bus + 1:02x}:{port:02x}.0", socket, f"dp{socket}.{sw}.{port}",
                                vendor="0x1000", cls="0x060400", acs=acs)  # fmt: skip
                bdf = f"0000:{bus + 2 + port:02x}:00.0"
                if kind == "gpu":
                    function(down, bdf, socket, f"GPU{gpu}", vendor="0x10de", cls="0x030200", acs=None)
                    gpu += 1
                    continue
                assert nic is not None
                d = function(down, bdf, socket, nic, vendor="0x15b3", cls="0x020000", acs=None)
                cls_dir = sys_dir / "class" / h.nic_class / nic
                cls_dir.mkdir(parents=True)
                (cls_dir / "device").symlink_to(os.path.relpath(d, cls_dir))
                node_cpus = _cpu_range(h, socket)
                for _ in range(4):
                    _write(d / "msi_irqs" / str(irq), "msix")
                    _write(root / "proc" / "irq" / str(irq) / "smp_affinity_list", h.irq_cpus.get(nic, node_cpus))
                    irq += 1
    for socket in range(h.sockets):
        _write(sys_dir / "devices" / "system" / "node" / f"node{socket}" / "cpulist", _cpu_range(h, socket))
    if h.iommu_type is not None:
        (sys_dir / "class" / "iommu" / "dmar0").mkdir(parents=True)
    for n in range(h.sockets * h.cpus_per_socket):
        cpu = sys_dir / "devices" / "system" / "cpu" / f"cpu{n}"
        _write(cpu / "cpufreq" / "scaling_governor", h.governor)
        for i, (name, latency) in enumerate((("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 170))):
            state = cpu / "cpuidle" / f"state{i}"
            _write(state / "name", name)
            _write(state / "latency", str(latency))
            _write(state / "disable", "1" if latency > 2 and h.deep_cstates_disabled else "0")
    _write(root / "proc" / "cmdline", h.cmdline)
    return names


def _cpu_range(h: Host, socket: int) -> str:
    return f"{socket * h.cpus_per_socket}-{(socket + 1) * h.cpus_per_socket - 1}"
