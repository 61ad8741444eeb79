"""`molecule test` on booted Debian hosts (systemd-nspawn): every role through site.yml, idempotence,
read-back, jumbo pings, a --check --diff run with zero changes, and this machine's sysctls untouched.
Once per host_network backend, one scenario after the other (they boot hosts of the same names):
`default` (systemd-networkd, Debian's own), `netplan` (netplan installed, as on Ubuntu and DGX OS) and
`networkmanager` (NetworkManager running on the data NICs); and `collection`, the default scenario's hosts
brought up by the collection gpufabric.cluster built from this repository and installed into Molecule's own
collections path (`ansible-playbook gpufabric.cluster.site`, roles and plugins by their qualified names).

Real: systemd, systemd-networkd, sshd, apt, the kernel's routing and MTU handling inside the hosts.
Not here: ConnectX NICs, RDMA, Kubernetes (the roles report those runtime parts as SKIPPED). In `default`,
gpu01's RoCE NICs get stand-in ConnectX tools (tests/nic_tools/nic_standin.py) that roce_qos sets and reads back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import stop_command

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TOOLS = ("systemd-nspawn", "debootstrap", "socat", "zstd")
# Keys this machine changes by itself (counters, randomness): not settings anything could have written.
VOLATILE = re.compile(
    r"random|ns_last_pid|dentry|inode-nr|inode-state|file-nr|pty\.nr|stat_refresh|perf_event|aio-nr|conntrack_count|tainted|quota"
)
# Keys of one network interface: they come and go with it (the lab's tests run beside Molecule in CI).
PER_INTERFACE = re.compile(r"net\.(ipv4|ipv6|mpls)\.(conf|neigh)\.(?!all\.|default\.)[^.]+\.")


def _missing() -> list[str]:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    return missing + ([] if (BIN / "molecule").exists() else ["molecule"])


def _machine_sysctls() -> dict[str, str]:
    out = subprocess.run(["sysctl", "-a"], capture_output=True, text=True, check=False).stdout
    pairs = (line.split(" = ", 1) for line in out.splitlines() if " = " in line)
    return {k: v for k, v in pairs if not VOLATILE.search(k)}


# Scenario -> the task of host_network that writes that backend's files (the probe chose it).
SCENARIOS = {
    "default": "Write a .network file per routed NIC and per bond",
    "netplan": "Write the data NICs as one netplan file",
    "networkmanager": "Write a NetworkManager keyfile per routed NIC and per bond",
    "collection": "Write a .network file per routed NIC and per bond",
}
# How ansible-playbook names a role's tasks: the collection's roles by their qualified name.
ROLE_PREFIX = {"collection": "gpufabric.cluster."}
# Scenarios with a prepare step (a backend installed); the collection's verify is its own (no pings).
PREPARED = ("default", "netplan", "networkmanager")
PINGED = ("default", "netplan", "networkmanager")
BUILT = ("collection",)  # a dependency step of its own: the collection built and installed


HOSTS_STATE = "/var/lib/gpufabric/molecule"  # the scenarios' GPUFABRIC_HOSTS_STATE
STOP_MOLECULE_SECONDS = 60  # Molecule's own ending on SIGTERM; its hosts are removed after it either way


def _molecule_test(scenario: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`molecule test` in a process group of its own. Interrupted (Ctrl-C, or SIGTERM taken as one), the group
    is stopped, Molecule and the Ansible it runs, and the hosts its create step made are removed as its destroy
    step would: a scenario killed half-way kept its containers and the mol-oob bridge."""
    command = [str(BIN / "molecule"), "test", "--scenario-name", scenario]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    ) as run:
        try:
            out, _ = run.communicate()
        except BaseException:
            stop_command(run, group=True, grace=STOP_MOLECULE_SECONDS)
            subprocess.run(
                [str(BIN / "gpufabric"), "lab", "hosts", "down", "--state-dir", HOSTS_STATE],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600, check=False,
            )  # fmt: skip
            raise
    return subprocess.CompletedProcess(command, run.returncode, out)


@pytest.fixture(scope="module", params=list(SCENARIOS))
def molecule_run(request, tmp_path_factory):
    scenario = request.param
    if os.geteuid() != 0:
        pytest.skip("Molecule's hosts need root (network namespaces, systemd-nspawn)")
    missing = _missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install {missing} (scripts/test.sh does)")
        pytest.skip(f"needs {missing}: run scripts/test.sh, which installs them")
    before = _machine_sysctls()
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "ANSIBLE_FORCE_COLOR": "0", "NO_COLOR": "1",
           # Its temporary files in the run's folder, not /tmp: Ansible's connection multiplexer keeps a socket
           # there that a stopped run left behind.
           "TMPDIR": str(tmp_path_factory.mktemp(f"molecule-{scenario}-tmp"))}  # fmt: skip
    started = time.perf_counter()
    done = _molecule_test(scenario, env)
    seconds = time.perf_counter() - started
    text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / f"molecule-test-{scenario}.log").write_text(text)
    print(f"\nmolecule test -s {scenario}: {seconds:.0f} s (log: build/molecule-test-{scenario}.log)")
    return done.returncode, text, before, _machine_sysctls(), scenario


def _what_failed(text: str) -> str:
    """Each failed or unreachable task with its step and its task line (the tail alone had shown only the
    recap of the step that failed), then the tail."""
    step, task, out = "", "", []
    for line in text.splitlines():
        if m := re.search(r"\[\S+ (?:>|➜) (\w+)\] Executing", line):
            step = m.group(1)
        elif line.startswith("TASK ["):
            task = line
        elif re.match(r"(fatal|failed):|\S+ \| (UNREACHABLE|FAILED)!|ERROR!", line.lstrip()):
            out.append(f"{step}: {task}\n  {line.strip()[:1500]}")
    return "\n".join(out[-10:]) + "\n--- the log's end:\n" + text[-2000:]


def test_molecule_test_passes_every_step(molecule_run):
    rc, text, _, _, scenario = molecule_run
    assert rc == 0, _what_failed(text)
    steps = ("dependency", "create", "prepare", "converge", "idempotence", "verify", "destroy")
    ran = [s for s in steps if (s != "prepare" or scenario in PREPARED) and (s != "dependency" or scenario in BUILT)]
    for step in ran:
        # Molecule's summary line; it writes "➜" instead of ">" on a terminal.
        assert re.search(rf"{scenario} (>|➜) {step}: Executed: Successful", text), f"{step} did not run successfully"


def test_host_network_persisted_through_the_scenarios_backend(molecule_run):
    _, text, _, _, scenario = molecule_run
    # host_network's probe (host_network_backend: auto) found the backend the scenario installed.
    role = re.escape(ROLE_PREFIX.get(scenario, "") + "host_network")
    assert re.search(rf"^TASK \[{role} : {re.escape(SCENARIOS[scenario])}\]", text, re.M)
    others = [task for task in SCENARIOS.values() if task != SCENARIOS[scenario]]
    assert not any(re.search(rf"TASK \[{role} : {re.escape(task)}\]", text) for task in others)


def _last_recap_before(text: str, step: str, host: str, scenario: str) -> tuple[int, int]:
    """(ok, changed) of the host's last recap before Molecule logged the step as done."""
    done = re.search(rf"\[{scenario} (?:>|➜) {step}\] Executed", text)
    assert done, f"no {step} step in the log"
    recaps = re.findall(rf"^{host}\s+: ok=(\d+)\s+changed=(\d+)", text[: done.start()], re.M)
    assert recaps, f"no recap of {host} before {step} ended"
    return int(recaps[-1][0]), int(recaps[-1][1])


def test_idempotence_and_check_mode_show_zero_changes(molecule_run):
    _, text, _, _, scenario = molecule_run
    # site.yml's recaps: converge's, then idempotence's (its second run).
    for host in ("gpu01", "gpu02"):
        ok, changed = _last_recap_before(text, "converge", host, scenario)
        assert ok > 30 and changed > 0, (ok, changed)  # converge ran every role and changed things
        ok, changed = _last_recap_before(text, "idempotence", host, scenario)
        assert ok > 30 and changed == 0, f"idempotence: {host} changed {changed} tasks"
    # verify's --check --diff run reports both hosts' recaps in its success message.
    recap = r"\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0"
    assert re.search(rf'"msg": "gpu01{recap}.*; gpu02{recap}', text)


def test_jumbo_pings_crossed_every_rail(molecule_run):
    _, text, _, _, scenario = molecule_run
    if scenario not in PINGED:
        pytest.skip(f"{scenario}'s verify reads the hosts back with the collection's playbooks only")
    pinged = set(re.findall(r"ok: \[(gpu0[12])\] => \(item=(eth\d) \(\w+ rail \d\) ->", text))
    assert pinged == {(h, f"eth{i}") for h in ("gpu01", "gpu02") for i in range(1, 5)}


def test_runtime_parts_that_cannot_run_here_are_reported_skipped(molecule_run):
    _, text, _, _, _ = molecule_run
    for role in ("ofed", "roce_qos", "hugepages"):
        assert f"{role} runtime SKIPPED" in text


def test_roce_qos_set_the_stand_in_nics_once_and_validate_read_them_back(molecule_run):
    _, text, _, _, scenario = molecule_run
    if scenario != "default":
        pytest.skip("only the default scenario installs stand-in ConnectX NICs (prepare.yml)")
    applied = "TASK [roce_qos : Apply on the NICs whose settings differ from the contract]"
    # converge applied on both of gpu01's RoCE NICs; idempotence's run found nothing to apply.
    runs = text.split(applied)
    assert len(runs) >= 3, "the apply task did not run in converge and idempotence"
    converge, idempotence = runs[1].split("TASK [", 1)[0], runs[2].split("TASK [", 1)[0]
    assert {f"changed: [gpu01] => (item={nic})" for nic in ("eth1", "eth2")} <= {
        line.strip() for line in converge.splitlines()
    }, converge
    assert "changed:" not in idempotence and "item=" not in idempotence, idempotence
    # validate's verdict on gpu01 lists every setting it read back from the stand-in tools.
    verdict = re.search(r'"msg": "gpu01: \d+ settings equal the plan \(([^"]*)\)"', text)
    assert verdict, "no validate verdict for gpu01"
    for setting in (
        "eth1 trust (mlnx_qos -i)",
        "eth2 PFC priorities (mlnx_qos -i)",
        "eth1 global pause (ethtool -a)",
        "eth2 ECN reaction point on priority 3",
        "eth1 RDMA-CM ToS (mlx5_0 default_roce_tos, cma_roce_tos)",
    ):
        assert setting in verdict.group(1), setting
    assert "roce_qos runtime SKIPPED on eth1, eth2" in text  # gpu02 has no stand-ins


def test_machine_sysctls_unchanged_and_nothing_left_behind(molecule_run):
    _, _, before, after, _ = molecule_run
    changed = {k: (before[k], after.get(k)) for k in before if before[k] != after.get(k)}
    # An interface that came or went meanwhile is not a setting anything changed; every other key must match.
    changed = {k: v for k, v in changed.items() if not (PER_INTERFACE.match(k) and v[1] is None)}
    assert not changed
    assert len(before) > 500  # the whole table was compared, not an empty one
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    assert not re.search(r"^(m-gpu0[12]|mol-fabric)\b", namespaces, re.M)
    assert subprocess.run(["ip", "link", "show", "mol-oob"], capture_output=True, check=False).returncode != 0
    # A container whose init outlived destroy keeps its namespace, and with it the bridge end of its veth.
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=False).stdout
    assert not re.search(r"^\d+: vm-gpu0[12]\b", links, re.M)
    assert not Path(HOSTS_STATE).exists()  # the hosts' state folder went with them


def test_every_role_and_plugin_came_from_the_installed_build(molecule_run):
    _, text, _, _, scenario = molecule_run
    if scenario != "collection":
        pytest.skip("the other scenarios run the repository's roles")
    # Built and installed by the dependency step, into Molecule's own collections path.
    assert re.search(r"gpufabric-cluster-[0-9.]+\.tar\.gz", text)
    assert "gpufabric.cluster:" in text and "was installed successfully" in text
    # Every role task ran from the collection (converge, idempotence, verify), none from roles/.
    tasks = re.findall(r"^TASK \[([\w.]+) : ", text, re.M)
    assert tasks and {t.rsplit(".", 1)[0] for t in tasks if "." in t} == {"gpufabric.cluster"}
    assert not [t for t in tasks if "." not in t], "a role ran by its short name, not from the collection"
    for role in ("host_network", "ofed", "roce_qos", "hugepages", "gpu_operator", "host_baseline"):
        assert f"TASK [gpufabric.cluster.{role} : " in text
