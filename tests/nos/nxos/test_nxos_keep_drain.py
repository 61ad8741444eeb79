"""A push to a drained Nexus keeps BGP isolated, and the push after the undrain finds nothing to change, against
the NX-OS test double (test_nxos_revert.MockNexus) taught GIR as Cisco's configuration guide describes it:
`system mode maintenance` applies the maintenance-mode profile (`router bgp <asn>` / `isolate`) and `no system
mode maintenance` the normal-mode one (`no isolate`); `show system mode` says which. The drain marker is a
bootflash file, uploaded by the driver. The double keeps configurations as text, as the switch prints them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_nxos_revert import BEFORE, PUSH_A, MockNexus, MockNexusDriver

PLANNED = BEFORE + "  address-family ipv4 unicast\n    maximum-paths 64\n"


class GirNexus(MockNexus):
    """The double, with GIR's profiles applied to the running configuration."""

    mode: str = "Normal"

    def _answer(self, command: str) -> Any:
        if command == "show system mode":
            return f"System Mode: {self.mode}\n"
        if command in ("system mode maintenance", "no system mode maintenance"):
            lines = self.running.splitlines()
            at = next(i for i, line in enumerate(lines) if line.startswith("router bgp "))
            if command == "system mode maintenance":
                self.mode, lines = "Maintenance", [*lines[: at + 1], "  isolate", *lines[at + 1 :]]
            else:
                self.mode, lines = "Normal", [line for line in lines if line != "  isolate"]
            self.running = "".join(f"{line}\n" for line in lines)
            return ""
        return super()._answer(command)


@pytest.fixture
def nexus(monkeypatch) -> GirNexus:
    sw = GirNexus(running=PLANNED, startup=PLANNED)
    monkeypatch.setattr(MockNexusDriver, "switches", {"sw1": sw})
    monkeypatch.setattr(MockNexusDriver, "healthy", {"sw1": [True]})
    return sw


def _push(driver: MockNexusDriver, text: str) -> str:
    driver.load_replace_candidate(config=text)
    diff = str(driver.compare_config())
    if diff:
        driver.commit_config(revert_in=120)
        driver.confirm_commit()
    else:
        driver.discard_config()
    return diff


def test_a_push_keeps_bgp_isolated_and_the_push_after_the_undrain_finds_nothing(nexus: GirNexus) -> None:
    driver = MockNexusDriver("sw1", "admin", "pw", optional_args={"push_id": PUSH_A})
    driver.open()
    assert _push(driver, PLANNED) == ""
    driver.drain(PUSH_A, "a disruptive change")
    assert nexus.mode == "Maintenance" and "  isolate\n" in nexus.running
    assert _push(driver, PLANNED) == ""  # the isolation is not in the diff
    changed = PLANNED.replace("maximum-paths 64", "maximum-paths 32")
    diff = _push(driver, changed)
    assert "maximum-paths 32" in diff and "isolate" not in diff, diff
    assert "  isolate\n" in nexus.running and "  isolate\n" in nexus.startup  # isolated through the push
    status = driver.maintenance_status()
    assert status["drained"] and status["applied"] is True and status["push_id"] == PUSH_A
    driver.undrain(PUSH_A)
    assert nexus.mode == "Normal" and "isolate" not in nexus.running
    assert _push(driver, changed) == ""


def test_the_kept_candidate_isolates_bgp_as_cisco_s_parser_reads_it() -> None:
    """Cisco's own parser (cisco.nxos bgp_global) reads `isolate` in the kept candidate, and the rest of
    `router bgp` as planned."""
    from gpufabric.platforms import platform
    from gpufabric.platforms.spec import DrainSpec
    from tests.oracles.nxos import parsed

    nxos = platform("nxos")
    kept = nxos.keep_drain(PLANNED, DrainSpec("10.4"))
    assert kept != PLANNED and nxos.keep_drain(kept, DrainSpec("10.4")) == kept
    mine, planned = parsed("bgp_global", kept), parsed("bgp_global", PLANNED)
    assert mine.pop("isolate") == {"set": True} and "isolate" not in planned
    assert mine == planned
    assert nxos.keep_drain("hostname sw1\n", DrainSpec("10.4")) == "hostname sw1\n"  # no BGP: nothing to isolate
    assert re.search(r"^router bgp 65100\n  isolate$", kept, re.MULTILINE)
