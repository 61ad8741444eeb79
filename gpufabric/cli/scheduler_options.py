"""The options that say how to reach the schedulers, and what a command changing switches says about the
servers behind them (`gpufabric scheduler`, `nornir push`, `nornir restart`, `nornir upgrade`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gpufabric.cli.options import FiniteFloat
from gpufabric.cli.output import err, shown
from gpufabric.push.audit import ENV as AUDIT_ENV
from gpufabric.scheduler import Reach
from gpufabric.scheduler.model import SchedulerOutputError
from gpufabric.scheduler.slurm import expand_hostlist

if TYPE_CHECKING:
    from gpufabric.plan import Plan


class Lines:
    """The service's lines on stderr; warnings (a refusal, a forced change) in bold."""

    def say(self, text: str) -> None:
        err.print(shown(text))

    def warn(self, text: str) -> None:
        err.print(shown(f"warning: {text}", "bold"))


PATH = click.Path(dir_okay=False, path_type=Path)
KUBERNETES_HELP = (
    "Tell Kubernetes (or not), whatever the intent says; alone, reach it as kubectl would ($KUBECONFIG, the pod's "
    "service account in a cluster, ~/.kube/config)."
)
K8S_API_HELP = "The API server, https://host:port, with --k8s-token-env (instead of a kubeconfig)."
K8S_CA_HELP = "CA bundle of the API server (replaces the kubeconfig's certificate-authority)."
KUBECONFIG_HELP = "The kubeconfig file to log in with (the official Kubernetes client reads it). [env: KUBECONFIG]"
CONTEXT_HELP = "The kubeconfig's context to use (default: its current-context)."
# How to log in to the Kubernetes API server: every command that reaches it takes these.
K8S_LOGIN_OPTIONS = (
    click.option("--k8s-api", metavar="URL", help=K8S_API_HELP),
    click.option("--k8s-token-env", metavar="NAME", help="The environment variable holding the bearer token."),
    click.option("--k8s-ca-file", "--k8s-ca", "k8s_ca_file", type=PATH, help=K8S_CA_HELP),
    click.option("--kubeconfig", "k8s_kubeconfig", type=PATH, help=KUBECONFIG_HELP),
    click.option("--context", "k8s_context", metavar="NAME", help=CONTEXT_HELP),
)


def reach_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """How to reach the schedulers, each overriding the intent's `scheduler:` section."""
    options = (
        click.option(
            "--slurm/--no-slurm",
            "slurm",
            default=None,
            help="Tell Slurm (or not), whatever the intent says.",
        ),
        click.option(
            "--slurm-conf", type=click.Path(dir_okay=False, path_type=Path), help="slurm.conf for Slurm's commands."
        ),
        click.option("--kubernetes/--no-kubernetes", "kubernetes", default=None, help=KUBERNETES_HELP),
        *K8S_LOGIN_OPTIONS,
    )
    for option in reversed(options):
        fn = option(fn)
    return fn


def change_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """What a command that takes switches out of service (push, restart, upgrade) says about the servers
    behind them and the wait for the traffic: the schedulers (as `reach_options`), --job-wait, --force and
    --drain-timeout. The command gets them as `change_opts`, for `reach_of` and `settle_of`."""
    options = (
        click.option(
            "--job-wait",
            type=FiniteFloat(min=0),
            help="Seconds to wait for the jobs on the servers that depend on a switch alone (a rail leaf's) to "
            "end before it changes; when they still run, the change is refused (exit 4, that switch untouched). "
            "[default: the intent's scheduler.job_wait]",
        ),
        click.option(
            "--force",
            is_flag=True,
            help="When --job-wait runs out, change the switch anyway with jobs still running behind it (said loudly).",
        ),
        click.option(
            "--drain-timeout",
            type=FiniteFloat(0, 7200),
            default=300.0,
            show_default=True,
            help="Seconds a drained switch's traffic gets to leave (the neighbours routing around it, its fabric "
            "ports near idle), and its ECMP paths to come back after; otherwise the change is refused. 0: drain "
            "without waiting (a fleet whose routes cannot be read, such as the benchmarks' simulator).",
        ),
    )
    fn = reach_options(fn)
    for option in reversed(options):
        fn = option(fn)
    return fn


def reach_of(opts: dict[str, Any]) -> Reach:
    """The schedulers as `change_options` gave them."""
    return reach_with_wait(opts, opts.get("job_wait"))


def reach_with_wait(opts: dict[str, Any], wait: float | None = None) -> Reach:
    return Reach(
        slurm=opts["slurm"],
        slurm_conf=opts["slurm_conf"],
        kubernetes=opts["kubernetes"],
        k8s_api=opts["k8s_api"],
        k8s_token_env=opts["k8s_token_env"],
        k8s_ca_file=opts["k8s_ca_file"],
        k8s_kubeconfig=opts.get("k8s_kubeconfig"),
        k8s_context=opts.get("k8s_context"),
        job_wait=wait,
    )


audit_log_option = click.option(
    "--audit-log",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar=AUDIT_ENV,
    help="Append each step (the schedulers' drains, each switch's drain and how it ended) here as JSON lines "
    f"(`gpufabric audit` reads them back). [env: {AUDIT_ENV}; default: the lab's state folder for the lab, "
    "/var/log/gpufabric/audit.jsonl for root, ~/.local/state/gpufabric/audit.jsonl otherwise]",
)


def nodes_option(nodes: str) -> list[str]:
    """--nodes' Slurm hostlist, expanded; a bad one is --nodes' error."""
    try:
        return expand_hostlist(nodes)
    except SchedulerOutputError as exc:
        raise click.BadParameter(f"{exc}: a Slurm hostlist, e.g. gpu[01-04],gpu07", param_hint="--nodes") from None


def slurm_conf_of(plan: Plan, given: Path | None) -> Path | None:
    """The slurm.conf Slurm's commands read: --slurm-conf, else the intent's scheduler.slurm.conf, else Slurm's."""
    settings = plan.intent.scheduler
    if given is None and settings is not None and settings.slurm is not None and settings.slurm.conf:
        return Path(settings.slurm.conf)
    return given
