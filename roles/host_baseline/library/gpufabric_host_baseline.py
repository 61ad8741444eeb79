#!/usr/bin/python
"""Read a GPU host's baseline from sysfs and procfs under `root` and check it; change nothing.

Self-contained (the standard library and AnsibleModule only): Ansible copies it to the host, where
gpufabric is not installed. The tests import it and call `read_baseline(root, ...)` on prepared trees.

What it reads, every path under `root` (`/` on a host; a prepared tree in tests):
- GPUs: /sys/bus/pci/devices/* whose `vendor` is NVIDIA's (0x10de) and `class` a display or 3D
  controller (0x0300xx, 0x0302xx), in PCI address order (NVML's and nvidia-smi's index order).
- Rail NICs: /sys/class/net/<interface>/device (RoCE) or /sys/class/infiniband/<device>/device.
- Placement: each device's place in the PCI hierarchy is the path its /sys/bus/pci/devices link
  resolves to (/sys/devices/pci<domain>:<bus>/<root port>/<switch upstream>/<downstream>/<device>);
  a GPU and a NIC sharing a bridge below the host bridge are under one PCIe switch; `numa_node`.
- Links: current_link_speed/current_link_width against max_link_speed/max_link_width (LnkSta and
  LnkCap as the kernel shows them).
- ACS: the ACS extended capability (ID 0x000d) found by walking the extended capability list from
  offset 0x100 of the device's `config` file; its control register is the 16 bits at +6, the one
  `setpci -s BDF ECAP_ACS+6.w` reads. Extended configuration space is readable by root only.
- IOMMU: /sys/class/iommu, each device's iommu_group/type (`identity` is passthrough), /proc/cmdline.
- CPUs: cpufreq/scaling_governor and the cpuidle states (name, latency, disable) of every CPU.
- IRQs: the NIC's msi_irqs, each one's /proc/irq/<n>/smp_affinity_list against the CPU list of the
  NIC's NUMA node (/sys/devices/system/node/node<n>/cpulist).
"""

# The boilerplate ansible-core 2.16's sanity tests ask of every module, line for line (later releases
# no longer do); ruff's UP010, UP001 and I001 are off for these files in pyproject.toml.
from __future__ import absolute_import, division, print_function
from __future__ import annotations

__metaclass__ = type

DOCUMENTATION = r"""
module: gpufabric_host_baseline
short_description: Read and check a GPU host's PCIe placement, links, ACS, IOMMU, CPU power and NIC IRQs
description:
  - Reads sysfs and procfs under O(root) and returns the GPUs and rail NICs found, the GPU-to-NIC
    pairing worked out from the PCI hierarchy, and a list of checks, each with setting, expected and found.
  - Changes nothing on the host.
author:
  - gpufabric maintainers (@gpufabric)
options:
  root:
    type: path
    default: /
    description: Where sys/ and proc/ are read (a prepared tree in tests).
  nics:
    type: list
    elements: dict
    default: []
    description:
      - Rail NICs in rail order, each with rail and interface (a RoCE NIC) or device (an InfiniBand adapter).
  gpus:
    type: int
    default: 0
    description: GPUs the plan gives the host.
  placement:
    type: str
    default: numa
    choices: [numa, switch]
    description: How close a GPU and its NIC must be (one NUMA node, or one PCIe switch).
  gpu_link_speed:
    type: bool
    default: false
    description: Check GPUs' link speed too (they lower it when idle).
  acs:
    type: bool
    default: true
    description: Require ACS control 0 on the bridges below the root ports.
  iommu:
    type: list
    elements: str
    default: ["off", "passthrough"]
    description: IOMMU modes accepted (an empty list, not checked).
  governor:
    type: str
    default: performance
    description: CPU frequency governor required (empty, not checked).
  cstate_max_latency:
    type: int
    default: 2
    description: Longest exit latency of an enabled CPU idle state, in microseconds (-1, not checked).
  irq_affinity:
    type: bool
    default: true
    description: Require every rail NIC IRQ on its NUMA node's CPUs.
notes:
  - Supports check mode (it only reads).
"""

EXAMPLES = r"""
- name: Read the host's PCIe, IOMMU, CPU and IRQ baseline from sysfs
  gpufabric.cluster.gpufabric_host_baseline:
    nics:
      - {rail: 1, interface: eth1}
      - {rail: 2, device: mlx5_1}
    gpus: 8
    placement: switch
  register: baseline
"""

RETURN = r"""
facts:
  description:
    - What was read, the controller's record of the host.
    - Keys source, gpus, nics, pairs, iommu_units and cmdline_iommu_pt.
  returned: always
  type: dict
checks:
  description: One entry per check, each with setting, expected and found.
  returned: always
  type: list
  elements: dict
differences:
  description: The checks whose found differs from expected, one line each.
  returned: always
  type: list
  elements: str
"""

import os
import re
from typing import Any

from ansible.module_utils.basic import AnsibleModule

NVIDIA = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")
ACS_ID = 0x000D
ACS_BITS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
LEVELS = {"switch": 2, "numa": 1, "cross-numa": 0}
_BDF = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


# -- reading ----------------------------------------------------------------------------------------


def _read(path: str, default: str = "") -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return default


def _int(text: str, default: int = -1) -> int:
    try:
        return int(text, 0)
    except ValueError:
        return default


def cpus(text: str) -> set[int]:
    """A kernel CPU list ("0-3,8,10-11") as a set; anything unreadable is empty."""
    out: set[int] = set()
    for chunk in text.split(","):
        part = chunk.strip()
        if not part:
            continue
        lo, _dash, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return set()
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def cpu_list(numbers: set[int] | list[int]) -> str:
    """The reverse of `cpus`: 0-3,8."""
    ranges: list[list[int]] = []
    for n in sorted(numbers):
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


class Device:
    """A PCI function as sysfs shows it."""

    def __init__(self, root: str, bdf: str) -> None:
        self.bdf = bdf
        sys_dir = os.path.join(root, "sys")
        self.dir = os.path.realpath(os.path.join(sys_dir, "bus", "pci", "devices", bdf))
        devices = os.path.realpath(os.path.join(sys_dir, "devices"))
        rel = os.path.relpath(self.dir, devices).split(os.sep)
        # pci0000:00/<root port>/.../<bdf>: the bridges above the device, root port first.
        self.host_bridge = rel[0] if rel and rel[0].startswith("pci") else ""
        self.bridges = [p for p in rel[1:-1] if _BDF.fullmatch(p)]
        self.numa = _int(_read(os.path.join(self.dir, "numa_node"), "-1"))

    def attr(self, name: str) -> str:
        return _read(os.path.join(self.dir, name))


def _pci_devices(root: str) -> list[str]:
    try:
        return sorted(e for e in os.listdir(os.path.join(root, "sys", "bus", "pci", "devices")) if _BDF.fullmatch(e))
    except OSError:
        return []


def _gpus(root: str) -> list[Device]:
    found = []
    for bdf in _pci_devices(root):
        base = os.path.join(root, "sys", "bus", "pci", "devices", bdf)
        if (
            _read(os.path.join(base, "vendor")).lower() == NVIDIA
            and _read(os.path.join(base, "class")).lower()[:6] in GPU_CLASSES
        ):
            found.append(Device(root, bdf))
    return found


def nic_name(nic: dict[str, Any]) -> str:
    """A rail NIC as the plan gives it: `interface` (a RoCE NIC's netdev) or `device` (an InfiniBand
    adapter's RDMA device), or `name` with `kind`."""
    return str(nic.get("name") or nic.get("interface") or nic.get("device") or "")


def _nic(root: str, nic: dict[str, Any]) -> Device | str:
    """The rail NIC's PCI function, or why there is none. A netdev's `device` link names the PCI
    function (mlx5) or a device below it (virtio-net's virtioN): the function is the nearest PCI
    address up its path."""
    infiniband = nic.get("kind") == "infiniband" or ("device" in nic and "interface" not in nic)
    link = os.path.join(root, "sys", "class", "infiniband" if infiniband else "net", nic_name(nic), "device")
    if not os.path.exists(link):
        return "missing"
    path = os.path.realpath(link)
    while path != os.path.dirname(path) and not _BDF.fullmatch(os.path.basename(path)):
        path = os.path.dirname(path)
    bdf = os.path.basename(path)
    if not _BDF.fullmatch(bdf) or not os.path.exists(os.path.join(root, "sys", "bus", "pci", "devices", bdf)):
        return f"not a PCI device ({os.path.basename(os.path.realpath(link))})"
    return Device(root, bdf)


def acs_control(config: bytes, size: int = 4096) -> int | None:
    """The ACS control register from a function's configuration space, or None when the function has no
    ACS capability. `size`: the `config` file's size, 256 for a function without extended space
    (conventional PCI, some virtual machines' devices), which has no ACS capability. Raises ValueError
    when extended space exists but was not read (the kernel gives a user other than root 64 bytes)."""
    if len(config) < 0x104:
        if size <= 0x100:
            return None
        raise ValueError(f"only {len(config)} bytes of configuration space readable (extended space needs root)")
    offset, seen = 0x100, 0
    while offset and offset + 8 <= len(config) and seen < 1024:
        header = int.from_bytes(config[offset : offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == ACS_ID:
            return int.from_bytes(config[offset + 6 : offset + 8], "little")
        offset, seen = (header >> 20) & 0xFFC, seen + 1
        if offset and offset < 0x100:
            return None  # a malformed list points back into the standard header
    return None


def acs_bits(control: int) -> str:
    return "+".join(name for i, name in enumerate(ACS_BITS) if control & (1 << i)) or "none"


def _speed(text: str) -> float:
    m = re.match(r"\s*([0-9.]+)\s*GT/s", text)
    return float(m.group(1)) if m else 0.0


# -- placement and pairing --------------------------------------------------------------------------


def closeness(gpu: Device, nic: Device) -> tuple[int, int]:
    """(level, shared bridges): switch when they share a bridge below the host bridge, numa when they
    share a NUMA node (-1 on both, a machine without NUMA, counts as one node), else cross-numa."""
    shared = 0
    if gpu.host_bridge == nic.host_bridge:
        for a, b in zip(gpu.bridges, nic.bridges, strict=False):
            if a != b:
                break
            shared += 1
    if shared:
        return LEVELS["switch"], shared
    return (LEVELS["numa"] if gpu.numa == nic.numa else LEVELS["cross-numa"]), 0


def pair(gpus: list[Device], nics: list[tuple[dict[str, Any], Device]]) -> list[dict[str, Any]]:
    """Each GPU to the closest rail NIC, each NIC serving at most ceil(GPUs / NICs): the closest pairs
    are taken first (ties: lower GPU index, lower rail)."""
    if not gpus or not nics:
        return []
    cap = -(-len(gpus) // len(nics))
    scored = sorted(
        ((closeness(g, d), gi, ni) for gi, g in enumerate(gpus) for ni, (_nic, d) in enumerate(nics)),
        key=lambda s: (-s[0][0], -s[0][1], s[1], s[2]),
    )
    taken: dict[int, int] = {}
    load = [0] * len(nics)
    level: dict[int, int] = {}
    for (lvl, _depth), gi, ni in scored:
        if gi in taken or load[ni] >= cap:
            continue
        taken[gi], level[gi] = ni, lvl
        load[ni] += 1
    names = {v: k for k, v in LEVELS.items()}
    out = []
    for ni, (nic, dev) in enumerate(nics):
        mine = sorted(gi for gi, n in taken.items() if n == ni)
        out.append(
            {
                "nic": nic_name(nic),
                "rail": nic.get("rail"),
                "pci": dev.bdf,
                "gpus": mine,
                "via": [names[level[gi]] for gi in mine],
            }
        )
    return out


# -- checks -----------------------------------------------------------------------------------------


def _check(setting: str, expected: str, found: str) -> dict[str, str]:
    return {"setting": setting, "expected": expected, "found": found}


def _name(dev: Device, what: str) -> str:
    return f"{what} {dev.bdf}"


def _link_checks(name: str, dev: Device, speed: bool) -> list[dict[str, str]]:
    out = []
    width, max_width = dev.attr("current_link_width"), dev.attr("max_link_width")
    if max_width:
        out.append(_check(f"{name} PCIe link width", f"x{max_width}", f"x{width or '?'}"))
    cur, top = dev.attr("current_link_speed"), dev.attr("max_link_speed")
    if speed and top:
        out.append(_check(f"{name} PCIe link speed", top, cur if _speed(cur) < _speed(top) else top))
    return out


def _iommu_mode(dev: Device) -> str:
    group = os.path.join(dev.dir, "iommu_group")
    if not os.path.exists(group):
        return "off"
    kind = _read(os.path.join(group, "type"))
    return "passthrough" if kind == "identity" else f"translated ({kind or 'type unreadable'})"


def _cpu_dirs(root: str) -> list[tuple[int, str]]:
    base = os.path.join(root, "sys", "devices", "system", "cpu")
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return sorted((int(n[3:]), os.path.join(base, n)) for n in names if re.fullmatch(r"cpu[0-9]+", n))


def _governor_checks(root: str, want: str) -> list[dict[str, str]]:
    """Every CPU's governor. A CPU without cpufreq is left out: its firmware governs the frequency (a
    BIOS performance profile without OS control, a virtual machine), and no governor can be set."""
    if not want:
        return []
    by: dict[str, set[int]] = {}
    for n, d in _cpu_dirs(root):
        governor = _read(os.path.join(d, "cpufreq", "scaling_governor"))
        if governor:
            by.setdefault(governor, set()).add(n)
    if not by:
        return [_check("CPU frequency governor (no cpufreq: the firmware governs)", "not read", "not read")]
    found = "; ".join(f"{g} on cpu {cpu_list(c)}" for g, c in sorted(by.items()) if g != want) or want
    return [_check("CPU frequency governor", want, found)]


def _cstate_checks(root: str, max_latency: int) -> list[dict[str, str]]:
    if max_latency < 0:
        return []
    deep: dict[tuple[str, int], set[int]] = {}
    for n, d in _cpu_dirs(root):
        idle = os.path.join(d, "cpuidle")
        try:
            states = sorted(s for s in os.listdir(idle) if re.fullmatch(r"state[0-9]+", s))
        except OSError:
            continue
        for s in states:
            latency = _int(_read(os.path.join(idle, s, "latency"), "0"), 0)
            if latency > max_latency and _read(os.path.join(idle, s, "disable"), "0") == "0":
                deep.setdefault((_read(os.path.join(idle, s, "name"), s), latency), set()).add(n)
    found = "; ".join(f"{name} ({lat} us) enabled on cpu {cpu_list(c)}" for (name, lat), c in sorted(deep.items()))
    return [_check(f"CPU idle states deeper than {max_latency} us exit latency", "disabled", found or "disabled")]


def _irq_checks(root: str, name: str, dev: Device) -> list[dict[str, str]]:
    if dev.numa < 0:
        return []  # no NUMA: every CPU is local
    local = cpus(_read(os.path.join(root, "sys", "devices", "system", "node", f"node{dev.numa}", "cpulist")))
    try:
        irqs = sorted(int(i) for i in os.listdir(os.path.join(dev.dir, "msi_irqs")) if i.isdigit())
    except OSError:
        irqs = []
    away: dict[str, list[int]] = {}
    for irq in irqs:
        text = _read(os.path.join(root, "proc", "irq", str(irq), "smp_affinity_list"), "unreadable")
        if not local or not cpus(text) or not cpus(text) <= local:
            away.setdefault(text, []).append(irq)
    expected = f"CPUs of NUMA node {dev.numa} ({cpu_list(local) or 'unreadable'})"
    found = "; ".join(f"IRQ {','.join(map(str, i))} on {cpus_text}" for cpus_text, i in sorted(away.items()))
    if not irqs:
        found = "no MSI IRQs found"
    return [_check(f"{name} IRQ affinity", expected, found or expected)]


def read_baseline(
    root: str,
    nics: list[dict[str, Any]],
    gpus: int = 0,
    *,
    placement: str = "numa",
    gpu_link_speed: bool = False,
    acs: bool = True,
    iommu: tuple[str, ...] | list[str] = ("off", "passthrough"),
    governor: str = "performance",
    cstate_max_latency: int = 2,
    irq_affinity: bool = True,
) -> dict[str, Any]:
    """What was read (`facts`) and the checks (`checks`: setting, expected, found; a check passes when
    found equals expected)."""
    checks: list[dict[str, str]] = []
    found_gpus = _gpus(root)
    if gpus:
        checks.append(_check("NVIDIA GPUs on the PCI bus", str(gpus), str(len(found_gpus))))
    rail: list[tuple[dict[str, Any], Device]] = []
    for nic in nics:
        dev = _nic(root, nic)
        if isinstance(dev, str):
            checks.append(_check(f"NIC {nic_name(nic)} (rail {nic.get('rail')}) PCI device", "present", dev))
        else:
            rail.append((nic, dev))
    pairs = pair(found_gpus, rail)
    nic_dev = {nic_name(n): d for n, d in rail}
    for p in pairs:
        dev = nic_dev[p["nic"]]
        for gi, via in zip(p["gpus"], p["via"], strict=True):
            g = found_gpus[gi]
            ok = LEVELS[via] >= LEVELS["switch" if placement == "switch" else "numa"]
            want = "one PCIe switch" if placement == "switch" else "one NUMA node"
            found = (
                want
                if ok
                else f"{via}: GPU on NUMA node {g.numa}, NIC {p['nic']} ({dev.bdf}) on NUMA node {dev.numa}"
                + ("" if via != "numa" else ", no common PCIe switch")
            )
            checks.append(_check(f"GPU{gi} {g.bdf} and its rail NIC {p['nic']} (rail {p['rail']})", want, found))
    devices = [(f"GPU{i} {g.bdf}", g, gpu_link_speed) for i, g in enumerate(found_gpus)]
    devices += [(f"NIC {nic_name(n)} {d.bdf}", d, True) for n, d in rail]
    uplinks: dict[str, Device] = {}
    for _name, d, _speed in devices:
        if len(d.bridges) >= 2:  # a switch below the root port: its upstream port's link
            uplinks.setdefault(d.bridges[1], Device(root, d.bridges[1]))
    for name, d, speed in devices:
        checks += _link_checks(name, d, speed)
    for bdf, d in sorted(uplinks.items()):
        checks += _link_checks(f"PCIe switch uplink {bdf}", d, True)
    if acs:
        checks += _acs_checks(root, [d for _name, d, _speed in devices])
    if iommu:
        modes: dict[str, list[str]] = {}
        for name, d, _speed in devices:
            modes.setdefault(_iommu_mode(d), []).append(name)
        cmdline = _read(os.path.join(root, "proc", "cmdline"))
        pt = " (cmdline has iommu=pt)" if re.search(r"(^|\s)iommu=pt(\s|$)", cmdline) else ""
        bad = {m: n for m, n in modes.items() if m.split()[0] not in iommu}
        found = "; ".join(f"{m} on {', '.join(n)}" for m, n in sorted(bad.items())) or " or ".join(iommu)
        checks.append(_check("IOMMU mode of the GPUs and rail NICs", " or ".join(iommu), found))
    else:
        pt = ""
    checks += _governor_checks(root, governor)
    checks += _cstate_checks(root, cstate_max_latency)
    if irq_affinity:
        for nic, d in rail:
            checks += _irq_checks(root, f"NIC {nic_name(nic)}", d)
    facts = {
        "source": "sysfs",
        "gpus": [
            {"index": i, "pci": g.bdf, "numa_node": g.numa, "bridges": g.bridges} for i, g in enumerate(found_gpus)
        ],
        "nics": [
            {"name": nic_name(n), "rail": n.get("rail"), "pci": d.bdf, "numa_node": d.numa, "bridges": d.bridges}
            for n, d in rail
        ],
        "pairs": pairs,
        "iommu_units": sorted(_listdir(os.path.join(root, "sys", "class", "iommu"))),
        "cmdline_iommu_pt": bool(pt),
    }
    differences = [f"{c['setting']}: expected {c['expected']}, found {c['found']}" for c in checks
                   if c["found"] != c["expected"]]  # fmt: skip
    return {"facts": facts, "checks": checks, "differences": differences}


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _acs_checks(root: str, devices: list[Device]) -> list[dict[str, str]]:
    """Every bridge below a root port on a GPU's or rail NIC's path: the PCIe switches' ports, where
    peer-to-peer traffic between a GPU and a NIC turns; ACS redirection there sends it up to the root
    complex (and through the IOMMU) instead."""
    seen: dict[str, Device] = {}
    for d in devices:
        for bdf in d.bridges[1:]:
            seen.setdefault(bdf, Device(root, bdf))  # a bridge is a PCI function too
    out = []
    for bdf, d in sorted(seen.items()):
        try:
            with open(os.path.join(d.dir, "config"), "rb") as f:
                control = acs_control(f.read(), os.fstat(f.fileno()).st_size)
        except (OSError, ValueError) as exc:
            out.append(_check(f"PCIe switch port {bdf} ACS control", "0x0000", f"unreadable: {exc}"))
            continue
        if control is None:
            continue  # no ACS capability: nothing redirects peer-to-peer traffic
        found = "0x0000" if control == 0 else f"0x{control:04x} ({acs_bits(control)})"
        out.append(_check(f"PCIe switch port {bdf} ACS control", "0x0000", found))
    return out


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "root": {"type": "path", "default": "/"},
            "nics": {"type": "list", "elements": "dict", "default": []},
            "gpus": {"type": "int", "default": 0},
            "placement": {"type": "str", "default": "numa", "choices": ["numa", "switch"]},
            "gpu_link_speed": {"type": "bool", "default": False},
            "acs": {"type": "bool", "default": True},
            "iommu": {"type": "list", "elements": "str", "default": ["off", "passthrough"]},
            "governor": {"type": "str", "default": "performance"},
            "cstate_max_latency": {"type": "int", "default": 2},
            "irq_affinity": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    result = read_baseline(
        p["root"],
        p["nics"],
        p["gpus"],
        placement=p["placement"],
        gpu_link_speed=p["gpu_link_speed"],
        acs=p["acs"],
        iommu=p["iommu"],
        governor=p["governor"],
        cstate_max_latency=p["cstate_max_latency"],
        irq_affinity=p["irq_affinity"],
    )
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
