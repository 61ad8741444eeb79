"""Every export, on every example, agrees with the plan it came from."""

from __future__ import annotations

import base64
import csv
import gzip
import io
import itertools
import json
import os
import re
import shutil
import subprocess

import jsonschema
import pytest
import yaml
from conftest import ALL_INTENTS, CLAB_SCHEMA, INVENTORY, example_plan, run, run_in_process, sized

from gpufabric.export import (
    anta,
    bom,
    cabling,
    containerlab,
    drawing,
    ib_topology,
    k8s_labels,
    k8s_network,
    plan_json,
    probe_mesh,
    slurm,
    storage,
    ztp,
)
from gpufabric.export.hostlist import compress
from gpufabric.export.registry import EXPORTERS
from gpufabric.ib.topology import parse as ib_topology_parse
from gpufabric.plan import Plan, ip
from gpufabric.plan.multiplane import parts

SMALL = [p for p in ALL_INTENTS if "32k" not in p.name]


def plan_of(path) -> Plan:
    return example_plan(path)  # one per test process, shared with the other files' per-example tests


def ids(paths):
    return [p.stem for p in paths]


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the 32k fabric's exports are 3-15 MB


def _load(text: str):
    return yaml.load(text, Loader=_LOADER)


def _parsed_names(kind: str, text: str) -> set[str]:
    """The device and server names an export mentions, read back through its own format."""
    if kind == "plan":
        doc = json.loads(text)
        return {d["name"] for p in doc["planes"].values() for d in p["devices"]} | {s["name"] for s in doc["servers"]}
    if kind == "cabling":
        rows = list(csv.DictReader(io.StringIO(text)))
        return {r["a_device"] for r in rows} | {r["b_device"] for r in rows}
    if kind == "drawing":
        return set(re.findall(r'^\s+"([^"]+)" \[', text, re.M))
    if kind == "slurm":
        return {n for line in text.splitlines() if "Nodes=" in line for n in _expand(line.split("Nodes=")[1])}
    if kind == "k8s-labels":
        return set(_load(text))
    if kind == "k8s-network":
        docs = [d for d in yaml.load_all(text, Loader=_LOADER) if d and d["kind"] == "CIDRPool"]
        return {a["nodeName"] for d in docs for a in d["spec"]["staticAllocations"]}
    if kind == "slurm-block":
        return {n for line in text.splitlines() if "Nodes=" in line for n in _expand(line.split("Nodes=")[1])}
    if kind == "slurm-yaml":
        tops = _load(text)
        return {n for t in tops if "tree" in t for sw in t["tree"]["switches"] for n in _expand(sw.get("nodes", ""))}
    if kind == "containerlab":
        return set(_load(text)["topology"]["nodes"])
    if kind == "structured":
        return set(json.loads(text))
    if kind == "ztp":  # one Kea client class per switch the DHCP server knows
        return {c["name"].removeprefix("gpufabric-") for c in json.loads(text)["Dhcp4"]["client-classes"]}
    if kind == "storage":  # one folder per client: `<host>/<file>` keys
        return {key.split("/")[0] for key in json.loads(text)}
    if kind == "anta":  # every test names its switch in its tag filter
        doc = _load(text)
        sections = [
            v for section in doc.values() for v in (section.values() if isinstance(section, dict) else [section])
        ]
        return {tag for tests in sections for entry in tests for t in entry.values() for tag in t["filters"]["tags"]}
    if kind == "ansible-inventory":
        groups = _load(text)["all"]["children"]
        return {h for g in groups.values() for h in g["hosts"]}
    if kind == "ib-topology":  # read back by the topology parser (ibnetdiscover's format): hosts by adapter
        return {name.split(" ")[0] for name in ib_topology_parse(text).by_name()}
    if kind == "k8s-probe-mesh":  # the ConfigMap's probe plan: every host it probes from
        (config,) = [d for d in yaml.load_all(text, Loader=_LOADER) if d and d["kind"] == "ConfigMap"]
        return set(json.loads(gzip.decompress(base64.b64decode(config["binaryData"]["probes.json.gz"])))["hosts"])
    assert kind == "bom"
    rows = list(csv.DictReader(io.StringIO(text)))
    return {r["plane"] for r in rows}


@pytest.mark.parametrize("path", sized(ALL_INTENTS), ids=ids(ALL_INTENTS))
@pytest.mark.parametrize("kind", list(EXPORTERS))
def test_every_export_renders_every_example(path, kind):
    """Each export parses in its own format and names what the plan has."""
    plan = plan_of(path)
    if kind == "k8s-network" and not k8s_network.rails(plan) and not k8s_network.ipoib_networks(plan):
        # no routed RoCE plane, no IPoIB partition for pods: a clear refusal
        with pytest.raises(k8s_network.K8sNetworkError, match=r"carries_roce|gives pods a subnet|no IPoIB"):
            EXPORTERS[kind].render(plan)
        return
    if kind == "ib-topology" and plan.infiniband is None:  # an Ethernet compute plane: a clear refusal
        with pytest.raises(ib_topology.NotInfinibandError, match="not InfiniBand"):
            EXPORTERS[kind].render(plan)
        return
    if kind == "ztp" and plan.intent.planes.oob is None:  # no OOB plane to provision over: a located refusal
        with pytest.raises(ztp.ZtpError, match="OOB plane") as refused:
            EXPORTERS[kind].render(plan)
        assert refused.value.problems[0].path == ("planes", "oob")
        return
    if kind == "k8s-probe-mesh" and not any(p.carries_roce for p in plan.planes.values()):  # nothing to probe
        with pytest.raises(probe_mesh.ProbeMeshError, match="carries RoCE"):
            EXPORTERS[kind].render(plan)
        return
    storage_plane = plan.intent.planes.storage
    if kind == "storage" and (storage_plane is None or not storage_plane.file_systems):  # nothing to mount
        with pytest.raises(storage.NoStorageClientsError, match="names no file system"):
            EXPORTERS[kind].render(plan)
        return
    if kind == "anta" and not any(d.platform == "eos" for d in plan.devices()):  # ANTA tests EOS only
        with pytest.raises(anta.NoAntaSwitchError, match="ANTA tests Arista EOS"):
            EXPORTERS[kind].render(plan)
        return
    names = _parsed_names(kind, EXPORTERS[kind].render(plan))
    switches = {d.name for d in plan.devices()}
    servers = {s.name for s in plan.servers}
    expected = {
        "plan": switches | servers,
        "ansible-inventory": switches | servers,
        "k8s-labels": servers,
        "slurm": {s.name for s in plan.servers if "compute" in s.units},
        "slurm-yaml": {s.name for s in plan.servers if "compute" in s.units},
        "slurm-block": {n for nodes in slurm.blocks(plan).values() for n in nodes},
        "k8s-network": {node for rail in k8s_network.rails(plan) for node, _ in rail.nics},
        "containerlab": {d.name for d in plan.devices() if d.plane != "oob"} | {s.name for s in plan.servers if s.nics},
        # a multi-plane compute plane is listed plane by plane (compute-p1, compute-p2, ...)
        "bom": {n for name, p in plan.planes.items() for n, _ in parts(name, p)} | {"total"},
        "structured": switches,
        "k8s-probe-mesh": {
            s.name
            for s in plan.servers
            if any(n.plane in plan.planes and plan.planes[n.plane].carries_roce for n in s.nics)
        },
        "anta": {d.name for d in plan.devices() if d.platform == "eos"},
        # every switch whose management port a planned cable reaches (the OOB switches' own need a serial)
        "ztp": {d.name for d in plan.devices() if d.plane != "oob"},
        # every GPU server on the storage plane, and no storage server
        "storage": {s.name for s in plan.servers if s.gpus and any(n.plane == "storage" for n in s.nics)},
    }
    if kind in ("structured", "anta", "storage"):
        assert names == expected[kind]
    elif kind in expected:
        assert names >= expected[kind]
    elif kind == "drawing":  # every switch of the units drawn (the first two of a plane; the rest counted)
        drawn = {d.name for d in plan.devices() if d.role != "leaf" or (d.unit or 0) <= drawing.DRAWN_UNITS}
        upper = {d.name for d in plan.devices() if d.role in ("spine", "superspine")}
        assert names >= drawn - upper
    elif kind == "ib-topology":  # every InfiniBand switch and every host on the plane, nothing else
        assert plan.infiniband is not None
        assert names == {n.name for n in plan.infiniband.fabric.switches} | set(plan.infiniband.fabric.hosts) | {
            n.host for n in plan.infiniband.fabric.role("fabric-manager")
        }
    else:  # cabling names every switch
        assert names >= {d.name for p in plan.planes.values() for d in p.devices}
        if plan.infiniband is not None:
            assert names >= {n.name for n in plan.infiniband.fabric.switches}


@pytest.mark.parametrize("path", sized(ALL_INTENTS), ids=ids(ALL_INTENTS))
def test_cabling_has_one_row_per_cable(path):
    plan = plan_of(path)
    rows = list(csv.DictReader(io.StringIO(cabling.render(plan))))
    ib_cables = len(plan.infiniband.fabric.cables) if plan.infiniband is not None else 0
    assert len(rows) == plan_json.totals(plan)["cables"] == len(plan.links()) + ib_cables
    assert len({r["cable_id"] for r in rows}) == len(rows)
    ends = [(r["a_device"], r["a_port"]) for r in rows] + [(r["b_device"], r["b_port"]) for r in rows if r["b_port"]]
    assert len(ends) == len(set(ends))  # no port is cabled twice


def test_cabling_rows_match_links(default_plan):
    rows = list(csv.DictReader(io.StringIO(cabling.render(default_plan))))
    first_host = next(r for r in rows if r["kind"] == "host")
    nic = default_plan.servers[0].nics[0]
    assert (first_host["a_device"], first_host["a_port"], first_host["b_device"], first_host["b_port"]) == (
        "gpu01",
        nic.interface,
        nic.leaf,
        nic.leaf_port,
    )
    assert first_host["speed"] == "400G"


@pytest.mark.parametrize("path", sized(SMALL), ids=ids(SMALL))
def test_bom_totals_match_plan_totals(path):
    plan = plan_of(path)
    rows = list(csv.DictReader(io.StringIO(bom.render(plan))))
    total = {
        c: sum(int(r["quantity"]) for r in rows if r["plane"] == "total" and r["category"] == c)
        for c in ("switch", "transceiver", "cable")
    }
    t = plan_json.totals(plan)
    assert total == {"switch": t["switches"], "transceiver": t["transceivers"], "cable": t["cables"]}


def test_bom_counts_for_default_fabric(default_plan):
    """Compute: 8 fabric links x 2 ends + 8 leaf host ports = 24 switch modules, 8 NIC modules."""
    b = bom.plane_bom(default_plan.planes["compute"])
    assert b.transceivers == {"400G module": 24, "400G module (server NIC)": 8}
    assert b.cables == {"400G fiber": 16}
    assert bom.plane_bom(default_plan.planes["oob"]).transceivers == {}  # 1G copper


def _expand(hostlist: str) -> list[str]:
    out = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]+\])?", hostlist):
        m = re.match(r"^(.*)\[(.*)\]$", part)
        if not m:
            out.append(part)
            continue
        for rng in m.group(2).split(","):
            a, _, b = rng.partition("-")
            width = len(a)
            out += [f"{m.group(1)}{i:0{width}d}" for i in range(int(a), int(b or a) + 1)]
    return out


@pytest.mark.parametrize("path", sized(ALL_INTENTS), ids=ids(ALL_INTENTS))
def test_slurm_places_every_compute_node_once(path):
    plan = plan_of(path)
    text = slurm.render(plan)
    nodes = [n for line in text.splitlines() if "Nodes=" in line for n in _expand(line.split("Nodes=")[1])]
    compute = [s.name for s in plan.servers if "compute" in s.units]
    if plan.infiniband is not None:
        compute = plan.infiniband.fabric.hosts
    assert sorted(nodes) == sorted(compute)
    assert text.count("SwitchName=") >= 2


def test_slurm_groups_nodes_by_scalable_unit(default_plan):
    text = slurm.render(default_plan)
    assert "SwitchName=cmp-su1 Nodes=gpu[01-02]" in text
    assert "SwitchName=cmp-spines Switches=cmp-su[1-2]" in text


def test_hostlist_compression():
    assert compress(["gpu01", "gpu02", "gpu03", "gpu07", "x", "n9", "n10"]) == "x,gpu[01-03,07],n9,n10"
    assert _expand("gpu[01-03,07],x") == ["gpu01", "gpu02", "gpu03", "gpu07", "x"]


def test_k8s_labels_name_the_rail_leaves(default_plan):
    labels = yaml.safe_load(k8s_labels.render(default_plan))
    for s in default_plan.servers:
        for nic in s.nics:
            word = "rail" if nic.plane == "compute" else "nic"
            assert labels[s.name][f"gpufabric.io/{nic.plane}-{word}{nic.rail}-leaf"] == nic.leaf
    assert labels["gpu03"]["gpufabric.io/compute-unit"] == "2"
    assert all(len(v) <= 63 and isinstance(v, str) for node in labels.values() for v in node.values())


@pytest.mark.parametrize("path", sized(ALL_INTENTS), ids=ids(ALL_INTENTS))
def test_containerlab_validates_against_schema(path):
    if not CLAB_SCHEMA.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CLAB_SCHEMA} is missing; CI must have shared/ beside the clone")
        pytest.skip("containerlab schema not beside this clone (../shared/schemas)")
    # The schema is written for Go's regexp; its only construct Python's re lacks is the class
    # [\p{N}\p{L}] (letters and digits, in an address's %zone suffix), which is [^\W_] in Python.
    schema = json.loads(CLAB_SCHEMA.read_text().replace(r"[\\p{N}\\p{L}]", r"[^\\W_]"))
    assert r"\\p{" not in json.dumps(schema)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the 32k topology is 9 MB of YAML
    doc = _strided(yaml.load(containerlab.render(plan_of(path)), Loader=loader))
    jsonschema.validate(doc, schema)


def _strided(doc: dict, most: int = 3000) -> dict:
    """Large topologies are validated on every n-th node and link across the whole range (the generator
    writes each kind the same way; the smaller examples are validated whole): jsonschema in Python
    takes minutes on the 32k fabric's 100,000 links."""
    topo = doc["topology"]
    nodes, links = list(topo["nodes"].items()), topo["links"]
    if len(nodes) + len(links) <= most:
        return doc
    step_n, step_l = max(1, len(nodes) * 3 // most), max(1, len(links) * 3 // most)
    return {**doc, "topology": {**topo, "nodes": dict(nodes[::step_n]), "links": links[::step_l]}}


def test_containerlab_kinds_and_links():
    plan = plan_of(INVENTORY / "examples" / "multi-vendor.yml")
    doc = containerlab.topology(plan, {"eos": "my-ceos:1"})
    nodes = doc["topology"]["nodes"]
    assert nodes["cmp-spine1"]["kind"] == "nvidia_cumulusvx"
    assert nodes["sto-leaf1a"] == nodes["sto-leaf1a"] | {"kind": "arista_ceos", "image": "my-ceos:1"}
    assert nodes["biz-border1"]["kind"] == "cisco_n9kv"
    assert "oob-mgmt1" not in nodes  # containerlab's management network is the OOB plane
    assert nodes["gpu001"]["mgmt-ipv4"] == ip(next(s for s in plan.servers if s.name == "gpu001").mgmt_ip)
    endpoints = [e for link in doc["topology"]["links"] for e in link["endpoints"]]
    assert len(endpoints) == len(set(endpoints))
    assert all(not e.startswith("sto-") or re.match(r"^[^:]+:eth\d+$", e) for e in endpoints if "leaf" in e)


def test_drawings_keep_plan_order_one_colour_per_rail_and_count_what_they_leave_out():
    plan = plan_of(INVENTORY / "examples" / "superpod-4su.yml")
    dot = drawing.plane_dot(plan, plan.planes["compute"])
    leaf_row = next(line for line in dot.splitlines() if "rank=same" in line and "leaf1" in line)
    leaves = re.findall(r'"(cmp-su\d+-leaf\d+)"', leaf_row)
    assert leaves == [f"cmp-su{u}-leaf{r}" for u in (1, 2) for r in range(1, 9)]  # units 1-2, rails in order
    colours = {
        re.search(r'color="([^"]+)"', line)[1] for line in dot.splitlines() if '-leaf1"' in line and " [label" in line
    }
    assert len(colours) == 1  # rail 1 has one colour across units
    rails = {re.search(r'"cmp-su1-leaf(\d)" \[label=.*color="([^"]+)"', line).groups() for line in dot.splitlines()
             if re.search(r'"cmp-su1-leaf\d" \[label', line)}  # fmt: skip
    assert len({c for _, c in rails}) == 8  # eight rails, eight colours
    assert "spine to leaf: 2 x 400G per line" in dot and "8x400G" not in dot  # the bundle said once
    assert '"units 3-4"' in dot and "16 leaves, 64 servers" in dot
    big = plan_of(INVENTORY / "examples" / "rail-28k.yml")
    text = drawing.plane_dot(big, big.planes["compute"])
    assert "spine group 1" in text and "spine group 2" in text and drawing.drawn_nodes(text) < 80


def _x_positions(dot_text: str) -> dict[str, float]:
    """Where Graphviz itself put each node (`dot -Tplain`): the layout, not our DOT, is what a reader sees."""
    plain = subprocess.run(["dot", "-Tplain"], input=dot_text, capture_output=True, text=True, check=True).stdout
    found = re.findall(r'^node ("(?:[^"\\]|\\.)*"|\S+) (\S+) ', plain, re.M)
    return {name.strip('"'): float(x) for name, x in found}


@pytest.mark.parametrize("path", sized(ALL_INTENTS), ids=ids(ALL_INTENTS))
def test_graphviz_lays_every_tier_out_in_plan_order(path):
    if not shutil.which("dot"):
        if os.environ.get("CI"):
            pytest.fail("CI installs graphviz; `dot` should be on PATH")
        pytest.skip("graphviz is not installed")
    plan = plan_of(path)
    for name, plane in plan.planes.items():
        text = drawing.plane_dot(plan, plane)
        x = _x_positions(text)
        for row in re.findall(r"\{ rank=same; (.*) \}", text):
            names = re.findall(r'"((?:[^"\\]|\\.)*)"', row)
            assert len(names) >= 1
            swapped = [(a, b) for a, b in itertools.pairwise(names) if x[a] >= x[b]]
            assert not swapped, f"{path.name} {name}: drawn out of order: {swapped}"


def test_drawing_directory_with_svg(tmp_path):
    out = tmp_path / "drawing"
    done = run_in_process("gpufabric", "export", "drawing", "-o", str(out), cwd=INVENTORY.parent)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.glob("*.dot")) == ["business.dot", "compute.dot", "oob.dot", "storage.dot"]
    compute = (out / "compute.dot").read_text()
    assert '"cmp-spine1" -- "cmp-su1-leaf1"' in compute and '"servers unit 1"' in compute
    if shutil.which("dot"):
        assert (out / "compute.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    elif os.environ.get("CI"):
        pytest.fail("CI installs graphviz; `dot` should be on PATH")


# Each export kind's determinism: the plan's stays in the fast tier, the others run in the full suite.
@pytest.mark.parametrize("kind", [k if k == "plan" else pytest.param(k, marks=pytest.mark.slow) for k in EXPORTERS])
def test_exports_are_byte_identical_across_runs(tmp_path, kind):
    outs = []
    # multi-vendor's RoCE plane bonds its hosts: no rail a pod could take (k8s-network refuses it).
    # The 32k example's storage clients: Lustre (lnet.conf, the MGS NIDs); the smaller examples' are NFS.
    intent = INVENTORY / {
        "k8s-network": "fabric.yml",
        "ib-topology": "examples/superpod-ib.yml",
        "storage": "examples/three-tier-32k.yml",
    }.get(kind, "examples/multi-vendor.yml")
    for seed in ("1", "2"):
        done = run(
            "gpufabric",
            "export",
            kind,
            str(intent),
            check=True,
            text=False,
            PYTHONHASHSEED=seed,
        )
        outs.append(done.stdout)
    assert outs[0] == outs[1] and outs[0]


def test_plan_json_keys_scripts_rely_on():
    done = run_in_process("gpufabric", "plan", str(INVENTORY / "examples" / "superpod-4su.yml"), "--json", check=True)
    doc = json.loads(done.stdout)
    assert doc["planes"]["compute"]["switches"] == {"leaf": 32, "spine": 16}
    assert doc["planes"]["compute"]["oversubscription"]["leaf"]["planned"] == 1.0
    assert set(doc["totals"]) >= {"switches", "transceivers", "cables"}
    assert doc["totals"]["switches"] == sum(p["switch_total"] for p in doc["planes"].values())


def test_structured_export_writes_one_file_per_switch_and_no_secret(tmp_path):
    from conftest import SNMP_CANARY, SWITCH_PASSWORD_CANARY

    out = tmp_path / "structured"
    done = run_in_process(
        "gpufabric", "export", "structured", str(INVENTORY / "examples" / "multi-vendor.yml"), "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    plan = plan_of(INVENTORY / "examples" / "multi-vendor.yml")
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{d.name}.json" for d in plan.devices())
    leaf = json.loads((out / "sto-leaf1a.json").read_text())
    assert leaf["device"]["platform"] == "eos" and leaf["release"] == "4.33"
    assert leaf["mlag"]["peer"] == "sto-leaf1b"
    assert leaf["management"]["users"] == [{"name": "admin", "password": "env:GPUFABRIC_SWITCH_PASSWORD"}]
    everything = "".join(p.read_text() for p in out.iterdir()) + done.stdout + done.stderr
    assert SWITCH_PASSWORD_CANARY not in everything and SNMP_CANARY not in everything
    assert "$6$" not in everything and "$5$" not in everything  # not even a hash


def test_export_writes_atomically(tmp_path):
    target = tmp_path / "out" / "cabling.csv"
    done = run_in_process("gpufabric", "export", "cabling", "-o", str(target), cwd=INVENTORY.parent)
    assert done.returncode == 0
    assert target.read_text().startswith("cable_id,plane,kind,a_device,a_port,b_device,b_port,speed,medium,length_m\n")
    assert [p.name for p in target.parent.iterdir()] == ["cabling.csv"]  # no temporary file left behind
