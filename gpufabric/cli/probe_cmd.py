"""`gpufabric probe plan|serve|run`: the probe mesh, latency measured between planned peers (docs/telemetry.md)."""

from __future__ import annotations

import gzip
import signal
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpufabric.cli.errors import EXIT_FINDINGS
from gpufabric.cli.options import load_plan
from gpufabric.cli.output import emit, err, shown, write_stdout
from gpufabric.outputs import json_dumps

if TYPE_CHECKING:
    from gpufabric.export.probe_plan import Group

intent_option = click.option(
    "--intent",
    "file",
    type=click.Path(dir_okay=False),
    help="The intent file. [default: ./inventory/fabric.yml, else the default fabric shipped with gpufabric]",
)
plan_option = click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The probe plan (`gpufabric probe plan -o FILE`, the whole fabric's or this host's; .gz too).",
)
node_option = click.option(
    "--node",
    metavar="NAME",
    help="This server's name in the plan. [default: the host name, cut at its first dot]",
)


def _node(node: str | None) -> str:
    return node if node is not None else socket.gethostname().split(".", 1)[0]


@click.group("probe")
def probe_cmd() -> None:
    """The probe mesh: every server of a RoCE plane probes a few planned peers per rail (under its leaf and
    across the spines) with UDP in the RoCE class, and exports the round trips for Prometheus.

    \b
      gpufabric probe plan -o build/probes.json.gz
      gpufabric probe serve --plan /etc/gpufabric/probes.json.gz --listen 0.0.0.0:9111
      gpufabric probe run --plan build/probes.json.gz --node gpu01 --count 10
    """


@probe_cmd.command("plan")
@intent_option
@click.option("--node", help="Only this server's share.")
@click.option(
    "--max-probes",
    type=click.IntRange(1, 64),
    default=64,
    show_default=True,
    help="Probes a host may send (over all its NICs).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write here (gzip-compressed when the name ends in .gz), not to stdout.",
)
def plan_cmd(file: str | None, node: str | None, max_probes: int, output: Path | None) -> int:
    """The probe plan from the plan: per plane carrying RoCE and rail, each NIC probes the next under its leaf,
    every pair of the rail's leaves is given to one server pair, and each probe rotates over 16 source ports
    so ECMP spreads a pair over the spines. Prints, per rail, the leaf pairs covered and the chance (under a
    uniform hash) that a spine or superspine receives no probe.

    Exit codes: 0 written; 2 a host would exceed --max-probes, or a node the plan does not probe."""
    from gpufabric.export.probe_plan import probe_plan
    from gpufabric.files import write_atomic

    found = probe_plan(load_plan(file), max_probes=max_probes)
    if node is not None:
        if node not in found.responders:
            raise click.BadParameter(f"{node!r} has no NIC on a RoCE plane of the plan", param_hint="--node")
        doc = found.host(node)
    else:
        doc = found.as_dict()
    text = json_dumps(doc) + "\n"
    if output is not None and output.name.endswith(".gz"):
        write_atomic(output, gzip.compress(text.encode(), mtime=0), mode=0o644)
        err.print(shown(f"wrote {output}"))
    else:
        emit(text, output)
    for g in found.groups:
        err.print(shown(_group_line(g)))
    most = max((len(p) for p in found.probes.values()), default=0)
    err.print(shown(f"{len(found.responders)} hosts, at most {most} probes a host"))
    return 0


def _group_line(g: Group) -> str:
    parts = [
        f"{g.plane} rail {g.rail or '-'}: {g.nics} NICs under {g.leaves} leaves",
        f"{g.covered_pairs}/{g.leaf_pairs} leaf pairs",
        f"{g.flows} flows over {len(g.spines)} spines (none reached: p <= {g.spine_miss:.1e})",
    ]
    if g.superspines:
        parts.append(f"{len(g.superspines)} superspines (p <= {g.superspine_miss:.1e})")
    return ", ".join(parts)


@probe_cmd.command("serve")
@plan_option
@node_option
@click.option(
    "--listen",
    default="127.0.0.1:9111",
    show_default=True,
    metavar="ADDR:PORT",
    help="Where Prometheus scrapes the probes' /metrics.",
)
def serve_cmd(plan_file: Path, node: str | None, listen: str) -> int:
    """Answer probes on this host's RoCE addresses and probe its planned peers until SIGTERM or SIGINT."""
    from prometheus_client import CollectorRegistry, start_http_server

    from gpufabric.telemetry.prober import Metrics, Prober, Responder, read_plan

    host, _, port = listen.rpartition(":")
    if not port.isdigit() or not host:
        raise click.BadParameter("write ADDR:PORT, e.g. 0.0.0.0:9111", param_hint="--listen")
    plan = read_plan(plan_file, _node(node))
    registry = CollectorRegistry()
    responder = Responder([(address, plan.port, dscp) for _, address, dscp in plan.responders])
    prober = Prober(plan, Metrics(registry, plan.node))
    server, thread = start_http_server(int(port), addr=host.strip("[]"), registry=registry)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    responder.start()
    prober.start()
    err.print(
        shown(
            f"{plan.node}: answering on {len(plan.responders)} address(es), probing {len(plan.peers)} peer(s); "
            f"metrics on http://{listen}/metrics"
        )
    )
    stop.wait()
    prober.close()
    responder.close()
    server.shutdown()
    thread.join(5)
    return 0


@probe_cmd.command("run")
@plan_option
@node_option
@click.option("--count", type=click.IntRange(1, 10_000), default=10, show_default=True, help="Probes per peer.")
@click.option("--json", "as_json", is_flag=True, help="Per peer: sent, lost, p50 and p99 (seconds) as JSON.")
def run_cmd(plan_file: Path, node: str | None, count: int, as_json: bool) -> int:
    """Probe this host's planned peers COUNT times each (their `probe serve` answers) and print the round trips.

    Exit codes: 0 every probe answered; 4 some were lost; 2 an unreadable plan."""
    from gpufabric.telemetry.prober import Prober, quantile, read_plan

    plan = read_plan(plan_file, _node(node))
    prober = Prober(plan)
    try:
        limit = time.monotonic() + count * plan.interval + plan.timeout + 5
        results = prober.run(count=count, deadline=limit)
    finally:
        prober.close()
    rows = [
        {
            "dst": r.peer.dst,
            "address": r.peer.address,
            "plane": r.peer.plane,
            "rail": r.peer.rail,
            "src_leaf": r.peer.src_leaf,
            "dst_leaf": r.peer.dst_leaf,
            "sent": r.sent,
            "lost": r.lost,
            "p50": quantile(r.rtts, 0.5),
            "p99": quantile(r.rtts, 0.99),
        }
        for r in results
    ]
    if as_json:
        write_stdout(json_dumps({"node": plan.node, "peers": rows}, indent=2) + "\n")
    else:
        for r in results:
            p = r.peer
            write_stdout(
                f"{p.dst} {p.address} ({p.plane} rail {p.rail or '-'}, {p.src_leaf} to {p.dst_leaf}): "
                f"{r.sent} sent, {r.lost} lost, p50 {_us(quantile(r.rtts, 0.5))}, p99 {_us(quantile(r.rtts, 0.99))}\n"
            )
    return EXIT_FINDINGS if any(r.lost for r in results) else 0


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.0f} us"
