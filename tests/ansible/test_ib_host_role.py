"""The ib_host role run by the real ansible-playbook on this machine, with a host's `gpufabric_infiniband` as
the plan exports it (inventory/examples/superpod-ib.yml) and its files written into a test folder.

ConnectX adapters cannot run here: the role reads a prepared sysfs tree instead (a stand-in for the
kernel's, built by `_sysfs` below with the layout the kernel gives: ports/1/link_layer, state, pkeys/N,
device/net/<ipoib interface>). Real: Ansible, the role's tasks, templates and filters, idempotence.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_helpers import PERSISTENT
from conftest import run
from networkd_helpers import networkd_log

from gpufabric.export import inventory
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXAMPLE = ROOT / "inventory" / "examples" / "superpod-ib.yml"

pytestmark = pytest.mark.slow  # ansible-playbook runs: a few seconds each


def _host_facts(host: str = "dgx097", *, ipoib: bool = True) -> dict[str, Any]:
    plan = build_plan(load_intent(str(EXAMPLE)))
    found = next(h for h in inventory.build(plan) if h.name == host)
    facts = inventory.ansible_vars(found)
    if not ipoib:
        facts["gpufabric_infiniband"]["ipoib"] = []
    return {k: v for k, v in facts.items() if k.startswith("gpufabric_")}


def _sysfs(root: Path, devices: list[str], *, link_layer: str = "InfiniBand", state: str = "4: ACTIVE",
           pkeys: tuple[str, ...] = ("0xffff", "0x7fff", "0x8102"), odd: str | None = None) -> None:  # fmt: skip
    for i, dev in enumerate(devices):
        port = root / "class" / "infiniband" / dev / "ports" / "1"
        (port / "pkeys").mkdir(parents=True)
        (port / "link_layer").write_text(f"{link_layer if dev != odd else 'Ethernet'}\n")
        (port / "state").write_text(f"{state}\n")
        table = pkeys if dev != odd else (pkeys[0], pkeys[2], pkeys[1])
        for n, value in enumerate(table):
            (port / "pkeys" / str(n)).write_text(f"{value}\n")
        (root / "class" / "infiniband" / dev / "device" / "net" / f"ib{i}").mkdir(parents=True)


def _play(tmp_path: Path, facts: dict[str, Any], **extra: Any) -> subprocess.CompletedProcess[str]:
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "ib_host_sysfs": str(tmp_path / "sys"),
        "ib_host_nccl_conf": str(tmp_path / "etc" / "nccl.conf"),
        "ib_host_network_dir": str(tmp_path / "etc" / "network"),
        "ib_host_apply": False,
        **facts,
        **extra,
    }
    (tmp_path / "etc" / "network").mkdir(parents=True, exist_ok=True)
    (tmp_path / "inv.yml").write_text(yaml.safe_dump({"all": {"hosts": {"dgx097": host}}}))
    (tmp_path / "play.yml").write_text(
        yaml.safe_dump([{"name": "ib", "hosts": "all", "gather_facts": False, "roles": ["ib_host"]}])
    )
    return run(
        str(BIN / "ansible-playbook"), "-i", "inv.yml", "play.yml",
        cwd=tmp_path, ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_NOCOLOR="1", **PERSISTENT,
    )  # fmt: skip


def _devices(facts: dict[str, Any]) -> list[str]:
    return [a["device"] for a in facts["gpufabric_infiniband"]["adapters"]]


def _recap(out: str) -> dict[str, int]:
    line = next(ln for ln in out.splitlines() if ln.startswith("dgx097") and "ok=" in ln)
    return {k: int(v) for k, v in (p.split("=") for p in line.split(":", 1)[1].split())}


def test_nccl_and_ipoib_from_the_plan_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    facts = _host_facts()
    _sysfs(tmp_path / "sys", _devices(facts))
    done = _play(tmp_path, facts)
    assert done.returncode == 0, done.stdout[-3000:]
    nccl = [ln for ln in (tmp_path / "etc" / "nccl.conf").read_text().splitlines() if ln.startswith("NCCL_")]
    # dgx097 is tenant-b's (PKey 0x0102, SL 2): its full-member key 0x8102 sits at index 2 of every table.
    assert nccl == [
        "NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1",
        "NCCL_IB_PKEY=2",
        "NCCL_IB_SL=2",
        "NCCL_SOCKET_IFNAME==enp83s0f0np0",
    ]
    files = {p.name: p.read_text() for p in (tmp_path / "etc" / "network").iterdir()}
    assert set(files) == {"30-gpufabric-ib0.8102.netdev", "30-gpufabric-parent.network", "30-gpufabric-child.network"}
    netdev = files["30-gpufabric-ib0.8102.netdev"]
    assert "Name=ib0.8102\nKind=ipoib\nMTUBytes=4092" in netdev and "PartitionKey=0x8102\nMode=datagram" in netdev
    assert (
        "Name=ib0\n" in files["30-gpufabric-parent.network"]
        and "IPoIB=ib0.8102" in files["30-gpufabric-parent.network"]
    )
    assert "Address=10.140.0.97/24" in files["30-gpufabric-child.network"]
    again = _play(tmp_path, facts)
    assert again.returncode == 0 and _recap(again.stdout)["changed"] == 0, again.stdout[-2000:]


@pytest.mark.parametrize("mode", ["datagram", "connected"])
def test_systemd_networkd_takes_the_ipoib_files_as_written(tmp_path: Path, mode: str) -> None:
    """systemd-networkd's own parser reads the partition child's .netdev (kind, PartitionKey, Mode: the mode is
    configuration, so it holds across a reboot) and both .network files without rejecting or ignoring a line."""
    facts = _host_facts()
    facts["gpufabric_infiniband"]["ipoib"][0]["mode"] = mode
    _sysfs(tmp_path / "sys", _devices(facts))
    done = _play(tmp_path, facts)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"Mode={mode}\n" in (tmp_path / "etc" / "network" / "30-gpufabric-ib0.8102.netdev").read_text()
    log = networkd_log(tmp_path / "etc" / "network")
    assert "Enumeration completed" in log, log[-2000:]
    complaints = [ln for ln in log.splitlines() if "/run/systemd/network/" in ln]
    assert not complaints, "\n".join(complaints)  # networkd names the file and line of every setting it refuses
    assert re.search(r"^ib0\.8102: loaded \"?ipoib\"?", log, re.M), log[-2000:]


def test_an_ipoib_interface_named_otherwise_than_planned_fails_with_both_names(tmp_path: Path) -> None:
    facts = _host_facts()
    facts["gpufabric_infiniband"]["ipoib"][0]["netdev"] = "ibp12s0"
    _sysfs(tmp_path / "sys", _devices(facts))
    done = _play(tmp_path, facts)
    assert done.returncode != 0
    said = " ".join(done.stdout.split())
    assert "adapter mlx5_0's IPoIB interface is ib0, the plan names it ibp12s0" in said, done.stdout[-3000:]
    assert list((tmp_path / "etc" / "network").iterdir()) == []


def test_no_ipoib_files_unless_the_plan_asks(tmp_path: Path) -> None:
    facts = _host_facts(ipoib=False)
    _sysfs(tmp_path / "sys", _devices(facts))
    done = _play(tmp_path, facts)
    assert done.returncode == 0, done.stdout[-3000:]
    assert list((tmp_path / "etc" / "network").iterdir()) == []
    settings = [
        ln.split("=")[0] for ln in (tmp_path / "etc" / "nccl.conf").read_text().splitlines() if ln.startswith("NCCL_")
    ]
    assert settings == ["NCCL_IB_HCA", "NCCL_IB_PKEY", "NCCL_IB_SL", "NCCL_SOCKET_IFNAME"]  # no GID index, no TC


@pytest.mark.parametrize(
    ("sysfs", "says"),
    [
        ({"odd": "mlx5_5"}, "adapter mlx5_5 (rail 4, to su4-leaf4 port 1) has link layer Ethernet"),
        ({"state": "2: INIT"}, "state 2: INIT: the plan wants an InfiniBand port, ACTIVE"),
        ({"pkeys": ("0xffff", "0x7fff", "0x8101")}, "partition key 0x8102 (tenant-b) is at indexes [None"),
    ],
    ids=["a RoCE NIC where an adapter is planned", "a port the SM has not swept", "not in the partition"],
)
def test_a_host_that_differs_from_the_plan_fails_with_the_adapter_named(tmp_path: Path, sysfs: dict, says: str) -> None:
    facts = _host_facts(ipoib=False)
    _sysfs(tmp_path / "sys", _devices(facts), **sysfs)
    done = _play(tmp_path, facts)
    assert done.returncode != 0
    assert says in " ".join(done.stdout.split()), done.stdout[-3000:]
    assert not (tmp_path / "etc" / "nccl.conf").exists()
