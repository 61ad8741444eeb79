"""Which changes of a Linux + FRR switch are disruptive, read from the FRR driver's diff of real files.

The running and candidate configurations are cmp-su1-leaf1's rendered files of the default example
(tests/golden/default/), one of them changed as a person's intent would change it. The FRR part of the
diff is what FRR's own frr-reload.py --test prints, as the driver shows it (`reload_diff`); the host
settings part is the driver's own unified diff of the system and interfaces files.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from gpufabric.drivers.frr_getters import reload_diff
from gpufabric.nos.frr import system as frr_system
from gpufabric.nos.frr.driver import _system_diff
from gpufabric.platforms import platform
from gpufabric.platforms.disruption import Reason

FRR_RELOAD = Path("/usr/lib/frr/frr-reload.py")
GOLDEN = ROOT / "tests" / "golden" / "default"
SWITCH = "cmp-su1-leaf1"
FRR = platform("frr")


def files() -> dict[str, str]:
    suffixes = (".frr.conf", ".interfaces", ".system.yaml")
    return {suffix: (GOLDEN / f"{SWITCH}{suffix}").read_text() for suffix in suffixes}


def reload(tmp_path: Path, running: str, candidate: str) -> str:
    if not FRR_RELOAD.is_file():
        if os.environ.get("CI"):
            pytest.fail("CI installs frr-pythontools; frr-reload.py should be there")
        pytest.skip("frr-reload.py (frr-pythontools) is not installed")
    (tmp_path / "running.conf").write_text(running)
    (tmp_path / "candidate.conf").write_text(candidate)
    done = subprocess.run(
        ["python3", str(FRR_RELOAD), "--test", "--input", "running.conf", "candidate.conf"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "VTYSH_HISTFILE": "/dev/null"},
        check=True,
    )
    return reload_diff(done.stdout)


def driver_diff(tmp_path: Path, old: dict[str, str], new: dict[str, str]) -> str:
    """The FRR driver's compare_config: frr-reload's diff, then the host settings' (nothing for nftables)."""

    def shown(f: dict[str, str]) -> str:
        return frr_system.masked(f[".system.yaml"]) + f[".interfaces"]

    parts = [reload(tmp_path, old[".frr.conf"], new[".frr.conf"])]
    if shown(old) != shown(new):
        parts.append(_system_diff(shown(new), shown(old), True))
    return "\n".join(p for p in parts if p)


def changed(suffix: str, old: str, new: str) -> dict[str, str]:
    out = files()
    assert old in out[suffix], old
    out[suffix] = out[suffix].replace(old, new, 1)
    return out


CHANGES = {
    "description": (".frr.conf", " description host: gpu01 eth1", " description host: gpu01 eth1 (moved)"),
    "neighbor description": (".frr.conf", " neighbor swp3 description cmp-spine1", " neighbor swp3 description s1"),
    "ntp server": (".system.yaml", "ntp_servers: ['172.20.0.1']", "ntp_servers: ['172.20.0.2']"),
    "new prefix": (".frr.conf", "  network 10.10.0.2/31\n", "  network 10.10.0.2/31\n  network 10.10.9.0/31\n"),
    "mtu": (".interfaces", "auto swp3\niface swp3\n    mtu 9216", "auto swp3\niface swp3\n    mtu 9000"),
    "asn": (".frr.conf", "router bgp 4200000001", "router bgp 4200000009"),
    "router-id": (".frr.conf", " bgp router-id 10.0.0.3", " bgp router-id 10.0.0.99"),
    "remote-as": (".frr.conf", "swp4 interface remote-as 4200000000", "swp4 interface remote-as 65000"),
    "route-map": (".frr.conf", " set src 10.0.0.3", " set src 10.0.0.4"),
}
EXPECTED: dict[str, set[Reason]] = {
    "description": set(),
    "neighbor description": set(),
    "ntp server": set(),
    "new prefix": set(),
    "mtu": {Reason.MTU},
    "asn": {Reason.BGP_RESET},
    "router-id": {Reason.BGP_RESET},
    "remote-as": {Reason.BGP_RESET},
    "route-map": {Reason.UNCLASSIFIED},  # not known to be hitless: drained, the safe side
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_of_a_rendered_switch_is_hitless_or_disruptive_for_its_reason(tmp_path, change):
    suffix, old, new = CHANGES[change]
    diff = driver_diff(tmp_path, files(), changed(suffix, old, new))
    assert diff.strip(), "the change must show in the driver's diff"
    found = FRR.disruptions(diff)
    assert {d.reason for d in found} == EXPECTED[change], (diff, found)


def test_the_detail_quotes_the_line_that_shows_it(tmp_path):
    found = FRR.disruptions(driver_diff(tmp_path, files(), changed(*CHANGES["asn"])))
    assert [str(d) for d in found] == [
        "bgp-reset: the BGP instance is removed (its ASN changes) [- no router bgp 4200000001]"
    ]
    found = FRR.disruptions(driver_diff(tmp_path, files(), changed(*CHANGES["mtu"])))
    assert [str(d) for d in found] == ["mtu: a port's MTU changes [-    mtu 9216]"]


def test_a_new_neighbor_resets_nothing_and_a_removed_one_resets_its_session(tmp_path):
    frr = files()[".frr.conf"]
    without = frr.replace(" neighbor swp4 interface remote-as 4200000000\n neighbor swp4 description cmp-spine2\n", "")
    assert without != frr
    grown = driver_diff(tmp_path, {**files(), ".frr.conf": without}, files())  # a spine is added: swp4's session
    assert "+  neighbor swp4 interface remote-as 4200000000" in grown and FRR.disruptions(grown) == ()
    shrunk = driver_diff(tmp_path, files(), {**files(), ".frr.conf": without})
    assert [d.reason for d in FRR.disruptions(shrunk)] == [Reason.BGP_RESET]


def test_a_new_port_is_hitless_though_it_gets_an_mtu(tmp_path):
    """Growth: a new cable's port appears with its MTU; no port that carries traffic changes."""
    grown = changed(".interfaces", "auto swp4\n", "auto swp9\niface swp9\n    mtu 9216\n\nauto swp4\n")
    diff = driver_diff(tmp_path, files(), grown)
    assert "+    mtu 9216" in diff and "-    mtu" not in diff
    assert FRR.disruptions(diff) == ()


def test_a_first_configuration_is_hitless_since_the_switch_routes_nothing_yet(tmp_path):
    """The lab's switches start with FRR's defaults and no BGP instance: the first push creates it, so
    nothing of it is a drain's business (the switch carries no fabric traffic)."""
    empty = {".frr.conf": "frr version 8.4\nfrr defaults datacenter\nhostname x\n!\nend\n", ".interfaces": "",
             ".system.yaml": ""}  # fmt: skip
    diff = driver_diff(tmp_path, empty, files())
    assert "+ router bgp 4200000001" in diff and "+    mtu 9216" in diff
    assert FRR.disruptions(diff) == ()


def test_the_nftables_part_is_hitless_and_the_classification_sees_only_the_parts_it_knows():
    diff = "--- nftables running\n+++ nftables candidate\n@@ -1 +1 @@\n-ip dscp 26 meta priority set 3\n+ip dscp 24"
    assert FRR.disruptions(diff) == ()
    # An empty diff is no change at all.
    assert FRR.disruptions("") == () and FRR.disruptions("\n") == ()
