"""`nornir validate --counter-window`: what happened on a port between two reads, against limits."""

from __future__ import annotations

from gpufabric.verify.running.counters import Limits, Sample, judge


def _counters(errors: int = 0, discards: int = 0) -> dict[str, int]:
    return {"rx_errors": errors, "tx_errors": 0, "rx_discards": discards, "tx_discards": 0}


def test_a_quiet_window_passes_and_a_noisy_one_fails_on_each_count():
    first = Sample({"swp1": _counters(), "swp2": _counters()}, {"swp1": 3, "swp2": 1}, {"swp1": 100})
    second = Sample(
        {"swp1": _counters(errors=0, discards=50), "swp2": _counters(errors=20, discards=50_000)},
        {"swp1": 3, "swp2": 3},
        {"swp1": 100 + 200_000},
    )
    found = {(r.check, r.item): r for r in judge("leaf1", ["swp1", "swp2"], first, second, Limits(window=10))}
    assert found[("link-flaps", "swp1")].ok and not found[("link-flaps", "swp2")].ok
    assert found[("link-flaps", "swp2")].observed == "2 in 10 s"
    assert found[("port-errors", "swp1")].ok and not found[("port-errors", "swp2")].ok  # 2/s > 0
    assert found[("port-discards", "swp1")].ok and not found[("port-discards", "swp2")].ok  # 5,000/s > 1,000
    assert not found[("pfc-pause", "swp1")].ok and found[("pfc-pause", "swp1")].observed == "20000/s"
    assert ("pfc-pause", "swp2") not in found  # no such counter on that port: nothing is judged


def test_limits_are_the_callers():
    first = Sample({"swp1": _counters()}, None, None)
    second = Sample({"swp1": _counters(errors=5)}, None, None)
    lax = judge("leaf1", ["swp1"], first, second, Limits(window=5, errors_per_second=1))
    strict = judge("leaf1", ["swp1"], first, second, Limits(window=5, errors_per_second=0.5))
    assert [r.ok for r in lax if r.check == "port-errors"] == [True]
    assert [r.ok for r in strict if r.check == "port-errors"] == [False]
    assert all(r.check != "link-flaps" for r in lax)  # the driver does not count carrier changes
