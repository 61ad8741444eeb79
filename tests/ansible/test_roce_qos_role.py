"""roles/roce_qos on stand-in ConnectX NICs (tests/nic_tools/nic_standin.py: mlnx_qos, ethtool, cma_roce_tos and a
sysfs tree, answering in the tools' documented layouts; no ConnectX NIC runs here). The boot script sets every
setting through the tools, the role's reader (library/gpufabric_roce_qos.py) reads each back from the tools'
output, and the role's validate tasks, run by the real ansible-playbook, name each planted wrong setting."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_helpers import PERSISTENT
from conftest import run

from gpufabric.export import inventory
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ROLE = ROOT / "roles" / "roce_qos"
STANDIN = ROOT / "tests" / "nic_tools" / "nic_standin.py"
NICS = {"eth1": "mlx5_0", "eth2": "mlx5_1"}  # inventory/fabric.yml's gpu01: two NICs on the RoCE plane
WANT = {"priority": 3, "tos": 106, "cnp_dscp": 48, "cnp_priority": 6, "lossless": True, "global_pause_off": True}


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpufabric_roce_qos", ROLE / "library" / "gpufabric_roce_qos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rq = _module()


def _install(root: Path) -> None:
    pairs = [f"{nic}={dev}" for nic, dev in NICS.items()]
    subprocess.run([sys.executable, str(STANDIN), "install", str(root), *pairs], check=True, timeout=30)


def _runner(root: Path):
    env = {**os.environ, "PATH": f"{root / 'bin'}:{os.environ['PATH']}"}

    def run_tool(argv: list[str]) -> tuple[int, str, str]:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30, check=False)
        return done.returncode, done.stdout, done.stderr

    return run_tool


def _script(root: Path, **overrides: object) -> Path:
    variables = {
        "ansible_managed": "test",
        "roce_qos_dscp": 26,
        "roce_qos_priority": 3,
        "roce_qos_cnp_dscp": 48,
        "roce_qos_cnp_priority": 6,
        "roce_qos_tos": 106,
        "roce_qos_lossless": True,
        "roce_qos_unit": "u",
        "roce_qos_script": "s",
        "roce_qos_root": str(root),
        "roce_qos_tools_path": str(root / "bin"),
        "roce_qos_devices": {nic: {"hca": dev, "present": True} for nic, dev in NICS.items()},
        **overrides,
    }
    source = trust_as_template((ROLE / "templates" / "roce-qos.sh.j2").read_text())
    path = root.parent / "roce-qos.sh"
    path.write_text(str(Templar(loader=DataLoader(), variables=variables).template(source)))
    path.chmod(0o755)
    return path


def _read(root: Path, **want: Any) -> dict[str, Any]:
    return rq.read_qos(str(root), _runner(root), dict(NICS), {**WANT, "dcqcn": {}, **want})


# The layouts as NVIDIA's MLNX_OFED documentation prints them ("mlnx_qos -i eth2" in the Quality of Service
# section): written here from that layout, not copied from a NIC.
DOCUMENTED_MLNX_QOS = """DCBX mode: OS controlled
Priority trust state: dscp
dscp2prio mapping:
\tprio:0 dscp:07,06,05,04,03,02,01,00,
Cable len: 10
PFC configuration:
\tpriority    0   1   2   3   4   5   6   7
\tenabled     1   0   1   0   0   0   1   1

tc: 0 ratelimit: unlimited, tsa: ets, bw: 10%
\t priority:  1
"""


def test_the_reader_takes_trust_and_pfc_from_mlnx_qos_and_pause_from_ethtool_in_their_layouts() -> None:
    assert rq.parse_mlnx_qos(DOCUMENTED_MLNX_QOS) == {"trust": "dscp", "pfc": [0, 2, 6, 7]}
    assert rq.parse_mlnx_qos("Priority trust state: pcp\n") == {"trust": "pcp"}  # no PFC table: none claimed
    pause = "Pause parameters for eth1:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\toff\n"
    assert rq.parse_ethtool_pause(pause) == {"rx": "on", "tx": "off"}
    assert rq.parse_traffic_class("Global tclass=106\n") == 106 and rq.parse_traffic_class("106\n") == 106
    assert rq.parse_traffic_class("tclass=106; rm -rf /") is None


def test_a_fresh_nic_differs_on_every_setting_and_the_boot_script_brings_it_to_the_contract(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _install(root)
    before = _read(root)
    assert before["differing"] == ["eth1", "eth2"] and before["skipped"] == []
    assert before["nics"]["eth1"] == {
        "hca": "mlx5_0", "trust": "pcp", "pfc": "none", "pause": "rx on, tx on",
        "cm_tos": "unset (cma_roce_tos never ran for the device)", "traffic_class": "0",
        "ecn_np": "0", "ecn_rp": "0", "cnp_dscp": "48", "cnp_priority": "6", "dcqcn": {},
    }  # fmt: skip
    done = subprocess.run([str(_script(root))], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["changed eth1", "changed eth2"]
    after = _read(root)
    assert after["differences"] == [] and after["differing"] == []
    assert after["nics"]["eth2"] == {
        "hca": "mlx5_1", "trust": "dscp", "pfc": "3", "pause": "rx off, tx off", "cm_tos": "106",
        "traffic_class": "106", "ecn_np": "1", "ecn_rp": "1", "cnp_dscp": "48", "cnp_priority": "6", "dcqcn": {},
    }  # fmt: skip
    assert len(after["checks"]) == 2 * 9  # every setting of both NICs was compared


def test_lossy_contract_wants_no_pfc_and_leaves_global_pause_unchecked(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _install(root)
    subprocess.run([str(_script(root, roce_qos_lossless=False))], check=True, timeout=30, capture_output=True)
    read = _read(root, lossless=False)
    assert read["differences"] == []
    assert read["nics"]["eth1"]["pfc"] == "none" and read["nics"]["eth1"]["pause"] == "rx on, tx on"
    assert not any("global pause" in c["setting"] for c in read["checks"])


def test_dcqcn_parameters_are_set_and_read_back_by_name(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _install(root)
    dcqcn = {"roce_np/min_time_between_cnps": 8}
    assert (
        "eth1 DCQCN roce_np/min_time_between_cnps (ecn/roce_np/min_time_between_cnps): expected 8, found 4"
        in (_read(root, dcqcn=dcqcn)["differences"])
    )
    subprocess.run([str(_script(root, roce_qos_dcqcn=dcqcn))], check=True, timeout=30, capture_output=True)
    assert _read(root, dcqcn=dcqcn)["differences"] == []


def test_a_nic_without_a_connectx_device_is_skipped_and_a_tool_that_fails_is_named(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _install(root)
    read = rq.read_qos(str(root), _runner(root), {"eth1": "", "eth9": ""}, {**WANT, "dcqcn": {}})
    assert read["skipped"] == ["eth9"] and list(read["nics"]) == ["eth1"]
    (root / "state" / "eth1.json").unlink()  # the stand-in no longer knows eth1: both tools fail
    read = rq.read_qos(str(root), _runner(root), {"eth1": ""}, {**WANT, "dcqcn": {}})
    trust = next(d for d in read["differences"] if d.startswith("eth1 trust"))
    assert trust.startswith("eth1 trust (mlnx_qos -i): expected dscp, found mlnx_qos -i eth1 failed (exit 2): ")
    assert "no NIC 'eth1' installed" in trust


def test_names_that_would_reach_a_path_or_a_command_are_refused() -> None:
    params = {"devices": {"eth1;reboot": "", "eth2": "../mlx5_0"}, "dcqcn": {"roce_np/../../x": 1, "roce_rp/ok": "1x"},
              "priority": 3, "cnp_priority": 9}  # fmt: skip
    assert rq._problems(params) == [
        "nic 'eth1;reboot'", "hca '../mlx5_0'", "dcqcn 'roce_np/../../x'", "dcqcn roce_rp/ok value '1x'",
        "priority and cnp_priority are 0-7",
    ]  # fmt: skip


# -- the role's tasks, through ansible-playbook: converge twice, then one wrong setting planted per host ----------

PLANTS = {
    "trust_pcp": (["mlnx_qos", "-i", "eth1", "--trust", "pcp"], "eth1 trust (mlnx_qos -i): expected dscp, found pcp"),
    "pfc_on_priority_4": (
        ["mlnx_qos", "-i", "eth2", "--pfc", "0,0,0,0,1,0,0,0"],
        "eth2 PFC priorities (mlnx_qos -i): expected 3, found 4",
    ),
    "ecn_off": (
        ["sh", "-c", 'echo 0 > "$0/sys/class/net/eth1/ecn/roce_np/enable/3"'],
        "eth1 ECN notification point on priority 3 (ecn/roce_np/enable/3): expected 1, found 0",
    ),
    "global_pause_on": (
        ["ethtool", "-A", "eth2", "rx", "on", "tx", "on"],
        "eth2 global pause (ethtool -a): expected rx off, tx off, found rx on, tx on",
    ),
    "wrong_tos": (
        ["cma_roce_tos", "-d", "mlx5_0", "-t", "96"],
        "eth1 RDMA-CM ToS (mlx5_0 default_roce_tos, cma_roce_tos): expected 106, found 96",
    ),
}


def _gpu01() -> dict[str, Any]:
    plan = build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))
    found = next(h for h in inventory.build(plan) if h.name == "gpu01")
    return {k: v for k, v in inventory.ansible_vars(found).items() if k.startswith("gpufabric_")}


def _play() -> list[dict[str, Any]]:
    role = {"name": "roce_qos"}
    tasks: list[dict[str, Any]] = [
        {"name": "Detect", "ansible.builtin.import_role": {**role, "tasks_from": "detect.yml"}},
        {"name": "Boot script", "ansible.builtin.template": {
            "src": str(ROLE / "templates" / "roce-qos.sh.j2"), "dest": "{{ roce_qos_script }}", "mode": "0755"}},
        {"name": "nccl.conf", "ansible.builtin.template": {
            "src": str(ROLE / "templates" / "nccl.conf.j2"), "dest": "{{ roce_qos_nccl_conf }}", "mode": "0644"}},
        {"name": "First run", "ansible.builtin.import_role": {**role, "tasks_from": "runtime.yml"}},
        {"name": "Keep", "ansible.builtin.set_fact": {"first_changed": "{{ roce_qos_applied is changed }}"}},
        {"name": "Second run", "ansible.builtin.import_role": {**role, "tasks_from": "runtime.yml"}},
        {"name": "Idempotence", "ansible.builtin.debug": {
            "msg": "IDEMPOTENCE {{ inventory_hostname }} first={{ first_changed }}"
                   " second={{ roce_qos_applied is changed }}"}},
        {"name": "Plant", "ansible.builtin.command": {"argv": "{{ plant }}"}, "when": "plant | length > 0",
         "environment": {"PATH": "{{ roce_qos_tools_path }}:{{ ansible_env.PATH | default('/usr/bin:/bin') }}"},
         "changed_when": True},
        {"name": "Read back", "ansible.builtin.import_role": {**role, "tasks_from": "validate.yml"}},
        {"name": "Every setting equals the plan", "ansible.builtin.assert": {
            "that": "roce_qos_checks | gpufabric_differences | length == 0",
            "fail_msg": "VERDICT {{ inventory_hostname }}: {{ roce_qos_checks | gpufabric_differences | join(' | ') }}",
            "success_msg": "VERDICT {{ inventory_hostname }}: {{ roce_qos_checks | length }} settings equal the plan"}},
    ]  # fmt: skip
    return [{"name": "roce_qos on stand-ins", "hosts": "all", "gather_facts": False, "tasks": tasks}]


@pytest.fixture(scope="module")
def role_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One ansible-playbook run, one host per plant (and one left alone), each with its own stand-in NICs."""
    folder = tmp_path_factory.mktemp("roce_qos")
    hosts: dict[str, dict[str, Any]] = {}
    for name, (argv, _) in {"good": ([], ""), **PLANTS}.items():
        root = folder / name / "root"
        _install(root)
        hosts[name] = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable, **_gpu01(),
            "roce_qos_root": str(root), "roce_qos_tools_path": str(root / "bin"),
            "roce_qos_script": str(folder / name / "roce-qos.sh"),
            "roce_qos_nccl_conf": str(folder / name / "nccl.conf"),
            "roce_qos_record_file": str(folder / name / "record" / "roce_qos.json"),
            # The ECN plant's shell gets the tree as $0.
            "plant": argv + ([str(root)] if argv[:1] == ["sh"] else []),
        }  # fmt: skip
    (folder / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (folder / "play.yml").write_text(yaml.safe_dump(_play(), sort_keys=False))
    done = run(
        str(BIN / "ansible-playbook"), "-i", "inventory.yml", "play.yml", cwd=folder,
        ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(folder / "ansible"),
        ANSIBLE_FORKS="8", **PERSISTENT,
        ANSIBLE_FILTER_PLUGINS=str(ROOT / "roles" / "host_network" / "filter_plugins"),
    )  # fmt: skip
    return " ".join((done.stdout + done.stderr).split())


def _verdict(said: str, host: str) -> str:
    # Ansible prints a failed assert's message before the task's origin, a passed one as a quoted msg.
    found = re.search(rf"VERDICT {host}: (.*?)(?:\"| Origin: )", said)
    assert found, said[-3000:]
    return found.group(1)


@pytest.mark.slow
def test_the_role_converges_on_the_stand_ins_and_a_second_run_changes_nothing(role_run: str) -> None:
    for host in ("good", *PLANTS):
        assert f"IDEMPOTENCE {host} first=True second=False" in role_run, role_run[-3000:]
    # eth1 and eth2 each 9 settings, plus the record's 8: all read back and equal.
    assert _verdict(role_run, "good") == "26 settings equal the plan"


@pytest.mark.slow
@pytest.mark.parametrize("plant", list(PLANTS))
def test_validate_names_each_planted_wrong_setting_and_nothing_else(role_run: str, plant: str) -> None:
    assert _verdict(role_run, plant) == PLANTS[plant][1]


# -- software marking (nftables): the role's rules in a network namespace of the test's own --------------------------

# In an unnamed network namespace (made by `unshare --net`, gone with it): the RoCE NIC eth1 and a NIC of another
# plane, eth3, each a veth whose far end stands for its leaf's port; the role's rules loaded twice (a reload at
# boot); UDP to 4791 and to another port sent from each NIC; what arrives at each far end is counted by DSCP, as
# the leaf's classification would.
NETNS_SCRIPT = r"""
set -eu
ip link set lo up
for pair in "eth1 leaf1 10.10.0.1 10.10.0.0 02:00:00:00:00:01" "eth3 leaf3 10.11.0.1 10.11.0.0 02:00:00:00:00:03"; do
    set -- $pair
    ip link add "$1" type veth peer name "$2"
    ip link set "$2" address "$5"
    ip link set "$1" up
    ip link set "$2" up
    ip addr add "$3/31" dev "$1"
    ip neigh add "$4" lladdr "$5" dev "$1" nud permanent
done
nft -f "$RULES"
nft -f "$RULES"
nft -f - <<'NFT'
table inet leaf {
    chain classify {
        type filter hook prerouting priority -300;
        iifname "leaf1" udp dport 4791 ip dscp 26 counter
        iifname "leaf1" udp dport 4792 ip dscp 0 counter
        iifname "leaf3" udp dport 4791 ip dscp 0 counter
    }
}
NFT
python3 -c "
import socket
for src, dst in (('10.10.0.1', '10.10.0.0'), ('10.11.0.1', '10.11.0.0')):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    for port, count in ((4791, 5), (4792, 3)):
        for _ in range(count):
            s.sendto(b'x' * 64, (dst, port))
"
nft -n -j list table inet gpufabric_roce_qos
echo
nft -n -j list table inet leaf
"""


def _marking(**overrides: object) -> str:
    variables = {
        "ansible_managed": "test", "roce_qos_dscp": 26, "roce_qos_script": "/usr/local/sbin/gpufabric-roce-qos",
        "roce_qos_nics": [{"interface": "eth1", "plane": "compute"}, {"interface": "eth2", "plane": "compute"}],
        **overrides,
    }  # fmt: skip
    source = trust_as_template((ROLE / "templates" / "roce-mark.nft.j2").read_text())
    return str(Templar(loader=DataLoader(), variables=variables).template(source))


def _in_own_netns(tmp_path: Path, rules: str) -> tuple[str, dict[str, int]]:
    """The role's table as `nft -n -j` lists it, and the far ends' counters by rule (iifname, port, dscp)."""
    import json

    if os.geteuid() != 0 or not all(map(shutil.which, ("nft", "unshare", "ip"))):
        pytest.skip("needs root, nft, unshare and ip (a network namespace of the test's own)")
    path = tmp_path / "roce-qos.nft"
    path.write_text(rules)
    checked = subprocess.run(["nft", "-c", "-f", str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    done = subprocess.run(
        ["unshare", "--net", "sh", "-c", NETNS_SCRIPT], capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "RULES": str(path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table, leaf = done.stdout.split("\n\n", 1)
    counts = {}
    for item in json.loads(leaf)["nftables"]:
        if "rule" in item:
            expr = item["rule"]["expr"]
            key = (expr[0]["match"]["right"], expr[1]["match"]["right"], expr[2]["match"]["right"])
            counts[" ".join(map(str, key))] = expr[3]["counter"]["packets"]
    return table, counts


def test_the_software_marking_sets_the_roce_dscp_on_udp_4791_leaving_a_roce_nic_only(tmp_path: Path) -> None:
    _, counts = _in_own_netns(tmp_path, _marking())
    # eth1 is a RoCE NIC: RoCEv2 leaves it with DSCP 26, other UDP unmarked; eth3 (storage) is left alone.
    assert counts == {"leaf1 4791 26": 5, "leaf1 4792 0": 3, "leaf3 4791 0": 5}


def _nft_checks(read: dict[str, Any]) -> list[dict[str, str]]:
    role_vars = {n: trust_as_template(t) for n, t in yaml.safe_load((ROLE / "vars" / "main.yml").read_text()).items()}
    variables = {
        **role_vars, "roce_qos_software_marking": True, "roce_qos_dscp": 26, "roce_qos_nft_read": read,
        "roce_qos_nics": [{"interface": "eth1", "plane": "compute"}, {"interface": "eth2", "plane": "compute"}],
    }  # fmt: skip
    return list(
        Templar(loader=DataLoader(), variables=variables).template(trust_as_template("{{ roce_qos_nft_checks }}"))
    )


def test_validate_reads_the_marking_back_from_nft_and_names_a_wrong_dscp_or_a_missing_table(tmp_path: Path) -> None:
    table, _ = _in_own_netns(tmp_path, _marking())
    good = _nft_checks({"rc": 0, "stdout": table, "stderr": ""})
    assert [(c["setting"], c["expected"], c["found"]) for c in good] == [
        ("RoCE DSCP set by nftables on UDP 4791 (IPv4, IPv6)", "ip 26, ip6 26", "ip 26, ip6 26"),  # one copy each
        ("RoCE NICs marked by nftables", "eth1,eth2", "eth1,eth2"),
    ]
    wrong, _ = _in_own_netns(tmp_path, _marking().replace("dscp set 26", "dscp set 24"))
    assert _nft_checks({"rc": 0, "stdout": wrong, "stderr": ""})[0]["found"] == "ip 24, ip6 24"
    missing = _nft_checks({"rc": 1, "stdout": "", "stderr": "Error: No such file or directory\n"})
    assert missing[0]["found"] == "table inet gpufabric_roce_qos missing: Error: No such file or directory"
    assert missing[1]["found"] == "none"


def test_the_boot_script_loads_the_software_marking_only_when_the_plan_asks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _install(root)
    nft_file = "/etc/gpufabric/roce qos.nft"  # a space: the path stays one word
    on = _script(root, roce_qos_software_marking=True, roce_qos_nft_file=nft_file).read_text()
    assert "    nft -f '/etc/gpufabric/roce qos.nft'\n" in on
    assert on.index("nft -f") > on.index("\nelse\n")  # at boot (every NIC), not when one NIC is applied by hand
    off = _script(root, roce_qos_software_marking=False, roce_qos_nft_file=nft_file).read_text()
    assert "nft -f" not in off
