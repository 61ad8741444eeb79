"""One host's side of job triage's active probe, run inside that host's network namespace (`ip netns exec`): it
answers probes on the host's addresses and probes its planned peers, flow by flow (one source port, one ECMP
path), when told to.

The line protocol on stdin/stdout keeps every host's responder up until every host has finished probing:

    agent -> {"ready": true}          its sockets are bound (a bad plan or address: {"error": ...}, exit 2)
    triage -> go                      every agent is ready: probe now
    agent -> {"node", "peers": [...]} its results, one line of JSON
    triage closes stdin               every agent has answered: close the responder and end

Every wait is bounded (WAIT seconds); an agent whose triage went away ends on its own.
"""

from __future__ import annotations

import argparse
import select
import sys
import time

from gpufabric.errors import GpufabricError
from gpufabric.outputs import json_dumps
from gpufabric.telemetry.prober import PeerResult, Prober, Responder, read_plan

WAIT = 120.0  # seconds an agent waits for "go" or for the end, at most


def _line(timeout: float) -> str | None:
    """One line of stdin within `timeout` seconds; None on end of input or time out."""
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    if not ready:
        return None
    text = sys.stdin.readline()
    return text if text else None


def _say(doc: object) -> None:
    sys.stdout.write(json_dumps(doc) + "\n")
    sys.stdout.flush()


def results(node: str, found: list[PeerResult]) -> dict[str, object]:
    return {
        "node": node,
        "peers": [
            {
                "source": r.peer.source,
                "dst": r.peer.dst,
                "address": r.peer.address,
                "flows": [
                    {"sport": port, "sent": f.sent, "lost": f.lost, "rtts": [round(x, 7) for x in f.rtts]}
                    for port, f in sorted(r.flows.items())
                ],
            }
            for r in found
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpufabric.telemetry.probe_agent")
    parser.add_argument("--plan", required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--count", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        plan = read_plan(args.plan, args.node)
        responder = Responder([(address, plan.port, dscp) for _, address, dscp in plan.responders])
    except GpufabricError as exc:
        _say({"error": str(exc)})
        return 2
    try:
        prober = Prober(plan)
    except GpufabricError as exc:
        responder.close()
        _say({"error": str(exc)})
        return 2
    responder.start()
    try:
        _say({"ready": True})
        if (_line(WAIT) or "").strip() != "go":
            return 2
        deadline = time.monotonic() + args.count * plan.interval + plan.timeout + 5
        _say(results(plan.node, prober.run(count=args.count, deadline=deadline)))
        _line(WAIT)  # the end of input: every host has its answers
        return 0
    finally:
        prober.close()
        responder.close()


if __name__ == "__main__":
    sys.exit(main())
