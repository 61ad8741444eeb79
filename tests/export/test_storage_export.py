"""`gpufabric export storage`: each GPU server's storage clients, judged where their project's parser runs here.

- systemd mount units: `systemd-analyze verify` (systemd's own unit loader; the unit name must match `Where=`,
  which `systemd-escape --path` computes) with a stand-in lnet.service, since no Lustre is installed here.
- NFS over RDMA options: `mount --fake -t nfs` (util-linux and nfs-utils' mount.nfs parse the source and the
  options, and refuse an unknown transport, without mounting anything).
- cufile.json: Python's JSON parser; NVIDIA publishes no schema for it.
- lnet.conf: a YAML parser, and the shape the Lustre manual gives lnetctl's import format, checked by us; no
  lnetctl runs here (no Lustre package in this distribution). BeeGFS: judged by none here.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ALL_INTENTS, INVENTORY, default_doc, example_plan, plan_doc, run, sized

from gpufabric.export import storage
from gpufabric.intent import IntentError


def _doc(*file_systems: dict[str, Any]) -> dict[str, Any]:
    """The default fabric with a metadata server group and the given file systems."""
    doc = copy.deepcopy(default_doc())
    meta = {"name": "meta", "kind": "storage", "count": 1, "naming": "meta{index:02d}",
            "nics": {"storage": {"speed": "200G", "interfaces": ["eth1"]}}}  # fmt: skip
    doc["server_groups"].insert(1, meta)
    doc["planes"]["storage"]["file_systems"] = list(file_systems)
    return doc


NFS = {"name": "home", "type": "nfs", "data": ["storage"], "mount": "/home/shared", "export": "/srv/home"}
NFS["nconnect"] = 16
LUSTRE = {"name": "scratch", "type": "lustre", "data": ["storage"], "metadata": ["meta"], "mount": "/lustre/scr-1"}
BEEGFS = {"name": "fast", "type": "beegfs", "data": ["storage"], "metadata": ["meta"], "mount": "/mnt/beegfs"}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("storage")
    intent = folder / "fabric.yml"
    intent.write_text(yaml.safe_dump(_doc(NFS, LUSTRE), sort_keys=False))
    done = run("gpufabric", "export", "storage", str(intent), "-o", str(folder / "out"))
    assert done.returncode == 0, done.stderr
    return folder / "out"


def test_every_gpu_server_gets_a_folder_and_no_storage_server_does(written: Path) -> None:
    assert sorted(p.name for p in written.iterdir()) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    manifest = json.loads((written / "gpu01" / "manifest.json").read_text())
    assert [(f["file"], f["dest"]) for f in manifest["files"]] == [
        ("lnet.conf", "/etc/lnet.conf"),
        ("home-shared.mount", "/etc/systemd/system/home-shared.mount"),
        ("lustre-scr\\x2d1.mount", "/etc/systemd/system/lustre-scr\\x2d1.mount"),
        ("cufile.json", "/etc/cufile.json"),
    ]
    assert manifest["gds_interfaces"] == ["eth3"]


def test_nfs_clients_spread_over_the_data_servers_with_rdma_options(written: Path) -> None:
    plan = plan_doc(_doc(NFS, LUSTRE))
    servers = {s.name: s for s in plan.servers}
    addresses = [storage.ip(servers[f"stor0{i}"].nics[0].address) for i in (1, 2)]
    whats = []
    for host in ("gpu01", "gpu02", "gpu03", "gpu04"):
        unit = (written / host / "home-shared.mount").read_text()
        assert "Options=proto=rdma,port=20049,nconnect=16,hard\n" in unit
        assert "Where=/home/shared\nType=nfs\n" in unit
        whats.append(next(ln for ln in unit.splitlines() if ln.startswith("What=")))
    assert whats == [f"What={a}:/srv/home" for a in (*addresses, *addresses)]


def test_lustre_gets_one_o2ib_network_per_storage_nic_and_the_mgs_nids(written: Path) -> None:
    """The shape of lnetctl's import format (Lustre manual, "Configuring LNet via lnetctl"), read back by a
    YAML parser: a `net` list, each with `net type` and `local NI(s)` holding `interfaces`."""
    doc = yaml.safe_load((written / "gpu01" / "lnet.conf").read_text())
    assert doc == {"net": [{"net type": "o2ib0", "local NI(s)": [{"interfaces": {0: "eth3"}}]}]}
    plan = plan_doc(_doc(NFS, LUSTRE))
    meta = next(s for s in plan.servers if s.name == "meta01")
    unit = (written / "gpu01" / "lustre-scr\\x2d1.mount").read_text()
    assert f"What={storage.ip(meta.nics[0].address)}@o2ib0:/scratch\n" in unit
    assert "Requires=lnet.service\n" in unit


def test_two_storage_nics_make_two_o2ib_networks() -> None:
    doc = _doc(LUSTRE)
    doc["server_groups"][0]["nics"]["storage"]["interfaces"] = ["eth3", "eth5"]
    plan = plan_doc(doc)
    gpu = next(s for s in plan.servers if s.name == "gpu01")
    assert yaml.safe_load(storage.lnet_yaml(gpu))["net"] == [
        {"net type": "o2ib0", "local NI(s)": [{"interfaces": {0: "eth3"}}]},
        {"net type": "o2ib1", "local NI(s)": [{"interfaces": {0: "eth5"}}]},
    ]
    # The metadata server has one NIC: its NID on o2ib0 only.
    assert storage.mgs_nids(plan, plan.intent.planes.storage.file_systems[0], 2).endswith("@o2ib0")


def test_cufile_json_is_json_with_the_servers_storage_addresses(written: Path) -> None:
    """No published schema for cufile.json: the parser and the key NVIDIA documents are what is held."""
    plan = plan_doc(_doc(NFS, LUSTRE))
    gpu = next(s for s in plan.servers if s.name == "gpu03")
    doc = json.loads((written / "gpu03" / "cufile.json").read_text())
    assert doc == {"properties": {"rdma_dev_addr_list": [storage.ip(gpu.nics[2].address)]}}
    assert gpu.nics[2].plane == "storage"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_loads_every_mount_unit_without_a_word(written: Path, tmp_path: Path) -> None:
    """systemd's unit loader: a unit whose name does not match Where=, or with an unknown key, is reported.
    lnet.service is a stand-in (no Lustre here), so the Requires= of the Lustre unit resolves."""
    units = tmp_path / "units"
    shutil.copytree(written / "gpu01", units)
    (units / "lnet.service").write_text("[Service]\nType=oneshot\nExecStart=/bin/true\n")
    mounts = sorted(str(p) for p in units.glob("*.mount"))
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{units}:"}
    done = subprocess.run(["systemd-analyze", "verify", *mounts], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr
    for unit in units.glob("*.mount"):
        where = next(ln[6:] for ln in unit.read_text().splitlines() if ln.startswith("Where="))
        escaped = subprocess.run(["systemd-escape", "--path", "--suffix=mount", where], capture_output=True,
                                 text=True, check=True).stdout.strip()  # fmt: skip
        assert escaped == unit.name


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_the_unit_check_can_fail(tmp_path: Path) -> None:
    """The judge above says no to a unit named apart from its mount point."""
    (tmp_path / "wrong.mount").write_text("[Mount]\nWhat=10.0.0.1:/\nWhere=/home/shared\nType=nfs\n")
    done = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "wrong.mount")], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode != 0
    assert "doesn't match unit name" in done.stderr


def _fake_mount(what: str, options: str, where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", "--fake", "-v", "-t", "nfs", "-o", options, what, str(where)],
                          capture_output=True, text=True, check=False, timeout=60)  # fmt: skip


@pytest.mark.skipif(
    shutil.which("mount.nfs") is None or os.geteuid() != 0, reason="mount.nfs (nfs-common) and root are needed"
)
def test_mount_nfs_takes_the_units_source_and_options_and_refuses_another_transport(
    written: Path, tmp_path: Path
) -> None:
    unit = (written / "gpu02" / "home-shared.mount").read_text().splitlines()
    what = next(ln[5:] for ln in unit if ln.startswith("What="))
    options = next(ln[8:] for ln in unit if ln.startswith("Options="))
    done = _fake_mount(what, options, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "proto=rdma,port=20049,nconnect=16" in done.stdout + done.stderr
    refused = _fake_mount(what, options.replace("proto=rdma", "proto=rdmx"), tmp_path)
    assert refused.returncode != 0
    assert "rdmx" in refused.stderr


def test_beegfs_gets_its_interfaces_files_keys_and_mount_line() -> None:
    plan = plan_doc(_doc(BEEGFS))
    files = storage.documents(plan)
    meta = next(s for s in plan.servers if s.name == "meta01")
    keys = files["gpu01/beegfs-client.conf.keys"]
    assert f"sysMgmtdHost = {storage.ip(meta.nics[0].address)}\n" in keys
    assert "connInterfacesFile = /etc/beegfs/gpufabric-fast-interfaces\n" in keys
    assert "connRDMAInterfacesFile = /etc/beegfs/gpufabric-fast-rdma-interfaces\n" in keys
    assert files["gpu01/beegfs-fast-rdma-interfaces"] == "eth3\n"
    assert files["gpu01/beegfs-mounts.conf.line"] == "/mnt/beegfs /etc/beegfs/beegfs-client.conf\n"


@pytest.mark.parametrize(
    ("change", "path", "says"),
    [
        ({**NFS, "metadata": ["meta"]}, ("planes", "storage", "file_systems", 0), "no metadata servers apart"),
        ({**LUSTRE, "metadata": []}, ("planes", "storage", "file_systems", 0), "needs its metadata servers"),
        ({**LUSTRE, "name": "scratch01"}, ("planes", "storage", "file_systems", 0, "name"), "8 characters at most"),
        ({**NFS, "data": ["gpu"]}, ("planes", "storage", "file_systems", 0, "data", 0), "of kind gpu"),
        ({**NFS, "data": ["nope"]}, ("planes", "storage", "file_systems", 0, "data", 0), "no server group 'nope'"),
        ({**NFS, "mount": "/mnt/$(reboot)"}, ("planes", "storage", "file_systems", 0, "mount"), "an absolute path"),
        ({**LUSTRE, "nconnect": 4}, ("planes", "storage", "file_systems", 0), "NFS options"),
    ],
)
def test_a_file_system_the_plan_cannot_serve_is_refused_where_it_is_written(
    change: dict[str, Any], path: tuple[Any, ...], says: str
) -> None:
    with pytest.raises(IntentError) as refused:
        plan_doc(_doc(change))
    assert any(p.path[: len(path)] == path and says in p.message + p.hint for p in refused.value.problems), [
        (p.path, p.message) for p in refused.value.problems
    ]


def test_no_file_system_is_refused_with_exit_2(tmp_path: Path) -> None:
    doc = copy.deepcopy(default_doc())
    del doc["planes"]["storage"]["file_systems"]
    intent = tmp_path / "fabric.yml"
    intent.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run("gpufabric", "export", "storage", str(intent), "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "planes.storage.file_systems" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


# -- every shipped example with a storage plane ----------------------------------------------------------

STORAGE_EXAMPLES = [p for p in ALL_INTENTS if (yaml.safe_load(p.read_text())["planes"].get("storage") or {})]


def _judged_hosts(out: Path) -> list[Path]:
    """The first and the last client's folders (a 32k example has 4,096: they differ in addresses only)."""
    hosts = sorted(p for p in out.iterdir() if p.is_dir())
    return [hosts[0], hosts[-1]] if len(hosts) > 1 else hosts


def _systemd_verifies(units: list[Path], tmp: Path) -> subprocess.CompletedProcess[str]:
    """systemd's unit loader on the units, lnet.service standing in for Lustre's (not installed here)."""
    folder = tmp / "units"
    folder.mkdir()
    for unit in units:
        shutil.copy(unit, folder / unit.name)
    (folder / "lnet.service").write_text("[Service]\nType=oneshot\nExecStart=/bin/true\n")
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{folder}:"}
    names = [str(folder / u.name) for u in units]
    return subprocess.run(["systemd-analyze", "verify", *names], capture_output=True, text=True, env=env, check=False)


@pytest.mark.parametrize(
    "example",
    sized(STORAGE_EXAMPLES),
    ids=lambda p: p.stem,
)
def test_every_example_with_a_storage_plane_renders_its_clients(example: Path, tmp_path: Path) -> None:
    """`export storage` writes every GPU server on the storage plane a folder, each file its manifest lists,
    judged where the file's own parser runs here: mount units by systemd (and NFS options by mount.nfs), the
    JSON by a JSON parser, lnet.conf by a YAML parser against the Lustre manual's shape."""
    out = tmp_path / "out"
    done = run("gpufabric", "export", "storage", str(example), "-o", str(out))
    assert done.returncode == 0, done.stderr
    plan = example_plan(example)
    fs = plan.intent.planes.storage.file_systems
    assert fs, f"{example.name} names no file system on its storage plane"
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(s.name for s in storage.clients(plan))
    units: list[Path] = []
    for host in _judged_hosts(out):
        manifest = json.loads((host / "manifest.json").read_text())
        listed = {f["file"] for f in manifest["files"]}
        assert listed | {"manifest.json"} == {p.name for p in host.iterdir()}
        assert {unit_of for unit_of in listed if unit_of.endswith(".mount")} == {
            storage.unit_name(f.mount) for f in fs if f.type != "beegfs"
        }
        units += [host / n for n in sorted(listed) if n.endswith(".mount")]
        if "cufile.json" in listed:
            addresses = json.loads((host / "cufile.json").read_text())["properties"]["rdma_dev_addr_list"]
            assert addresses and len(set(addresses)) == len(addresses), addresses
        if "lnet.conf" in listed:
            nets = yaml.safe_load((host / "lnet.conf").read_text())["net"]
            assert [n["net type"] for n in nets] == [f"o2ib{k}" for k in range(len(nets))]
    if shutil.which("systemd-analyze"):
        verified = _systemd_verifies(units, tmp_path)
        assert verified.returncode == 0 and verified.stderr.strip() == "", verified.stderr
    nfs_units = [u for u in units if "Type=nfs\n" in u.read_text()]
    if nfs_units and shutil.which("mount.nfs") and os.geteuid() == 0:
        lines = nfs_units[0].read_text().splitlines()
        what = next(ln[5:] for ln in lines if ln.startswith("What="))
        options = next(ln[8:] for ln in lines if ln.startswith("Options="))
        (tmp_path / "mnt").mkdir()
        mounted = _fake_mount(what, options, tmp_path / "mnt")
        assert mounted.returncode == 0, mounted.stderr


def test_a_storage_plane_with_no_storage_servers_is_refused_saying_so(tmp_path: Path) -> None:
    """superpod-b200-ib without its storage appliances: the storage plane carries the GPU servers' storage ports
    to storage the intent does not describe, no file system can be named, and the export says what is
    missing, with exit 2."""
    doc = yaml.safe_load((INVENTORY / "examples" / "superpod-b200-ib.yml").read_text())
    doc["server_groups"] = [g for g in doc["server_groups"] if g.get("kind") != "storage"]
    del doc["planes"]["storage"]["file_systems"]
    intent = tmp_path / "no-storage-servers.yml"
    intent.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run("gpufabric", "export", "storage", str(intent), "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and "planes.storage.file_systems" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_a_bonded_pair_is_one_port_with_one_address() -> None:
    """multi-vendor bonds each server's two storage NICs (`host_links: lacp`): the IP stack has one address,
    on the bond, so LNet gets one network on the bond and cuFile the address once; the NUMA check keeps the
    members, which have PCIe devices."""
    plan = example_plan(INVENTORY / "examples" / "multi-vendor.yml")
    gpu = plan.servers[0]
    members = [n for n in gpu.nics if n.plane == "storage"]
    assert len(members) == 2 and {n.bond for n in members} == {"bond-storage"}
    assert yaml.safe_load(storage.lnet_yaml(gpu))["net"] == [
        {"net type": "o2ib0", "local NI(s)": [{"interfaces": {0: "bond-storage"}}]}
    ]
    assert json.loads(storage.cufile_json(gpu))["properties"]["rdma_dev_addr_list"] == [storage.ip(members[0].address)]
    manifest = json.loads(storage.documents(plan)[f"{gpu.name}/manifest.json"])
    assert manifest["gds_interfaces"] == [n.interface for n in members]
