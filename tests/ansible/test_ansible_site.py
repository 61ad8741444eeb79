"""`site.yml` and the host roles without booted hosts (tests/molecule/test_molecule.py boots them).

What this shows: the playbook parses and targets the plan's hosts; the gpu_operator role derives the
Helm values from host facts and the other roles' settings (no Kubernetes runs here: the values and
the helm arguments are recorded to a file and checked, and helm is not called).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_helpers import PERSISTENT
from conftest import run

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def ansible(tool: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return run(
        str(BIN / tool), *args, cwd=cwd, ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_NOCOLOR="1", **PERSISTENT
    )


@pytest.mark.slow
def test_site_syntax_and_hosts_from_the_plan():
    assert ansible("ansible-playbook", "site.yml", "--syntax-check").returncode == 0
    listed = ansible("ansible-playbook", "site.yml", "--list-hosts")
    assert listed.returncode == 0, listed.stderr
    plays = listed.stdout.split("play #")[1:]
    hosts = [sorted(ln.strip() for ln in p.splitlines()[3:] if ln.strip()) for p in plays]
    every = ["gpu01", "gpu02", "gpu03", "gpu04", "stor01", "stor02"]
    gpu = ["gpu01", "gpu02", "gpu03", "gpu04"]
    # Data NICs on every server, then the RDMA stack, QoS, HugePages and the operator on the compute plane's
    # hosts, then the read-back on every server (the GPU hosts' own parts under a condition).
    assert hosts == [every, gpu, every]


def _strategy_module(hide_mitogen: bool) -> type:
    import importlib.util

    saved = sys.modules.get("ansible_mitogen")
    if hide_mitogen:
        sys.modules["ansible_mitogen"] = None  # type: ignore[assignment]  # an import of it now fails
    try:
        plugin = ROOT / "plugins" / "strategy" / "gpufabric_mitogen.py"
        spec = importlib.util.spec_from_file_location("strategy_under_test", plugin)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.StrategyModule
    finally:
        if hide_mitogen:
            sys.modules.pop("ansible_mitogen")
            if saved is not None:
                sys.modules["ansible_mitogen"] = saved


def test_the_strategy_is_linear_through_mitogen_and_linear_without_it():
    from ansible.plugins.strategy.linear import StrategyModule as Linear

    assert "strategy = gpufabric_mitogen" in (ROOT / "ansible.cfg").read_text()
    with_mitogen = _strategy_module(hide_mitogen=False)
    assert any(c.__module__.startswith("ansible_mitogen") for c in with_mitogen.__mro__)
    assert any(c.__name__ == "StrategyModule" and "linear" in c.__module__ for c in with_mitogen.__mro__)
    assert _strategy_module(hide_mitogen=True) is Linear  # Mitogen missing: Ansible's own linear strategy


@pytest.mark.parametrize(("setting", "pinned"), [(None, False), ("1", True)])
def test_the_strategy_leaves_cpu_placement_to_the_kernel_unless_asked(monkeypatch, setting, pinned):
    import ansible_mitogen.affinity as affinity

    monkeypatch.setattr(affinity, "policy", affinity.LinuxPolicy(cpu_count=2))
    if setting is None:
        monkeypatch.delenv("GPUFABRIC_MITOGEN_AFFINITY", raising=False)
    else:
        monkeypatch.setenv("GPUFABRIC_MITOGEN_AFFINITY", setting)
    _strategy_module(hide_mitogen=False)
    # Mitogen's own policy would pin every worker to one CPU on a 2-CPU machine; the base one assigns nothing.
    assert isinstance(affinity.policy, affinity.LinuxPolicy) is pinned
    assert type(affinity.policy) is (affinity.LinuxPolicy if pinned else affinity.Policy)


@pytest.mark.parametrize(
    ("extra", "driver_enabled", "host_mofed"),
    [({}, True, False), ({"gpu_operator_driver_preinstalled": True, "ofed_source": "doca"}, False, True)],
)
@pytest.mark.slow
def test_gpu_operator_values_follow_the_host(tmp_path, extra, driver_enabled, host_mofed):
    record = tmp_path / "gpu-operator.json"
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "gpufabric_planes": {"compute": {"carries_roce": True}, "storage": {"carries_roce": False}},
        "gpu_operator_deploy": False,
        "gpu_operator_record": str(record),
        "gpu_operator_mig_strategy": "mixed",
        **extra,
    }
    (tmp_path / "inv.yml").write_text(yaml.safe_dump({"all": {"hosts": {"gpuX": host}}}))
    (tmp_path / "play.yml").write_text(
        yaml.safe_dump([{"name": "values", "hosts": "all", "gather_facts": False, "roles": ["gpu_operator"]}])
    )
    done = ansible("ansible-playbook", "-i", str(tmp_path / "inv.yml"), str(tmp_path / "play.yml"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    helm = json.loads(record.read_text())
    rdma = {"enabled": True, "useHostMofed": host_mofed}
    assert helm["values"]["driver"] == {"enabled": driver_enabled, "rdma": rdma}
    assert helm["values"]["mig"] == {"strategy": "mixed"} and helm["values"]["dcgmExporter"] == {"enabled": True}
    assert (helm["chart_ref"], helm["release_namespace"], helm["create_namespace"]) == (
        "nvidia/gpu-operator",
        "gpu-operator",
        True,
    )
    assert "Install the GPU Operator" not in done.stdout  # gpu_operator_deploy: false never reaches helm


def _write_network_export(tmp_path, intent):
    """`gpufabric export k8s-network` of `intent` into tmp_path/net, where the role's play reads it."""
    from gpufabric.export import k8s_network
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    (tmp_path / "net").mkdir()
    for name, text in k8s_network.documents(build_plan(load_intent(str(intent)))).items():
        (tmp_path / "net" / name).write_text(text)


def _network_play(tmp_path: Path, **extra: object) -> subprocess.CompletedProcess[str]:
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "gpu_operator_deploy": False,
        "gpu_operator_record": str(tmp_path / "gpu-operator.json"),
        "gpu_operator_network_operator": True,
        "gpu_operator_network_dir": str(tmp_path / "net"),
        **extra,
    }
    (tmp_path / "inv.yml").write_text(yaml.safe_dump({"all": {"hosts": {"gpuX": host}}}))
    (tmp_path / "play.yml").write_text(
        yaml.safe_dump([{"name": "networks", "hosts": "all", "gather_facts": False, "roles": ["gpu_operator"]}])
    )
    return ansible("ansible-playbook", "-i", str(tmp_path / "inv.yml"), str(tmp_path / "play.yml"), cwd=tmp_path)


@pytest.mark.slow
def test_gpu_operator_applies_the_exported_rdma_networks_in_order(tmp_path):
    _write_network_export(tmp_path, ROOT / "inventory" / "fabric.yml")
    done = _network_play(tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    record = json.loads((tmp_path / "gpu-operator.json").read_text())
    net = tmp_path / "net"
    assert record["network_manifests"] == [
        str(net / f) for f in ("nic-cluster-policy.yaml", "ip-pools.yaml", "networks.yaml")
    ]
    # The export is host-device; a role told to run SR-IOV refuses before anything is applied.
    done = _network_play(tmp_path, gpu_operator_network_sriov=True)
    assert done.returncode != 0 and "gpu_operator_network_sriov disagree" in done.stdout
    (net / "ip-pools.yaml").unlink()
    done = _network_play(tmp_path)
    assert done.returncode != 0 and "ip-pools.yaml is missing" in done.stdout


@pytest.mark.slow  # a playbook run: seconds; in the whole suite
def test_a_spectrum_x_export_applies_the_nic_configuration_right_after_the_policy(tmp_path):
    _write_network_export(tmp_path, ROOT / "inventory" / "examples" / "spectrum-x.yml")
    done = _network_play(tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    record = json.loads((tmp_path / "gpu-operator.json").read_text())
    names = ("nic-cluster-policy.yaml", "nic-configuration.yaml", "ip-pools.yaml", "networks.yaml")
    assert record["network_manifests"] == [str(tmp_path / "net" / f) for f in names]


def test_the_read_back_verdict_lists_every_setting_found_other_than_expected():
    import importlib.util

    path = ROOT / "roles" / "host_network" / "filter_plugins" / "read_back.py"
    spec = importlib.util.spec_from_file_location("read_back_filters", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    differences = module.FilterModule().filters()["gpufabric_differences"]
    checks = [
        {"setting": "eth1 MTU", "expected": "9000", "found": "1500"},
        {"setting": "eth2 MTU", "expected": "9000", "found": "9000"},
        {"setting": "NCCL_IB_TC", "expected": "106", "found": "missing"},
    ]
    assert differences(checks) == ["eth1 MTU: expected 9000, found 1500", "NCCL_IB_TC: expected 106, found missing"]
    assert differences(checks[1:2]) == []
