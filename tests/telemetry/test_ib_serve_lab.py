"""`gpufabric telemetry scrape` (what `serve` serves) on the lab with an InfiniBand compute plane (root): the
compute plane in ibsim with the real OpenSM, read by the real infiniband-diags; the storage plane as FRR
namespaces. The exporter serves the InfiniBand ports exactly as `gpufabric ib metrics` prints them, beside
the Ethernet switches. (A cable cut is not shown here: ibsim's `unlink`/`relink` leave LinkDownedCounter as
it was, in two runs, so the counter alerts are proven with promtool on series: tests/telemetry/test_ib_alerts.py.)"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, run
from prometheus_client.parser import text_string_to_metric_families

from gpufabric.ib import sim
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

pytestmark = [
    pytest.mark.lab,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces; ibsim's preload)"),
    pytest.mark.skipif(bool(sim.missing()), reason=f"InfiniBand lab needs: {', '.join(sim.missing())}"),
]

EXAMPLE = str(ROOT / "inventory" / "examples" / "lab-infiniband.yml")
Series = dict[tuple[tuple[str, str], ...], float]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("lab") / "state"
    up = run("gpufabric", "lab", "up", EXAMPLE, "--no-hosts", "--state-dir", str(state))
    try:
        assert up.returncode == 0, up.stderr
        yield state
    finally:
        # Torn down in this process, by the lab's own code (its record of what it made): a command that could
        # not start (its environment changed under it) must not leave the lab up.
        from gpufabric.lab import control

        control.down(state)
        planned = {d.name for d in build_plan(load_intent(EXAMPLE)).devices()}
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split()
        assert not planned & set(left), f"namespaces left after lab down: {sorted(planned & set(left))}"


def _families(text: str, name: str) -> Series:
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        if family.name == name
        for s in family.samples
    }


def _scrape(state: Path) -> str:
    done = run("gpufabric", "telemetry", "scrape", EXAMPLE, "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    return done.stdout


def _port(series: Series, node: str, port: str, counter: str) -> float:
    return next(v for k, v in series.items() if dict(k)["node"] == node and dict(k)["port"] == port
                and dict(k)["counter"] == counter)  # fmt: skip


def test_serve_carries_the_infiniband_ports_as_ib_metrics_prints_them(lab: Path) -> None:
    served = _scrape(lab)
    printed = run("gpufabric", "ib", "metrics", EXAMPLE, "--lab", str(lab / "infiniband"))
    assert printed.returncode == 0, printed.stderr
    ib_served = _families(served, "gpufabric_ib_port_counter")
    ib_printed = _families(printed.stdout, "gpufabric_ib_port_counter")
    assert ib_served and set(ib_served) == set(ib_printed)
    errors = [k for k in ib_served if dict(k)["counter"] != "PortXmitWait"]  # the wait ticks move between reads
    assert {k: ib_served[k] for k in errors} == {k: ib_printed[k] for k in errors}
    ok = _families(served, "gpufabric_scrape_ok")
    assert ok and all(v == 1.0 for v in ok.values())  # the storage plane's FRR switches are served beside it
