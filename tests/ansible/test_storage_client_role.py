"""roles/storage_client: what it derives from the export's manifest (templated by Ansible's own Templar), and its
NUMA check of the GPUs against cufile.json's NICs on prepared sysfs trees (no GPU, no ConnectX here)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from conftest import ROOT, default_doc, run
from sysfs_trees import Host, build

ROLE = ROOT / "roles" / "storage_client"
MODULE = ROLE / "library" / "gpufabric_gds_numa.py"
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpufabric_gds_numa", MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


numa = _module()


def test_every_gpu_with_a_listed_nic_on_its_numa_node_passes(tmp_path: Path) -> None:
    """The tree: GPU0-3 on node 0, GPU4-7 on node 1; one storage NIC on each socket."""
    build(tmp_path, Host(nics={"stor1": (0, 1), "stor2": (1, 1)}))
    found = numa.read_placement(str(tmp_path), ["stor1", "stor2"])
    assert [g["nics"] for g in found["gpus"]] == [["stor1"]] * 4 + [["stor2"]] * 4
    assert found["remote"] == [] and found["missing"] == []
    assert numa.message(found) == "every GPU (8) has a storage NIC of cufile.json on its NUMA node"


def test_gpus_on_a_node_without_a_listed_nic_are_named(tmp_path: Path) -> None:
    names = build(tmp_path, Host(nics={"stor1": (0, 1), "stor2": (0, 0)}))
    found = numa.read_placement(str(tmp_path), ["stor1", "stor2"])
    assert found["remote"] == [names[f"GPU{i}"] for i in range(4, 8)]
    assert "(NUMA node 1) have no storage NIC of cufile.json on their NUMA node" in numa.message(found)


def test_a_listed_nic_the_host_lacks_and_a_hostile_name_are_missing_not_read(tmp_path: Path) -> None:
    build(tmp_path, Host(nics={"stor1": (0, 1)}))
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "numa_node").write_text("0\n")
    found = numa.read_placement(str(tmp_path), ["stor1", "stor9", "../../../secret/.."])
    assert found["missing"] == ["stor9", "../../../secret/.."]
    assert found["remote"]  # node 1's GPUs have none


def _derived(tmp_path: Path, name: str, variables: dict[str, Any]) -> Any:
    """The role's derived variable `name` as ansible-playbook resolves it (its lookups too), on localhost."""
    out = tmp_path / "derived.json"
    play = [{
        "hosts": "localhost", "gather_facts": False, "vars_files": [str(ROLE / "vars" / "main.yml")],
        "vars": variables,
        "tasks": [{"ansible.builtin.copy": {"content": f"{{{{ {name} | to_json }}}}", "dest": str(out),
                                            "mode": "0600"}}],
    }]  # fmt: skip
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    # Outside the checkout (its ansible.cfg picks the Mitogen strategy and the plan's inventory), plain Ansible.
    python = f"ansible_python_interpreter={sys.executable}"
    done = run("ansible-playbook", "-i", "localhost,", "-c", "local", "-e", python, str(tmp_path / "play.yml"),
               cwd=tmp_path, ANSIBLE_STRATEGY="linear")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())


def test_the_beegfs_keys_are_the_exports_key_lines_and_nothing_else(tmp_path: Path) -> None:
    host = tmp_path / "localhost"
    host.mkdir()
    (host / "beegfs-client.conf.keys").write_text(
        "# Written by gpufabric\nsysMgmtdHost = 10.11.0.9\nconnUseRDMA = true\nbad line; reboot\n"
        "connInterfacesFile = /etc/beegfs/x $(reboot)\n"
    )
    entry = {"file": "beegfs-client.conf.keys", "dest": "/etc/beegfs/beegfs-client.conf", "kind": "keys"}
    manifest = {"files": [entry]}
    lines = _derived(tmp_path, "storage_client_key_lines", {"storage_client_dir": str(tmp_path),
                                                            "storage_client_manifest": manifest})  # fmt: skip
    assert [line for _, line in lines] == ["sysMgmtdHost = 10.11.0.9", "connUseRDMA = true"]


def test_the_destination_and_file_patterns_take_the_exports_names_only() -> None:
    dest = re.compile(VARS["storage_client_dest_pattern"])
    name = re.compile(VARS["storage_client_file_pattern"])
    for good in ("/etc/systemd/system/lustre-scr\\x2d1.mount", "/etc/systemd/system/mnt-\\x2efast.mount",
                 "/etc/lnet.conf", "/etc/cufile.json", "/etc/beegfs/beegfs-client.conf"):  # fmt: skip
        assert dest.match(good), good
    for bad in ("/etc/shadow", "/etc/systemd/system/evil.service", "/etc/beegfs/..", "/etc/beegfs/../shadow",
                "/etc/systemd/system/...mount", "/root/.ssh/authorized_keys", "/etc/lnet.conf.d"):  # fmt: skip
        assert not dest.match(bad), bad
    assert name.match("lustre-scr\\x2d1.mount") and name.match("cufile.json")
    for bad in ("..", ".", "../x", "a/b", "", "-x"):
        assert not name.match(bad), bad


def test_every_destination_the_export_writes_is_one_the_role_takes(tmp_path: Path) -> None:
    doc = default_doc()
    doc["server_groups"].insert(1, {"name": "meta", "kind": "storage", "count": 1, "naming": "meta{index:02d}",
                                    "nics": {"storage": {"speed": "200G", "interfaces": ["eth1"]}}})  # fmt: skip
    doc["planes"]["storage"]["file_systems"] = [
        {"name": "home", "type": "nfs", "data": ["storage"], "mount": "/home/shared"},
        {"name": "scratch", "type": "lustre", "data": ["storage"], "metadata": ["meta"], "mount": "/lustre/s"},
        {"name": "fast", "type": "beegfs", "data": ["storage"], "metadata": ["meta"], "mount": "/mnt/.fast"},
    ]
    intent = tmp_path / "fabric.yml"
    intent.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run("gpufabric", "export", "storage", str(intent), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    dest = re.compile(VARS["storage_client_dest_pattern"])
    name = re.compile(VARS["storage_client_file_pattern"])
    manifest = json.loads((tmp_path / "out" / "gpu01" / "manifest.json").read_text())
    assert len(manifest["files"]) == 8
    assert "/etc/systemd/system/mnt-\\x2efast.mount" not in [f["dest"] for f in manifest["files"]]  # BeeGFS: no unit
    for f in manifest["files"]:
        assert dest.match(f["dest"]), f
        assert name.match(f["file"]), f


@pytest.mark.slow  # runs a whole tool (the fast tier's budget): the whole suite runs it
def test_ansible_lint_production_profile_passes_on_the_role() -> None:
    done = run("ansible-lint", "-q", "--profile", "production", "roles/storage_client")
    assert done.returncode == 0, done.stdout + done.stderr


def _role_run(tmp_path: Path, manifest: dict[str, Any], files: dict[str, str], **role_vars: str) -> Any:
    """The role in check mode (nothing on this machine changes) on host gpu01 over a local connection, with
    `manifest` and `files` as the export's folder for it."""
    host = tmp_path / "out" / "gpu01"
    host.mkdir(parents=True)
    (host / "manifest.json").write_text(json.dumps(manifest))
    for name, text in files.items():
        (host / name).write_text(text)
    role = {"role": "storage_client", "storage_client_dir": str(tmp_path / "out"), **role_vars}
    play = [{"hosts": "gpu01", "gather_facts": False, "roles": [role]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    python = f"ansible_python_interpreter={sys.executable}"
    return run("ansible-playbook", "-i", "gpu01,", "-c", "local", "-e", python, "--check", str(tmp_path / "play.yml"),
               cwd=tmp_path, ANSIBLE_STRATEGY="linear", ANSIBLE_ROLES_PATH=str(ROOT / "roles"))  # fmt: skip


def test_a_manifest_sending_a_file_elsewhere_is_refused_before_anything_is_installed(tmp_path: Path) -> None:
    manifest = {"files": [
        {"file": "cufile.json", "dest": "/etc/cufile.json", "kind": "file"},
        {"file": "cufile.json", "dest": "/etc/shadow", "kind": "file"},
    ]}  # fmt: skip
    done = _role_run(tmp_path, manifest, {"cufile.json": "{}\n"})
    assert done.returncode != 0
    assert "is not one gpufabric export storage writes" in done.stdout
    assert "/etc/shadow" in done.stdout
    assert "Install the files and mount units" not in done.stdout  # stopped before any file task


@pytest.mark.slow  # runs a whole tool (the fast tier's budget): the whole suite runs it
def test_the_numa_check_fails_the_host_naming_the_gpus_far_from_every_listed_nic(tmp_path: Path) -> None:
    names = build(tmp_path / "sysroot", Host(nics={"stor1": (0, 1)}))
    manifest = {"files": [{"file": "cufile.json", "dest": "/etc/cufile.json", "kind": "file"}],
                "gds_interfaces": ["stor1"]}  # fmt: skip
    done = _role_run(tmp_path, manifest, {"cufile.json": "{}\n"}, storage_client_gds_numa="fail",
                     storage_client_sysfs_root=str(tmp_path / "sysroot"))  # fmt: skip
    assert done.returncode != 0
    assert f"GPUs {names['GPU4']}, " in done.stdout
    assert "have no storage NIC of cufile.json on their NUMA node" in done.stdout
    warned = _role_run(tmp_path / "warn", manifest, {"cufile.json": "{}\n"},
                       storage_client_sysfs_root=str(tmp_path / "sysroot"))  # fmt: skip
    assert warned.returncode == 0, warned.stdout
    assert "have no storage NIC of cufile.json on their NUMA node" in warned.stdout
