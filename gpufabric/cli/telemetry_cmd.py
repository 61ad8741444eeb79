"""`gpufabric telemetry serve|scrape|rules|dashboard`: fabric counters for Prometheus, from the plan."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any

import click

from gpufabric.cli.fleet_options import login_options
from gpufabric.cli.output import emit, err, write_stdout
from gpufabric.cli.plan_cmd import file_arg, load_plan
from gpufabric.push.args import FleetArgs


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


def _collector(fleet_args: FleetArgs, workers: int) -> Any:
    from gpufabric.cli.errors import show_notes
    from gpufabric.lab.state import DEFAULT_DIR
    from gpufabric.push.fleet import reach
    from gpufabric.telemetry.connect import host_shell, switch_connector
    from gpufabric.telemetry.exporter import FabricCollector
    from gpufabric.telemetry.targets import nic_targets, switch_targets

    plan, access = reach(fleet_args)
    show_notes(access)
    switches = [t for t in switch_targets(plan, fleet_args.plane) if t.address is not None]
    if fleet_args.devices:
        switches = [t for t in switches if t.device in fleet_args.devices]
    state_dir = (fleet_args.state_dir or DEFAULT_DIR) if access.lab else None
    shell = host_shell(plan, access, state_dir, fleet_args.known_hosts)
    return FabricCollector(switches, switch_connector(access), nic_targets(plan, fleet_args.plane), shell, workers)


@telemetry_cmd.command("serve")
@login_options
@click.option("--listen", default="127.0.0.1:9108", show_default=True, metavar="ADDR:PORT",
              help="Where Prometheus scrapes /metrics (every scrape reads the fabric).")  # fmt: skip
@click.option("--workers", type=click.IntRange(1, 256), default=16, show_default=True,
              help="Switches and servers read at once.")  # fmt: skip
def serve_cmd(fleet_args: FleetArgs, listen: str, workers: int) -> int:
    """Serve the fabric's counters for Prometheus until interrupted (SIGINT or SIGTERM)."""
    from prometheus_client import CollectorRegistry, start_http_server

    host, _, port = listen.rpartition(":")
    if not port.isdigit() or not host:
        raise click.BadParameter("write ADDR:PORT, e.g. 127.0.0.1:9108", param_hint="--listen")
    registry = CollectorRegistry()
    collector = _collector(fleet_args, workers)
    registry.register(collector)
    server, thread = start_http_server(int(port), addr=host.strip("[]"), registry=registry)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    err.print(
        f"serving {len(collector.switches)} switches and {len(collector.hosts)} servers on http://{listen}/metrics"
    )
    stop.wait()
    server.shutdown()
    thread.join(5)
    collector.close()
    return 0


@telemetry_cmd.command("scrape")
@login_options
@click.option("--workers", type=click.IntRange(1, 256), default=16, show_default=True)
def scrape_cmd(fleet_args: FleetArgs, workers: int) -> int:
    """Read the fabric once and print what `serve` would serve (Prometheus text format)."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    collector = _collector(fleet_args, workers)
    registry.register(collector)
    try:
        write_stdout(generate_latest(registry).decode())
    finally:
        collector.close()
    return 0


@telemetry_cmd.command("rules")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
@click.option("--for", "hold", default="1m", show_default=True, metavar="DURATION",
              help="How long a condition lasts before it alerts (Prometheus duration).")  # fmt: skip
def rules_cmd(output: Path | None, hold: str) -> int:
    """Prometheus alert rules: unreachable switch, link down or flapped, BGP down, ECMP narrower than
    planned, PFC pause storm and watchdog, CNP and ECN surges, RoCE loss."""
    from gpufabric.telemetry.rules import Thresholds, rules_yaml

    text = rules_yaml(Thresholds(hold=hold))
    emit(text, output)
    return 0


@telemetry_cmd.command("dashboard")
@file_arg
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
def dashboard_cmd(file: str | None, output: Path | None) -> int:
    """A Grafana dashboard (JSON model) with a row per plane and a panel per rail."""
    from gpufabric.telemetry.dashboard import dashboard

    emit(json.dumps(dashboard(load_plan(file)), indent=2) + "\n", output)
    return 0
