"""The InfiniBand compute plane's port counters in `gpufabric telemetry serve`, labelled as `gpufabric ib metrics`
labels them (gpufabric/ib/counters.py `series`): one `gpufabric_ib_port_counter` per planned switch port and
counter, with the fabric, node, role, port, its cable's far end, tier, rail and SU.

infiniband-diags answer for the subnet: `ibnetdiscover` once for the switches' LIDs (read again after a read
fails: the subnet manager may have renumbered), then one `perfquery -l <lid> 255` per switch each scrape. On
a real fabric they run on the exporter's host (an HCA port on the subnet); in the lab, against ibsim through
the lab's runner.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Sequence

from gpufabric.ib import counters, topology
from gpufabric.ib.errors import fail
from gpufabric.ib.model import IbFabric
from gpufabric.ib.results import Runner
from gpufabric.inputs import decode_text
from gpufabric.telemetry.read import Sample

METRIC = "gpufabric_ib_port_counter"
TOOL_SECONDS = 60.0  # one diagnostic; perfquery of a switch answers in milliseconds, ibnetdiscover in seconds


def local_runner(args: Sequence[str]) -> str:
    """One of infiniband-diags on this host: its stdout as text, bounded as ibnetdiscover's largest output."""
    try:
        done = subprocess.run(list(args), capture_output=True, check=False, timeout=TOOL_SECONDS)
    except FileNotFoundError:
        raise fail(args[0], "is not installed", "install infiniband-diags on the exporter's host") from None
    except subprocess.TimeoutExpired:
        raise fail(args[0], f"did not answer within {TOOL_SECONDS:g} s", "check the subnet manager") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()[-200:]
        raise fail(" ".join(args), f"exited {done.returncode}: {said!r}", "check the HCA port and the subnet")
    if len(done.stdout) > topology.MAX_BYTES:
        raise fail(args[0], "printed more than any subnet's output can be", "check the tool")
    return decode_text(done.stdout, args[0], f"{args[0]}'s output")


class IbPorts:
    """The plane's port counters, read on demand (the exporter calls `read` once per scrape, one at a time)."""

    def __init__(self, fabric: IbFabric, runner: Callable[[], Runner]) -> None:
        self.fabric = fabric
        self._runner = runner  # made when first read: the Ethernet planes are served whatever the IB plane does
        self._run: Runner | None = None
        self._seen: topology.Topology | None = None
        self._lock = threading.Lock()

    def read(self) -> list[Sample]:
        with self._lock:
            try:
                if self._run is None:
                    self._run = self._runner()
                if self._seen is None:
                    self._seen = topology.parse(self._run(["ibnetdiscover"]), "ibnetdiscover")
                found = counters.read(self.fabric, self._seen, self._run)
            except BaseException:
                self._seen = None  # discover again next time
                raise
        return [
            Sample(METRIC, {**labels, "counter": name}, float(value))
            for labels, name, value in counters.series(self.fabric, found)
        ]
