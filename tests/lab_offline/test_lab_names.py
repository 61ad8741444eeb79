"""Named labs, offline: every name a lab gives a machine-wide thing carries the lab's name or tag, fits the
kernel's limits, and no two labs' names meet (no root needed: the names and the registry are pure data)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import ALL_INTENTS, LARGE_DESIGNS, run

from gpufabric.errors import GpufabricError
from gpufabric.fleet.lab import registry
from gpufabric.fleet.lab.names import DEFAULT_LAB, IFNAMSIZ, MAX_NETNS, LabNameError, LabNames
from gpufabric.fleet.lab.state import LabState
from gpufabric.fleet.lab.topology import BRIDGE, LabTopology, topology
from gpufabric.intent import load_intent
from gpufabric.lab.hosts.from_plan import lab_specs

LABS = (DEFAULT_LAB, "blue", "green-2")


def _runnable() -> list[Path]:
    """The shipped intents the lab brings up (no LACP hosts, no carried planes, an OOB plane), large ones left out."""
    found = []
    for path in ALL_INTENTS:
        if path.stem in LARGE_DESIGNS:
            continue
        try:
            topology(load_intent(str(path)))
        except GpufabricError:
            continue
        found.append(path)
    return found


RUNNABLE = _runnable()


def _things(topo: LabTopology) -> dict[str, set[str]]:
    """Every machine-wide name the lab of `topo` would make: namespaces (= FRR pathspaces and folder names),
    root-namespace links, host namespaces and their bridge ports."""
    mtu = {(s.node, s.port): s.mtu for s in topo.stubs if s.server}
    prefixlen = int(str(topo.gateway).split("/")[1])
    hosts = lab_specs(topo.plan, mtu, prefixlen, prefix=topo.names.host_prefix, netns=topo.ns)
    return {
        "netns": {n.netns for n in topo.nodes} | {h.netns for h in hosts},
        "root_links": {topo.bridge} | {m.root_end for m in topo.mgmt} | {h.root_port for h in hosts},
    }


def test_the_lab_runs_at_least_the_default_fabric_and_another_example():
    assert {p.stem for p in RUNNABLE} >= {"fabric", "sonic", "lab-infiniband"}


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
@pytest.mark.parametrize("lab", LABS)
def test_every_name_carries_the_lab_and_fits(path, lab):
    topo = topology(load_intent(str(path)), lab)
    names = LabNames(lab)
    things = _things(topo)
    assert all(len(link) <= IFNAMSIZ for link in things["root_links"]), sorted(things["root_links"])
    assert all(len(s.far_end) <= IFNAMSIZ for s in topo.stubs)
    assert all(len(ns) <= MAX_NETNS for ns in things["netns"])
    switch_ns = {n.netns for n in topo.nodes}
    if lab == DEFAULT_LAB:  # today's names, unchanged: what the docs and every lab test use
        assert switch_ns == {n.name for n in topo.nodes}
        assert topo.bridge == BRIDGE == "gf-oob" and all(m.root_end.startswith("gfm") for m in topo.mgmt)
    else:
        assert all(names.switch_of(n.netns) == n.name and n.netns == f"{lab}_{n.name}" for n in topo.nodes)
        assert topo.bridge == f"gfo-{names.tag}"
        assert all(m.root_end.startswith(f"g{names.tag}") for m in topo.mgmt)
        hosts = things["netns"] - switch_ns
        assert all(h.startswith(f"h{names.tag}-") for h in hosts)
    # Each switch's namespace, and each root link, is one switch's or host's: none shared inside a lab.
    assert len(switch_ns) == len(topo.nodes) and len({m.root_end for m in topo.mgmt}) == len(topo.mgmt)


def test_two_labs_names_never_meet():
    """Every pair of labs of different names, over every pair of runnable intents (the same intent too)."""
    built = {(lab, p): _things(topology(load_intent(str(p)), lab)) for lab in LABS for p in RUNNABLE}
    pairs = 0
    for (lab_a, path_a), (lab_b, path_b) in itertools.combinations(built, 2):
        if lab_a == lab_b:
            continue
        a, b = built[(lab_a, path_a)], built[(lab_b, path_b)]
        for kind in ("netns", "root_links"):
            assert a[kind].isdisjoint(b[kind]), (lab_a, path_a.stem, lab_b, path_b.stem, kind, a[kind] & b[kind])
        pairs += 1
    assert pairs >= 3 * len(RUNNABLE) ** 2


@pytest.mark.parametrize("bad", ["", "Blue", "a_b", "1lab", "x" * 17, "a/b", "a b", "lab;rm"])
def test_a_lab_name_outside_the_pattern_is_refused(bad):
    with pytest.raises(LabNameError, match="lower-case letters, digits and '-'"):
        LabNames(bad)


def test_a_namespace_past_frrs_limit_is_refused_naming_the_switch():
    long_switch = "s" + "x" * 60
    with pytest.raises(LabNameError, match=f"switch {long_switch}'s namespace .* longer than 64"):
        LabNames("longlabname").netns(long_switch)
    assert LabNames().netns(long_switch) == long_switch


def test_switch_of_reads_back_only_the_labs_own_namespaces():
    blue = LabNames("blue")
    assert blue.switch_of("blue_cmp-spine1") == "cmp-spine1"
    assert blue.switch_of("green_cmp-spine1") is None and blue.switch_of("cmp-spine1") is None
    assert LabNames().switch_of("cmp-spine1") == "cmp-spine1" and LabNames().switch_of("blue_cmp-spine1") is None


# The registry: checked before anything is made.


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _up(tmp_path: Path, name: str, fabric: str, oob: str, reg: Path) -> registry.LabRecord:
    """A lab `name` as `lab up` records it: its state in a folder of its own, claimed in the registry."""
    folder = tmp_path / name
    folder.mkdir()
    LabState(fabric, name=name).save(folder)
    entry = registry.LabRecord(name, str(folder), fabric, oob, ["10.0.0.0/24"])
    registry.claim(entry, reg)
    return entry


def test_an_overlapping_oob_subnet_is_refused_naming_the_other_lab(tmp_path):
    reg = tmp_path / "registry"
    _up(tmp_path, "blue", "gpu-a", "172.20.0.0/24", reg)
    other = registry.LabRecord("green", str(tmp_path / "green"), "gpu-b", "172.20.0.128/25")
    with pytest.raises(registry.LabClashError, match=r"lab blue \(fabric gpu-a\) is up with OOB subnet 172.20.0.0/24"):
        registry.claim(other, reg)
    assert registry.find("green", reg) is None  # nothing recorded for the refused lab
    apart = registry.LabRecord("green", str(tmp_path / "green"), "gpu-b", "172.21.0.0/24")
    registry.claim(apart, reg)
    LabState("gpu-b", name="green").save(_folder(tmp_path / "green"))  # then `lab up` makes it
    assert [e.name for e in registry.labs(reg)] == ["blue", "green"]
    assert registry.held_elsewhere("green", reg) == {"10.0.0.0/24"}


def test_the_same_name_in_another_folder_is_refused_and_a_stale_record_is_not(tmp_path):
    reg = tmp_path / "registry"
    blue = _up(tmp_path, "blue", "gpu-a", "172.20.0.0/24", reg)
    again = registry.LabRecord("blue", str(tmp_path / "elsewhere"), "gpu-a", "172.30.0.0/24")
    with pytest.raises(registry.LabClashError, match="a lab named blue is up with its state in"):
        registry.claim(again, reg)
    registry.claim(blue, reg)  # the same lab brought up again: idempotent
    LabState.path(Path(blue.state_dir)).unlink()  # its state gone (a reboot, a folder removed): stale
    assert registry.labs(reg) == [] and registry.find("blue", reg) is None
    registry.claim(again, reg)
    LabState("gpu-a", name="blue").save(_folder(tmp_path / "elsewhere"))
    assert registry.find("blue", reg).state_dir == again.state_dir


def test_forget_removes_only_the_record_of_that_folder(tmp_path):
    reg = tmp_path / "registry"
    blue = _up(tmp_path, "blue", "gpu-a", "172.20.0.0/24", reg)
    registry.forget("blue", tmp_path / "not-blue", reg)
    assert registry.find("blue", reg) is not None
    registry.forget("blue", Path(blue.state_dir), reg)
    assert registry.find("blue", reg) is None and not reg.exists()


def test_resolve_finds_a_named_labs_folder(tmp_path):
    reg = tmp_path / "registry"
    blue = _up(tmp_path, "blue", "gpu-a", "172.20.0.0/24", reg)
    assert registry.resolve("blue", None, reg) == ("blue", Path(blue.state_dir))
    assert registry.resolve(None, Path(blue.state_dir), reg) == ("blue", Path(blue.state_dir))
    assert registry.resolve("red", None, reg) == ("red", Path("/var/lib/gpufabric/labs/red"))
    assert registry.resolve(None, None, reg) == (DEFAULT_LAB, Path("/var/lib/gpufabric/lab"))


def test_a_planted_registry_record_is_refused_located(tmp_path):
    reg = tmp_path / "registry"
    reg.mkdir()
    (reg / "blue.json").write_text(json.dumps({"name": "blue", "no": "such field"}))
    with pytest.raises(GpufabricError, match=r"blue\.json"):
        registry.find("blue", reg)


# The command line: a bad name is refused before anything is touched.


def test_the_commands_refuse_a_bad_lab_name_with_exit_2():
    for args in (
        ("lab", "up", "--name", "Bad_Name"),
        ("lab", "status", "--name", "a_b"),
        ("lab", "down", "--name", ""),
    ):
        done = run("gpufabric", *args)
        assert done.returncode == 2 and "lower-case letters" in done.stderr, (args, done.stderr)
    push = run("nornir", "push", "--lab-name", "no_such", "--dry-run")
    assert push.returncode == 2 and "lower-case letters" in push.stderr, push.stderr


def test_push_to_a_named_lab_that_is_not_up_is_refused_naming_its_folder():
    done = run("nornir", "validate", "--lab-name", "nosuchlab", "--plane", "compute")
    assert done.returncode == 2, done.stderr
    assert "no lab of fabric" in done.stderr and "/var/lib/gpufabric/labs/nosuchlab" in done.stderr


def test_lab_ztp_looks_for_a_named_lab_s_switch_by_its_namespace(monkeypatch, tmp_path, capsys):
    """`lab ztp --name blue` reads blue's state: a state holding the default lab's namespace of the switch is not
    blue's (exit 2, naming blue's namespace); holding blue's, the run goes on (to the check after it, here)."""
    from gpufabric.cli import lab_ztp_cmd, main
    from gpufabric.fleet.lab.state import LabState
    from gpufabric.lab import ztp

    monkeypatch.setattr(lab_ztp_cmd, "require_root", lambda _why: None)
    monkeypatch.setattr(ztp, "missing_packages", list)
    argv = ["lab", "ztp", "--name", "blue", "--device", "cmp-spine1", "--from", str(tmp_path), "--state-dir"]
    for held, words in (("cmp-spine1", "no namespace blue_cmp-spine1"), ("blue_cmp-spine1", "its sshd")):
        state = tmp_path / held
        LabState(name="blue", fabric="gpufabric-lab", namespaces=[held]).save(state)
        with pytest.raises(SystemExit) as done:
            main([*argv, str(state)])
        said = capsys.readouterr().err
        assert done.value.code == 2 and words in said, said


def test_lab_up_beside_a_lab_holding_its_oob_subnet_exits_2_naming_it_and_makes_nothing(monkeypatch, tmp_path, capsys):
    """`lab up` in this process, its registry a folder of the test's: the refusal comes before any namespace,
    link or process would be made (the wiring is replaced by a step that fails the test if reached)."""
    from gpufabric.cli import lab_cmd, main
    from gpufabric.lab import control, wiring

    reg = tmp_path / "registry"
    monkeypatch.setattr(registry, "REGISTRY_DIR", reg)
    _up(tmp_path, "blue", "gpu-a", "172.20.0.0/24", reg)  # the default fabric's OOB subnet
    monkeypatch.setattr(lab_cmd, "require_root", lambda _why: None)
    monkeypatch.setattr(control, "missing_packages", list)
    monkeypatch.setattr(wiring, "up", lambda *_a, **_k: pytest.fail("the wiring ran"))
    state = tmp_path / "green-state"
    with pytest.raises(SystemExit) as done:
        main(["lab", "up", "--no-hosts", "--name", "green", "--state-dir", str(state)])
    said = capsys.readouterr().err
    assert done.value.code == 2, said
    assert "lab blue (fabric gpu-a) is up with OOB subnet 172.20.0.0/24" in said and "lab down --name blue" in said
    assert registry.find("green", reg, alive_only=False) is None and not state.exists()


def test_every_command_the_wiring_runs_names_only_the_labs_own_namespaces_and_links(monkeypatch, tmp_path):
    """The wiring of a named lab with iproute2 recorded instead of run: each namespace a command enters or puts
    a link in is the lab's own (NAME_<switch>), and each link it makes in the root namespace carries its tag."""
    from gpufabric.lab import netlink, wiring

    topo = topology(load_intent(str(Path(ALL_INTENTS[0]))), "blue")
    names = LabNames("blue")
    commands: list[tuple[str | None, str]] = []

    def run(*args: str, check: bool = True):
        commands.append((None, " ".join(args)))
        return type("Done", (), {"stdout": "", "returncode": 0})()

    monkeypatch.setattr(netlink, "run", run)
    monkeypatch.setattr(netlink, "batch", lambda cmds, netns=None: commands.extend((netns, c) for c in cmds))
    monkeypatch.setattr(netlink, "links", lambda netns=None: set())
    monkeypatch.setattr(netlink, "namespaces", set)
    state = wiring.up(topo, tmp_path)
    assert state.name == "blue" and set(state.namespaces) == {f"blue_{n.name}" for n in topo.nodes}
    entered = {ns for ns, _ in commands if ns is not None}
    for _, text in commands:
        words = text.split()
        entered |= {
            words[i + 1] for i, w in enumerate(words[:-1]) if w == "netns" and words[i + 1] not in ("add", "exec")
        }
        entered |= {words[i + 2] for i, w in enumerate(words[:-2]) if w == "netns" and words[i + 1] in ("add", "exec")}
    assert entered and all(names.switch_of(ns) for ns in entered), sorted(
        ns for ns in entered if not names.switch_of(ns)
    )
    # A link added with `netns` right after its name is made in that namespace; any other, in the root one.
    root_made = {
        text.split()[2]
        for ns, text in commands
        if ns is None and text.startswith("link add") and text.split()[3] != "netns"
    }
    assert root_made and all(link == names.bridge or link.startswith(f"g{names.tag}") for link in root_made)
    assert all(f"dev {names.bridge}" in t for _, t in commands if t.startswith("ip address replace"))


def test_a_named_labs_daemons_start_in_its_namespaces_with_the_switchs_own_host_name(monkeypatch, tmp_path):
    """One switch's start with the programs recorded instead of run: FRR's pathspace, the namespace sshd and lldpd
    enter and the switch's folder are the lab's name for it; the host name (UTS) and FRR's hostname its own."""
    from gpufabric.fleet.lab.credentials import LabLogin
    from gpufabric.lab import daemons, frr_node, lldp_node, netlink, sshd_node

    topo = topology(load_intent(str(ALL_INTENTS[0])), "blue")
    node = next(n for n in topo.nodes if n.name == "cmp-spine1")
    calls: dict[str, tuple] = {}
    monkeypatch.setattr(netlink, "run", lambda *args, check=True: calls.setdefault("uts", args))
    monkeypatch.setattr(frr_node, "running", lambda ns: calls.setdefault("probe", (ns,)) and False)
    monkeypatch.setattr(frr_node, "etc_dir", lambda ns: tmp_path / "etc" / ns)
    monkeypatch.setattr(
        frr_node, "write_pathspace", lambda ns, hostname=None: calls.setdefault("pathspace", (ns, hostname))
    )
    monkeypatch.setattr(frr_node, "start", lambda ns, uts: calls.setdefault("frr", (ns, uts)) and {"watchfrr": 1})
    monkeypatch.setattr(sshd_node, "write_config", lambda *args: calls.setdefault("sshd_config", args) and tmp_path)
    monkeypatch.setattr(sshd_node, "start", lambda *args: calls.setdefault("sshd", args) and 2)
    monkeypatch.setattr(lldp_node, "start", lambda *args: calls.setdefault("lldpd", args) and 3)
    (tmp_path / "nodes" / node.netns).mkdir(parents=True)
    started = daemons._start_node(node, tmp_path, LabLogin("admin", "pw", tmp_path / "key"), {})
    assert started.node == "blue_cmp-spine1" and started.pids == {"watchfrr": 1, "sshd": 2, "lldpd": 3}
    assert calls["uts"][-1] == "cmp-spine1"  # `unshare --uts=FILE hostname cmp-spine1`: the switch's own name
    assert calls["pathspace"] == ("blue_cmp-spine1", "cmp-spine1") and calls["frr"][0] == "blue_cmp-spine1"
    assert calls["sshd_config"][0] == "blue_cmp-spine1" and calls["sshd"][0] == "blue_cmp-spine1"
    assert calls["lldpd"][0] == "blue_cmp-spine1" and calls["sshd_config"][1] == tmp_path / "nodes" / "blue_cmp-spine1"
    assert lldp_node.socket_path(calls["sshd_config"][1]).parent.name == "blue_cmp-spine1"  # /run/gpufabric-lab/<ns>


def test_frrs_pathspace_of_a_named_lab_keeps_the_switchs_hostname(monkeypatch, tmp_path):
    from gpufabric.lab import frr_node

    monkeypatch.setattr(frr_node, "FRR_ETC", tmp_path)
    monkeypatch.setattr(frr_node.shutil, "chown", lambda *_a: None)
    folder = frr_node.write_pathspace("blue_cmp-spine1", "cmp-spine1")
    assert folder == tmp_path / "blue_cmp-spine1"
    assert "hostname cmp-spine1\n" in (folder / "frr.conf").read_text()
    assert frr_node.write_pathspace("cmp-spine1").joinpath("frr.conf").read_text().count("hostname cmp-spine1") == 1


def test_a_command_naming_a_lab_and_no_file_takes_the_intent_the_lab_came_up_with(monkeypatch, tmp_path):
    """`lab up FILE` records FILE; push, validate and the rest, given the lab (`--lab-name`, `--state-dir`) and
    no file, read that intent, not ./inventory/fabric.yml (whose fabric the lab does not run). A file removed
    since, or a lab of the fabric shipped with gpufabric, leaves the usual default."""
    from gpufabric.fleet import target
    from gpufabric.lab import netlink, wiring

    example = (Path(ALL_INTENTS[0]).parent / "examples" / "sonic.yml").resolve()
    topo = topology(load_intent(str(example)), "blue")
    monkeypatch.setattr(netlink, "run", lambda *a, **k: type("Done", (), {"stdout": "", "returncode": 0})())
    monkeypatch.setattr(netlink, "batch", lambda cmds, netns=None: None)
    monkeypatch.setattr(netlink, "links", lambda netns=None: set())
    monkeypatch.setattr(netlink, "namespaces", set)
    state = wiring.up(topo, tmp_path)
    assert state.intent == str(example) and LabState.load(tmp_path).intent == str(example)
    assert target.lab_intent(tmp_path) == str(example)
    copy = tmp_path / "copy.yml"
    copy.write_text(example.read_text())
    recorded = LabState.load(tmp_path)
    recorded.intent = str(copy)
    recorded.save(tmp_path)
    assert target.lab_intent(tmp_path) == str(copy)
    copy.unlink()
    assert target.lab_intent(tmp_path) is None  # gone: the command's own default, named in its error if missing
    assert target.lab_intent(tmp_path / "no-lab") is None
