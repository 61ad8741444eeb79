"""The FRR driver's drain, undrain and maintenance status, run in a local shell standing in for the switch.

`LocalSwitch` runs the driver's own shell in this machine's `sh`, with the switch's /etc/frr/ mapped to a
temporary folder, and a stand-in `vtysh` on PATH that keeps what it is given and answers from files: the
marker, the lock, the pending-commit check and the scripts are the real ones. The lab test
(tests/lab/test_lab_drain.py) runs the same methods against real FRR.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from napalm import get_network_driver

from gpufabric.drivers.answers import AnswerShapeError
from gpufabric.drivers.maintenance import DrainHeldError, DrainMark, DrainRefusedError
from gpufabric.drivers.transport import Output
from gpufabric.nos.frr.files import DeviceFiles
from gpufabric.platforms.spec import DRAIN_POLICY

PUSH = "gf-20261125T140000Z-abc123"
OTHER = "gf-20261125T130000Z-def456"

FAKE_VTYSH = r"""#!/bin/sh
state="$GF_FAKE_STATE"
cmd=""; file=""
while [ $# -gt 0 ]; do
  case "$1" in
    -N) shift 2 ;;
    -c) cmd="$2"; shift 2 ;;
    -f) file="$2"; shift 2 ;;
    *) shift ;;
  esac
done
if [ -n "$file" ]; then
  if grep -q '^no route-map' "$file" && [ ! -f "$state/drain" ]; then
    echo "% Could not find route-map GF-DRAIN" >&2; exit 1  # as FRR refuses it
  fi
  cat "$file" >> "$state/applied"
  if grep -q '^no route-map' "$file"; then rm -f "$state/drain"; else cp "$file" "$state/drain"; fi
  exit 0
fi
case "$cmd" in
  "show ip bgp vrf all summary json") cat "$state/summary.json" ;;
  "show running-config") echo "Current configuration:"; cat "$state/base"; cat "$state/drain" 2>/dev/null || true ;;
  "write memory") echo saved >> "$state/saves" ;;
  *) echo "% unknown: $cmd" >&2; exit 1 ;;
esac
"""


class LocalSwitch:
    def __init__(self, root: Path, bin_dir: Path, state: Path) -> None:
        self.root, self.env = root, {"PATH": f"{bin_dir}:/usr/bin:/bin", "GF_FAKE_STATE": str(state)}

    def _local(self, text: str) -> str:
        return text.replace("/etc/frr/", f"{self.root}/etc/frr/")

    def run(self, command: str, stdin: str | None = None) -> Output:
        done = subprocess.run(
            ["sh", "-c", self._local(command)],
            input=None if stdin is None else self._local(stdin),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env=self.env,
        )
        return Output(done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        pass


@pytest.fixture
def switch(tmp_path):
    (tmp_path / "etc" / "frr" / "sw1").mkdir(parents=True)
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    (bin_dir / "vtysh").write_text(FAKE_VTYSH)
    (bin_dir / "vtysh").chmod(0o755)
    summary = {
        "default": {"ipv4Unicast": {"routerId": "10.0.0.1", "as": 4200001000, "peers": {"swp2": {}, "swp1": {}}}}
    }
    (state / "summary.json").write_text(json.dumps(summary))
    (state / "base").write_text("frr defaults datacenter\nrouter bgp 4200001000\n")
    dev = get_network_driver("frr")(
        "192.0.2.20", "u", "p", optional_args={"transport": LocalSwitch(tmp_path, bin_dir, state), "pathspace": "sw1"}
    )
    dev.lldp_socket = "/nonexistent"
    dev.open()
    return dev, tmp_path / "etc" / "frr" / "sw1", state


def test_a_drain_applies_frr_s_drain_saves_it_and_marks_the_switch(switch):
    dev, folder, state = switch
    assert dev.maintenance_status()["drained"] is False
    dev.drain(PUSH, "replace PSU", by="alice@ctl1")
    applied = (state / "applied").read_text()
    assert f"route-map {DRAIN_POLICY} permit 10" in applied and "bgp graceful-shutdown" in applied
    assert " neighbor swp1 route-map GF-DRAIN out" in applied and " neighbor swp2 route-map GF-DRAIN out" in applied
    assert (state / "saves").read_text().count("saved") == 1  # survives a restart of FRR
    status = dev.maintenance_status()
    assert status["drained"] and status["applied"]
    assert (status["by"], status["push_id"], status["reason"]) == ("alice@ctl1", PUSH, "replace PSU")
    assert status["mechanism"] == "bgp graceful-shutdown + as-path prepend" and status["since"].endswith("Z")
    assert (folder / "gpufabric.drain.conf").read_text() == (state / "drain").read_text()


def test_a_converged_switch_s_drain_and_undrain_cover_every_vrf_s_sessions(switch):
    """A carried plane's sessions (their own BGP instance per VRF) are drained with the default instance's:
    graceful shutdown and the prepend in each, and taken back from each."""
    dev, _, state = switch
    summary = json.loads((state / "summary.json").read_text())
    summary["STORAGE"] = {
        "ipv4Unicast": {"as": 4200001000, "vrfName": "STORAGE", "peers": {"swp1.20": {}, "swp2.20": {}}}
    }
    summary["INBAND"] = {"ipv4Unicast": {"as": 4200001000, "vrfName": "INBAND", "peers": {"10.30.0.1": {}}}}
    (state / "summary.json").write_text(json.dumps(summary))
    dev.drain(PUSH, "converged")
    applied = (state / "applied").read_text()
    for vrf, peers in (("INBAND", ["10.30.0.1"]), ("STORAGE", ["swp1.20", "swp2.20"])):
        block = applied.split(f"router bgp 4200001000 vrf {vrf}\n", 1)[1].split("\nexit\n", 1)[0]
        assert block.startswith(" bgp graceful-shutdown\n"), block
        assert [line.split()[1] for line in block.splitlines() if "route-map" in line] == peers
    dev.undrain(PUSH)
    undone = (state / "applied").read_text().split(applied, 1)[1]
    assert "router bgp 4200001000 vrf STORAGE\n no bgp graceful-shutdown" in undone
    assert "  no neighbor swp2.20 route-map GF-DRAIN out" in undone and "no neighbor 10.30.0.1 route-map" in undone


def test_a_vrf_running_bgp_as_another_asn_is_refused_before_anything_changes(switch):
    dev, folder, state = switch
    summary = json.loads((state / "summary.json").read_text())
    summary["OTHER"] = {"ipv4Unicast": {"as": 65099, "peers": {"swp9": {}}}}
    (state / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(AnswerShapeError, match="runs BGP as 65099"):
        dev.drain(PUSH, "x")
    assert not (state / "applied").exists() and not (folder / "gpufabric.drained").exists()


def test_a_new_driver_reads_the_drain_back_as_a_controller_that_crashed_would(switch, tmp_path):
    dev, _, _ = switch
    dev.drain(PUSH, "maintenance")
    fresh = get_network_driver("frr")("192.0.2.20", "u", "p", optional_args={"transport": dev.transport,
                                                                             "pathspace": "sw1"})  # fmt: skip
    fresh.lldp_socket = "/nonexistent"
    fresh.open()
    assert fresh.maintenance_status()["push_id"] == PUSH


def test_an_undrain_removes_the_drain_then_the_marker(switch):
    dev, folder, state = switch
    dev.drain(PUSH, "x")
    dev.undrain(PUSH)
    applied = (state / "applied").read_text()
    assert "no bgp graceful-shutdown" in applied and f"no route-map {DRAIN_POLICY}" in applied
    assert "  no neighbor swp1 route-map GF-DRAIN out" in applied
    assert not (folder / "gpufabric.drained").exists() and not (folder / "gpufabric.drain.conf").exists()
    assert dev.maintenance_status() == {k: None for k in ("since", "by", "push_id", "reason", "mechanism")} | {
        "drained": False,
        "applied": False,
    }


def test_another_push_s_drain_is_held_unless_forced_and_a_second_drain_keeps_the_first_marker(switch):
    dev, _, _ = switch
    dev.drain(OTHER, "first")
    dev.drain(PUSH, "second")
    assert dev.maintenance_status()["push_id"] == OTHER  # whoever drained first still holds the drain
    with pytest.raises(DrainHeldError, match=OTHER):
        dev.undrain(PUSH)
    assert dev.maintenance_status()["drained"]
    dev.undrain(PUSH, force=True)
    assert not dev.maintenance_status()["drained"]


def test_a_drain_is_refused_while_a_commit_awaits_confirmation(switch):
    dev, folder, state = switch
    timer = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        start = Path(f"/proc/{timer.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        (folder / "gpufabric.pending").write_text(f"{boot} {timer.pid} {start}\n")
        with pytest.raises(DrainRefusedError, match="pending confirmation"):
            dev.drain(PUSH, "x")
        assert not (state / "applied").exists() and not (folder / "gpufabric.drained").exists()
    finally:
        timer.kill()
        timer.wait()


def test_a_reason_that_is_not_one_printable_line_is_refused(switch):
    dev, folder, _ = switch
    with pytest.raises(ValueError, match="printable line"):
        dev.drain(PUSH, "ok\nrm -rf /")
    assert not (folder / "gpufabric.drained").exists()


def test_a_push_while_drained_keeps_the_drain_in_its_candidate(switch, tmp_path):
    dev, _, state = switch
    dev.drain(PUSH, "x")
    conf = tmp_path / "candidate.conf"
    drain = (state / "drain").read_text()
    peers = sorted({line.split()[1] for line in drain.splitlines() if line.strip().startswith("neighbor ")})
    assert len(peers) >= 2
    # The candidate keeps the first neighbour and drops the others (a push removing them): the drain names
    # only the one it keeps, since FRR refuses a route map on a peer it does not know.
    conf.write_text(
        f"frr defaults datacenter\nrouter bgp 4200001000\n neighbor {peers[0]} remote-as external\n!\nend\n"
    )
    dev._run(DeviceFiles("sw1").keep_drain(str(conf)))
    kept = conf.read_text()
    assert "\nend\n" not in kept and not (conf.parent / "candidate.conf.drain").exists()
    assert f"neighbor {peers[0]} route-map {DRAIN_POLICY} out" in kept
    assert all(f"neighbor {p} route-map" not in kept for p in peers[1:])
    assert [line for line in kept.splitlines() if "route-map" not in line and line.strip()][-3:] == [
        line for line in drain.splitlines() if "route-map" not in line and line.strip()
    ][-3:]
    dev.undrain(PUSH)
    conf.write_text("router bgp 4200001000\nend\n")
    dev._run(DeviceFiles("sw1").keep_drain(str(conf)))
    assert conf.read_text() == "router bgp 4200001000\nend\n"  # not drained: the candidate as rendered


def test_a_drain_whose_lines_never_applied_undrains_by_losing_its_marker(switch):
    """The controller died between the marker and the change: the switch is marked, FRR runs no drain.
    `maintenance off` must still put it back (FRR refuses `no route-map` for a route map it lacks)."""
    dev, folder, state = switch
    (folder / "gpufabric.drained").write_text(DrainMark.new(PUSH, "crash", "bgp graceful-shutdown").text())
    status = dev.maintenance_status()
    assert status["drained"] and status["applied"] is False  # marked, not applied
    dev.undrain(OTHER, force=True)
    assert not (state / "applied").exists()  # nothing to take back: FRR was not asked
    assert not (folder / "gpufabric.drained").exists() and not dev.maintenance_status()["drained"]


def test_an_undrain_takes_back_only_the_lines_the_switch_runs(switch):
    dev, _, state = switch
    dev.drain(PUSH, "x")
    text = (state / "drain").read_text().replace(" neighbor swp2 route-map GF-DRAIN out\n", "")
    (state / "drain").write_text(text)  # swp2's line gone meanwhile (a neighbour added after the drain)
    dev.undrain(PUSH)
    taken = (state / "applied").read_text().split("no bgp graceful-shutdown", 1)[1]
    assert "no neighbor swp1 route-map GF-DRAIN out" in taken and "swp2" not in taken
    assert "no route-map GF-DRAIN" in taken
