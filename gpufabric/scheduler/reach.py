"""Which schedulers to tell, and how to reach them: from the intent's `scheduler:` section, each part of
which the command line may override (`--slurm-conf`, `--k8s-api`, `--k8s-token-env`, `--k8s-ca-file`,
`--kubeconfig`, `--context`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpufabric.export.k8s_network import RESOURCE_PREFIX, rails
from gpufabric.plan.model import Plan
from gpufabric.scheduler.kubernetes import Kubernetes
from gpufabric.scheduler.model import Scheduler
from gpufabric.scheduler.slurm import Slurm

DEFAULT_JOB_WAIT = 3600


@dataclass(frozen=True)
class Reach:
    """What the command line says about the schedulers (None: what the intent says)."""

    slurm: bool | None = None  # False: leave Slurm alone even if the intent names it
    slurm_conf: Path | None = None
    k8s_api: str | None = None
    k8s_token_env: str | None = None
    k8s_ca_file: Path | None = None
    k8s_kubeconfig: Path | None = None  # a kubeconfig file (else $KUBECONFIG, the pod's account, ~/.kube/config)
    k8s_context: str | None = None  # the kubeconfig's context (else its current-context)
    kubernetes: bool | None = None  # False: leave Kubernetes alone; True: reach it even if the intent does not
    job_wait: float | None = None


def rdma_resources(plan: Plan) -> list[str]:
    """The device plugin's resource names of the plan's RDMA rails (`gpufabric export k8s-network`)."""
    return [f"{RESOURCE_PREFIX}/{rail.resource}" for rail in rails(plan)]


def job_wait(plan: Plan, reach: Reach | None = None) -> float:
    if reach is not None and reach.job_wait is not None:
        return reach.job_wait
    settings = plan.intent.scheduler
    return float(settings.job_wait if settings is not None else DEFAULT_JOB_WAIT)


def schedulers(plan: Plan, reach: Reach | None = None) -> list[Scheduler]:
    """The schedulers the intent and the command line name, opened (nothing is asked of them yet)."""
    given = reach or Reach()
    settings = plan.intent.scheduler
    out: list[Scheduler] = []
    slurm = settings.slurm if settings is not None else None
    if given.slurm is not False and (slurm is not None or given.slurm or given.slurm_conf is not None):
        conf = given.slurm_conf or (Path(slurm.conf) if slurm is not None and slurm.conf else None)
        out.append(Slurm(conf))
    k8s = settings.kubernetes if settings is not None else None
    by_kubeconfig = given.k8s_kubeconfig is not None or given.k8s_context is not None
    named = k8s is not None or given.k8s_api is not None or by_kubeconfig or given.kubernetes is True
    if given.kubernetes is not False and named:
        # The intent's URL only when the command line names no kubeconfig: --kubeconfig/--context win.
        api = given.k8s_api or (k8s.api if k8s is not None and not by_kubeconfig else None)
        token_env = given.k8s_token_env
        if token_env is None and k8s is not None and k8s.token is not None:
            token_env = k8s.token.env  # the schema takes {env: NAME} only
        ca = given.k8s_ca_file or (Path(k8s.ca_file) if k8s is not None and k8s.ca_file else None)
        out.append(
            Kubernetes(
                api, rdma_resources(plan), token_env, ca, kubeconfig=given.k8s_kubeconfig, context=given.k8s_context
            )
        )
    return out
