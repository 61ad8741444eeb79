"""`gpufabric telemetry serve|scrape|rules|dashboard`: fabric counters for Prometheus, from the plan."""

from __future__ import annotations

import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import click

from gpufabric.cli.fleet_options import login_options
from gpufabric.cli.options import FiniteFloat, file_arg, load_plan
from gpufabric.cli.output import emit, err, shown, write_stdout
from gpufabric.files import write_atomic
from gpufabric.fleet.args import FleetArgs
from gpufabric.outputs import json_dumps

_DURATION = re.compile(r"[1-9][0-9]{0,5}(ms|s|m|h)")


@click.group("telemetry")
def telemetry_cmd() -> None:
    """Fabric telemetry from the plan: a Prometheus exporter whose series carry the plan's labels
    (plane, device, role, port, peer, rail, unit; host, interface, leaf), alert rules and a Grafana
    dashboard generated from the same metric table.

    \b
      gpufabric telemetry serve --lab --listen 127.0.0.1:9108
      gpufabric telemetry rules -o build/gpufabric.rules.yml     (promtool check rules ...)
      gpufabric telemetry dashboard -o build/gpufabric-dashboard.json
    """


def _shard(text: str | None) -> Any:
    from gpufabric.telemetry.shards import ShardError, parse_shard

    if text is None:
        return None
    try:
        return parse_shard(text)
    except ShardError as exc:
        raise click.BadParameter(str(exc), param_hint="--shard") from None


def _budget_options(command: Any) -> Any:
    """--scrape-budget and --switch-deadline: how long a scrape, and one switch within it, may take."""
    from gpufabric.telemetry.shards import SCRAPE_BUDGET, SWITCH_DEADLINE

    command = click.option(
        "--switch-deadline", type=FiniteFloat(0.1, 3600), default=SWITCH_DEADLINE, show_default=True,
        metavar="SECONDS", help="A switch (or server) not read this long after its read started is reported as "
        "not read for that scrape (gpufabric_scrape_ok 0); the others are served.",
    )(command)  # fmt: skip
    return click.option(
        "--scrape-budget", type=FiniteFloat(0.1, 3600), default=SCRAPE_BUDGET, show_default=True,
        metavar="SECONDS", help="A scrape answers within this, whatever the switches do: keep it below "
        "Prometheus's scrape timeout (`telemetry prometheus` sets that to the interval, 30s by default).",
    )(command)  # fmt: skip


def _collector(
    fleet_args: FleetArgs,
    workers: int,
    shard: Any = None,
    *,
    budget: float,
    deadline: float,
    bmc_plain_http: bool = False,
) -> Any:
    from gpufabric.cli.errors import show_notes
    from gpufabric.telemetry.service import collector

    if deadline > budget:  # before any login: bad options
        raise click.BadParameter(
            f"{deadline:g} s does not fit a scrape budget of {budget:g} s (--scrape-budget)",
            param_hint="--switch-deadline",
        )
    return collector(
        fleet_args, workers, shard, budget=budget, deadline=deadline, reached=show_notes, bmc_plain_http=bmc_plain_http
    )


_BMC_PLAIN_HTTP = click.option(
    "--bmc-plain-http", is_flag=True,
    help="For a lab only: let the BMC login go over plain http to BMCs the intent reaches with `scheme: http` "
    "(it crosses the wire in clear). Without it such BMCs are refused.",
)  # fmt: skip


def _job_options(command: Any) -> Any:
    """--jobs, --slurm-conf, --jobs-interval: running jobs joined to their footprints' ports (docs/telemetry.md)."""
    command = click.option(
        "--jobs-interval", type=FiniteFloat(1, 3600), default=15.0, show_default=True, metavar="SECONDS",
        help="Read the scheduler's running jobs at most this often (its last answer serves the scrapes between).",
    )(command)  # fmt: skip
    command = click.option(
        "--slurm-conf", type=click.Path(dir_okay=False, path_type=Path),
        help="slurm.conf for squeue (--jobs slurm). [default: the intent's scheduler.slurm.conf, else Slurm's own]",
    )(command)  # fmt: skip
    return click.option(
        "--jobs", "jobs", type=click.Choice(["slurm"]),
        help="Serve gpufabric_job_port_info and gpufabric_job_nic_info: each running job (squeue --json) joined "
        "to the switch ports and NICs of its footprint. With --shard, the shard that owns the name gpufabric-jobs "
        "serves them.",
    )(command)  # fmt: skip


def _jobs(fleet_args: FleetArgs, jobs: str | None, slurm_conf: Path | None, interval: float, shard: Any) -> Any:
    if jobs is None:
        return None
    from gpufabric.telemetry.job_service import job_collector

    return job_collector(fleet_args, jobs, conf=slurm_conf, interval=interval, shard=shard)


@telemetry_cmd.command("serve")
@login_options
@click.option("--listen", default="127.0.0.1:9108", show_default=True, metavar="ADDR:PORT",
              help="Where Prometheus scrapes /metrics (every scrape reads the fabric).")  # fmt: skip
@click.option("--workers", type=click.IntRange(1, 256), default=16, show_default=True,
              help="Switches and servers read at once.")  # fmt: skip
@click.option("--shard", "shard_text", metavar="I/N",
              help="Read only shard I of N (counted from 0): the switches and servers whose name hashes "
                   "to I (Prometheus's hashmod). `telemetry prometheus --shards N` configures the N.")  # fmt: skip
@_budget_options
@_BMC_PLAIN_HTTP
@_job_options
def serve_cmd(*, fleet_args: FleetArgs, listen: str, workers: int, shard_text: str | None, scrape_budget: float,
              switch_deadline: float, bmc_plain_http: bool, jobs: str | None = None, slurm_conf: Path | None = None,
              jobs_interval: float = 15.0) -> int:  # fmt: skip
    """Serve the fabric's counters for Prometheus until interrupted (SIGINT or SIGTERM)."""
    from prometheus_client import CollectorRegistry, start_http_server

    host, _, port = listen.rpartition(":")
    if not port.isdigit() or not host:
        raise click.BadParameter("write ADDR:PORT, e.g. 127.0.0.1:9108", param_hint="--listen")
    shard = _shard(shard_text)
    registry = CollectorRegistry()
    collector = _collector(
        fleet_args, workers, shard, budget=scrape_budget, deadline=switch_deadline, bmc_plain_http=bmc_plain_http
    )
    registry.register(collector)
    joined = _jobs(fleet_args, jobs, slurm_conf, jobs_interval, shard)
    if joined is not None:
        registry.register(joined)
        joined.start()  # the scheduler is read on its own thread: a slow squeue never holds a scrape
    server, thread = start_http_server(int(port), addr=host.strip("[]"), registry=registry)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    share = f" (shard {shard})" if shard is not None else ""
    bmcs = f", {len(collector.bmcs)} BMCs" if collector.bmcs else ""
    err.print(
        f"serving {len(collector.switches)} switches and {len(collector.hosts)} servers{bmcs}{share} "
        f"on http://{listen}/metrics"
    )
    stop.wait()
    server.shutdown()
    thread.join(5)
    collector.close()
    if joined is not None:
        joined.close()
    return 0


@telemetry_cmd.command("scrape")
@login_options
@click.option("--workers", type=click.IntRange(1, 256), default=16, show_default=True)
@click.option("--shard", "shard_text", metavar="I/N", help="Read only shard I of N (counted from 0), as serve does.")
@_budget_options
@_BMC_PLAIN_HTTP
@_job_options
def scrape_cmd(*, fleet_args: FleetArgs, workers: int, shard_text: str | None, scrape_budget: float,
               switch_deadline: float, bmc_plain_http: bool, jobs: str | None = None, slurm_conf: Path | None = None,
               jobs_interval: float = 15.0) -> int:  # fmt: skip
    """Read the fabric once and print what `serve` would serve (Prometheus text format)."""
    from prometheus_client import CollectorRegistry, generate_latest

    shard = _shard(shard_text)
    registry = CollectorRegistry()
    collector = _collector(
        fleet_args, workers, shard, budget=scrape_budget, deadline=switch_deadline, bmc_plain_http=bmc_plain_http
    )
    registry.register(collector)
    joined = _jobs(fleet_args, jobs, slurm_conf, jobs_interval, shard)
    if joined is not None:
        registry.register(joined)  # read inline, once: a one-off scrape
    try:
        write_stdout(generate_latest(registry).decode())
    finally:
        collector.close()
    return 0


@telemetry_cmd.command("bmc")
@file_arg
@click.option("--node", "nodes", multiple=True, metavar="NAME", help="Only this server's BMC (repeatable).")
@click.option("--once", is_flag=True, help="Read every BMC once, print, and exit with the verdict.")
@click.option("--interval", type=FiniteFloat(1, 86400), default=30.0, show_default=True, metavar="SECONDS",
              help="Without --once: the time between two rounds.")  # fmt: skip
@click.option("--request-timeout", type=FiniteFloat(0.1, 600), default=5.0, show_default=True,
              metavar="SECONDS", help="One Redfish request, connect to last byte.")  # fmt: skip
@click.option("--deadline", type=FiniteFloat(0.1, 3600), default=20.0, show_default=True, metavar="SECONDS",
              help="The whole read of one BMC: past it, the BMC is reported not read.")  # fmt: skip
@click.option("--workers", type=click.IntRange(1, 256), default=16, show_default=True, help="BMCs read at once.")
@click.option("--vault-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Ansible Vault file holding the BMC password when the intent names it {vault: NAME}.")  # fmt: skip
@click.option("--vault-password-file", type=click.Path(dir_okay=False, path_type=Path),
              help="File holding the vault's password. [default: $ANSIBLE_VAULT_PASSWORD_FILE]")  # fmt: skip
@click.option("--plain-http", is_flag=True,
              help="For a lab only: let the login go over plain http to BMCs the intent reaches with "
                   "`scheme: http` (it crosses the wire in clear). Without it such BMCs are refused.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print each round as one JSON document (a line) on stdout.")
def bmc_cmd(*, file: str | None, nodes: tuple[str, ...], once: bool, interval: float, request_timeout: float,
            deadline: float, workers: int, vault_file: Path | None, vault_password_file: Path | None,
            plain_http: bool, as_json: bool) -> int:  # fmt: skip
    """Read the servers' BMCs over Redfish at their OOB addresses: the system's health rollup and power
    state, power supplies, fans and temperatures. With --once: exit 4 when a BMC reports a failed part
    (a power supply, fan or sensor Critical, a temperature at its critical threshold, the health rollup
    Critical), 2 when a BMC could not be read (each named, with the URL path and field), 0 when all are
    healthy. Without it: a round every --interval until interrupted."""
    from gpufabric.cli.errors import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK
    from gpufabric.config.vault import open_vault
    from gpufabric.telemetry.bmc import BmcSetupError, bmc_targets, endpoints
    from gpufabric.telemetry.redfish import Limits

    if request_timeout > deadline:
        raise click.BadParameter(f"{request_timeout:g} s does not fit the deadline of {deadline:g} s (--deadline)",
                                 param_hint="--request-timeout")  # fmt: skip
    plan = load_plan(file, reaches=True)
    try:
        targets = bmc_targets(plan, nodes)
    except BmcSetupError as exc:
        raise click.UsageError(str(exc)) from None
    vault = open_vault(vault_file, vault_password_file) if vault_file else {}
    pairs = list(zip(targets, endpoints(plan, targets, {**os.environ, **vault}, plain_http=plain_http), strict=True))
    limits = Limits(request_timeout=request_timeout, deadline=deadline)
    if once:
        readings = _bmc_round(pairs, limits, workers, as_json)
        if any(r.failures for r in readings):
            return EXIT_FINDINGS
        return EXIT_INPUT if any(r.error for r in readings) else EXIT_OK
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.is_set():
        _bmc_round(pairs, limits, workers, as_json)
        stop.wait(interval)
    return EXIT_OK


def _bmc_round(pairs: list[Any], limits: Any, workers: int, as_json: bool) -> list[Any]:
    """Every BMC read once (at most `workers` at a time), printed; the readings, in the plan's order."""
    from concurrent.futures import ThreadPoolExecutor

    from gpufabric.telemetry.bmc import read_bmc

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(pairs)))) as pool:
        readings = list(pool.map(lambda pair: read_bmc(pair[0], pair[1], limits), pairs))
    if as_json:
        write_stdout(json_dumps([r.as_dict() for r in readings]) + "\n")
        return readings
    for r in readings:
        t = r.target
        if r.error is not None:
            err.print(shown(f"{t.node} {t.address}: not read: {r.error}"))
            continue
        power = ", ".join(f"{s.id} {s.power or '?'}" for s in r.systems) or "no system"
        health = ", ".join(_health_word(s.health) for s in r.systems) or "?"
        counts = {k: sum(1 for p in r.parts if p.kind == k) for k in ("psu", "fan", "temperature")}
        write_stdout(
            f"{t.node} {t.address}: power {power}; health {health}; {counts['psu']} power supplies, "
            f"{counts['fan']} fans, {counts['temperature']} temperatures\n"
        )
        for line in r.failures:
            write_stdout(f"  FAILED {line}\n")
        for line in r.warnings:
            write_stdout(f"  warning {line}\n")
    return readings


def _health_word(value: int | None) -> str:
    return "?" if value is None else ("OK", "Warning", "Critical")[value]


@telemetry_cmd.command("rules")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
@click.option("--for", "hold", default="1m", show_default=True, metavar="DURATION",
              help="How long a condition lasts before it alerts (Prometheus duration).")  # fmt: skip
def rules_cmd(output: Path | None, hold: str) -> int:
    """Prometheus alert rules: unreachable switch, link down or flapped, BGP down, ECMP narrower than
    planned, PFC pause storm and watchdog, CNP and ECN surges, RoCE loss; optics: low receive power, hot
    transceiver, high or rising pre-FEC bit error rate, uncorrectable codewords, symbol errors; the
    InfiniBand port counters; GPUs (dcgm-exporter: Xid, uncorrectable ECC, NVLink, row remap failure),
    host NICs (link down or flapped, errors, PCIe AER) and lossless queues deeper than the ECN maximum."""
    from gpufabric.telemetry.rules import DurationError, Thresholds, rules_yaml

    try:
        thresholds = Thresholds(hold=hold)
    except DurationError as exc:
        raise click.BadParameter(str(exc), param_hint="--for") from None
    emit(rules_yaml(thresholds), output)
    return 0


@telemetry_cmd.command("alertmanager")
@file_arg
@click.option("--webhook", default="http://127.0.0.1:9095/webhook", show_default=True, metavar="URL",
              help="Where `gpufabric remediate serve` listens.")  # fmt: skip
@click.option("--group-wait", default="10s", show_default=True, metavar="DURATION",
              help="How long Alertmanager gathers a new alert before it notifies (Prometheus duration).")  # fmt: skip
@click.option("--webhook-token-file", metavar="PATH",
              help="Absolute path, on Alertmanager's machine, of the file holding the receiver's bearer token "
                   "(remediate serve --token-file), sent with every notification; not read here.")  # fmt: skip
@click.option("--webhook-ca-file", metavar="PATH",
              help="Absolute path, on Alertmanager's machine, of the CA bundle that checks an https webhook's "
                   "certificate (remediate serve --tls-cert).")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
def alertmanager_cmd(file: str | None, webhook: str, group_wait: str, *, webhook_token_file: str | None,
                     webhook_ca_file: str | None, output: Path | None) -> int:  # fmt: skip
    """Alertmanager's configuration: the alerts of a failing part (link, optic, NIC, GPU, an unreachable
    switch) routed to `gpufabric remediate serve`'s webhook, resolved ones too (amtool check-config reads it)."""
    from gpufabric.remediate.alertmanager import AlertmanagerConfigError, alertmanager_yaml
    from gpufabric.telemetry.rules import DurationError, check_duration

    try:
        check_duration(group_wait)
    except DurationError as exc:
        raise click.BadParameter(str(exc), param_hint="--group-wait") from None
    plan = load_plan(file)
    try:
        text = alertmanager_yaml(webhook, fabric=plan.intent.fabric.name, group_wait=group_wait,
                                 token_file=webhook_token_file, ca_file=webhook_ca_file)  # fmt: skip
    except AlertmanagerConfigError as exc:
        raise click.UsageError(str(exc)) from None
    emit(text, output)
    return 0


@telemetry_cmd.command("dashboard")
@file_arg
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
def dashboard_cmd(file: str | None, output: Path | None) -> int:
    """A Grafana dashboard (JSON model) with a row per plane and a panel per rail."""
    from gpufabric.telemetry.dashboard import dashboard

    emit(json_dumps(dashboard(load_plan(file)), indent=2) + "\n", output)
    return 0


@telemetry_cmd.command("prometheus")
@file_arg
@click.option("--shards", "count", type=int, required=True, metavar="N",
              help="Exporter shards (`serve --shard 0/N` .. `--shard N-1/N`).")  # fmt: skip
@click.option("--listen-base", default="127.0.0.1:9108", show_default=True, metavar="HOST:PORT",
              help="Shard I listens on PORT+I of HOST.")  # fmt: skip
@click.option("--interval", default="30s", show_default=True, metavar="DURATION",
              help="Scrape interval (and timeout): the time a shard has to read its share.")  # fmt: skip
@click.option("--plane", help="Only this plane's switches (as serve --plane).")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for prometheus.yml, targets/shard-I.json, shards.json and gpufabric.rules.yml.")  # fmt: skip
def prometheus_cmd(*, file: str | None, count: int, listen_base: str, interval: str, plane: str | None,
                   out_dir: Path) -> int:  # fmt: skip
    """Prometheus's configuration for N exporter shards: one file_sd target per shard, labelled with
    it, the alert rules beside it, and shards.json naming the switches and servers each shard reads."""
    from gpufabric.telemetry.prometheus_config import ListenError, parse_listen, render
    from gpufabric.telemetry.rules import Thresholds, rules_yaml
    from gpufabric.telemetry.shards import ShardError, check_count

    try:
        check_count(count)
    except ShardError as exc:
        raise click.BadParameter(str(exc), param_hint="--shards") from None
    try:
        listen = parse_listen(listen_base, count)
    except ListenError as exc:
        raise click.BadParameter(str(exc), param_hint="--listen-base") from None
    if not _DURATION.fullmatch(interval):
        raise click.BadParameter(f"a Prometheus duration (30s, 1m), not {interval!r}", param_hint="--interval")
    plan = load_plan(file)
    if plane is not None and plane not in plan.planes:
        raise click.BadParameter(f"no plane {plane!r} (planes: {', '.join(plan.planes)})", param_hint="--plane")
    files = render(plan, count, listen, interval=interval, plane=plane)
    files["gpufabric.rules.yml"] = rules_yaml(Thresholds())
    for name, text in files.items():
        # Whole, by rename (a link planted at a target's name is replaced, never written through), and
        # readable by Prometheus, which runs as an account of its own.
        write_atomic(out_dir / name, text, mode=0o644)
    err.print(shown(f"wrote {out_dir / 'prometheus.yml'} and {count} shard target files (serve --shard I/{count})"))
    return 0


@telemetry_cmd.command("gnmi")
@file_arg
@click.option("--interval", default="30s", show_default=True, metavar="DURATION", help="Sample interval.")
@click.option("--plane", help="Only this plane's switches.")
@click.option("--listen", default=":9804", show_default=True, metavar="ADDR:PORT",
              help="Where gnmic's Prometheus output serves /metrics.")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
def gnmi_cmd(*, file: str | None, interval: str, plane: str | None, listen: str, output: Path | None) -> int:
    """gnmic's configuration: per switch whose OS streams gNMI (EOS, NX-OS, SONiC, Cumulus) its address
    and the OpenConfig paths of its planned ports (counters, state, egress queues) and BGP sessions."""

    from gpufabric.telemetry.gnmi import GnmiError, gnmi_targets, gnmic_config, gnmic_yaml

    if not _DURATION.fullmatch(interval):
        raise click.BadParameter(f"a duration (30s, 1m), not {interval!r}", param_hint="--interval")
    if not re.fullmatch(r"[A-Za-z0-9.\[\]:-]*:[0-9]{1,5}", listen):
        raise click.BadParameter(f"write ADDR:PORT (:9804), not {listen!r}", param_hint="--listen")
    plan = load_plan(file)
    if plane is not None and plane not in plan.planes:
        raise click.BadParameter(f"no plane {plane!r} (planes: {', '.join(plan.planes)})", param_hint="--plane")
    try:
        targets, left = gnmi_targets(plan, plane)
    except GnmiError as exc:
        raise click.ClickException(str(exc)) from None
    emit(gnmic_yaml(gnmic_config(targets, interval=interval, listen=listen)), output)
    if not plan.intent.management.gnmi:
        err.print("note: management.gnmi is off in the intent: the rendered configurations do not start gNMI")
    if left:
        names = ", ".join(left[:5]) + (" ..." if len(left) > 5 else "")
        err.print(
            f"{len(left)} switches have no gNMI server (FRR) or no management address: "
            f"they stay with `telemetry serve`: {names}"
        )
    return 0
