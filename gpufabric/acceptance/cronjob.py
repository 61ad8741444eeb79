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


CONFIGMAP_MAX = 1 << 20  # bytes of data a ConfigMap may hold (Kubernetes' documented limit: 1 MiB)
# What a command token may hold to pass through the job table and the driver's JSON unquoted: the
# plan's device names, numbers, options and addresses, nothing a shell or JSON reader would take apart.
_TOKEN = re.compile(r"[A-Za-z0-9_.,=:/+-]+")


def _labels(plan: Plan) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "gpufabric", "gpufabric.io/cluster": plan.intent.fabric.name,
            "app.kubernetes.io/name": NAME}  # fmt: skip


def _rail(job: PerfJob) -> tuple[str, str]:
    """The rail's network and resource, named as the k8s-network export names them."""
    # A multi-plane compute plane's job names its plane as `compute-p1`: the resource is `compute_p1_rail<r>`.
    resource = job.plane.replace("-", "_")
    return f"{job.plane}-rail{job.rail}", f"{k8s_network.RESOURCE_PREFIX}/{resource}_rail{job.rail}"


def _single(suite: Suite) -> list[NcclJob]:
    return [n for n in suite.nccl if len(n.servers) == 1]


def _tokens(command: list[str]) -> str:
    bad = [t for t in command if not _TOKEN.fullmatch(t)]
    if bad:
        raise ScreenError(f"command word {bad[0]!r} cannot go into the screen's job table")
    return " ".join(command)


def job_table(suite: Suite) -> str:
    """One tab-separated line per job, what the driver builds its pods from:
    `pair ID SERVER_NODE CLIENT_NODE NETWORK RESOURCE 1 SERVER_COMMAND CLIENT_COMMAND` and
    `single ID NODE - - nvidia.com/gpu GPUS COMMAND -`."""
    lines = []
    for job in suite.perf:
        network, resource = _rail(job)
        lines.append("\t".join(["pair", job.id, job.server.server, job.client.server, network, resource, "1",
                                 _tokens(job.command("server")), _tokens(job.command("client"))]))  # fmt: skip
    for n in _single(suite):
        command = n.command()
        command[command.index("-g") + 1] = str(n.gpus_per_server)  # one process drives every GPU, no MPI
        lines.append("\t".join(["single", n.id, n.servers[0], "-", "-", "nvidia.com/gpu", str(n.gpus_per_server),
                                 _tokens(command), "-"]))  # fmt: skip
    return "\n".join(lines) + "\n"


def driver_script(plan: Plan, image: str) -> str:
    """POSIX sh, run by the CronJob's pod: for each line of the job table, the pods (a pair's server,
    then its client; a single-server run's one pod) pinned to their nodes, each client's log kept as the
    job's result; then the report. A pod that fails or overstays leaves its result missing, and the
    screen goes on. Every pod is deleted when its job ends."""
    q = shlex.quote
    ns = q(NAMESPACE)
    labels = json_dumps(_labels(plan), separators=(",", ":"))
    return "\n".join([
        "#!/bin/sh",
        "set -u",
        f'screen="${{SCREEN_DIR:-{MOUNT}}}"  # the ConfigMap: this script, the job table, the intent',
        f'out="${{SCREEN_RESULTS:-{RESULTS}}}/screen-$(date -u +%Y%m%dT%H%M%SZ)"',
        'mkdir -p "$out"',
        f"labels={q(labels)}",
        f"image={q(image)}",
        "# args WORDS: a JSON array of the words (the job table holds no quote, backslash or space in a word)",
        'args() { sep=""; printf "["; for w in $1; do printf \'%s"%s"\' "$sep" "$w"; sep=","; done; printf "]"; }',
        "# pod JOB SIDE NODE NETWORK RESOURCE COUNT WORDS: the pod's manifest, pinned to NODE (no scheduler)",
        "pod() {",
        '  ann="\\"gpufabric.io/screen-job\\":\\"$1\\",\\"gpufabric.io/screen-side\\":\\"$2\\""',
        '  [ "$4" = - ] || ann="$ann,\\"k8s.v1.cni.cncf.io/networks\\":\\"$4\\""',
        '  limits="{\\"$5\\":\\"$6\\"}"',
        f"  printf \'{{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{{\"generateName\":\"screen-%s-\","
        f"\"namespace\":\"{NAMESPACE}\",\"labels\":%s,\"annotations\":{{%s}}}},\"spec\":{{\"nodeName\":\"%s\","
        "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"tool\",\"image\":\"%s\",\"command\":%s,"
        "\"securityContext\":{\"capabilities\":{\"add\":[\"IPC_LOCK\"]}},"
        "\"resources\":{\"limits\":%s,\"requests\":%s}}]}}\\n\' "
        '"$2" "$labels" "$ann" "$3" "$image" "$(args "$7")" "$limits" "$limits"',
        "}",
        "# start JOB SIDE NODE NETWORK RESOURCE COUNT WORDS: create the pod, print its name (pod/...)",
        f'start() {{ pod "$@" | kubectl create -n {ns} -f - -o name; }}',
        "# finish POD: wait until it ends (Succeeded or Failed) or the deadline passes",
        "finish() {",
        f"  deadline=$(( $(date +%s) + {POD_TIMEOUT} ))",
        '  while [ "$(date +%s)" -lt "$deadline" ]; do',
        f"    phase=$(kubectl get -n {ns} \"$1\" -o jsonpath=\'{{.status.phase}}\' </dev/null 2>/dev/null || true)",
        '    case "$phase" in Succeeded|Failed) return 0 ;; esac',
        "    sleep 5",
        "  done",
        '  echo "screen: $1 did not end in time" >&2',
        "}",
        "# (kubectl reads no job table: every call below but create's has /dev/null as its input)",
        f'ready() {{ kubectl wait -n {ns} --for=condition=Ready "$1" --timeout={POD_TIMEOUT}s </dev/null \\',
        "  >/dev/null 2>&1 || true; }",
        f'keep() {{ kubectl logs -n {ns} "$1" </dev/null > "$out/$2.txt" || rm -f "$out/$2.txt"; }}',
        f'gone() {{ kubectl delete -n {ns} "$@" --wait=false </dev/null >/dev/null 2>&1 || true; }}',
        'tab=$(printf "\\t")',
        'while IFS="$tab" read -r kind id first second network resource count one two; do',
        '  if [ "$kind" = pair ]; then',
        '    if ! s=$(start "$id" server "$first" "$network" "$resource" "$count" "$one"); then',
        '      echo "screen: $id: no server pod" >&2; continue',
        "    fi",
        '    ready "$s"; sleep "${SCREEN_SETTLE:-3}"  # the listener is up before the client connects',
        '    if c=$(start "$id" client "$second" "$network" "$resource" "$count" "$two"); then',
        '      finish "$c"; keep "$c" "$id"; gone "$c"',
        "    fi",
        '    gone "$s"',
        "  else",
        '    if ! p=$(start "$id" node "$first" - "$resource" "$count" "$one"); then',
        '      echo "screen: $id: no pod" >&2; continue',
        "    fi",
        '    finish "$p"; keep "$p" "$id"; gone "$p"',
        "  fi",
        'done < "$screen/jobs.tsv"',
        "# The verdict and the signal record (also on this pod's log, for whoever reads it).",
        'gpufabric acceptance screen report "$screen/intent.yml" --results "$out" --signal "$out/signal.json"',
        "status=$?",
        'cat "$out/signal.json" 2>/dev/null',
        'exit "$status"',
    ]) + "\n"  # fmt: skip


# An image reference: [registry[:port]/]path[:tag][@digest], nothing a YAML or shell reader would take apart.
_IMAGE = re.compile(r"[a-z0-9][a-z0-9._/:-]{0,254}(@sha256:[0-9a-f]{64})?")


def documents(plan: Plan, intent_text: str, *, schedule: str, image: str, driver_image: str) -> str:
    """The objects, as one YAML stream (`kubectl apply -f`)."""
    for what, ref in (("--image", image), ("--driver-image", driver_image)):
        if not _IMAGE.fullmatch(ref):
            raise ScreenError(f"{what} {ref!r} is not an image reference (registry/path:tag[@sha256:digest])")
    suite = _k8s_suite(plan)
    if suite.perf and plan.intent.kubernetes.rdma == "shared":
        # A pair's pods take the rail's network (_rail); with the shared device plugin there is none to take.
        raise ScreenError(
            "kubernetes.rdma: shared gives the rails no pod network, which the screen's perftest pods join: "
            "run this screen from Slurm (screen.sbatch, without --image), or export with host-device or sriov"
        )
    labels = _labels(plan)
    meta = {"name": NAME, "namespace": NAMESPACE, "labels": labels}
    data = {"screen.sh": driver_script(plan, image), "jobs.tsv": job_table(suite), "intent.yml": intent_text}
    size = sum(len(v.encode()) for v in data.values())
    if size > CONFIGMAP_MAX:
        raise ScreenError(
            f"the screen's ConfigMap would hold {size} bytes ({len(suite.perf)} pairs), past the 1 MiB a ConfigMap "
            "may hold: run this screen from Slurm (screen.sbatch)"
        )
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
    served = {(r.part, r.number) for r in k8s_network.rails(plan)}
    return Suite(suite.fabric, perf=[j for j in suite.perf if (j.plane, j.rail) in served], nccl=_single(suite))
