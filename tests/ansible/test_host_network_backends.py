"""host_network's three backends hold one contract, each judged by its own software, offline.

The role's templates are rendered by Ansible for one host of the multi-vendor plan (four routed compute
NICs, a routed business NIC, an LACP storage bond of two NICs) once per backend, then read back:
- systemd-networkd: the .netdev/.network files, and systemd-networkd itself loads them (in a network and
  mount namespace of the test's own, so this machine's links are never touched) and must neither reject
  nor ignore a line;
- netplan: netplan's own generator (what `netplan generate --root-dir` runs) turns the YAML into
  systemd-networkd files, which are read back, and loaded by systemd-networkd as above;
- NetworkManager: every keyfile goes through `nmcli --offline` (NetworkManager's keyfile reader and
  writer, no daemon): what it writes back is what NetworkManager understood, and is read back.
Each reading becomes the same contract (addresses, MTU, the bond's LACP settings and members, the rail
tables' default routes, the source rules, IPv6 off) and the three must be equal, and equal to the plan.

Not here: a bond coming up and LACP with a switch (this machine's kernel has no bonding module).
The tools are Debian's netplan.io and network-manager, unpacked (not installed) by scripts/test.sh.
"""

from __future__ import annotations

import configparser
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_helpers import run_play
from networkd_helpers import networkd_log

from gpufabric.export.inventory import ansible_vars, build
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "host_network"
CACHE = ROOT / ".cache"
HOST = "gpu001"
LIB = "usr/lib/x86_64-linux-gnu"
BACKENDS = ("systemd-networkd", "netplan", "NetworkManager")

Contract = dict[str, dict[str, Any]]

# An ansible-playbook run renders the files (about 10 s alone, 30 s on a busy machine): the slow tier, as the
# repository's other playbook runs.
pytestmark = pytest.mark.slow


def _tool(folder: str, program: str) -> tuple[list[str], dict[str, str]] | None:
    """The program from the unpacked Debian package (with its libraries), else installed, else None."""
    unpacked = CACHE / folder / program
    if unpacked.exists():
        return [str(unpacked)], {**os.environ, "LD_LIBRARY_PATH": str(CACHE / folder / LIB)}
    installed = Path("/") / program
    return ([str(installed)], dict(os.environ)) if installed.exists() else None


def _need(tool: tuple[list[str], dict[str, str]] | None, what: str) -> tuple[list[str], dict[str, str]]:
    if tool is None:
        message = f"needs {what}: scripts/test.sh unpacks it into .cache/"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return tool


def _host_vars() -> dict[str, Any]:
    plan = build_plan(load_intent(str(ROOT / "inventory" / "examples" / "multi-vendor.yml")))
    host = next(h for h in build(plan) if h.name == HOST)
    return ansible_vars(host)


def _task(template: str, dest: str, loop: str) -> dict[str, Any]:
    return {
        "name": f"{template} -> {dest}",
        "ansible.builtin.template": {"src": str(ROLE / "templates" / template), "dest": "{{ out }}/" + dest},
        "loop": "{{ " + loop + " }}",
    }


def _render_play(out: Path) -> list[dict[str, Any]]:
    """The role's templates under the file names its persist tasks give them, one folder per backend."""
    net = "{{ item.interface }}"
    return [
        {
            "name": "Render host_network's files for every backend",
            "hosts": "all",
            "gather_facts": False,
            "vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / "main.yml")],
            "vars": {"out": str(out)},
            "tasks": [
                {"ansible.builtin.file": {"path": "{{ out }}/" + d, "state": "directory", "mode": "0755"}}
                for d in ("systemd-networkd", "netplan/etc/netplan", "NetworkManager")
            ]
            + [
                _task("bond.netdev.j2", f"systemd-networkd/60-gpufabric-{net}.netdev", "host_network_bonds"),
                _task("nic.network.j2", f"systemd-networkd/60-gpufabric-{net}.network", "host_network_links"),
                _task("member.network.j2", f"systemd-networkd/60-gpufabric-{net}.network", "host_network_members"),
                {
                    "ansible.builtin.template": {
                        "src": str(ROLE / "templates" / "netplan.yaml.j2"),
                        "dest": "{{ out }}/netplan/etc/netplan/60-gpufabric.yaml",
                        "mode": "0600",
                    }
                },
                _task("nic.nmconnection.j2", f"NetworkManager/gpufabric-{net}.nmconnection", "host_network_links"),
                _task("member.nmconnection.j2", f"NetworkManager/gpufabric-{net}.nmconnection", "host_network_members"),
            ],
        }
    ]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("host_network")
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **_host_vars()}
    run_play(out, {HOST: host}, _render_play(out))
    return out


# --- The plan's contract ----------------------------------------------------------------------------


def _planned() -> Contract:
    """What every backend must configure, from the inventory the plan gives the host."""
    hv = _host_vars()
    routed = [n for n in hv["gpufabric_nics"] if not n["bond"]]
    bonds = hv["gpufabric_bonds"]
    links = sorted([*routed, *bonds], key=lambda n: n["interface"])
    tables = {n["interface"]: 101 + i for i, n in enumerate(links)}
    out: Contract = {}
    for n in links:
        out[n["interface"]] = {
            "mtu": n["mtu"],
            "addresses": [f"{n['address']}/{n['prefixlen']}"],
            "routes": [("0.0.0.0/0", n["gateway"], tables[n["interface"]], True)],
            "rules": [(f"{n['address']}/32", tables[n["interface"]], 1000)],
            "ipv6": "off",
        }
    for b in bonds:
        out[b["interface"]]["bond"] = {
            "mode": b["mode"],
            "hash": b["transmit_hash_policy"],
            "lacp_rate": b["lacp_rate"],
            "miimon_ms": b["miimon"],
        }
        for m in b["members"]:
            out[m] = {"mtu": b["mtu"], "addresses": [], "routes": [], "rules": [], "ipv6": "off"}
            out[m]["member_of"] = b["interface"]
    return out


# --- systemd-networkd files (written by the role, or generated by netplan) -------------------------------


def _ini(path: Path) -> dict[str, list[dict[str, str]]]:
    """A systemd unit-style file: every section in order (a section may repeat), keys as written."""
    sections: dict[str, list[dict[str, str]]] = {}
    current: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = {}
            sections.setdefault(line.strip("[]"), []).append(current)
        else:
            key, _, value = line.partition("=")
            current[key.strip()] = value.strip()
    return sections


def _yes(value: str | None) -> bool:
    return (value or "").lower() in ("yes", "true", "1", "on")


def _ms(value: str) -> int:
    m = re.fullmatch(r"(\d+)\s*(ms|s)?", value)
    assert m, f"MIIMonitorSec={value}"
    return int(m.group(1)) * (1000 if m.group(2) == "s" else 1)


def _networkd_contract(folder: Path) -> Contract:
    out: Contract = {}
    netdevs = {}
    for path in sorted(folder.glob("*.netdev")):
        ini = _ini(path)
        dev = ini["NetDev"][0]
        assert dev["Kind"] == "bond", path
        bond = ini["Bond"][0]
        netdevs[dev["Name"]] = {
            "mtu": int(dev["MTUBytes"]) if "MTUBytes" in dev else None,
            "bond": {
                "mode": bond["Mode"],
                "hash": bond["TransmitHashPolicy"],
                "lacp_rate": bond["LACPTransmitRate"],
                "miimon_ms": _ms(bond["MIIMonitorSec"]),
            },
        }
    for path in sorted(folder.glob("*.network")):
        ini = _ini(path)
        name = ini["Match"][0]["Name"]
        network = ini["Network"][0]
        mtu = next((int(s["MTUBytes"]) for s in ini.get("Link", []) if "MTUBytes" in s), None)
        entry: dict[str, Any] = {
            "mtu": mtu,
            "addresses": [a for s in ini.get("Address", []) for a in [s["Address"]]]
            + ([network["Address"]] if "Address" in network else []),
            "routes": [
                (r.get("Destination", "0.0.0.0/0"), r["Gateway"], int(r["Table"]), _yes(r.get("GatewayOnLink")))
                for r in ini.get("Route", [])
            ],
            "rules": [(r["From"], int(r["Table"]), int(r["Priority"])) for r in ini.get("RoutingPolicyRule", [])],
            # Off: no link-local address (so no IPv6 address at all) and router advertisements ignored.
            "ipv6": "off"
            if network.get("LinkLocalAddressing") in ("no", "none", "false") and not _yes(network.get("IPv6AcceptRA"))
            else f"LinkLocalAddressing={network.get('LinkLocalAddressing')} IPv6AcceptRA={network.get('IPv6AcceptRA')}",
        }
        if "Bond" in network:
            entry["member_of"] = network["Bond"]
        if name in netdevs:
            # The bond's MTU is the .netdev's; a .network [Link] MTU, if any, must agree.
            assert entry["mtu"] in (None, netdevs[name]["mtu"]), (name, entry["mtu"], netdevs[name]["mtu"])
            entry["mtu"] = netdevs[name]["mtu"]
            entry["bond"] = netdevs[name]["bond"]
        out[name] = entry
    assert set(netdevs) <= set(out), f"a bond without a .network: {set(netdevs) - set(out)}"
    return out


# --- NetworkManager keyfiles, as nmcli --offline reads them --------------------------------------------


def _nmcli_round_trip(nmcli: tuple[list[str], dict[str, str]], path: Path) -> str:
    """The keyfile as NetworkManager reads it: `nmcli --offline connection modify` parses it from stdin with
    NetworkManager's keyfile reader, verifies it and writes what it understood (a no-op change: the id)."""
    ident = _ini(path)["connection"][0]["id"]
    cmd, env = nmcli
    done = subprocess.run(
        [*cmd, "--offline", "connection", "modify", "connection.id", ident],
        stdin=path.open(),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"{path.name}: {done.stderr}"
    return done.stdout


def _nm_contract(files: dict[str, str]) -> Contract:
    out: Contract = {}
    for text in files.values():
        parser = configparser.ConfigParser(interpolation=None, strict=True)
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
        parser.read_string(text)
        conn = parser["connection"]
        name = conn["interface-name"]
        eth = parser["ethernet"] if parser.has_section("ethernet") else {}
        entry: dict[str, Any] = {"mtu": int(eth["mtu"]) if "mtu" in eth else None}
        if conn.get("slave-type") == "bond":
            # A port of a bond: NetworkManager gives it no IP configuration at all (it refuses ipv4/ipv6 here).
            assert not parser.has_section("ipv4") and not parser.has_section("ipv6"), name
            entry |= {"addresses": [], "routes": [], "rules": [], "ipv6": "off", "member_of": conn["master"]}
        else:
            ipv4, ipv6 = parser["ipv4"], parser["ipv6"]
            assert ipv4["method"] == "manual", name
            addresses = [v for k, v in ipv4.items() if re.fullmatch(r"address\d+", k)]
            routes = []
            for key, value in ipv4.items():
                if m := re.fullmatch(r"route(\d+)", key):
                    dest, gateway = value.split(",")[:2]
                    options = dict(o.split("=") for o in ipv4.get(f"route{m.group(1)}_options", "").split(",") if o)
                    routes.append((dest, gateway, int(options["table"]), _yes(options.get("onlink"))))
            rules = []
            for key, value in ipv4.items():
                if key.startswith("routing-rule"):
                    m = re.fullmatch(r"priority (\d+) from (\S+) table (\d+)", value)
                    assert m, value
                    # NetworkManager writes a single address without its /32.
                    source = m.group(2) if "/" in m.group(2) else f"{m.group(2)}/32"
                    rules.append((source, int(m.group(3)), int(m.group(1))))
            entry |= {
                "addresses": addresses,
                "routes": routes,
                "rules": rules,
                "ipv6": "off" if ipv6["method"] == "disabled" else f"ipv6.method={ipv6['method']}",
            }
            if conn["type"] == "bond":
                b = parser["bond"]
                entry["bond"] = {
                    "mode": b["mode"],
                    "hash": b["xmit_hash_policy"],
                    "lacp_rate": b["lacp_rate"],
                    "miimon_ms": int(b["miimon"]),
                }
        out[name] = entry
    return out


# --- Each backend read by its own software ----------------------------------------------------------------


@functools.cache
def _netplan_generate(rendered: Path) -> Path:
    """netplan's generator on the rendered YAML: `netplan generate --root-dir` runs exactly this program."""
    cmd, env = _need(_tool("netplan", "usr/libexec/netplan/generate"), "netplan.io (netplan's generator)")
    root = rendered / "netplan"
    shutil.rmtree(root / "run", ignore_errors=True)
    done = subprocess.run([*cmd, "--root-dir", str(root)], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "Error" not in done.stderr and "Warning" not in done.stderr.title(), done.stderr
    return root / "run" / "systemd" / "network"


@functools.cache
def _nm_readings(rendered: Path) -> dict[str, str]:
    nmcli = _need(_tool("network-manager", "usr/bin/nmcli"), "network-manager (nmcli)")
    files = sorted((rendered / "NetworkManager").glob("*.nmconnection"))
    assert files
    return {f.name: _nmcli_round_trip(nmcli, f) for f in files}


def _contract(backend: str, rendered: Path) -> Contract:
    if backend == "systemd-networkd":
        return _networkd_contract(rendered / "systemd-networkd")
    if backend == "netplan":
        return _networkd_contract(_netplan_generate(rendered))
    return _nm_contract(_nm_readings(rendered))


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_backend_configures_the_plan(rendered, backend):
    found = _contract(backend, rendered)
    planned = _planned()
    assert set(found) == set(planned)
    for name in planned:
        assert found[name] == planned[name], f"{backend}: {name}"
    # The bond holds the storage address; neither member does, and the address is on one interface only.
    lacp = {"mode": "802.3ad", "hash": "layer3+4", "lacp_rate": "fast", "miimon_ms": 100}
    assert found["bond-storage"]["bond"] == lacp
    assert found["ens5f0np0"]["member_of"] == found["ens5f1np1"]["member_of"] == "bond-storage"
    every_address = [a for entry in found.values() for a in entry["addresses"]]
    assert len(every_address) == len(set(every_address)) == 6


def test_the_three_backends_hold_one_contract(rendered):
    readings = {backend: _contract(backend, rendered) for backend in BACKENDS}
    first = readings["systemd-networkd"]
    for backend, found in readings.items():
        assert found == first, f"{backend} differs from systemd-networkd"


def test_netplan_turns_ipv6_link_local_and_router_advertisements_off(rendered):
    generated = _netplan_generate(rendered)
    for path in generated.glob("*.network"):
        network = _ini(path)["Network"][0]
        assert network["LinkLocalAddressing"] == "no" and network["IPv6AcceptRA"] == "no", path.name


def test_networkmanager_reads_the_bond_and_its_ports(rendered):
    readings = _nm_readings(rendered)
    bond = configparser.ConfigParser(interpolation=None)
    bond.read_string(readings["gpufabric-bond-storage.nmconnection"])
    lacp = {"lacp_rate": "fast", "miimon": "100", "mode": "802.3ad", "xmit_hash_policy": "layer3+4"}
    assert dict(bond["bond"]) == lacp
    assert bond["connection"]["type"] == "bond" and bond["ethernet"]["mtu"] == "9000"
    port = configparser.ConfigParser(interpolation=None)
    port.read_string(readings["gpufabric-ens5f0np0.nmconnection"])
    assert (port["connection"]["master"], port["connection"]["slave-type"]) == ("bond-storage", "bond")
    # NetworkManager ignores a keyfile others can read: every keyfile task of the role writes mode 0600 (NICs
    # and bonds, members, and on converged planes the NICs that carry only tags, the VRFs, the subinterfaces).
    tasks = yaml.safe_load((ROLE / "tasks" / "persist-NetworkManager.yml").read_text())
    assert [t["ansible.builtin.template"]["mode"] for t in tasks] == ["0600"] * 5


# --- systemd-networkd's own parser -------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["systemd-networkd", "netplan"])
def test_systemd_networkd_loads_every_file_without_a_complaint(rendered, source):
    folder = rendered / "systemd-networkd" if source == "systemd-networkd" else _netplan_generate(rendered)
    log = networkd_log(folder)
    assert "Enumeration completed" in log, log[-2000:]
    complaints = [ln for ln in log.splitlines() if "/run/systemd/network/" in ln]
    assert not complaints, "\n".join(complaints)  # networkd names the file and line of every rejected setting
    # It took the .netdev as a bond (creating it then needs the kernel's bonding module, which this machine
    # lacks: networkd says so after enumerating, and the test stops it before).
    assert re.search(r"^bond-storage: loaded \"?bond\"?", log, re.M), log[-2000:]
