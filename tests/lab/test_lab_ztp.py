"""Zero-touch provisioning in the lab (root): empty switches get their planned address and configuration
through a real DHCP server (Kea for one switch, dnsmasq for another), a real relay agent adding option 82
on the OOB switch's planned port, and HTTP, with no hand step; the next push of each finds nothing to change.
The lab is the worker's own (a named lab under xdist): the provisioning script applies in the pathspace FRR_NS
names, `<lab>_<switch>` there, the switch's own name in the default lab."""

from __future__ import annotations

import copy
import json
import os
import subprocess

import pytest
import yaml
from conftest import INVENTORY, run

from gpufabric.export import ztp
from gpufabric.fleet.lab.credentials import load_login, load_secrets
from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent
from gpufabric.lab import netlink
from gpufabric.lab import ztp as lab_ztp
from tests.lab_slot import NAME, NAMES, moved, ns, up_args

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)"),
    pytest.mark.skipif(bool(lab_ztp.missing_packages()), reason="needs kea-dhcp4-server dnsmasq-base isc-dhcp-*"),
    pytest.mark.own_lab,
]

PORT = 8067  # the provisioning server's, on the OOB gateway (the intent's ztp.server default) on the lab's bridge


def _intent(tmp_path):
    doc = moved(copy.deepcopy(yaml.safe_load((INVENTORY / "fabric.yml").read_text())))
    doc["planes"]["oob"]["ztp"] = {"interface": NAMES.bridge, "port": PORT}
    path = tmp_path / "ztp-fabric.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _running(device: str) -> str:
    done = subprocess.run(
        ["vtysh", "-N", ns(device), "-c", "show running-config"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "VTYSH_HISTFILE": "/dev/null"},
    )
    return done.stdout


def _provisioned_and_no_diff(intent, lab, env, device: str, asn: int | None) -> None:
    assert f"router bgp {asn}" in _running(device)
    # The next push: nothing to change, configuration, nftables and host settings alike.
    done = run("nornir", "push", str(intent), *lab, "--device", device, "--dry-run", "--json", **env)
    assert done.returncode == 0, done.stderr[-2000:]
    status = {d["device"]: d for d in json.loads(done.stdout)["devices"]}
    assert status[device]["status"] == "unchanged", status[device]
    assert not status[device].get("diff"), status[device]["diff"]


def test_empty_switches_are_provisioned_through_dhcp_and_http_and_the_next_push_changes_nothing(tmp_path):
    intent = _intent(tmp_path)
    state = tmp_path / "state"
    lab = ("--state-dir", str(state))
    # Only this lab's namespaces are compared: another worker's lab may come up or go down meanwhile.
    topo = topology(load_intent(str(intent)), NAME)
    names = {n.netns for n in topo.nodes}
    before = netlink.namespaces() & names
    http = (str(ztp.server(topo.plan)), PORT)
    try:
        done = run("gpufabric", "lab", "up", str(intent), "--no-hosts", *up_args(), *lab)
        assert done.returncode == 0, done.stderr
        login = load_login(state)
        assert login is not None
        # The export hashes passwords and fills secrets as a push to this lab does: the lab's own.
        env = {**load_secrets(state), "GPUFABRIC_SWITCH_PASSWORD": login.password}
        export = tmp_path / "ztp"
        done = run("gpufabric", "export", "ztp", str(intent), "-o", str(export), **env)
        assert done.returncode == 0, done.stderr
        planned = {n.name: n.mgmt_ip for n in topo.nodes}
        asn = {d.name: d.asn for d in topo.plan.devices()}
        # cmp-su1-leaf1 through Kea, by the library (its logs read here); sto-leaf2 through dnsmasq, by the CLI.
        device = "cmp-su1-leaf1"
        assert "router bgp" not in _running(device)  # empty: only the hostname `lab up` starts it with
        done_run = lab_ztp.provision(topo, state, export, device, server="kea", http=http)
        try:
            print(f"{device} via kea: {done_run.address}, {done_run.bootfile}, in {done_run.seconds:.1f} s")
            assert done_run.address == planned[device]
            assert done_run.bootfile == f"http://{http[0]}:{http[1]}/{device}.ztp.sh"
            relay_log = (done_run.folder / "dhcrelay.log").read_text()
            assert "Forwarded BOOTREQUEST" in relay_log, relay_log[-2000:]
            leases = (done_run.folder / "kea-leases4.csv").read_text()
            assert f"{planned[device].split('/')[0]}," in leases, leases
        finally:
            done_run.stop()
        _provisioned_and_no_diff(intent, lab, env, device, asn[device])

        device = "sto-leaf2"
        assert "router bgp" not in _running(device)
        done = run(
            "gpufabric", "lab", "ztp", str(intent), "--device", device, "--from", str(export), "--dhcp", "dnsmasq",
            *lab, "--json",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout)
        print(f"{device} via dnsmasq: {result}")
        assert result["address"] == planned[device]
        assert result["bootfile"] == f"http://{http[0]}:{http[1]}/{device}.ztp.sh"
        _provisioned_and_no_diff(intent, lab, env, device, asn[device])
    finally:
        run("gpufabric", "lab", "down", *lab)
    assert netlink.namespaces() & names == before
