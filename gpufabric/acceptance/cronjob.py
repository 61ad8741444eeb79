"""The screen as a Kubernetes CronJob: a driver pod, on the schedule, starts each screen job's pods in
turn on the planned nodes, keeps their logs as the results, and runs `gpufabric acceptance screen report`.

The pods use what `gpufabric export k8s-network` gives the cluster: a perftest pod takes its rail's
NIC (the rail's resource, `nvidia.com/<plane>_rail<n>`, and network, `<plane>-rail<n>`), whose
address nv-ipam pins to the node's planned one, so the client reaches the server at the address the
plan gives it; a single-server nccl-tests pod takes the node's GPUs (`nvidia.com/gpu`) and runs them
from one process (`-g <gpus>`). nccl-tests across servers needs MPI between pods (an MPIJob): those
runs stay with the Slurm script.

Objects: a ServiceAccount, a Role and RoleBinding (pods and their logs in the namespace, nothing
else), a ConfigMap holding the driver script, the pod manifests and the intent, a PersistentVolumeClaim
for the results, and the CronJob (concurrencyPolicy Forbid: one screen at a time).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from gpufabric.acceptance.model import NcclJob, PerfJob, Suite
from gpufabric.acceptance.screen import ScreenError
from gpufabric.acceptance.slurm import SCREEN_JOB_NAME, cron_schedule
from gpufabric.acceptance.suite import screen_suite
from gpufabric.export import k8s_network
from gpufabric.export.yaml_out import dump_yaml
from gpufabric.outputs import json_dumps
from gpufabric.plan.model import Plan

NAMESPACE = k8s_network.WORKLOAD_NS
NAME = SCREEN_JOB_NAME
MOUNT = "/screen"
RESULTS = "/results"
POD_TIMEOUT = 900  # seconds a screen pod may take from creation to its end (image pull included)


def _labels(plan: Plan) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "gpufabric", "gpufabric.io/cluster": plan.intent.fabric.name,
            "app.kubernetes.io/name": NAME}  # fmt: skip


def _pod(plan: Plan, name: str, node: str, image: str, command: list[str], *, limits: dict[str, str],
         network: str | None = None) -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"generateName": f"{name}-", "namespace": NAMESPACE, "labels": _labels(plan)}
    if network is not None:
        meta["annotations"] = {"k8s.v1.cni.cncf.io/networks": network}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node,  # the planned node, bypassing the scheduler: the screen measures that node
            "restartPolicy": "Never",
            "containers": [{
                "name": "tool",
                "image": image,
                "command": command,
                # RDMA registers (pins) memory: perftest and NCCL need to lock pages.
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                "resources": {"limits": limits, "requests": limits},
            }],
        },
    }  # fmt: skip


def _rail(job: PerfJob) -> tuple[str, str]:
    """The rail's network and resource, named as the k8s-network export names them."""
    network = f"{job.plane}-rail{job.rail}"
    return network, f"{k8s_network.RESOURCE_PREFIX}/{job.plane}_rail{job.rail}"


def manifests(plan: Plan, suite: Suite, image: str) -> dict[str, dict[str, Any]]:
    """ConfigMap key -> pod manifest: `<job>.server.json` and `<job>.client.json` per pair,
    `<job>.json` per single-server nccl-tests run."""
    out: dict[str, dict[str, Any]] = {}
    for job in suite.perf:
        network, resource = _rail(job)
        for side, end in (("server", job.server), ("client", job.client)):
            out[f"{job.id}.{side}.json"] = _pod(plan, f"screen-{side}", end.server, image, job.command(side),
                                                limits={resource: "1"}, network=network)  # fmt: skip
    for n in _single(suite):
        command = n.command()
        command[command.index("-g") + 1] = str(n.gpus_per_server)  # one process drives every GPU, no MPI
        out[f"{n.id}.json"] = _pod(plan, "screen-node", n.servers[0], image, command,
                                   limits={"nvidia.com/gpu": str(n.gpus_per_server)})  # fmt: skip
    return out


def _single(suite: Suite) -> list[NcclJob]:
    return [n for n in suite.nccl if len(n.servers) == 1]


def driver_script(suite: Suite) -> str:
    """POSIX sh, run by the CronJob's pod: each pair (server pod, then client pod, the client's log is
    the result), each single-server run, then the report. A pod that fails or overstays leaves its result
    missing, and the screen goes on."""
    q = shlex.quote
    lines = [
        "#!/bin/sh",
        "set -u",
        f'screen="${{SCREEN_DIR:-{MOUNT}}}"  # the ConfigMap: this script, the pods, the intent',
        f'out="${{SCREEN_RESULTS:-{RESULTS}}}/screen-$(date -u +%Y%m%dT%H%M%SZ)"',
        'mkdir -p "$out"',
        "# start FILE: create the pod, print its name (pod/...)",
        f'start() {{ kubectl create -n {q(NAMESPACE)} -f "$screen/$1" -o name; }}',
        "# finish POD: wait until it ends (Succeeded or Failed) or the deadline passes",
        "finish() {",
        f"  deadline=$(( $(date +%s) + {POD_TIMEOUT} ))",
        '  while [ "$(date +%s)" -lt "$deadline" ]; do',
        f"    phase=$(kubectl get -n {q(NAMESPACE)} \"$1\" -o jsonpath='{{.status.phase}}' 2>/dev/null || true)",
        '    case "$phase" in Succeeded|Failed) return 0 ;; esac',
        "    sleep 5",
        "  done",
        '  echo "screen: $1 did not end in time" >&2',
        "}",
        "running() {",
        f'  kubectl wait -n {q(NAMESPACE)} --for=condition=Ready "$1" --timeout={POD_TIMEOUT}s >/dev/null 2>&1 \\',
        "    || true",
        "}",
        "pair() {  # JOB: the server pod, then the client pod; the client's log is the result",
        '  s=$(start "$1.server.json") || { echo "screen: $1: server pod not created" >&2; return 0; }',
        '  running "$s"; sleep 3',
        '  if c=$(start "$1.client.json"); then',
        f'    finish "$c"; kubectl logs -n {q(NAMESPACE)} "$c" > "$out/$1.txt" || rm -f "$out/$1.txt"',
        f'    kubectl delete -n {q(NAMESPACE)} "$c" --wait=false >/dev/null 2>&1 || true',
        "  fi",
        f'  kubectl delete -n {q(NAMESPACE)} "$s" --wait=false >/dev/null 2>&1 || true',
        "}",
        "single() {  # JOB: one pod, its log is the result",
        '  p=$(start "$1.json") || { echo "screen: $1: pod not created" >&2; return 0; }',
        f'  finish "$p"; kubectl logs -n {q(NAMESPACE)} "$p" > "$out/$1.txt" || rm -f "$out/$1.txt"',
        f'  kubectl delete -n {q(NAMESPACE)} "$p" --wait=false >/dev/null 2>&1 || true',
        "}",
    ]
    lines += [f"pair {q(j.id)}" for j in suite.perf]
    lines += [f"single {q(n.id)}" for n in _single(suite)]
    lines += [
        "# The verdict and the signal record (also on this pod's log, for whoever reads it).",
        'gpufabric acceptance screen report "$screen/intent.yml" --results "$out" --signal "$out/signal.json"',
        "status=$?",
        'cat "$out/signal.json" 2>/dev/null',
        'exit "$status"',
    ]
    return "\n".join(lines) + "\n"


# An image reference: [registry[:port]/]path[:tag][@digest], nothing a YAML or shell reader would take apart.
_IMAGE = re.compile(r"[a-z0-9][a-z0-9._/:-]{0,254}(@sha256:[0-9a-f]{64})?")


def documents(plan: Plan, intent_text: str, *, schedule: str, image: str, driver_image: str) -> str:
    """The objects, as one YAML stream (`kubectl apply -f`)."""
    for what, ref in (("--image", image), ("--driver-image", driver_image)):
        if not _IMAGE.fullmatch(ref):
            raise ScreenError(f"{what} {ref!r} is not an image reference (registry/path:tag[@sha256:digest])")
    suite = _k8s_suite(plan)
    labels = _labels(plan)
    meta = {"name": NAME, "namespace": NAMESPACE, "labels": labels}
    data = {"screen.sh": driver_script(suite), "intent.yml": intent_text}
    data |= {key: json_dumps(pod, indent=2) + "\n" for key, pod in manifests(plan, suite, image).items()}
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list", "watch", "delete"]},
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
         "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {**meta, "name": f"{NAME}-results"},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": {
            "schedule": cron_schedule(schedule),
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"spec": {"backoffLimit": 0, "template": {"metadata": {"labels": labels}, "spec": {
                "serviceAccountName": NAME,
                "restartPolicy": "Never",
                "containers": [{
                    "name": "driver",
                    "image": driver_image,
                    "command": ["sh", f"{MOUNT}/screen.sh"],
                    "volumeMounts": [{"name": "screen", "mountPath": MOUNT, "readOnly": True},
                                     {"name": "results", "mountPath": RESULTS}],
                }],
                "volumes": [{"name": "screen", "configMap": {"name": NAME}},
                            {"name": "results", "persistentVolumeClaim": {"claimName": f"{NAME}-results"}}],
            }}}},
        }},
    ]  # fmt: skip
    head = f"# The slow-node screen of {plan.intent.fabric.name} as a Kubernetes CronJob, generated by gpufabric.\n"
    return head + "---\n".join(dump_yaml(o) for o in objects)


def _k8s_suite(plan: Plan) -> Suite:
    """The screen's pairs and single-server runs (a rail the k8s-network export has no network for, a
    bonded plane's, is left out: a pod could not take its NIC)."""
    suite = screen_suite(plan)
    served = {(r.plane.name, r.number) for r in k8s_network.rails(plan)}
    return Suite(suite.fabric, perf=[j for j in suite.perf if (j.plane, j.rail) in served], nccl=_single(suite))
