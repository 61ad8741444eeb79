"""host_network on converged planes: each carried plane's tagged subinterface, VRF, address and route, on every
backend, each read back by the backend's own software, and its DSCP marking checked by nftables.

One Ansible run renders the role's files (tests/host_files.py) for:
- every server of the default fabric, whose files must keep the digests taken before carried planes were
  written (tests/golden/hosts/default.sha256): the Molecule lane and the demo apply exactly these;
- one server per group of each converged example (a GPU node whose business NICs also carry tags, and a
  storage node whose NICs carry only tags), and one node of the multi-plane example (no tags).
Readers: systemd-networkd itself (networkd_helpers: it loads the files in a namespace of its own), netplan's
generator (its systemd-networkd output is read and loaded the same way), `nmcli --offline` (NetworkManager's
keyfile reader), `nft -c -f` (nftables' parser and the kernel's netlink checks, in a network namespace of the
test's own). This kernel has no VLAN or VRF devices: nothing is brought up.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from host_files import FILES, ROLE, host_vars, render_many
from host_files import digests as file_digests
from networkd_helpers import networkd_log
from test_host_network_backends import _ini, _need, _nmcli_round_trip, _tool, _yes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "inventory" / "examples"
SOURCES: dict[str, tuple[Path, list[str] | None]] = {
    "default": (ROOT / "inventory" / "fabric.yml", None),
    "converged-inband": (EXAMPLES / "converged-inband.yml", ["gpu01", "nvme01"]),
    "converged-north-south": (EXAMPLES / "converged-north-south.yml", ["gpu01", "nvme01"]),
    "multiplane-b300": (EXAMPLES / "multiplane-b300.yml", ["hgx01"]),
}
CONVERGED = [(label, host) for label in SOURCES if label.startswith("converged") for host in SOURCES[label][1] or []]
BACKENDS = ("systemd-networkd", "netplan", "NetworkManager")

pytestmark = pytest.mark.slow  # an ansible-playbook run


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    return render_many(tmp_path_factory.mktemp("host_planes"), SOURCES)


def _vars(label: str, host: str) -> dict[str, Any]:
    intent, _ = SOURCES[label]
    return host_vars(intent, [host])[host]


# --- What the plan says ------------------------------------------------------------------------------------


def _planned(label: str, host: str) -> dict[str, dict[str, Any]]:
    """Per subinterface: parent, tag, MTU, VRF and its table, address, and the route to the carried pool
    (VRF tables 201.. in VRF name order; metric 100.. in subinterface name order within the VRF)."""
    hv = _vars(label, host)
    pools = {c["plane"]: c["hosts"] for f in hv["gpufabric_planes"].values() for c in f.get("carries", [])}
    vlans = [v | {"parent": n["interface"], "mtu": n["mtu"]} for n in hv["gpufabric_nics"] for v in n.get("vlans", [])]
    tables = {vrf: 201 + i for i, vrf in enumerate(sorted({v["vrf"] for v in vlans}))}
    out = {}
    for vrf, table in tables.items():
        members = sorted(v["interface"] for v in vlans if v["vrf"] == vrf)
        for v in vlans:
            if v["vrf"] == vrf:
                metric = 100 + members.index(v["interface"])
                out[v["interface"]] = {
                    "parent": v["parent"],
                    "vlan": v["vlan"],
                    "mtu": v["mtu"],
                    "vrf": (vrf, table),
                    "addresses": [f"{v['address']}/{v['prefixlen']}"],
                    "routes": [(pools[v["plane"]], v["gateway"], table, metric, True)],
                    "ipv6": "off",
                }
    return out


def _trunks(label: str, host: str) -> list[str]:
    """The host's NICs that carry only tags: they must have no address on any backend."""
    return [n["interface"] for n in _vars(label, host)["gpufabric_nics"] if n.get("vlans") and not n["address"]]


# --- systemd-networkd files (the role's, or netplan's generator's) -----------------------------------------


def _networkd_vlans(folder: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(subinterfaces, every .network by its interface) as systemd-networkd's files say."""
    netdevs = {_ini(p)["NetDev"][0]["Name"]: _ini(p) for p in folder.glob("*.netdev")}
    networks = {_ini(p)["Match"][0]["Name"]: _ini(p) for p in folder.glob("*.network")}
    vrf_tables = {n: int(d["VRF"][0]["Table"]) for n, d in netdevs.items() if d["NetDev"][0]["Kind"] == "vrf"}
    parents: dict[str, str] = {}
    # A .network names each of its subinterfaces on a VLAN= line of its own (_ini keeps one key per section).
    for p in folder.glob("*.network"):
        name = _ini(p)["Match"][0]["Name"]
        for line in p.read_text().splitlines():
            if line.startswith("VLAN="):
                parents[line.split("=", 1)[1].strip()] = name
    out = {}
    for name, dev in netdevs.items():
        if dev["NetDev"][0]["Kind"] != "vlan":
            continue
        net = networks[name]
        network = net["Network"][0]
        mtu = dev["NetDev"][0].get("MTUBytes") or next(
            (s["MTUBytes"] for s in net.get("Link", []) if "MTUBytes" in s), None
        )
        out[name] = {
            "parent": parents.get(name),
            "vlan": int(dev["VLAN"][0]["Id"]),
            "mtu": int(mtu) if mtu else None,
            "vrf": (network.get("VRF"), vrf_tables.get(network.get("VRF", ""))),
            "addresses": [s["Address"] for s in net.get("Address", [])]
            + ([network["Address"]] if "Address" in network else []),
            "routes": [
                (r["Destination"], r["Gateway"], int(r["Table"]), int(r["Metric"]), _yes(r.get("GatewayOnLink")))
                for r in net.get("Route", [])
            ],
            "ipv6": "off"
            if network.get("LinkLocalAddressing") in ("no", "none", "false") and not _yes(network.get("IPv6AcceptRA"))
            else "on",
        }
    return out, networks


def _netplan_generate(folder: Path) -> Path:
    cmd, env = _need(_tool("netplan", "usr/libexec/netplan/generate"), "netplan.io (netplan's generator)")
    shutil.rmtree(folder / "run", ignore_errors=True)
    done = subprocess.run([*cmd, "--root-dir", str(folder)], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr.lower() and "warning" not in done.stderr.lower(), done.stderr
    return folder / "run" / "systemd" / "network"


# --- NetworkManager keyfiles as nmcli --offline reads them ----------------------------------------------------


def _nm_vlans(folder: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, list[dict[str, str]]]]]:
    nmcli = _need(_tool("network-manager", "usr/bin/nmcli"), "network-manager (nmcli)")
    readings = {}
    for path in sorted(folder.glob("*.nmconnection")):
        text = _nmcli_round_trip(nmcli, path)
        tmp = path.with_suffix(".read")
        tmp.write_text(text)
        ini = _ini(tmp)
        tmp.unlink()
        readings[ini["connection"][0]["interface-name"]] = ini
    tables = {n: int(i["vrf"][0]["table"]) for n, i in readings.items() if i["connection"][0]["type"] == "vrf"}
    out = {}
    for name, ini in readings.items():
        conn = ini["connection"][0]
        if conn["type"] != "vlan":
            continue
        ipv4 = ini["ipv4"][0]
        routes = []
        for key, value in ipv4.items():
            if m := re.fullmatch(r"route(\d+)", key):
                dest, gateway, metric = value.split(",")
                options = dict(o.split("=") for o in ipv4.get(f"route{m.group(1)}_options", "").split(",") if o)
                routes.append((dest, gateway, int(options["table"]), int(metric), _yes(options.get("onlink"))))
        assert conn["slave-type"] == "vrf", name
        out[name] = {
            "parent": ini["vlan"][0]["parent"],
            "vlan": int(ini["vlan"][0]["id"]),
            "mtu": int(ini["ethernet"][0]["mtu"]),
            "vrf": (conn["master"], tables.get(conn["master"])),
            "addresses": [v for k, v in ipv4.items() if re.fullmatch(r"address\d+", k)],
            "routes": routes,
            "ipv6": "off" if ini["ipv6"][0]["method"] == "disabled" else "on",
        }
    return out, readings


def _reading(backend: str, folder: Path) -> dict[str, dict[str, Any]]:
    if backend == "systemd-networkd":
        return _networkd_vlans(folder / "systemd-networkd")[0]
    if backend == "netplan":
        return _networkd_vlans(_netplan_generate(folder / "netplan"))[0]
    return _nm_vlans(folder / "NetworkManager")[0]


# --- The tests ---------------------------------------------------------------------------------------------


def test_the_default_fabrics_host_files_are_byte_identical(rendered):
    golden = (ROOT / "tests" / "golden" / "hosts" / "default.sha256").read_text()
    assert file_digests(rendered, "default") == golden


def test_every_template_of_the_role_is_rendered_here():
    mirrored = {row[0] for row in FILES}
    # Not host network files: the sysctls and the unit that loads the DSCP file at boot.
    apart = {"sysctl.conf.j2", "gpufabric-dscp.service.j2"}
    assert {p.name for p in (ROLE / "templates").glob("*.j2")} - apart == mirrored


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("label", "host"), CONVERGED)
def test_each_backend_configures_every_carried_plane(rendered, label, host, backend):
    planned = _planned(label, host)
    assert planned  # every converged example's hosts carry at least one plane
    assert _reading(backend, rendered / f"{label}--{host}") == planned


@pytest.mark.parametrize(("label", "host"), CONVERGED)
def test_a_nic_that_carries_only_tags_has_no_address_on_any_backend(rendered, label, host):
    folder = rendered / f"{label}--{host}"
    trunks = _trunks(label, host)
    _, networkd = _networkd_vlans(folder / "systemd-networkd")
    _, generated = _networkd_vlans(_netplan_generate(folder / "netplan"))
    _, nm = _nm_vlans(folder / "NetworkManager")
    for name in trunks:
        for networks in (networkd, generated):
            assert "Address" not in networks[name]["Network"][0] and "Address" not in networks[name], name
        assert nm[name]["ipv4"][0]["method"] == "disabled", name
    # nvme01 carries only tags; gpu01's business NICs keep their own address besides their tags.
    assert bool(trunks) == (host == "nvme01")


@pytest.mark.parametrize("source", ["systemd-networkd", "netplan"])
@pytest.mark.parametrize(("label", "host"), CONVERGED)
def test_systemd_networkd_loads_the_subinterfaces_and_vrfs(rendered, label, host, source):
    folder = rendered / f"{label}--{host}"
    files = folder / "systemd-networkd" if source == "systemd-networkd" else _netplan_generate(folder / "netplan")
    log = networkd_log(files)
    assert "Enumeration completed" in log, log[-2000:]
    complaints = [ln for ln in log.splitlines() if "/run/systemd/network/" in ln]
    assert not complaints, "\n".join(complaints)
    planned = _planned(label, host)
    for name, entry in planned.items():
        assert re.search(rf"^{re.escape(name)}: loaded \"?vlan\"?", log, re.M), name
        assert re.search(rf"^{re.escape(entry['vrf'][0])}: loaded \"?vrf\"?", log, re.M), entry["vrf"]


def _nft_check(path: Path) -> subprocess.CompletedProcess[str]:
    """nftables' own parser and the kernel's checks, committing nothing, in a network namespace of its own."""
    return subprocess.run(
        ["unshare", "--net", "nft", "-c", "-f", str(path)], capture_output=True, text=True, check=False
    )


def _marks(path: Path) -> dict[str, tuple[list[str], int]]:
    """Carried plane -> (its subinterfaces, the DSCP they are marked with), from the file's rules."""
    out = {}
    plane = None
    for line in path.read_text().splitlines():
        if m := re.match(r"\s*# (\S+) plane \(VRF", line):
            plane = m.group(1)
        elif m := re.match(r"\s*oifname \{ (.*) \} ip dscp set (\d+)$", line):
            assert plane is not None
            out[plane] = ([n.strip().strip('"') for n in m.group(1).split(",")], int(m.group(2)))
    return out


@pytest.mark.parametrize(("label", "host"), CONVERGED)
def test_each_carried_plane_is_marked_with_its_classes_dscp(rendered, label, host):
    if subprocess.run(["unshare", "--net", "true"], check=False).returncode != 0:
        pytest.skip("needs unshare --net (root)")
    path = rendered / f"{label}--{host}" / "nftables" / "60-gpufabric-dscp.nft"
    done = _nft_check(path)
    assert done.returncode == 0, done.stderr
    hv = _vars(label, host)
    expected = {}
    for facts in hv["gpufabric_planes"].values():
        for c in facts.get("carries", []):
            names = sorted(
                v["interface"] for n in hv["gpufabric_nics"] for v in n.get("vlans", []) if v["plane"] == c["plane"]
            )
            # The QoS contract: a lossless carried plane rides the RoCE class; a lossy one its own first DSCP.
            expected[c["plane"]] = (names, facts["qos"]["roce_dscp"] if c["traffic"] == "lossless" else c["dscp"][0])
    assert _marks(path) == expected
    if label == "converged-inband":
        assert {p: d for p, (_, d) in expected.items()} == {"storage": 26, "inband": 16}


def test_nft_rejects_a_broken_marking(rendered, tmp_path):
    """The judge can fail: a DSCP above 63 is refused by nftables."""
    if subprocess.run(["unshare", "--net", "true"], check=False).returncode != 0:
        pytest.skip("needs unshare --net (root)")
    good = rendered / "converged-inband--gpu01" / "nftables" / "60-gpufabric-dscp.nft"
    bad = tmp_path / "bad.nft"
    bad.write_text(good.read_text().replace("ip dscp set 26", "ip dscp set 99"))
    assert _nft_check(bad).returncode != 0


def test_hosts_without_carried_planes_get_no_tag_vrf_or_marking(rendered):
    for folder in rendered.iterdir():
        if folder.name.startswith(("default--", "multiplane-b300--")):
            files = [p.name for p in folder.rglob("*") if p.is_file()]
            assert not [f for f in files if f.startswith(("59-", "61-")) or f.endswith(".nft")], folder.name


# --- A multi-plane node: every plane's port a routed NIC, on every backend ----------------------------------


def _routed_planned(label: str, host: str) -> dict[str, dict[str, Any]]:
    """Each routed NIC's address, MTU, default route in its own table (101.. in name order) and source rule."""
    nics = sorted((n for n in _vars(label, host)["gpufabric_nics"] if n["address"]), key=lambda n: n["interface"])
    return {
        n["interface"]: {
            "mtu": n["mtu"],
            "addresses": [f"{n['address']}/{n['prefixlen']}"],
            "routes": [("0.0.0.0/0", n["gateway"], 101 + i, True)],
            "rules": [(f"{n['address']}/32", 101 + i, 1000)],
            "ipv6": "off",
        }
        for i, n in enumerate(nics)
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_multiplane_node_gets_every_planes_port_on_each_backend(rendered, backend):
    from test_host_network_backends import _networkd_contract, _nm_contract

    folder = rendered / "multiplane-b300--hgx01"
    if backend == "systemd-networkd":
        found = _networkd_contract(folder / "systemd-networkd")
    elif backend == "netplan":
        found = _networkd_contract(_netplan_generate(folder / "netplan"))
    else:
        nmcli = _need(_tool("network-manager", "usr/bin/nmcli"), "network-manager (nmcli)")
        found = _nm_contract({p.name: _nmcli_round_trip(nmcli, p) for p in (folder / "NetworkManager").glob("*")})
    planned = _routed_planned("multiplane-b300", "hgx01")
    assert len(planned) == 16  # 8 SuperNICs x 2 planes
    assert found == planned


@pytest.mark.parametrize("source", ["systemd-networkd", "netplan"])
def test_systemd_networkd_loads_a_multiplane_nodes_files(rendered, source):
    folder = rendered / "multiplane-b300--hgx01"
    files = folder / "systemd-networkd" if source == "systemd-networkd" else _netplan_generate(folder / "netplan")
    log = networkd_log(files)
    assert "Enumeration completed" in log, log[-2000:]
    assert not [ln for ln in log.splitlines() if "/run/systemd/network/" in ln]
