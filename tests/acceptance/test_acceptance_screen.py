"""`acceptance screen`: slow nodes found in recorded outputs against their median, the part behind them
named, and the signal record the remediation loop reads.

The outputs are written from samples in the tools' published formats (tests/acceptance_outputs/:
perftest's `ib_write_bw --report_gbits` report, nccl-tests' `all_reduce_perf` table for eight ranks on
one host), with the figures of each run filled in consistently (iterations and message rate from the
bandwidth; time and algorithm bandwidth from the bus bandwidth).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gpufabric.acceptance.model import NcclJob, Suite
from gpufabric.acceptance.screen import SIGNAL_SCHEMA, ScreenError, screen, signal_record
from gpufabric.acceptance.suite import screen_suite
from gpufabric.intent import load_intent
from gpufabric.plan import Plan, build_plan
from tests.conftest import BIN, default_doc, plan_doc, run_in_process, set_path
from tests.screen_outputs import nccl_node_text, record

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plan() -> Plan:
    return build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))


@pytest.fixture(scope="module")
def suite(plan: Plan) -> Suite:
    return screen_suite(plan)


def test_the_screen_rings_every_rail_so_each_nic_is_in_two_pairs(suite: Suite) -> None:
    assert len(suite.perf) == 8  # 4 servers on each of 2 rails
    for nic in ("gpu01 eth1", "gpu02 eth1", "gpu03 eth2", "gpu04 eth2"):
        server, iface = nic.split()
        ends = [(e.server, e.interface) for j in suite.perf for e in (j.client, j.server)]
        assert ends.count((server, iface)) == 2
    assert [j.servers for j in suite.nccl if j.scope.startswith("node")] == [
        ("gpu01",),
        ("gpu02",),
        ("gpu03",),
        ("gpu04",),
    ]
    assert {j.scope for j in suite.nccl if len(j.servers) > 1} == {"unit1", "unit2", "cluster"}


def _valid(doc: dict) -> None:
    """The record holds to its published contract (SIGNAL_SCHEMA), as the remediation loop will read it."""
    import jsonschema

    jsonschema.Draft202012Validator(SIGNAL_SCHEMA).validate(json.loads(json.dumps(doc)))


def test_the_signal_contract_refuses_what_the_loop_could_not_act_on(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    import jsonschema

    doc = signal_record(screen(suite, plan, record(tmp_path, suite, slow_nics={"gpu03 eth1": 180.0})), tmp_path)
    _valid(doc)
    doc["signals"][0]["part_kind"] = "rack"
    with pytest.raises(jsonschema.ValidationError):
        _valid(doc)


def test_uniform_results_raise_no_signal(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    found = screen(suite, plan, record(tmp_path, suite))
    _valid(signal_record(found, tmp_path))
    assert found.slow == [] and found.signals == []
    assert len(found.compared) == 12  # 8 pairs and 4 single-node runs; the unit and cluster runs were not recorded
    assert {r.status for r, _ in found.unjudged} == {"missing"}


def test_a_slow_nic_is_found_and_its_link_named_not_its_partners(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    found = screen(suite, plan, record(tmp_path, suite, slow_nics={"gpu03 eth1": 180.0}))
    assert len(found.slow) == 2 and len(found.signals) == 1
    doc = signal_record(found, tmp_path)
    (sig,) = doc["signals"]
    assert (sig["part"], sig["part_kind"], sig["nodes"]) == ("gpu03 eth1", "nic", ["gpu03"])
    # The NIC, its cable and its leaf port share every result: one link, named together.
    cable = next(c for c in suite.perf[1].cables if c in suite.perf[2].cables)
    assert {(w["part"], w["part_kind"]) for w in sig["with"]} == {
        (cable, "host-cable"),
        ("cmp-su2-leaf1 swp1", "leaf-port"),
    }
    assert sorted(e["job"] for e in sig["evidence"]) == [
        "screen.ib_write_bw.compute.rail1.leaf.gpu04-gpu03",
        "screen.ib_write_bw.compute.rail1.spine.gpu03-gpu02",
    ]
    assert all(e["observed"] == 180.0 and e["threshold"] < e["median"] for e in sig["evidence"])
    assert (sig["slow_results"], sig["normal_results"]) == (2, 0)


def test_a_slow_gpu_node_is_named_by_its_own_run(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    found = screen(suite, plan, record(tmp_path, suite, slow_nodes={"gpu02": 210.0}))
    doc = signal_record(found, tmp_path)
    assert [(s["part"], s["part_kind"], s["nodes"]) for s in doc["signals"]] == [("gpu02", "node", ["gpu02"])]
    (evidence,) = doc["signals"][0]["evidence"]
    assert evidence["job"] == "screen.all_reduce_perf.compute.node.gpu02" and evidence["observed"] == 210.0
    assert evidence["median"] == 479.0 and evidence["peers"] == 4  # of 478, 210, 480, 481


def test_a_slow_leaf_is_named_with_the_servers_behind_it(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    found = screen(suite, plan, record(tmp_path, suite, slow_switches={"cmp-su1-leaf1": 120.0}))
    # Rail 1's ring: the pair under the leaf and both pairs that leave it are slow; the pair under su2's is not.
    assert len(found.slow) == 3
    (sig,) = signal_record(found, tmp_path)["signals"]
    assert (sig["part"], sig["part_kind"], sig["nodes"]) == ("cmp-su1-leaf1", "leaf", ["gpu01", "gpu02"])
    assert (sig["slow_results"], sig["normal_results"], sig["with"]) == (3, 0, [])


def test_two_faults_give_two_signals(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    found = screen(suite, plan, record(tmp_path, suite, slow_nics={"gpu01 eth2": 150.0}, slow_nodes={"gpu04": 90.0}))
    _valid(signal_record(found, tmp_path))
    assert sorted((s.part.name, s.part.nodes) for s in found.signals) == [
        ("gpu01 eth2", ("gpu01",)),
        ("gpu04", ("gpu04",)),
    ]


def test_the_factor_decides_what_is_slow(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    folder = record(tmp_path, suite, slow_nics={"gpu02 eth2": 300.0})  # 390 / 300 = 1.3x slower
    assert screen(suite, plan, folder).signals == []
    strict = screen(suite, plan, folder, factor=1.2)
    assert [s.part.name for s in strict.signals] == ["gpu02 eth2"]
    with pytest.raises(ScreenError, match="above 1"):
        screen(suite, plan, folder, factor=1.0)


def test_too_few_like_results_are_not_judged(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    few = Suite(suite.fabric, perf=suite.perf[:2], nccl=[j for j in suite.nccl if len(j.servers) == 1][:2])
    found = screen(few, plan, record(tmp_path, suite, slow_nodes={"gpu01": 10.0}))
    assert found.compared == [] and found.signals == []
    assert all("fewer than 3 to compare" in why for _, why in found.unjudged)


def test_wrong_data_is_slow_whatever_its_speed(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    folder = record(tmp_path, suite)
    job = next(j for j in suite.nccl if j.servers == ("gpu03",))
    text = nccl_node_text("gpu03", 480.0).replace("31.04      0", "31.04      7", 1)  # 7 wrong elements at 1 MiB
    (folder / f"{job.id}.txt").write_text(text)
    found = screen(suite, plan, folder)
    assert [(s.part.name, s.evidence[0].result.status) for s in found.signals] == [("gpu03", "failed")]


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    return run_in_process("gpufabric", *map(str, args))


def test_the_cli_writes_the_signal_and_exits_by_finding(tmp_path: Path, suite: Suite) -> None:
    fabric = ROOT / "inventory" / "fabric.yml"
    record(tmp_path / "ok", suite)
    done = _cli("acceptance", "screen", "report", fabric, "--results", tmp_path / "ok", "--signal", tmp_path / "s.json")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "s.json").read_text())["signals"] == []
    record(tmp_path / "slow", suite, slow_nics={"gpu03 eth1": 180.0})
    done = _cli("acceptance", "screen", "report", fabric, "--results", tmp_path / "slow", "--json")
    assert done.returncode == 4, done.stderr
    doc = json.loads(done.stdout)
    assert doc["kind"] == "gpufabric.slow-results" and doc["signals"][0]["part"] == "gpu03 eth1"
    assert "slow: gpu03 eth1 (nic; nodes gpu03)" in " ".join(_cli(
        "acceptance", "screen", "report", fabric, "--results", tmp_path / "slow").stderr.split())  # fmt: skip
    bad = _cli("acceptance", "screen", "report", fabric, "--results", tmp_path / "slow", "--factor", "0.5")
    assert bad.returncode == 2 and "above 1" in bad.stderr


def test_nccl_node_sample_reads_as_eight_ranks_on_one_host() -> None:
    from gpufabric.acceptance.parse import nccl_busbw

    job = NcclJob(id="x", tool="all_reduce_perf", plane="compute", scope="node gpu01", servers=("gpu01",),
                  gpus_per_server=8, env={})  # fmt: skip
    seen = nccl_busbw(nccl_node_text("gpu01", 481.5), job.expect())
    assert (seen.value, seen.failed) == (481.5, False)


# -- on a schedule: Slurm and Kubernetes ---------------------------------------------------------------


def test_the_slurm_script_runs_every_job_into_its_result_and_reports(tmp_path: Path, suite: Suite) -> None:
    fabric = ROOT / "inventory" / "fabric.yml"
    done = _cli("acceptance", "screen", "scripts", fabric, "-o", tmp_path, "--schedule", "30 2 * * 6")
    assert done.returncode == 0, done.stderr
    assert "no Kubernetes CronJob written" in done.stderr
    script = (tmp_path / "screen.sbatch").read_text()
    assert subprocess.run(["bash", "-n", tmp_path / "screen.sbatch"], check=False).returncode == 0
    for job in [*suite.perf, *suite.nccl]:
        assert f'> "$out"/{job.id}.txt ||' in script
    assert "#SBATCH --nodelist=gpu01,gpu02,gpu03,gpu04" in script and "#SBATCH --exclusive" in script
    assert 'acceptance screen report ${GPUFABRIC_ARGS:-} --results "$out" --signal "$out/signal.json"' in script
    cron = (tmp_path / "screen.scrontab").read_text().splitlines()
    assert "#SCRON --nodelist=gpu01,gpu02,gpu03,gpu04" in cron
    assert cron[-1] == f"30 2 * * 6 bash {(tmp_path / 'screen.sbatch').resolve()}"
    bad = _cli("acceptance", "screen", "scripts", fabric, "-o", tmp_path / "no", "--schedule", "daily; rm -rf /")
    assert bad.returncode == 2 and "not a cron schedule" in bad.stderr and not (tmp_path / "no").exists()


def _cronjob(tmp_path: Path) -> list[dict]:
    import yaml

    fabric = ROOT / "inventory" / "fabric.yml"
    done = _cli("acceptance", "screen", "scripts", fabric, "-o", tmp_path, "--image", "registry.example/tools:24.04",
                "--driver-image", "registry.example/gpufabric-driver:1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return list(yaml.safe_load_all((tmp_path / "screen-cronjob.yaml").read_text()))


def test_the_cronjob_runs_a_driver_over_a_job_table(tmp_path: Path) -> None:
    docs = _cronjob(tmp_path)
    kinds = {d["kind"]: d for d in docs}
    assert list(kinds) == ["ServiceAccount", "Role", "RoleBinding", "ConfigMap", "PersistentVolumeClaim", "CronJob"]
    cron = kinds["CronJob"]["spec"]
    assert (cron["schedule"], cron["concurrencyPolicy"]) == ("0 3 * * 0", "Forbid")
    pod = cron["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "gpufabric-screen"
    assert pod["containers"][0]["command"] == ["sh", "/screen/screen.sh"]
    assert {r["resources"][0] for r in kinds["Role"]["rules"]} == {"pods", "pods/log"}
    data = kinds["ConfigMap"]["data"]
    assert set(data) == {"screen.sh", "jobs.tsv", "intent.yml"}
    assert data["intent.yml"] == (ROOT / "inventory" / "fabric.yml").read_text()
    assert not any("unit" in line or "cluster" in line for line in data["jobs.tsv"].splitlines())  # MPI: Slurm only
    assert subprocess.run(["sh", "-n", "-c", data["screen.sh"]], check=False).returncode == 0


FAKE_KUBECTL = """#!{python}
# A test double of kubectl: the verbs screen.sh uses. `create -f -` reads the manifest (it must be JSON),
# keeps it and names the pod after its job and side; every pod has Succeeded; a client's or a single
# pod's log is the recorded output of its job.
import json, os, sys
from pathlib import Path
log = Path(os.environ["KUBECTL_LOG"])
with (log / "calls").open("a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
verb = sys.argv[1]
if verb == "create":
    pod = json.load(sys.stdin)
    note = pod["metadata"]["annotations"]
    name = note["gpufabric.io/screen-job"] + "." + note["gpufabric.io/screen-side"]
    (log / (name + ".json")).write_text(json.dumps(pod))
    print("pod/" + name)
elif verb == "get":
    print("Succeeded", end="")
elif verb == "logs":
    job, side = sys.argv[4].removeprefix("pod/").rsplit(".", 1)
    sys.stdout.write((Path(os.environ["CANNED"]) / (job + ".txt")).read_text())
elif verb not in ("wait", "delete"):
    sys.exit("unexpected kubectl " + " ".join(sys.argv[1:]))
"""


@pytest.mark.slow  # a shell, the real gpufabric and ~80 calls of the Python test double: seconds
def test_the_cronjobs_driver_pins_each_pod_and_signals_the_slow_nic(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    """screen.sh as the CronJob's pod runs it, against a test double of kubectl (above) and the real
    gpufabric: each pod it creates is pinned to the planned node with the rail the k8s-network export
    names, and the recorded outputs, with gpu03's rail 1 NIC slow, come back as results and a signal."""
    import sys

    from gpufabric.export import k8s_network

    data = next(d for d in _cronjob(tmp_path / "k8s") if d["kind"] == "ConfigMap")["data"]
    mount = tmp_path / "configmap"
    mount.mkdir()
    for key, text in data.items():
        (mount / key).write_text(text)
    canned = record(tmp_path / "canned", suite, slow_nics={"gpu03 eth1": 175.0})
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "kubectl").write_text(FAKE_KUBECTL.format(python=sys.executable))
    (fake / "kubectl").chmod(0o755)
    log = tmp_path / "log"
    log.mkdir()
    env = {**os.environ, "PATH": f"{fake}:{BIN}:{os.environ['PATH']}", "SCREEN_DIR": str(mount),
           "SCREEN_RESULTS": str(tmp_path / "results"), "CANNED": str(canned), "KUBECTL_LOG": str(log),
           "SCREEN_SETTLE": "0"}  # fmt: skip
    done = subprocess.run(["sh", mount / "screen.sh"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 4, done.stderr  # the report's exit: something is slow
    (run,) = (tmp_path / "results").iterdir()
    signal = json.loads((run / "signal.json").read_text())
    assert [(s["part"], s["nodes"]) for s in signal["signals"]] == [("gpu03 eth1", ["gpu03"])]
    assert signal["compared"] == 12 and json.loads(done.stdout) == signal
    exported = {f"nvidia.com/{r.resource}": r.name for r in k8s_network.rails(plan)}
    for job in suite.perf:
        for side, end in (("server", job.server), ("client", job.client)):
            pod = json.loads((log / f"{job.id}.{side}.json").read_text())
            (container,) = pod["spec"]["containers"]
            (resource,) = container["resources"]["limits"]
            assert (pod["spec"]["nodeName"], container["command"]) == (end.server, job.command(side))
            assert exported[resource] == pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
            assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    node = json.loads((log / "screen.all_reduce_perf.compute.node.gpu03.node.json").read_text())["spec"]
    assert node["nodeName"] == "gpu03" and node["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    command = node["containers"][0]["command"]
    assert command[0] == "all_reduce_perf" and command[command.index("-g") + 1] == "8"
    calls = (log / "calls").read_text().splitlines()
    assert sum(c.startswith("create") for c in calls) == 2 * len(suite.perf) + 4
    assert sum(c.startswith("delete") for c in calls) == 2 * len(suite.perf) + 4  # no pod left behind


def test_a_screen_too_large_for_a_configmap_is_refused(plan: Plan) -> None:
    from gpufabric.acceptance import cronjob

    with pytest.raises(ScreenError, match="past the 1 MiB a ConfigMap may hold"):
        cronjob.documents(plan, "x" * (1 << 20), schedule="0 3 * * 0", image="a/b:1", driver_image="c/d:1")


def test_the_cronjob_refuses_shared_rails_which_have_no_pod_network() -> None:
    from gpufabric.acceptance import cronjob

    shared = plan_doc(set_path(default_doc(), ("kubernetes",), {"rdma": "shared"}))
    with pytest.raises(ScreenError, match=r"kubernetes\.rdma: shared gives the rails no pod network"):
        cronjob.documents(shared, "x", schedule="0 3 * * 0", image="a/b:1", driver_image="c/d:1")


def test_an_image_that_is_no_reference_is_refused(tmp_path: Path) -> None:
    fabric = ROOT / "inventory" / "fabric.yml"
    bad = _cli("acceptance", "screen", "scripts", fabric, "-o", tmp_path, "--image", "x\nkind: Secret",
               "--driver-image", "d:1")  # fmt: skip
    assert bad.returncode == 2 and "is not an image reference" in bad.stderr
