"""Host NIC health from the host's own counters, read by the exporter's per-server script with the plan's labels:
link state and carrier changes (sysfs `operstate`, `carrier_changes`), frame errors (`ip -s -j link`'s
stats64) and the NIC device's PCIe AER totals (sysfs `aer_dev_correctable`, `aer_dev_nonfatal`,
`aer_dev_fatal`, in the format of the kernel's Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats:
one `<error> <count>` line each, then `TOTAL_ERR_COR`, `TOTAL_ERR_NONFATAL` or `TOTAL_ERR_FATAL`)."""

from __future__ import annotations

import json
import subprocess

from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.read import Sample, host_script, read_host
from gpufabric.telemetry.targets import NicTarget

NICS = [
    NicTarget("compute", "gpu01", "eth1", "1", "leaf-r1-1"),
    NicTarget("compute", "gpu01", "eth2", "2", "leaf-r2-1"),
]
LABELS = {"plane": "compute", "host": "gpu01", "interface": "eth1", "rail": "1", "leaf": "leaf-r1-1"}
CORRECTABLE = (
    "RxErr 3\nBadTLP 1\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 4"
)
FATAL = "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 1\nECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\nTOTAL_ERR_FATAL 1"  # noqa: E501


def _prefixed(severity: str, text: str) -> str:
    """What the script's `sed "s/^/$k /"` makes of one sysfs file."""
    return "\n".join(f"{severity} {line}" for line in text.splitlines())


def _output(eth1_state: str = "up\n7", eth2_state: str = "down\n12") -> str:
    links = [
        {"ifname": "eth1", "stats64": {"rx": {"bytes": 10, "errors": 5}, "tx": {"bytes": 20, "errors": 0}}},
        {"ifname": "eth2", "stats64": {"rx": {"bytes": 1, "errors": 0}, "tx": {"bytes": 2, "errors": 0}}},
    ]
    return "\n".join(
        [
            "@@port eth1",
            "@@state eth1",
            eth1_state,
            "@@aer eth1",
            _prefixed("correctable", CORRECTABLE),
            _prefixed("nonfatal", "TOTAL_ERR_NONFATAL 0"),
            _prefixed("fatal", FATAL),
            "@@port eth2",
            "@@state eth2",
            eth2_state,
            "@@aer eth2",
            "@@links",
            json.dumps(links),
        ]
    )


def test_link_state_carrier_changes_errors_and_aer_totals_are_read_with_the_plans_labels():
    samples = read_host(_output(), NICS)
    eth2 = {**LABELS, "interface": "eth2", "rail": "2", "leaf": "leaf-r2-1"}
    assert Sample("gpufabric_nic_link_up", LABELS, 1.0) in samples
    assert Sample("gpufabric_nic_link_up", eth2, 0.0) in samples
    assert Sample("gpufabric_nic_carrier_changes_total", LABELS, 7.0) in samples
    assert Sample("gpufabric_nic_carrier_changes_total", eth2, 12.0) in samples
    assert Sample("gpufabric_nic_errors_total", {**LABELS, "direction": "rx"}, 5) in samples
    aer = {s.labels["severity"]: s.value for s in samples if s.metric == "gpufabric_nic_pcie_aer_errors_total"}
    assert aer == {"correctable": 4.0, "nonfatal": 0.0, "fatal": 1.0}  # the totals, not each error's line
    assert not [
        s for s in samples if s.metric == "gpufabric_nic_pcie_aer_errors_total" and s.labels["interface"] == "eth2"
    ]
    assert all(s.metric in METRICS and set(s.labels) == set(METRICS[s.metric].labels) for s in samples)


def test_state_and_aer_text_that_is_not_what_sysfs_writes_is_left_out():
    hostile = _output(eth1_state="up; reboot\n" + "9" * 40, eth2_state="\x1b[31mup\n-3")
    hostile = hostile.replace("fatal TOTAL_ERR_FATAL 1", "fatal TOTAL_ERR_FATAL 1e9").replace(
        "correctable TOTAL_ERR_COR 4", "fatal TOTAL_ERR_COR 4"
    )
    samples = read_host(hostile, NICS)
    names = {s.metric for s in samples}
    assert "gpufabric_nic_link_up" not in names and "gpufabric_nic_carrier_changes_total" not in names
    aer = {s.labels["severity"]: s.value for s in samples if s.metric == "gpufabric_nic_pcie_aer_errors_total"}
    assert aer == {"nonfatal": 0.0}  # a total under another severity's name, or not a count, is not taken


def test_the_host_script_runs_in_a_real_shell_and_its_state_section_is_read_back():
    """The script, run by this machine's sh on its loopback (operstate `unknown`: neither up nor down, so no
    link sample; no PCIe device, so no AER), ends well and its sections are where the reader looks."""
    lo = [NicTarget("compute", "here", "lo", "1", "none")]
    done = subprocess.run(["sh", "-c", host_script(lo)], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    state = done.stdout.split("@@state lo\n", 1)[1].split("@@aer lo", 1)[0].split()
    assert state[0] == "unknown" and state[1].isdigit()
    samples = read_host(done.stdout, lo)
    assert not [s for s in samples if s.metric in ("gpufabric_nic_link_up", "gpufabric_nic_pcie_aer_errors_total")]
