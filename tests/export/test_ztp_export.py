"""`gpufabric export ztp`: the DHCP servers' configurations judged by Kea's and dnsmasq's own parsers, every
vendor's provisioning file judged by what exists here (bash -n, Python's compiler and POAP's MD5 rule, the
SONiC ZTP design's keys), and the identities: option 82 circuit-id (and remote-id) from the planned OOB cable,
or a serial the intent records."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import py_compile
import shutil
import stat
import subprocess

import pytest
import yaml
from conftest import INVENTORY, run_in_process

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.config.secrets import PasswordHasher
from gpufabric.export import ztp
from gpufabric.intent import load_intent
from gpufabric.nos.frr import ztp as frr_ztp
from gpufabric.nos.nxos.ztp import MD5_LINE
from gpufabric.plan import build_plan
from gpufabric.platforms import platform
from gpufabric.platforms.spec import NoZtpFormError, Platform
from gpufabric.platforms.ztp_text import heredoc

ENV = {
    "GPUFABRIC_SWITCH_PASSWORD": "ztp-test-password",
    "GPUFABRIC_SALT_KEY": "ztp-test-salt",
    "GPUFABRIC_SNMP_COMMUNITY": "ztp-canary-community",
    "GPUFABRIC_HOST_SSH_KEY": "unused",
}
KEA = shutil.which("kea-dhcp4") or "/usr/sbin/kea-dhcp4"
DNSMASQ = shutil.which("dnsmasq") or "/usr/sbin/dnsmasq"
needs_kea = pytest.mark.skipif(not os.path.exists(KEA), reason="kea-dhcp4 (kea-dhcp4-server) is not installed")
needs_dnsmasq = pytest.mark.skipif(not os.path.exists(DNSMASQ), reason="dnsmasq (dnsmasq-base) is not installed")


def _intent(tmp_path, source: str, **ztp_settings) -> str:
    doc = copy.deepcopy(yaml.safe_load((INVENTORY / source).read_text()))
    if ztp_settings:
        doc["planes"]["oob"]["ztp"] = ztp_settings
    path = tmp_path / f"intent-{len(list(tmp_path.iterdir()))}.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def _export(tmp_path, intent: str, name: str = "out"):
    out = tmp_path / name
    done = run_in_process("gpufabric", "export", "ztp", intent, "-o", str(out), **ENV)
    assert done.returncode == 0, done.stderr
    return out, done


def kea_check(path) -> subprocess.CompletedProcess:
    return subprocess.run([KEA, "-t", str(path)], capture_output=True, text=True, check=False)


def dnsmasq_check(path) -> subprocess.CompletedProcess:
    return subprocess.run([DNSMASQ, "--test", "-C", str(path)], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ztp-multi")
    out, done = _export(tmp, str(INVENTORY / "examples" / "multi-vendor.yml"))
    return out, done, build_plan(load_intent(str(INVENTORY / "examples" / "multi-vendor.yml")))


@pytest.fixture(scope="module")
def sonic(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ztp-sonic")
    out, _ = _export(tmp, str(INVENTORY / "examples" / "sonic.yml"))
    return out, build_plan(load_intent(str(INVENTORY / "examples" / "sonic.yml")))


def _kea(out) -> dict:
    return json.loads((out / ztp.KEA).read_text())["Dhcp4"]


def _classes(out) -> dict[str, dict]:
    return {c["name"].removeprefix(ztp.CLASS_PREFIX): c for c in _kea(out)["client-classes"]}


def _options(cls: dict) -> dict[int, str]:
    return {o["code"]: o["data"] for o in cls["option-data"]}


# -- the DHCP servers ------------------------------------------------------------------------------------


@needs_kea
@needs_dnsmasq
def test_kea_and_dnsmasq_accept_the_exported_configurations_and_refuse_broken_ones(multi, tmp_path):
    out, _, _ = multi
    done = kea_check(out / ztp.KEA)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    done = dnsmasq_check(out / ztp.DNSMASQ)
    assert done.returncode == 0, done.stderr
    # The judges can fail: a class test Kea cannot parse, and a dnsmasq option it does not know.
    config = json.loads((out / ztp.KEA).read_text())
    config["Dhcp4"]["client-classes"][0]["test"] = "relay4[1].hex == "
    broken = tmp_path / "kea.json"
    broken.write_text(json.dumps(config))
    assert kea_check(broken).returncode != 0
    broken = tmp_path / "dnsmasq.conf"
    broken.write_text((out / ztp.DNSMASQ).read_text() + "dhcp-circuit-id=set:x,swp1\n")
    assert dnsmasq_check(broken).returncode != 0


def test_every_cabled_switch_is_known_by_its_planned_oob_port_and_gets_its_planned_address(multi):
    out, done, plan = multi
    cabled = {link.a: link.b_port for link in plan.planes["oob"].links if link.kind == "mgmt"}
    classes = _classes(out)
    switches = [d for d in plan.devices() if d.plane != "oob"]
    assert set(classes) == {d.name for d in switches}
    pools = {p["client-class"]: p["pool"] for p in _kea(out)["subnet4"][0]["pools"]}
    dnsmasq = (out / ztp.DNSMASQ).read_text().splitlines()
    for d in switches:
        address = str(ip_text(d.mgmt_ip))
        assert classes[d.name]["test"] == f"relay4[1].hex == '{cabled[d.name]}'"
        assert pools[f"{ztp.CLASS_PREFIX}{d.name}"] == f"{address} - {address}"
        assert _options(classes[d.name])[12] == d.name
        assert f"dhcp-circuitid=set:{ztp.CLASS_PREFIX}{d.name},{cabled[d.name]}" in dnsmasq
        assert f"dhcp-host=tag:{ztp.CLASS_PREFIX}{d.name},*:*:*:*:*:*,{address},{d.name},{ztp.LEASE_SECONDS}" in dnsmasq
    # No pool is open to a client the plan does not know, on either server.
    assert all("client-class" in p for p in _kea(out)["subnet4"][0]["pools"])
    assert any(line.startswith("dhcp-range=") and ",static," in line for line in dnsmasq)
    # The OOB switch's own management port is reached by no planned cable: left out, and said so.
    assert "oob-mgmt1 is not provisioned" in done.stderr and "planes.oob.ztp.serials" in done.stderr


def ip_text(value: int | None) -> str:
    from gpufabric.plan import ip

    text = ip(value)
    assert text is not None
    return text


@needs_kea
@needs_dnsmasq
def test_several_oob_switches_ask_for_the_remote_id_too(tmp_path):
    """superpod-4su's OOB plane has several management switches: a port name alone is not unique."""
    doc = yaml.safe_load((INVENTORY / "examples" / "superpod-4su.yml").read_text())
    plan = build_plan(load_intent(str(INVENTORY / "examples" / "superpod-4su.yml")))
    mgmt = [d.name for d in plan.planes["oob"].devices if d.role == "mgmt"]
    assert len(mgmt) > 1, doc["planes"]["oob"]
    done = ztp.export(plan, resolve=False)
    cabled = {link.a: (link.b_port, link.b) for link in plan.planes["oob"].links if link.kind == "mgmt"}
    classes = {c["name"]: c for c in json.loads(done.files[ztp.KEA])["Dhcp4"]["client-classes"]}
    name = next(d.name for d in plan.devices() if d.plane != "oob")
    port, switch = cabled[name]
    assert classes[f"{ztp.CLASS_PREFIX}{name}"]["test"] == (
        f"relay4[1].hex == '{port}' and relay4[2].hex == '{switch}'"
    )
    assert (
        f"tag-if=set:{ztp.CLASS_PREFIX}{name},tag:{ztp.CLASS_PREFIX}{name}-port,tag:gpufabric-remote-{switch}"
        in (done.files[ztp.DNSMASQ])
    )
    for rel, check in ((ztp.KEA, kea_check), (ztp.DNSMASQ, dnsmasq_check)):
        path = tmp_path / rel.replace("/", "-")
        path.write_text(done.files[rel])
        result = check(path)
        assert result.returncode == 0, result.stdout[-1500:] + result.stderr[-1500:]


@needs_kea
@needs_dnsmasq
def test_a_recorded_serial_identifies_a_switch_no_cable_reaches(tmp_path):
    intent = _intent(tmp_path, "fabric.yml", serials={"oob-mgmt1": "FOC2234X0AB", "cmp-spine1": "MT2301X00042"})
    out, done = _export(tmp_path, intent)
    classes = _classes(out)
    assert "not provisioned" not in done.stderr
    serial_hex = b"FOC2234X0AB".hex()
    assert classes["oob-mgmt1"]["test"] == f"option[61].hex == 'FOC2234X0AB' or option[61].hex == 0x00{serial_hex}"
    assert classes["cmp-spine1"]["test"].startswith("(relay4[1].hex == 'swp1') or (option[61].hex == 'MT2301X00042'")
    assert 'dhcp-match=set:gpufabric-oob-mgmt1,61,"FOC2234X0AB"' in (out / ztp.DNSMASQ).read_text()
    assert (out / ztp.HTTP / "oob-mgmt1.ztp.sh").is_file()
    assert kea_check(out / ztp.KEA).returncode == 0
    assert dnsmasq_check(out / ztp.DNSMASQ).returncode == 0


@pytest.mark.parametrize(
    ("settings", "field", "words"),
    [
        ({"serials": {"no-such-switch": "ABC123"}}, "planes.oob.ztp.serials.no-such-switch", "no switch named"),
        ({"serials": {"cmp-spine1": "ABC1", "cmp-spine2": "ABC1"}}, "planes.oob.ztp.serials", "cmp-spine1's too"),
        ({"server": "10.9.9.9"}, "planes.oob.ztp.server", "not on the OOB subnet"),
        # Reaches no one: every switch's fetch would fail. A switch's own lease: it would fetch from itself.
        ({"server": "172.20.0.0"}, "planes.oob.ztp.server", "the OOB subnet's network address"),
        ({"server": "172.20.0.255"}, "planes.oob.ztp.server", "the OOB subnet's broadcast address"),
        ({"server": "172.20.0.3"}, "planes.oob.ztp.server", "is cmp-spine1's management address"),
        # dnsmasq's dhcp-match finds a string anywhere in the option: ABC12 would be known as cmp-spine1 too.
        (
            {"serials": {"cmp-spine1": "ABC1", "cmp-spine2": "XABC12"}},
            "planes.oob.ztp.serials.cmp-spine2",
            "holds cmp-spine1's serial ABC1",
        ),
        ({"serials": {"cmp-spine1": "AB C;rm"}}, "planes.oob.ztp.serials.cmp-spine1", "serial number"),
        ({"interface": "eth0;x"}, "planes.oob.ztp.interface", "interface name"),
    ],
)
def test_ztp_settings_that_do_not_fit_are_refused_located(tmp_path, settings, field, words):
    intent = _intent(tmp_path, "fabric.yml", **settings)
    done = run_in_process("gpufabric", "export", "ztp", intent, "-o", str(tmp_path / "out"), **ENV)
    assert done.returncode == 2, done.stderr
    assert field in done.stderr and words in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
    if field == "planes.oob.ztp.server" and "not on" not in words:  # what would be right, checked as it is
        assert "a host address of the OOB subnet 172.20.0.0/24 that no switch leases, such as 172.20.0.1" in done.stderr


# -- every vendor's file ---------------------------------------------------------------------------------


def _rendered(plan, name: str) -> dict[str, str]:
    index = LinkIndex(plan, PasswordHasher.for_intent(plan.intent, ENV))
    from gpufabric.config.secrets import declared, resolve_tokens

    files = render_device(plan, index.devices[name], index).files
    return {f: resolve_tokens(t, ENV, declared(plan.intent)) for f, t in files.items()}


def _first(plan, os_name: str) -> str:
    return next(d.name for d in plan.devices() if d.platform == os_name and d.plane != "oob")


def _bash_n(path) -> None:
    done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_cumulus_ztp_script_has_the_marker_passes_bash_and_loads_the_rendered_nvue_document(multi):
    out, _, plan = multi
    name = _first(plan, "cumulus")
    script = out / ztp.HTTP / f"{name}.ztp.sh"
    text = script.read_text()
    assert text.startswith("#!/bin/bash\n# CUMULUS-AUTOPROVISIONING\n")
    _bash_n(script)
    assert "nv config replace" in text and "nv config apply -y" in text
    url = f"http://172.16.0.1:80/{name}.yaml"
    assert f"'{url}'" in text
    # Option 239, defined as a string for Kea; the document served is the one render writes (secrets in).
    assert _options(_classes(out)[name])[239] == f"http://172.16.0.1:80/{name}.ztp.sh"
    assert {"name": "gpufabric-option-239", "code": 239, "type": "string", "space": "dhcp4"} in _kea(out)["option-def"]
    assert (out / ztp.HTTP / f"{name}.yaml").read_text() == _rendered(plan, name)[f"{name}.yaml"]


def test_eos_bootstrap_passes_bash_and_installs_the_rendered_startup_config(multi):
    out, _, plan = multi
    name = _first(plan, "eos")
    script = out / ztp.HTTP / f"{name}.ztp.sh"
    _bash_n(script)
    assert "/mnt/flash/startup-config" in script.read_text()
    assert _options(_classes(out)[name])[67] == f"http://172.16.0.1:80/{name}.ztp.sh"
    assert (out / ztp.HTTP / f"{name}.cfg").read_text() == _rendered(plan, name)[f"{name}.cfg"]


def test_nxos_poap_script_compiles_and_carries_the_md5_poap_checks(multi, tmp_path):
    out, _, plan = multi
    name = _first(plan, "nxos")
    script = out / ztp.HTTP / f"{name}.poap.py"
    py_compile.compile(str(script), cfile=str(tmp_path / "poap.pyc"), doraise=True)
    lines = script.read_text().splitlines(keepends=True)
    recorded = next(ln for ln in lines if ln.startswith(MD5_LINE)).strip()[len(MD5_LINE) :].strip('"')
    # POAP's rule, computed here apart from the exporter: the MD5 of the script without its #md5sum line.
    assert recorded == hashlib.md5("".join(ln for ln in lines if not ln.startswith(MD5_LINE)).encode()).hexdigest()
    tampered = "".join(lines).replace("scheduled-config", "running-config")
    t_lines = tampered.splitlines(keepends=True)
    assert recorded != hashlib.md5("".join(ln for ln in t_lines if not ln.startswith("#md5sum")).encode()).hexdigest()
    options = _options(_classes(out)[name])
    assert options[66] == "http://172.16.0.1:80" and options[67] == f"{name}.poap.py"
    assert (out / ztp.HTTP / f"{name}.cfg").read_text() == _rendered(plan, name)[f"{name}.cfg"]


def test_sonic_ztp_json_follows_the_ztp_design_and_serves_the_rendered_config_db(sonic):
    """No JSON schema of ztp.json is published (sonic-ztp.yang models CONFIG_DB's ZTP table, not this file):
    the keys are held to SONiC's ZTP design document, section 3."""
    out, plan = sonic
    name = _first(plan, "sonic")
    doc = json.loads((out / ztp.HTTP / f"{name}.ztp.json").read_text())
    assert list(doc) == ["ztp"]
    sections = doc["ztp"]
    assert list(sections) == sorted(sections)  # run in lexical order
    plugins = {key.split("-", 1)[1]: body for key, body in sections.items()}
    assert set(plugins) == {"configdb-json", "provisioning-script"}
    url = plugins["configdb-json"]["url"]
    assert url == {"source": f"http://172.16.0.1:80/{name}.config_db.json", "destination": "/etc/sonic/config_db.json"}
    assert plugins["provisioning-script"]["plugin"]["url"] == f"http://172.16.0.1:80/{name}.ztp-frr.sh"
    for body in sections.values():
        assert set(body) <= {"url", "plugin", "halt-on-failure", "ignore-result", "reboot-on-success"}
    _bash_n(out / ztp.HTTP / f"{name}.ztp-frr.sh")
    rendered = _rendered(plan, name)
    assert (out / ztp.HTTP / f"{name}.config_db.json").read_text() == rendered[f"{name}.config_db.json"]
    assert _options(_classes(out)[name])[67] == f"http://172.16.0.1:80/{name}.ztp.json"


def test_frr_script_passes_sh_and_carries_the_candidate_push_loads(tmp_path):
    out, _ = _export(tmp_path, str(INVENTORY / "fabric.yml"))
    script = out / ztp.HTTP / "cmp-su1-leaf1.ztp.sh"
    done = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    text = script.read_text()
    plan = build_plan(load_intent(str(INVENTORY / "fabric.yml")))
    conf = _rendered(plan, "cmp-su1-leaf1")["cmp-su1-leaf1.frr.conf"]
    assert conf in text
    assert f"frr-reload.py --stdout --pathspace {frr_ztp.PATHSPACE_MARK} --reload" in text  # a lab's pathspace
    assert "frr-reload.py --stdout --reload" in text  # a switch of its own


FRR_NS_SWITCH = "cmp-su1-leaf1"


@pytest.fixture(scope="module")
def frr_script(tmp_path_factory) -> str:
    out, _ = _export(tmp_path_factory.mktemp("frr-ztp"), str(INVENTORY / "fabric.yml"))
    return (out / ztp.HTTP / f"{FRR_NS_SWITCH}.ztp.sh").read_text()


def _guard(script: str, frr_ns: str) -> subprocess.CompletedProcess[str]:
    """The script's own lines before its first write (`umask`), run with FRR_NS set (unset for None)."""
    head = script.split("\numask 077\n", 1)[0]
    env = {"PATH": os.environ["PATH"], **({"FRR_NS": frr_ns} if frr_ns is not None else {})}
    return subprocess.run(["sh", "-c", head + "\necho passed"], env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "frr_ns", [None, "", FRR_NS_SWITCH, f"w0_{FRR_NS_SWITCH}", f"lab-2_{FRR_NS_SWITCH}", f"{'a' * 16}_{FRR_NS_SWITCH}"]
)
def test_frr_script_runs_in_the_switch_s_own_pathspace_or_a_named_lab_s(frr_script, frr_ns):
    done = _guard(frr_script, frr_ns)
    assert (done.returncode, done.stdout, done.stderr) == (0, "passed\n", "")


@pytest.mark.parametrize(
    "frr_ns",
    [
        "cmp-su1-leaf2",  # another switch
        "w0_cmp-su1-leaf2",  # another switch in a named lab
        f"{FRR_NS_SWITCH}x",  # a longer name
        f"_{FRR_NS_SWITCH}",  # no lab name
        f"W0_{FRR_NS_SWITCH}",  # not a lab's name: upper case
        f"0w_{FRR_NS_SWITCH}",  # not a lab's name: a digit first
        f"a_b_{FRR_NS_SWITCH}",  # not a lab's name: '_'
        f"w0/x_{FRR_NS_SWITCH}",  # what sed or a path would read
        f"$(id)_{FRR_NS_SWITCH}",
        f"w0 x_{FRR_NS_SWITCH}",
        f"{'a' * 17}_{FRR_NS_SWITCH}",  # longer than a lab's name
    ],
)
def test_frr_script_refuses_any_other_pathspace_before_it_writes(frr_script, frr_ns):
    done = _guard(frr_script, frr_ns)
    assert done.returncode == 2 and "passed" not in done.stdout
    assert done.stderr == f"FRR_NS={frr_ns}: not {FRR_NS_SWITCH}'s pathspace\n"


def test_frr_script_s_idea_of_a_lab_s_name_is_the_lab_s_own():
    """The script's guard (a floor below the lab's names) takes `<lab>_<switch>` with a lab name of lowercase
    letters, digits and '-', first a letter, at most 16: what gpufabric/fleet/lab/names.py allows, no more."""
    from gpufabric.fleet.lab.names import LAB_NAME, SEPARATOR

    assert frr_ztp.LAB_SEPARATOR == SEPARATOR
    assert LAB_NAME.fullmatch("a" * 16) and not LAB_NAME.fullmatch("a" * 17)
    assert LAB_NAME.fullmatch("lab-2") and not any(LAB_NAME.fullmatch(n) for n in ("W0", "0w", "a_b", ""))


def test_frr_script_s_sed_writes_the_apply_step_of_the_pathspace_frr_ns_names(frr_script, tmp_path):
    """The script's own sed line, run on the step it carries for a pathspace, gives what the FRR driver writes for
    the named lab's pathspace, byte for byte."""
    work = frr_ztp.WORKDIR.format(device=FRR_NS_SWITCH)
    line = next(x for x in frr_script.splitlines() if x.startswith('if [ -n "${FRR_NS:-}" ]; then sed '))
    sed = line.split("; then ", 1)[1].split(";", 1)[0].replace(work, str(tmp_path))
    ns = f"w0_{FRR_NS_SWITCH}"
    (tmp_path / "apply-pathspace.sh").write_text(frr_ztp._pathspace_template(work, FRR_NS_SWITCH, True, True))
    subprocess.run(["sh", "-c", sed], env={"PATH": os.environ["PATH"], "FRR_NS": ns}, check=True)
    applied = (tmp_path / "apply.sh").read_text()
    assert applied == frr_ztp._apply(work, ns, True, True)
    assert f"vtysh -N {ns} " in applied and f"--pathspace {ns} --reload" in applied


def test_frr_script_s_pathspace_step_is_refused_where_its_mark_stands_for_more_than_the_pathspace(monkeypatch):
    monkeypatch.setattr(frr_ztp, "PATHSPACE_MARK", "frr")  # also in /etc/frr and frr-reload.py
    with pytest.raises(AssertionError, match="does not take FRR_NS by replacing its mark"):
        frr_ztp._pathspace_template(frr_ztp.WORKDIR.format(device="x"), "x", True, True)


def test_secrets_a_switch_keeps_in_clear_are_filled_in_and_those_files_are_owner_only(multi):
    out, _, _ = multi
    holding = [p for p in (out / ztp.HTTP).iterdir() if ENV["GPUFABRIC_SNMP_COMMUNITY"] in p.read_text()]
    assert holding, "multi-vendor.yml names an SNMP community: some switch loads it"
    for path in holding:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    # Nothing else carries it: not the DHCP configurations, not the tokens.
    assert ENV["GPUFABRIC_SNMP_COMMUNITY"] not in (out / ztp.KEA).read_text() + (out / ztp.DNSMASQ).read_text()
    assert not any("@secret:" in p.read_text() for p in (out / ztp.HTTP).iterdir())


def test_stdout_is_keas_configuration_without_rendering_secrets():
    done = run_in_process("gpufabric", "export", "ztp", str(INVENTORY / "fabric.yml"))  # no secret in the environment
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["Dhcp4"]["interfaces-config"] == {"interfaces": ["eth0"]}


# -- the contract and the writer -------------------------------------------------------------------------


def test_a_platform_without_a_ztp_form_says_so_by_name():
    class Bare(Platform):
        pass

    bare = Bare(platform("frr").facts)
    with pytest.raises(NoZtpFormError, match=r"platform frr \(Linux \+ FRR\) has no zero-touch provisioning form"):
        bare.ztp("leaf1", {}, "http://10.0.0.1:80/")


def test_every_registered_platform_has_a_ztp_form_naming_its_entry_file_first():
    for os_name in ("cumulus", "eos", "nxos", "frr", "sonic"):
        spec = platform(os_name)
        form = spec.ztp("sw1", ztp._Blank(), "http://10.0.0.1:80/")
        entry = next(iter(form.files))
        assert entry.startswith("sw1.") and any(entry in value for _, value in form.options), (os_name, form.options)


@pytest.mark.parametrize(
    "text", ["plain\n", "no newline at the end", "", "GPUFABRIC_EOF_0\n$HOME `id` 'q' \"d\"\n", "a\n\n"]
)
def test_heredoc_writes_the_text_exactly(tmp_path, text):
    target = tmp_path / "out"
    script = heredoc(str(target), text)
    subprocess.run(["sh", "-c", script], check=True)
    assert target.read_bytes() == text.encode()
