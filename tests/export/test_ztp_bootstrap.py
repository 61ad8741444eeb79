"""Day 0 of the OOB switches: `gpufabric export ztp` writes every switch's first configuration, the OOB
switches' as a console bootstrap (they relay DHCP for the others, so no relay serves them). Each bootstrap is
judged by the model the project holds that platform's rendered files to: NVIDIA's NVUE object model of the
pinned release for Cumulus Linux, FRR's own parser (`vtysh -C`) and `sh -n` for Linux + FRR; and it is a
subset of the switch's rendered configuration, holding the password only as its hash."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from conftest import ALL_INTENTS, INVENTORY, example_plan, plan_doc, run_in_process

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.config.secrets import PasswordHasher
from gpufabric.export import ztp
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.platforms import platform

PASSWORD = "bootstrap-test-password"
CANARY = "bootstrap-canary-community"
ENV = {
    "GPUFABRIC_SWITCH_PASSWORD": PASSWORD,
    "GPUFABRIC_SALT_KEY": "bootstrap-test-salt",
    "GPUFABRIC_SNMP_COMMUNITY": CANARY,
    "GPUFABRIC_HOST_SSH_KEY": "unused",
}
WITH_OOB = [p for p in ALL_INTENTS if example_plan(p).intent.planes.oob is not None]
needs_vtysh = pytest.mark.skipif(shutil.which("vtysh") is None, reason="vtysh (package frr) is not installed")


def _env_secrets(node: Any, env: dict[str, str]) -> Any:
    """The intent with every `{vault: NAME}` turned into `{env: GPUFABRIC_NAME}` (set in `env`): no vault here."""
    if isinstance(node, dict):
        if set(node) == {"vault"}:
            name = f"GPUFABRIC_{node['vault'].upper()}"
            env.setdefault(name, CANARY if "snmp" in name.lower() else PASSWORD)
            return {"env": name}
        return {k: _env_secrets(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [_env_secrets(v, env) for v in node]
    return node


def _export_cli(tmp_path, source) -> tuple[Any, dict[str, str]]:
    env = dict(ENV)
    doc = _env_secrets(yaml.safe_load(source.read_text()), env)
    intent = tmp_path / source.name
    intent.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "out"
    done = run_in_process("gpufabric", "export", "ztp", str(intent), "-o", str(out), **env)
    assert done.returncode == 0, done.stderr
    return out, {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}


@pytest.mark.parametrize("source", WITH_OOB, ids=lambda p: p.stem)
def test_export_ztp_writes_a_day0_file_for_every_switch_oob_switches_included(tmp_path, source):
    _, files = _export_cli(tmp_path, source)
    plan = example_plan(source)
    oob = {d.name for d in plan.planes["oob"].devices}
    missing = [
        d.name
        for d in plan.devices()
        if not any(re.match(rf"^(http|console)/{re.escape(d.name)}\.", name) for name in files)
    ]
    assert missing == []
    assert {name.split("/")[1].split(".")[0] for name in files if name.startswith("console/")} == oob
    for name, text in files.items():
        if name.startswith("console/"):
            assert PASSWORD not in text and CANARY not in text and "@secret:" not in text and "@hash:" not in text
            assert "$6$" in text  # the login, by its hash


def _bootstrap(doc: dict[str, Any], device: str, env: dict[str, str] = ENV) -> tuple[str, str]:
    """(console file, rendered main file) of one OOB switch, both made with the same password hasher."""
    plan = plan_doc(doc)
    index = LinkIndex(plan, PasswordHasher.for_intent(plan.intent, env))
    done = ztp.export(plan, index, env)
    (name,) = [n for n in done.files if n.startswith(f"console/{device}.")]
    d = index.devices[device]
    main = f"{device}.yaml" if d.platform == "cumulus" else f"{device}.system.yaml"
    return done.files[name], render_device(plan, d, index).files[main]


def _leaves(tree: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(tree, dict) and tree:
        return {k: v for key, sub in tree.items() for k, v in _leaves(sub, (*path, str(key))).items()}
    return {path: tree}


def _set(text: str) -> dict[str, Any]:
    return yaml.load(text, Loader=nvue.NvueLoader)[1]["set"]  # a safe loader with YAML 1.2's booleans


SPECTRUM = yaml.safe_load((INVENTORY / "examples" / "spectrum-x.yml").read_text())


@pytest.mark.parametrize("release", platform("cumulus").facts.releases)
def test_the_cumulus_bootstrap_fits_nvidia_s_model_of_its_release_and_is_part_of_the_rendered_one(release):
    doc = copy.deepcopy(SPECTRUM)
    doc["platforms"] = {"cumulus": {"release": release}}
    text, rendered = _bootstrap(doc, "oob-mgmt1")
    assert nvue.check(nvue.set_tree(text), release) == []
    boot, full = _leaves(_set(text)), _leaves(_set(rendered))
    added = {p: v for p, v in boot.items() if p[:2] in {("service", "dhcp-relay"), ("system", "ssh-server")}}
    kept = {("system", "hostname"), ("system", "aaa"), ("interface", "eth0")}
    assert {p: v for p, v in boot.items() if p not in added} == {p: v for p, v in full.items() if p[:2] in kept}
    relay = _set(text)["service"]["dhcp-relay"]["mgmt"]
    clients = relay["downstream-interface"] if release >= "5.14" else relay["interface"]
    plan = plan_doc(doc)
    provisioned = set(ztp.export(plan, resolve=False).provisioned)
    ports = [link.b_port for link in plan.planes["oob"].links if link.kind == "mgmt" and link.a in provisioned]
    assert ports and sorted(p for p in clients if p != "eth0") == sorted(ports)


def test_the_judge_refuses_a_bootstrap_of_another_release():
    """The check above can fail: 5.14's relay (server groups) and 5.15's interface keys are not 5.13's."""
    doc = copy.deepcopy(SPECTRUM)
    doc["platforms"] = {"cumulus": {"release": "5.15"}}
    text, _ = _bootstrap(doc, "oob-mgmt1")
    found = {f.path for f in nvue.check(nvue.set_tree(text), "5.13")}
    assert "/service/dhcp-relay/mgmt/server-group" in found and "/interface/eth0/ipv4" in found


def test_several_management_switches_relay_with_their_own_name_as_remote_id():
    """Where the OOB plane has several management switches, the DHCP server matches the remote-id too
    (docs/ztp.md): each Cumulus relay sends its own name, the one Kea's class of its switches tests."""
    plan = example_plan(INVENTORY / "examples" / "superpod-1su.yml")
    env = dict(ENV)
    doc = _env_secrets(yaml.safe_load((INVENTORY / "examples" / "superpod-1su.yml").read_text()), env)
    text, _ = _bootstrap(doc, "oob-mgmt1", env)  # the switches' management ports are on oob-mgmt1
    release = plan.intent.release("cumulus")
    assert nvue.check(nvue.set_tree(text), release) == []
    agent = _set(text)["service"]["dhcp-relay"]["mgmt"]["agent"]
    assert agent["remote-id"] == "oob-mgmt1"
    kea = ztp.export(plan, resolve=False).files[ztp.KEA]
    assert "relay4[2].hex == 'oob-mgmt1'" in kea
    hosts_only, _ = _bootstrap(doc, "oob-mgmt2", env)  # only servers behind it: nothing to relay
    assert "dhcp-relay" not in hosts_only and nvue.check(nvue.set_tree(hosts_only), release) == []
    spine, _ = _bootstrap(doc, "oob-spine1", env)  # an aggregation switch: no switch's management port on it
    assert "dhcp-relay" not in spine and nvue.check(nvue.set_tree(spine), release) == []


def _frr_parts(text: str) -> tuple[str, str]:
    fragment = re.search(r"cat > /etc/frr/gpufabric-bootstrap.conf <<'(\w+)'\n(.*?)\n\1\n", text, re.S)
    relay = re.search(r"cat > /etc/default/isc-dhcp-relay <<'(\w+)'\n(.*?)\n\1\n", text, re.S)
    assert fragment and relay
    return fragment.group(2) + "\n", relay.group(2)


@needs_vtysh
def test_the_frr_bootstrap_passes_sh_and_frr_s_parser_and_relays_every_switch_port(tmp_path):
    doc = yaml.safe_load((INVENTORY / "fabric.yml").read_text())
    text, system_yaml = _bootstrap(doc, "oob-mgmt1")
    assert subprocess.run(["sh", "-n"], input=text, text=True, check=False).returncode == 0
    fragment, relay = _frr_parts(text)
    conf = tmp_path / "bootstrap.conf"
    conf.write_text(fragment)
    judged = subprocess.run(["vtysh", "-C", "-f", str(conf)], capture_output=True, text=True, check=False)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    conf.write_text(fragment.replace("/0 ", "/33 "))  # the parser refuses what is wrong
    assert subprocess.run(["vtysh", "-C", "-f", str(conf)], capture_output=True, check=False).returncode != 0
    plan = example_plan(INVENTORY / "fabric.yml")
    rendered = yaml.safe_load(system_yaml)
    assert f"ip route 0.0.0.0/0 {plan.intent.planes.oob.gateway_address}" in fragment
    assert f"hostname {rendered['hostname']}" in fragment
    assert f"ip address replace {rendered['management']['address']} dev {rendered['management']['port']}" in text
    assert f"usermod -p '{rendered['users'][0]['hashed_password']}' admin" in text
    provisioned = set(ztp.export(plan, resolve=False).provisioned)
    ports = [link.b_port for link in plan.planes["oob"].links if link.kind == "mgmt" and link.a in provisioned]
    options = re.search(r'OPTIONS="(.*)"', relay)
    assert options and options.group(1).split() == ["-a", *[w for p in ports for w in ("-id", p)], "-iu", "br-oob"]
    assert f'SERVERS="{ztp.server(plan)}"' in relay
    # The management bridge keeps the rendered bridge's other members (the servers' management ports).
    index = LinkIndex(plan, PasswordHasher.for_intent(plan.intent, ENV))
    interfaces = render_device(plan, index.devices["oob-mgmt1"], index).files["oob-mgmt1.interfaces"]
    members = re.search(r"^iface br-oob\n(?:.*\n)*?\s+bridge-ports (.+)$", interfaces, re.M)
    assert members
    bridged = re.findall(r"^ip link set dev (\S+) master br-oob up$", text, re.M)
    assert bridged and bridged == [p for p in members.group(1).split() if p not in ports]


def test_an_frr_oob_plane_of_several_management_switches_is_left_to_the_hand_with_the_reason():
    """ISC dhcrelay sends no remote-id, which tells several management switches' ports apart."""
    doc = yaml.safe_load((INVENTORY / "fabric.yml").read_text())
    doc["planes"]["oob"]["switches"]["mgmt"]["ports"] = 8  # 21 management ports: three switches, aggregated
    doc["planes"]["oob"]["switches"]["spine"] = {
        "platform": "frr",
        "model": "lab-1g-48",
        "ports": 48,
        "port_speed": "1G",
    }
    plan = plan_doc(doc)
    done = ztp.export(plan, LinkIndex(plan, PasswordHasher.for_intent(plan.intent, ENV)), ENV)
    relaying = {link.b for link in plan.planes["oob"].links if link.kind == "mgmt" and link.a in done.provisioned}
    assert len(relaying) > 1
    assert not [n for n in done.files if n.split("/")[-1].split(".")[0] in relaying and n.startswith("console/")]
    for name in relaying:
        assert "sends none" in done.skipped[name] and "remote-id" in done.skipped[name]


def test_a_bootstrap_that_would_hold_a_secret_token_is_refused(monkeypatch):
    """The console files hold the password only as its hash: a token of the rendered files (an SNMP community,
    a vault entry) reaching one is refused, and nothing is returned to write."""
    plan = example_plan(INVENTORY / "fabric.yml")
    frr = type(platform("frr"))
    monkeypatch.setattr(frr, "console_bootstrap", lambda self, device, files, b: {f"{device}.x": "@secret:env:X@\n"})
    with pytest.raises(ztp.ZtpError, match="oob-mgmt1: its console bootstrap would hold a secret token"):
        ztp.export(plan, LinkIndex(plan, PasswordHasher.for_intent(plan.intent, ENV)), ENV)
