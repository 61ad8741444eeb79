"""`gpufabric remediate`: the Alertmanager webhook receiver that drains the nodes behind a failing part."""

from __future__ import annotations

import ipaddress
import re
import signal
import threading
from pathlib import Path
from typing import Any

import click

from gpufabric.cli.options import FiniteFloat, file_arg, load_plan
from gpufabric.cli.output import err, shown
from gpufabric.cli.scheduler_options import (
    CONTEXT_HELP,
    K8S_API_HELP,
    K8S_CA_HELP,
    KUBECONFIG_HELP,
    KUBERNETES_HELP,
    reach_with_wait,
)
from gpufabric.remediate.auth import AuthError, check_listen, read_token, tls_context
from gpufabric.remediate.loop import Action, Guards, RemediateError, Remediator
from gpufabric.remediate.server import PATH, Receiver
from gpufabric.scheduler import schedulers
from gpufabric.telemetry.alert_post import BASE_URL

SECONDS = re.compile(r"(?P<n>[0-9]{1,7})(?P<unit>s|m|h)?")
UNIT = {"s": 1, "m": 60, "h": 3600, None: 1}
STATE_DIR = Path(".local/state/gpufabric")


def _seconds(_ctx: click.Context, _param: click.Parameter, value: str) -> float:
    found = SECONDS.fullmatch(value)
    if found is None:
        raise click.BadParameter(f"seconds, or a number with s, m or h (600s, 10m), not {value!r}")
    return float(int(found["n"]) * UNIT[found["unit"]])


def _listen(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise click.BadParameter(f"ADDRESS:PORT with an IP address (127.0.0.1:9095), not {value!r}") from None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"a port from 1 to 65535, not {port!r}")
    return host, int(port)


def _share(_ctx: click.Context, _param: click.Parameter, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise click.BadParameter(f"a share from 0 to 1 (0.05 is 5 %), not {value}")
    return value


def _url(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not BASE_URL.fullmatch(value):
        raise click.BadParameter(f"an http(s) URL (http://127.0.0.1:9093), not {value!r}")
    return value


@click.group("remediate")
def remediate_cmd() -> None:
    """Take the nodes behind a failing link, optic, NIC or GPU out of Slurm and Kubernetes while its
    alert fires, and put exactly those back once it has stayed resolved (docs/remediation.md)."""


@remediate_cmd.command("serve")
@file_arg
@click.option("--listen", default="127.0.0.1:9095", show_default=True, callback=_listen, metavar="ADDR:PORT",
              help=f"Where Alertmanager POSTs its notifications ({PATH}).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Decide and record everything; ask no scheduler anything.")
@click.option("--max-share", type=FiniteFloat(), default=0.05, show_default=True, callback=_share,
              help="At most this share of the plan's servers out at once (at least one node).")  # fmt: skip
@click.option("--max-unit-share", type=FiniteFloat(), default=0.25, show_default=True, callback=_share,
              help="At most this share of one scalable unit's servers out at once (at least one node).")  # fmt: skip
@click.option("--hold-down", default="600s", show_default=True, callback=_seconds, metavar="DURATION",
              help="How long an alert stays resolved before its nodes go back.")  # fmt: skip
@click.option("--state", "state_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The record of what the loop holds (default ~/.local/state/gpufabric/remediate.json).")  # fmt: skip
@click.option(
    "--audit-log",
    "audit_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The trail of its actions, JSON lines (default ~/.local/state/gpufabric/remediate.jsonl).",
)
@click.option("--slurm/--no-slurm", "slurm", default=None, help="Tell Slurm (or not), whatever the intent says.")
@click.option("--slurm-conf", type=click.Path(dir_okay=False, path_type=Path), help="slurm.conf for Slurm's commands.")
@click.option("--kubernetes/--no-kubernetes", "kubernetes", default=None, help=KUBERNETES_HELP)
@click.option("--k8s-api", metavar="URL", help=K8S_API_HELP)
@click.option("--k8s-token-env", metavar="NAME", help="The environment variable holding the bearer token.")
@click.option("--k8s-ca-file", "--k8s-ca", "k8s_ca_file", type=click.Path(dir_okay=False, path_type=Path),
              help=K8S_CA_HELP)  # fmt: skip
@click.option("--kubeconfig", "k8s_kubeconfig", type=click.Path(dir_okay=False, path_type=Path),
              help=KUBECONFIG_HELP)  # fmt: skip
@click.option("--context", "k8s_context", metavar="NAME", help=CONTEXT_HELP)
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path),
              help="A file holding the bearer token Alertmanager sends (its http_config authorization "
                   "credentials_file): a request without it gets 401. Needed to listen on anything but "
                   "loopback.")  # fmt: skip
@click.option("--tls-cert", type=click.Path(dir_okay=False, path_type=Path),
              help="PEM certificate (chain) to serve the webhook over TLS, with --tls-key.")  # fmt: skip
@click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path), help="The certificate's PEM key.")
@click.option("--alertmanager", metavar="URL", callback=_url,
              help="Alertmanager's base URL (http://127.0.0.1:9093): a node a cap kept in is posted there as a "
                   "GpufabricRemediationCapped alert for a person.")  # fmt: skip
def serve_cmd(*, file: str | None, listen: tuple[str, int], dry_run: bool, max_share: float, max_unit_share: float,
              hold_down: float, state_path: Path | None, audit_path: Path | None, alertmanager: str | None,
              token_file: Path | None, tls_cert: Path | None, tls_key: Path | None, **opts: Any) -> int:  # fmt: skip
    """Receive Alertmanager's notifications until interrupted (SIGINT or SIGTERM) and act on them.

    Exit codes: 0 stopped; 2 bad settings, a token or certificate that cannot be used, a record that is
    not one, or a trail or record that cannot be written.
    """
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    token = read_token(token_file) if token_file is not None else None  # AuthError, InputError: exit 2
    check_listen(listen[0], token)
    tls = tls_context(tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None
    if token is not None and tls is None and not ipaddress.ip_address(listen[0]).is_loopback:
        err.print(shown(f"warning: the token crosses the network to {listen[0]} in clear: add --tls-cert, --tls-key"))
    plan = load_plan(file, reaches=True)
    reach = reach_with_wait(opts)
    found = schedulers(plan, reach)
    if not found and not dry_run:
        err.print("no scheduler named: the intent has no `scheduler:` section and no option names one")
        return 2
    home = Path.home() / STATE_DIR
    try:
        loop = Remediator(
            plan,
            found,
            Guards(max_share, max_unit_share, hold_down, dry_run),
            state_path=state_path or home / "remediate.json",
            audit_path=audit_path or home / "remediate.jsonl",
        )
    except RemediateError as exc:
        raise click.UsageError(str(exc)) from None
    loop.start()  # TrailError: a trail or record it cannot write, and the receiver does not start (exit 2)

    def report(action: Action) -> None:
        style = "bold" if action.action in ("capped", "failed") else ""
        err.print(shown(action.line(), style))

    try:
        server = Receiver(listen, loop, report, alertmanager=alertmanager, token=token, tls=tls)
    except OSError as exc:
        raise AuthError(f"--listen {listen[0]}:{listen[1]}: cannot listen there: {exc.strerror}") from None
    server.start_ticking(min(30.0, max(1.0, hold_down / 10)))
    thread = threading.Thread(target=server.serve_forever, name="remediate-serve", daemon=True)
    thread.start()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    kinds = ", ".join(s.kind for s in found) or "none"
    scheme = "https" if tls else "http"
    host = f"[{listen[0]}]" if ":" in listen[0] else listen[0]
    guard = "bearer token" if token else "no token: loopback only"
    err.print(shown(f"receiving on {scheme}://{host}:{server.server_port}{PATH} (schedulers: {kinds}; {guard}"
                    f"{'; dry run' if dry_run else ''})"))  # fmt: skip
    stop.wait()
    server.shutdown()
    server.server_close()
    return 0
