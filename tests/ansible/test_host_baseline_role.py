"""The host_baseline role's checks on prepared sysfs trees (tests/sysfs_trees.py builds them with the
kernel's layout): no GPU, PCIe switch or ConnectX runs here. The module's reader is called directly on
each tree; the role is run once by the real ansible-playbook with a host's variables as the plan
exports them (inventory/fabric.yml's gpu01: 8 GPUs, rail NICs eth1 and eth2).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from ansible_helpers import PERSISTENT
from conftest import run
from sysfs_trees import Host, build

from gpufabric.export import inventory
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODULE = ROOT / "roles" / "host_baseline" / "library" / "gpufabric_host_baseline.py"
NICS = [{"interface": "eth1", "rail": 1, "plane": "compute"}, {"interface": "eth2", "rail": 2, "plane": "compute"}]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpufabric_host_baseline", MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hb = _module()


def _read(tmp_path: Path, host: Host | None = None, **options: Any) -> tuple[dict[str, str], dict[str, Any]]:
    names = build(tmp_path, host)
    return names, hb.read_baseline(str(tmp_path), options.pop("nics", NICS), options.pop("gpus", 8), **options)


def test_a_good_host_passes_every_check_and_pairs_each_gpu_with_the_nic_of_its_socket(tmp_path: Path) -> None:
    names, result = _read(tmp_path)
    assert result["differences"] == []
    settings = [c["setting"] for c in result["checks"]]
    # 8 GPU/NIC placements, widths of 8 GPUs, width and speed of 2 NICs and 4 switch uplinks, ACS on
    # the 10 switch ports above GPUs and NICs, IOMMU, governor, idle states, the IRQs of 2 NICs.
    assert sum("its rail NIC" in s for s in settings) == 8
    assert sum("ACS control" in s for s in settings) == 10
    assert "CPU frequency governor" in settings and "NIC eth2 IRQ affinity" in settings
    pairs = result["facts"]["pairs"]
    assert [(p["nic"], p["gpus"], p["via"]) for p in pairs] == [
        ("eth1", [0, 1, 2, 3], ["switch", "switch", "numa", "numa"]),
        ("eth2", [4, 5, 6, 7], ["switch", "switch", "numa", "numa"]),
    ]
    assert [g["pci"] for g in result["facts"]["gpus"]] == [names[f"GPU{i}"] for i in range(8)]
    assert result["facts"]["nics"][0]["bridges"] == ["0000:00:01.0", "0000:01:00.0", "0000:02:02.0"]


def test_a_cross_numa_nic_fails_naming_the_nic_and_the_gpus_it_serves(tmp_path: Path) -> None:
    # eth2 sits on socket 0's second switch: socket 1's GPUs have no NIC on their NUMA node.
    names, result = _read(tmp_path, Host(nics={"eth1": (0, 0), "eth2": (0, 1)}))
    bad = result["differences"]
    assert bad == [
        f"GPU{g} {names[f'GPU{g}']} and its rail NIC {nic} (rail {rail}): expected one NUMA node, found cross-numa: "
        f"GPU on NUMA node 1, NIC {nic} ({names[nic]}) on NUMA node 0"
        for g, nic, rail in ((4, "eth1", 1), (5, "eth1", 1), (6, "eth2", 2), (7, "eth2", 2))
    ]


def test_switch_placement_asks_for_a_shared_pcie_switch(tmp_path: Path) -> None:
    names, result = _read(tmp_path, placement="switch")
    bad = result["differences"]
    assert len(bad) == 4  # GPU2, 3, 6, 7 share a NUMA node with their NIC, not a switch
    assert bad[0] == (
        f"GPU2 {names['GPU2']} and its rail NIC eth1 (rail 1): expected one PCIe switch, found numa: GPU on NUMA "
        f"node 0, NIC eth1 ({names['eth1']}) on NUMA node 0, no common PCIe switch"
    )


@pytest.mark.parametrize(
    ("host", "device", "says"),
    [
        (Host(width={"GPU3": 8}), "GPU3", "PCIe link width: expected x16, found x8"),
        (Host(width={"eth2": 8}), "eth2", "PCIe link width: expected x16, found x8"),
        (Host(speed={"eth1": "16.0 GT/s PCIe"}), "eth1", "PCIe link speed: expected 32.0 GT/s PCIe, found 16.0 GT/s"),
        (Host(width={"sw1.1": 4}), "sw1.1", "PCIe link width: expected x16, found x4"),
    ],
    ids=["a GPU at x8 of x16", "a NIC at x8 of x16", "a NIC at Gen4 of Gen5", "a switch uplink at x4"],
)
def test_a_downtrained_link_fails_naming_the_device(tmp_path: Path, host: Host, device: str, says: str) -> None:
    names, result = _read(tmp_path, host)
    assert len(result["differences"]) == 1, result["differences"]
    assert names[device] in result["differences"][0] and says in result["differences"][0]


def test_an_idle_gpus_lower_link_speed_is_not_held_against_it_unless_asked(tmp_path: Path) -> None:
    names, result = _read(tmp_path, Host(speed={"GPU5": "2.5 GT/s PCIe"}))
    assert result["differences"] == []
    asked = hb.read_baseline(str(tmp_path), NICS, 8, gpu_link_speed=True)
    assert asked["differences"] == [
        f"GPU5 {names['GPU5']} PCIe link speed: expected 32.0 GT/s PCIe, found 2.5 GT/s PCIe"
    ]


def test_acs_on_a_switch_fails_naming_its_ports_and_the_bits_set(tmp_path: Path) -> None:
    _, result = _read(tmp_path, Host(acs={(1, 1): 0x001D}))
    assert result["differences"] == [
        f"PCIe switch port {port} ACS control: expected 0x0000, found 0x001d (SrcValid+ReqRedir+CmpltRedir+UpstreamFwd)"
        for port in ("0000:92:00.0", "0000:92:01.0")
    ]


def test_the_acs_reader_walks_the_extended_capability_list() -> None:
    import sysfs_trees

    assert hb.acs_control(sysfs_trees._config(0x0004)) == 0x0004
    assert hb.acs_control(sysfs_trees._config(None)) is None  # no ACS capability: nothing to redirect
    # The kernel shows a PCIe function's `config` as 4096 bytes and gives a user other than root 64 of them;
    # a function without extended space (conventional PCI, a virtual machine's) is 256 bytes: no ACS there.
    with pytest.raises(ValueError, match="only 64 bytes"):
        hb.acs_control(bytes(64), 4096)
    assert hb.acs_control(bytes(256), 256) is None


def test_a_switch_port_whose_config_space_cannot_be_read_is_no_pass(tmp_path: Path) -> None:
    build(tmp_path)
    port = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:02:00.0" / "config"
    port.unlink()
    port.mkdir()  # reading it fails, as a read of the real file fails when the device is gone
    result = hb.read_baseline(str(tmp_path), NICS, 8)
    (bad,) = result["differences"]
    assert bad.startswith("PCIe switch port 0000:02:00.0 ACS control: expected 0x0000, found unreadable: ")


def test_a_netdev_below_its_pci_function_is_found_and_a_non_pci_one_named(tmp_path: Path) -> None:
    names = build(tmp_path)
    # virtio-net's netdev names a virtioN device below the PCI function, not the function itself.
    link = tmp_path / "sys" / "class" / "net" / "eth1" / "device"
    function = link.resolve()
    (function / "virtio3").mkdir()
    link.unlink()
    link.symlink_to(os.path.relpath(function / "virtio3", link.parent))
    (tmp_path / "sys" / "devices" / "virtual" / "net" / "ifb0").mkdir(parents=True)
    ifb = tmp_path / "sys" / "class" / "net" / "ifb0"
    ifb.mkdir()
    (ifb / "device").symlink_to(os.path.relpath(tmp_path / "sys" / "devices" / "virtual" / "net" / "ifb0", ifb))
    result = hb.read_baseline(str(tmp_path), [*NICS, {"interface": "ifb0", "rail": 3}], 8)
    assert result["facts"]["nics"][0]["pci"] == names["eth1"]
    assert result["differences"] == ["NIC ifb0 (rail 3) PCI device: expected present, found not a PCI device (ifb0)"]


def test_cpus_without_cpufreq_are_the_firmwares_to_govern(tmp_path: Path) -> None:
    build(tmp_path)
    for governor in (tmp_path / "sys" / "devices" / "system" / "cpu").glob("cpu*/cpufreq/scaling_governor"):
        governor.unlink()
    result = hb.read_baseline(str(tmp_path), NICS, 8)
    assert result["differences"] == []
    assert "CPU frequency governor (no cpufreq: the firmware governs)" in [c["setting"] for c in result["checks"]]


@pytest.mark.parametrize(
    ("host", "says"),
    [
        (Host(iommu_type="DMA-FQ"), "IOMMU mode of the GPUs and rail NICs: expected off or passthrough, found "
         "translated (DMA-FQ) on GPU0"),
        (Host(governor="powersave"), "CPU frequency governor: expected performance, found powersave on cpu 0-31"),
        (Host(deep_cstates_disabled=False), "CPU idle states deeper than 2 us exit latency: expected disabled, found "
         "C1E (10 us) enabled on cpu 0-31; C6 (170 us) enabled on cpu 0-31"),
        (Host(irq_cpus={"eth2": "0-3"}), "NIC eth2 IRQ affinity: expected CPUs of NUMA node 1 (16-31), found IRQ "
         "104,105,106,107 on 0-3"),
    ],
    ids=["translated IOMMU", "powersave", "deep C-states", "IRQs off the NIC's node"],
)  # fmt: skip
def test_iommu_cpu_power_and_irq_affinity(tmp_path: Path, host: Host, says: str) -> None:
    _, result = _read(tmp_path, host)
    assert len(result["differences"]) == 1 and result["differences"][0].startswith(says), result["differences"]


def test_no_iommu_passes_and_infiniband_adapters_are_found_by_rdma_device(tmp_path: Path) -> None:
    host = Host(iommu_type=None, nics={"mlx5_0": (0, 0), "mlx5_1": (1, 0)}, nic_class="infiniband")
    adapters = [{"device": "mlx5_0", "rail": 1}, {"device": "mlx5_1", "rail": 2}]
    _, result = _read(tmp_path, host, nics=adapters)
    assert result["differences"] == []
    assert [p["nic"] for p in result["facts"]["pairs"]] == ["mlx5_0", "mlx5_1"]


def test_missing_gpus_and_nics_are_counted_not_skipped(tmp_path: Path) -> None:
    build(tmp_path, Host(gpus_per_switch=1))
    result = hb.read_baseline(str(tmp_path), [*NICS, {"interface": "eth9", "rail": 3}], 8)
    assert result["differences"][:2] == [
        "NVIDIA GPUs on the PCI bus: expected 8, found 4",
        "NIC eth9 (rail 3) PCI device: expected present, found missing",
    ]


# -- the role, through ansible-playbook ---------------------------------------------------------------


def _gpu01() -> dict[str, Any]:
    plan = build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))
    found = next(h for h in inventory.build(plan) if h.name == "gpu01")
    return {k: v for k, v in inventory.ansible_vars(found).items() if k.startswith("gpufabric_")}


def _play(tmp_path: Path, **extra: Any) -> subprocess.CompletedProcess[str]:
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "host_baseline_root": str(tmp_path / "tree"),
        "host_baseline_facts_dir": str(tmp_path / "facts"),
        **_gpu01(),
        **extra,
    }
    (tmp_path / "inv.yml").write_text(yaml.safe_dump({"all": {"hosts": {"gpu01": host}}}))
    (tmp_path / "play.yml").write_text(
        yaml.safe_dump([{"name": "baseline", "hosts": "all", "gather_facts": False, "roles": ["host_baseline"]}])
    )
    return run(
        str(BIN / "ansible-playbook"), "-i", "inv.yml", "play.yml",
        cwd=tmp_path, ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_NOCOLOR="1", **PERSISTENT,
    )  # fmt: skip


@pytest.mark.slow
def test_the_role_passes_a_good_host_and_keeps_what_it_read_for_the_export(tmp_path: Path) -> None:
    build(tmp_path / "tree", Host(nics={"eth1": (1, 0), "eth2": (0, 0)}))  # eth1 on socket 1: rail 1 is not GPU0's
    done = _play(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    facts = json.loads((tmp_path / "facts" / "gpu01.json").read_text())
    assert facts["host"] == "gpu01" and facts["source"] == "sysfs"
    assert {p["nic"]: p["gpus"] for p in facts["pairs"]} == {"eth1": [4, 5, 6, 7], "eth2": [0, 1, 2, 3]}


@pytest.mark.slow
def test_the_role_fails_naming_the_device_and_a_lab_container_is_not_read(tmp_path: Path) -> None:
    names = build(tmp_path / "tree", Host(width={"GPU6": 8}))
    done = _play(tmp_path)
    assert done.returncode != 0
    assert f"GPU6 {names['GPU6']} PCIe link width: expected x16, found x8" in " ".join(done.stdout.split())
    lab = _play(tmp_path, gpufabric_lab_container=True)
    assert lab.returncode == 0, lab.stdout[-3000:]
    assert "Read the host's PCIe" in lab.stdout and "skipping: [gpu01]" in lab.stdout


@pytest.mark.slow
@pytest.mark.parametrize("container", [False, True], ids=["a GPU host", "a lab container"])
def test_validate_yml_gathers_the_baselines_checks_as_it_gathers_the_other_roles(
    tmp_path: Path, container: bool
) -> None:
    """The tasks and variable playbooks/validate.yml uses (tasks_from: validate.yml, host_baseline_checks)
    and its verdict's filter: one difference named on a GPU host, no check at all on a lab container."""
    names = build(tmp_path / "tree", Host(width={"eth2": 8}))
    play = [{"name": "read back", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Baseline", "ansible.builtin.import_role": {"name": "host_baseline", "tasks_from": "validate.yml"}},
        {"name": "Verdict", "ansible.builtin.debug": {"msg": "{{ host_baseline_checks | gpufabric_differences }}"}},
        {"name": "Count", "ansible.builtin.debug": {"msg": "checks={{ host_baseline_checks | length }}"}},
    ]}]  # fmt: skip
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "host_baseline_root": str(tmp_path / "tree"), "gpufabric_lab_container": container, **_gpu01()}  # fmt: skip
    (tmp_path / "inv.yml").write_text(yaml.safe_dump({"all": {"hosts": {"gpu01": host}}}))
    done = run(str(BIN / "ansible-playbook"), "-i", "inv.yml", "play.yml", cwd=tmp_path,
               ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_NOCOLOR="1", **PERSISTENT,
               ANSIBLE_FILTER_PLUGINS=str(ROOT / "roles" / "host_network" / "filter_plugins"))  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    said = " ".join(done.stdout.split())
    if container:
        assert "checks=0" in said and "PCIe link width" not in said
    else:
        assert f"NIC eth2 {names['eth2']} PCIe link width: expected x16, found x8" in said
        assert "checks=0" not in said
