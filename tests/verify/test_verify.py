"""`nornir verify`: every example's rendered configs pass, and each planted fault is found, named
by device, check, line and the expected versus found value."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES as EXAMPLE_PATHS
from conftest import INVENTORY, ROOT, default_doc, example_plan, plan_doc, run, run_in_process, set_path
from render_helpers import render_into

from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.verify.runner import verify

EXAMPLES = ["fabric.yml", *(f"examples/{p.name}" for p in EXAMPLE_PATHS)]  # conftest.HUGE_DESIGNS aside


def _nxos_roce_doc() -> dict:
    """The default fabric with NX-OS compute switches: the only way the examples' RoCE QoS meets NX-OS."""
    doc = default_doc()
    for role in ("leaf", "spine"):
        doc = set_path(doc, ("planes", "compute", "switches", role, "platform"), "nxos")
    doc = set_path(doc, ("planes", "compute", "routing", "addressing"), "p2p31")
    return set_path(doc, ("planes", "compute", "addressing", "p2p"), "10.20.0.0/24")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Rendered folders, by name: the default fabric, multi-vendor, and NX-OS compute."""
    out = {}
    for name, plan in (
        ("default", build_plan(load_intent(str(INVENTORY / "fabric.yml")))),
        ("multi-vendor", build_plan(load_intent(str(INVENTORY / "examples" / "multi-vendor.yml")))),
        ("nxos-roce", plan_doc(_nxos_roce_doc())),
    ):
        folder = tmp_path_factory.mktemp(name)
        render_into(plan, folder)
        out[name] = (plan, folder)
    return out


# Seconds per example (a CLI rendering, then verify): the fast tier keeps the default fabric's case.
@pytest.mark.parametrize("example", [EXAMPLES[0], *(pytest.param(e, marks=pytest.mark.slow) for e in EXAMPLES[1:])])
def test_every_example_renders_and_verifies_clean(example, cli_rendering):
    path = str(INVENTORY / example)
    done = cli_rendering(INVENTORY / example)  # `nornir render`, once per run per example (conftest)
    assert done.returncode == 0, done.stderr
    # The 32k fabric's 1,280 documents are judged by NVIDIA's model in test_oracle_nvue.py, in memory.
    judges = ["--no-vendor"] if "32k" in example else []
    checked = run_in_process("nornir", "verify", path, "--configs", str(done.folder), "--json", *judges)
    report = json.loads(checked.stdout)
    assert report["findings"] == [] and checked.returncode == 0
    assert report["switches"] == len(example_plan(path).devices())


def test_nxos_roce_verifies_clean(rendered):
    plan, folder = rendered["nxos-roce"]
    assert verify(plan, folder).findings == []


def _corrupt(rendered, which, file, old, new, tmp_path, count=1):
    plan, folder = rendered[which]
    copy = tmp_path / which
    shutil.copytree(folder, copy)
    target = copy / file
    text = target.read_text()
    assert text.count(old) >= count, f"{old!r} is not in {file}"
    target.write_text(text.replace(old, new, count))
    return verify(plan, copy).findings


FAULTS = [
    # (id, fabric, file, old text, new text, check, device, found words)
    (
        "cumulus DSCP",
        "multi-vendor",
        "cmp-su1-leaf1.yaml",
        "            '26':",
        "            '24':",
        "qos-dscp-map",
        "cmp-su1-leaf1",
        "DSCP 26 unmapped",
    ),
    (
        "eos DSCP",
        "multi-vendor",
        "sto-spine1.cfg",
        "qos map dscp 26 to traffic-class 3",
        "qos map dscp 26 to traffic-class 1",
        "qos-dscp-map",
        "sto-spine1",
        "-> 1",
    ),
    (
        "nxos DSCP",
        "nxos-roce",
        "cmp-su1-leaf1.cfg",
        "  match dscp 26",
        "  match dscp 25",
        "qos-dscp-map",
        "cmp-su1-leaf1",
        "DSCP 26 unmapped",
    ),
    (
        "frr DSCP",
        "default",
        "cmp-spine1.nft",
        "ip dscp 26 meta",
        "ip dscp 34 meta",
        "qos-dscp-map",
        "cmp-spine1",
        "DSCP 26 unmapped",
    ),
    (
        "cumulus PFC",
        "multi-vendor",
        "cmp-spine2.yaml",
        "          switch-priority:\n            '3': {}",
        "          switch-priority:\n            '4': {}",
        "qos-pfc",
        "cmp-spine2",
        "[4]",
    ),
    (
        "eos PFC",
        "multi-vendor",
        "sto-leaf2b.cfg",
        "priority 3 no-drop",
        "priority 2 no-drop",
        "qos-pfc",
        "sto-leaf2b",
        "[2]",
    ),
    ("nxos PFC", "nxos-roce", "cmp-spine1.cfg", "pause pfc-cos 3", "pause pfc-cos 5", "qos-pfc", "cmp-spine1", "[5]"),
    (
        "nxos watchdog",
        "nxos-roce",
        "cmp-spine1.cfg",
        "priority-flow-control watch-dog-interval on\n",
        "",
        "qos-pfc-watchdog",
        "cmp-spine1",
        "missing",
    ),
    (
        "eos ECN",
        "multi-vendor",
        "sto-leaf1a.cfg",
        "minimum-threshold 150 kbytes",
        "minimum-threshold 15 kbytes",
        "qos-ecn",
        "sto-leaf1a",
        "(15000, 1500000)",
    ),
    (
        "eos ASN",
        "multi-vendor",
        "sto-spine1.cfg",
        "router bgp 4200001000",
        "router bgp 4200001007",
        "bgp-asn",
        "sto-spine1",
        "4200001007",
    ),
    (
        "nxos remote ASN",
        "multi-vendor",
        "biz-leaf1.cfg",
        "remote-as 4200002000",
        "remote-as 4200002001",
        "bgp-remote-as",
        "biz-leaf1",
        "4200002001",
    ),
    (
        "frr remote ASN",
        "default",
        "cmp-su1-leaf1.frr.conf",
        "interface remote-as 4200000000",
        "interface remote-as 4200000009",
        "bgp-remote-as",
        "cmp-su1-leaf1",
        "4200000009",
    ),
    ("cumulus MTU", "multi-vendor", "cmp-su2-leaf3.yaml", "mtu: 9216", "mtu: 9000", "mtu", "cmp-su2-leaf3", "9000"),
    ("eos MTU", "multi-vendor", "sto-spine2.cfg", "   mtu 9214", "   mtu 1500", "mtu", "sto-spine2", "1500"),
    ("frr MTU", "default", "sto-spine1.interfaces", "mtu 9216", "mtu 9100", "link-mtu", "sto-leaf1", "9100"),
    (
        "nxos /31",
        "multi-vendor",
        "biz-spine1.cfg",
        "ip address 10.22.0.0/31",
        "ip address 10.22.0.4/31",
        "link-subnet",
        "biz-leaf1",
        "10.22.0.1/31",
    ),
    (
        "oob route",
        "default",
        "oob-mgmt1.frr.conf",
        "log syslog informational",
        "log syslog informational\nip route 10.0.0.0/8 172.20.0.1",
        "oob-isolation",
        "oob-mgmt1",
        "route 10.0.0.0/8",
    ),
    (
        "oob bgp",
        "default",
        "oob-mgmt1.frr.conf",
        "log syslog informational",
        "log syslog informational\nrouter bgp 65000\n neighbor swp1 interface remote-as 65001\nexit",
        "bgp-asn",
        "oob-mgmt1",
        "router bgp 65000",
    ),
    (
        "eos plaintext password",
        "multi-vendor",
        "sto-spine1.cfg",
        "secret sha512 $6$",
        "secret 0 plain",
        "secret",
        "sto-spine1",
        "not hashed",
    ),
    (
        "nxos literal community",
        "multi-vendor",
        "biz-spine2.cfg",
        "@secret:env:GPUFABRIC_SNMP_COMMUNITY@",
        "public",
        "secret",
        "biz-spine2",
        "literal",
    ),
    (
        "nvue unknown key",
        "multi-vendor",
        "cmp-spine1.yaml",
        "    service:\n",
        "    servics:\n",
        "nvue-keys",
        "cmp-spine1",
        "servics",
    ),
]


@pytest.mark.parametrize(
    ("which", "file", "old", "new", "check", "device", "words"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS]
)
def test_a_planted_fault_is_found(rendered, tmp_path, which, file, old, new, check, device, words):
    findings = _corrupt(rendered, which, file, old, new, tmp_path)
    hits = [f for f in findings if f.check == check and f.device == device]
    assert hits, f"no {check} finding on {device}; got {[f.as_dict() for f in findings]}"
    assert any(words in f.found or words in f.expected for f in hits), [f.as_dict() for f in hits]
    assert all(f.line >= 1 and f.file for f in findings)


def test_a_finding_points_at_the_corrupted_line(rendered, tmp_path):
    findings = _corrupt(
        rendered,
        "multi-vendor",
        "sto-spine1.cfg",
        "qos map dscp 48 to traffic-class 6",
        "qos map dscp 48 to traffic-class 2",
        tmp_path,
    )
    lines = (tmp_path / "multi-vendor" / "sto-spine1.cfg").read_text().splitlines()
    (hit,) = [f for f in findings if f.check == "qos-dscp-map"]
    assert lines[hit.line - 1] == "qos map dscp 48 to traffic-class 2"
    assert (hit.expected, hit.found) == ("CNP DSCP 48 -> priority 6", "-> 2")


@pytest.mark.parametrize(
    ("old", "new", "expected", "found", "at"),
    [
        ("mtu: 9216", "mtu: abc", "interface/swp1s0/link/mtu: a whole number", "'abc'", "mtu: abc"),
        ("autonomous-system: ", "autonomous-system: x", "router/bgp/autonomous-system: a whole number", "'x", ": x"),
        (
            "    interface:\n",
            "    interface: 5\n    unused:\n",
            "interface: a mapping of interfaces",
            "5",
            "interface: 5",
        ),
        # No value to point at: the finding points at the section that holds the wrong shape.
        (
            "      user:\n",
            "      user: 5\n      unused:\n",
            "`system` shaped as NVUE's object model has it",
            "items",
            "system:",
        ),
    ],
)
def test_an_nvue_value_of_the_wrong_type_is_a_finding_at_its_line(rendered, tmp_path, old, new, expected, found, at):
    """A hand-edited startup file NVUE would refuse is a finding with its line, not a crash of verify."""
    findings = _corrupt(rendered, "multi-vendor", "cmp-su2-leaf3.yaml", old, new, tmp_path)
    (hit,) = [f for f in findings if f.check == "parse"]
    assert (hit.device, hit.expected) == ("cmp-su2-leaf3", expected)
    assert found in hit.found
    line = (tmp_path / "multi-vendor" / "cmp-su2-leaf3.yaml").read_text().splitlines()[hit.line - 1]
    assert at in line


def test_a_missing_file_is_a_finding(rendered, tmp_path):
    plan, folder = rendered["default"]
    copy = tmp_path / "c"
    shutil.copytree(folder, copy)
    (copy / "biz-leaf1.nft").unlink()
    findings = verify(plan, copy).findings
    assert [(f.check, f.device, f.file) for f in findings] == [("files", "biz-leaf1", "biz-leaf1.nft")]


def test_verify_command_exit_codes_and_table(rendered, tmp_path):
    _, folder = rendered["default"]
    ok = run_in_process("nornir", "verify", "--configs", str(folder))
    assert ok.returncode == 0 and "16 switches (64 files)" in ok.stderr and "0 findings" in ok.stderr
    bad = tmp_path / "bad"
    shutil.copytree(folder, bad)
    conf = bad / "cmp-spine1.frr.conf"
    conf.write_text(conf.read_text().replace("router bgp 4200000000", "router bgp 4200000005"))
    found = run_in_process("nornir", "verify", "--configs", str(bad))
    assert found.returncode == 4
    assert "cmp-spine1" in found.stdout and "4200000005" in found.stdout and "bgp-asn" in found.stdout
    missing = run_in_process("nornir", "verify", "--configs", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "nornir render" in missing.stderr and "Traceback" not in missing.stderr


def test_every_frr_nftables_file_passes_nft_check(rendered, tmp_path):
    if shutil.which("nft") is None:
        pytest.skip("nft (nftables) is not installed")
    probe = run("nft", "-c", "-f", "/dev/null")
    if probe.returncode != 0:
        pytest.skip(f"nft -c cannot run here: {probe.stderr.strip()}")
    files = [p for name in ("default", "multi-vendor") for p in Path(rendered[name][1]).glob("*.nft")]
    assert len(files) == 17
    for f in files:
        done = run("nft", "-c", "-f", str(f))
        assert done.returncode == 0, f"{f.name}: {done.stderr}"
    broken = tmp_path / "broken.nft"
    broken.write_text("table inet x {\n chain c { ip dscp 26 meta priorty set 0:3 }\n}\n")
    assert run("nft", "-c", "-f", str(broken)).returncode != 0


def _plant(folder: Path, file: str, old: str, new: str) -> int:
    """Replace the first `old` in `file`; the line the change starts on."""
    target = folder / file
    text = target.read_text()
    at = text.index(old)
    target.write_text(text.replace(old, new, 1))
    return text[:at].count("\n") + 1 + old[: len(old) - len(old.lstrip("\n"))].count("\n")


@pytest.mark.slow
def test_the_vendors_models_judge_what_verify_does_not_read(rendered, tmp_path):
    """An NVUE enum typo and an EOS `speed 100g-3` pass verify's own readers; NVIDIA's NVUE model and
    Arista's AVD refuse them, and `verify` exits 4 naming file, line and the vendor's complaint."""
    plan, folder = rendered["multi-vendor"]
    copy = tmp_path / "mv"
    shutil.copytree(folder, copy)
    nvue_line = (
        _plant(
            copy,
            "cmp-su1-leaf1.yaml",
            "      snmp-server:\n        state: enabled\n",
            "      snmp-server:\n        state: enabeld\n",
        )
        + 1
    )
    eos_line = _plant(copy, "sto-leaf1a.cfg", "   speed 100g-2\n", "   speed 100g-3\n")
    assert verify(plan, copy, vendor_judges=False).findings == []  # the readers alone pass both
    done = run_in_process(
        "nornir", "verify", str(INVENTORY / "examples" / "multi-vendor.yml"), "--configs", str(copy), "--json"
    )
    assert done.returncode == 4, done.stderr
    findings = json.loads(done.stdout)["findings"]
    nvue = [f for f in findings if f["check"] == "vendor-nvue"]
    assert [(f["file"], f["line"]) for f in nvue] == [("cmp-su1-leaf1.yaml", nvue_line)]
    assert "enabled" in nvue[0]["found"] and "/system/snmp-server/state" in nvue[0]["expected"]
    eos = [f for f in findings if f["check"] == "vendor-avd"]
    assert [(f["file"], f["line"]) for f in eos] == [("sto-leaf1a.cfg", eos_line)]
    assert eos[0]["found"].startswith("speed 100g-3 (ethernet_interfaces.0.speed: The value")
    assert "not among AVD's valid values; for 100g: 100g, 100g-1, 100g-2, 100g-4" in eos[0]["found"]
    assert "speed 100g-2" in eos[0]["expected"]
    assert {f["check"] for f in findings} == {"vendor-nvue", "vendor-avd"}
    assert "vendor judge for cumulus: NVIDIA's NVUE object model judged 10 files" in done.stderr


@pytest.mark.slow
def test_a_vendor_model_that_is_not_installed_is_named_with_how_to_install_it(rendered, tmp_path):
    """With pyavd unimportable (a stand-in package that raises ImportError, first on the path) verify
    still runs, says the EOS judge was skipped and how to install it."""
    _, folder = rendered["multi-vendor"]
    hide = tmp_path / "hide" / "pyavd"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    path = f"{hide.parent}:{ROOT}"
    done = run(
        "nornir", "verify", str(INVENTORY / "examples" / "multi-vendor.yml"), "--configs", str(folder), PYTHONPATH=path
    )
    assert done.returncode == 0, done.stderr
    assert (
        "vendor judge for eos skipped: Arista's AVD eos_cli_config_gen not installed: pip install 'pyavd>=5,<7'"
        in done.stderr
    )
    assert "vendor judge for cumulus: NVIDIA's NVUE object model judged 10 files" in done.stderr


def test_a_vendor_model_that_fails_on_a_file_is_a_finding_not_a_crash(rendered, tmp_path, monkeypatch):
    """A release the installed nvueschema lacks (a test double for its model lookup) is reported on
    the file, and verify carries on."""
    from gpufabric.nos.cumulus import judge as nvue

    plan, folder = rendered["multi-vendor"]

    def missing(release: str):
        raise ModuleNotFoundError(f"No module named 'nvueschema.models.v{release.replace('.', '_')}'")

    monkeypatch.setattr(nvue, "model", missing)
    findings = verify(plan, folder).findings
    errors = [f for f in findings if f.check == "vendor-error"]
    assert {f.file for f in errors} == {f"{d.name}.yaml" for d in plan.devices() if d.platform == "cumulus"}
    assert all("nvueschema.models" in f.found for f in errors)
    assert {f.check for f in findings} == {"vendor-error"}
