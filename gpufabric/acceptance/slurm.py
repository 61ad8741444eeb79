"""Slurm batch scripts for an acceptance suite: one per job, run one at a time (a perftest pair must
have its NICs to itself), each writing the tool's output where `acceptance report` reads it."""

from __future__ import annotations

import re
import shlex

from gpufabric.acceptance.counters import nic_command
from gpufabric.acceptance.model import DCGM_SECONDS, DiagJob, IncastJob, NcclJob, PerfJob, Suite
from gpufabric.acceptance.screen import ScreenError

JOB_NAME = "gpufabric-acceptance"  # with --dependency=singleton: one job of this name runs at a time


def _header(job_id: str, nodes: int, extra: list[str]) -> list[str]:
    return [
        "#!/bin/bash",
        f"#SBATCH --job-name={JOB_NAME}",
        "#SBATCH --dependency=singleton",
        f"#SBATCH --nodes={nodes}",
        f"#SBATCH --output=results/{job_id}.slurm.log",
        *extra,
        "set -euo pipefail",
        "mkdir -p results",
    ]


def perf_script(job: PerfJob) -> str:
    q = shlex.quote
    server = " ".join(q(c) for c in job.command("server"))
    client = " ".join(q(c) for c in job.command("client"))
    nodes = sorted({job.server.server, job.client.server})
    lines = _header(job.id, len(nodes), [f"#SBATCH --nodelist={','.join(nodes)}"])
    lines += [
        f"srun --nodes=1 --ntasks=1 --nodelist={q(job.server.server)} {server} &",
        "listener=$!",
        "sleep 3  # the listener is up before the client connects",
        f"srun --nodes=1 --ntasks=1 --nodelist={q(job.client.server)} {client} > {q(f'results/{job.id}.txt')}",
        "wait $listener",
    ]
    return "\n".join(lines) + "\n"


def nccl_script(job: NcclJob) -> str:
    q = shlex.quote
    extra = [
        f"#SBATCH --nodelist={','.join(job.servers)}",
        f"#SBATCH --ntasks-per-node={job.gpus_per_server}",
        f"#SBATCH --gpus-per-node={job.gpus_per_server}",
    ]
    lines = _header(job.id, len(job.servers), extra)
    lines += [f"export {k}={q(v)}" for k, v in sorted(job.env.items())]
    lines.append(f"srun {' '.join(q(c) for c in job.command())} > {q(f'results/{job.id}.txt')}")
    return "\n".join(lines) + "\n"


def diag_script(job: DiagJob) -> str:
    """DCGM's diagnostic on its node, alone on it (it loads every GPU to its power limit), its JSON kept for
    `report`. dcgmi exits non-zero when a test fails; the JSON it wrote is the verdict's evidence all the same."""
    q = shlex.quote
    extra = [f"#SBATCH --nodelist={job.server}", "#SBATCH --exclusive", f"#SBATCH --time={DCGM_SECONDS // 60}"]
    lines = _header(job.id, 1, extra)
    cmd = " ".join(q(c) for c in job.command())
    lines.append(f"srun --nodes=1 --ntasks=1 {cmd} > {q(f'results/{job.id}.json')}")
    return "\n".join(lines) + "\n"


def incast_script(job: IncastJob) -> str:
    """Counters before, N listeners on the receiver, N senders at once, counters after. The switches'
    counters come from `gpufabric acceptance counters` on the batch host (it needs the intent and the
    switch logins: GPUFABRIC_ARGS, e.g. `inventory/fabric.yml --known-hosts FILE`)."""
    q = shlex.quote
    folder = f"results/{job.id}"
    nodes = sorted({e.server for e in job.servers()})
    lines = _header(job.id, len(nodes), [f"#SBATCH --nodelist={','.join(nodes)}"])
    lines += [
        f"# {job.why}; expected: no drop, PFC pauses on priority {job.priority} and ECN marks/CNPs that rise,",
        f"# about {job.expected} Gb/s in all at {job.receiver.server}",
        f"out={q(folder)}",
        'mkdir -p "$out"',
        "snapshot() {  # $1: before | after",
        f'  ${{GPUFABRIC:-gpufabric}} acceptance counters --job {q(job.id)} --phase "$1" --results results '
        '${GPUFABRIC_ARGS:-} || echo "switch counters not all read ($1): the report will say which" >&2',
    ]
    for end in job.servers():
        lines.append(f"  srun --overlap --nodes=1 --ntasks=1 --nodelist={q(end.server)} bash -c "
                     f'{q(nic_command(end))} > "$out/nic.$1.{end.server}.txt"')  # fmt: skip
    lines += ["}", "snapshot before", "listeners=()"]
    for i in range(len(job.senders)):
        cmd = " ".join(q(c) for c in job.command("server", i))
        lines += [f"srun --overlap --nodes=1 --ntasks=1 --nodelist={q(job.receiver.server)} {cmd} >/dev/null &",
                  "listeners+=($!)"]  # fmt: skip
    lines += ["sleep 3  # the listeners are up before the senders connect", "senders=()"]
    for i, s in enumerate(job.senders):
        cmd = " ".join(q(c) for c in job.command("client", i))
        lines += [f'srun --overlap --nodes=1 --ntasks=1 --nodelist={q(s.server)} {cmd} > "$out/{s.server}.txt" &',
                  "senders+=($!)"]  # fmt: skip
    lines += [
        'status=0; for p in "${senders[@]}" "${listeners[@]}"; do wait "$p" || status=1; done',
        "snapshot after",
        'exit "$status"',
    ]
    return "\n".join(lines) + "\n"


def scripts(suite: Suite) -> dict[str, str]:
    """File name -> text: a script per job and `submit.sh`, which queues them all."""
    files = {f"{j.id}.sbatch": perf_script(j) for j in suite.perf}
    files |= {f"{j.id}.sbatch": nccl_script(j) for j in suite.nccl}
    files |= {f"{j.id}.sbatch": incast_script(j) for j in suite.incast}
    files |= {f"{j.id}.sbatch": diag_script(j) for j in suite.gpu}
    submit = ["#!/bin/sh", "# Queue every acceptance job; they run one at a time (singleton), in this order.", "set -e"]
    submit += [f"sbatch {shlex.quote(name)}" for name in files]
    files["submit.sh"] = "\n".join(submit) + "\n"
    return files


SCREEN_JOB_NAME = "gpufabric-screen"
_CRON_FIELD = re.compile(r"[0-9*/,-]+")


def cron_schedule(text: str) -> str:
    """A cron schedule of five fields (minute hour day month weekday), as scrontab and a CronJob take it."""
    fields = text.split()
    if len(fields) != 5 or not all(_CRON_FIELD.fullmatch(f) for f in fields):
        raise ScreenError(
            f"{text!r} is not a cron schedule of five fields (minute hour day month weekday), e.g. '0 3 * * 0'"
        )
    return " ".join(fields)


def _screen_nodes(suite: Suite) -> list[str]:
    nodes = {e.server for j in suite.perf for e in (j.client, j.server)}
    return sorted(nodes | {s for j in suite.nccl for s in j.servers})


def screen_script(suite: Suite) -> str:
    """One batch job that runs the whole screen, one step at a time (a pair has its NICs to itself),
    into results/screen-<UTC time>/, then `gpufabric acceptance screen report` writes signal.json there.
    A step that fails leaves its result missing (the report says so) and the screen goes on."""
    q = shlex.quote
    nodes = _screen_nodes(suite)
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={SCREEN_JOB_NAME}",
        "#SBATCH --dependency=singleton",
        f"#SBATCH --nodes={len(nodes)}",
        f"#SBATCH --nodelist={','.join(nodes)}",
        "#SBATCH --exclusive",
        "#SBATCH --output=screen-%j.log",
        "set -uo pipefail",
        'out="${SCREEN_RESULTS:-results}/screen-$(date -u +%Y%m%dT%H%M%SZ)"',
        'mkdir -p "$out"',
        'step() { echo "screen: $1 failed (its result stays missing)" >&2; }',
    ]
    for job in suite.perf:
        server = " ".join(q(c) for c in job.command("server"))
        client = " ".join(q(c) for c in job.command("client"))
        lines += [
            f"srun --nodes=1 --ntasks=1 --nodelist={q(job.server.server)} {server} > /dev/null &",
            "listener=$!",
            "sleep 3  # the listener is up before the client connects",
            f'srun --nodes=1 --ntasks=1 --nodelist={q(job.client.server)} {client} > "$out"/{q(job.id + ".txt")} '
            f"|| step {q(job.id)}",
            f"wait $listener || step {q(job.id + ' listener')}",
        ]
    for n in suite.nccl:
        env = " ".join(f"{k}={q(v)}" for k, v in sorted(n.env.items()))
        cmd = " ".join(q(c) for c in n.command())
        lines.append(
            f"{env + ' ' if env else ''}srun --nodes={len(n.servers)} --nodelist={','.join(n.servers)} "
            f"--ntasks-per-node={n.gpus_per_server} --gpus-per-node={n.gpus_per_server} {cmd} "
            f'> "$out"/{q(n.id + ".txt")} || step {q(n.id)}'
        )
    lines += [
        "# The verdict: results against their median, the part behind slow ones, a signal record for the",
        "# remediation loop (GPUFABRIC_ARGS: the intent, e.g. inventory/fabric.yml). Exit 4: slow results.",
        '${GPUFABRIC:-gpufabric} acceptance screen report ${GPUFABRIC_ARGS:-} --results "$out" '
        '--signal "$out/signal.json"',
    ]
    return "\n".join(lines) + "\n"


def screen_scrontab(suite: Suite, schedule: str, script: str) -> str:
    """A scrontab entry (Slurm 20.11+, `scrontab FILE`) running the screen's script on `schedule`: the
    `#SCRON` lines are the batch options (scrontab does not read the script's #SBATCH lines)."""
    nodes = _screen_nodes(suite)
    return "\n".join([
        f"# gpufabric acceptance screen of {suite.fabric}: install with `scrontab <this file>`",
        f"#SCRON --job-name={SCREEN_JOB_NAME}",
        f"#SCRON --nodes={len(nodes)}",
        f"#SCRON --nodelist={','.join(nodes)}",
        "#SCRON --exclusive",
        f"{cron_schedule(schedule)} bash {shlex.quote(script)}",
    ]) + "\n"  # fmt: skip
