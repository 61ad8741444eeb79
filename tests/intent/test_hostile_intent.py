"""Hostile strings in the intent: refused with a located error (exit 2), or carried into every
platform's configuration so that the platform's reader gets back exactly the value, on its line."""

from __future__ import annotations

import re
import time

import pytest
import yaml
from conftest import INVENTORY, default_doc, plan_doc, run_in_process, set_path
from napalm import get_network_driver
from render_helpers import render_all

from gpufabric.config.secrets import UndeclaredSecretError, resolve_tokens
from gpufabric.drivers.transport import Output
from gpufabric.intent import IntentError, load_intent_text
from gpufabric.intent.errors import MAX_SHOWN

# Printable, but full of what quoting gets wrong: quotes, comment and shell characters, YAML
# indicators, a colon-space, braces, a token-like word that is not the token syntax.
HOSTILE = 'O\'Brien hall "B" #2 ! ; $(reboot) `id` {x}: [y] & *z | > % @secret'
# NX-OS reads ';' as a command separator, so an intent with NX-OS switches refuses it (see the test below);
# everything else of HOSTILE still reaches the multi-vendor fabric's NX-OS switches verbatim.
HOSTILE_BUT_SEPARATOR = HOSTILE.replace(" ;", "")


def _multi_vendor_doc() -> dict:
    return yaml.safe_load((INVENTORY / "examples" / "multi-vendor.yml").read_text())


def _with_location(doc: dict, location: str) -> dict:
    snmp = doc["management"].get("snmp") or {"community": {"env": "GPUFABRIC_SNMP_COMMUNITY"}}
    return set_path(doc, ("management", "snmp"), {**snmp, "location": location})


@pytest.mark.parametrize("base", ["default", "multi-vendor"])
def test_a_hostile_location_reaches_every_platform_exactly(base):
    doc = default_doc() if base == "default" else _multi_vendor_doc()
    value = HOSTILE if base == "default" else HOSTILE_BUT_SEPARATOR
    plain = render_all(plan_doc(_with_location(doc, "row 1")))
    hostile = render_all(plan_doc(_with_location(doc, value)))
    platforms_seen = set()
    for name, text in hostile.items():
        # No extra line anywhere: the hostile value took the place of the plain one, nothing more.
        assert text.count("\n") == plain[name].count("\n"), name
        if name.endswith((".cfg",)):
            lines = [line for line in text.splitlines() if line.startswith("snmp-server location ")]
            assert lines == [f"snmp-server location {value}"], name
            platforms_seen.add("cli")
        elif name.endswith(".system.yaml"):
            assert yaml.safe_load(text)["snmp"]["location"] == value, name
            platforms_seen.add("frr")
        elif name.endswith(".yaml"):
            nvue = yaml.safe_load(text)[1]["set"]
            snmp = nvue.get("system", {}).get("snmp-server") or nvue["service"]["snmp-server"]
            assert snmp["system-location"] == value, name
            platforms_seen.add("nvue")
    assert platforms_seen == ({"frr"} if base == "default" else {"cli", "nvue", "frr"})


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (("management", "domain"), "x.net\nip route 0.0.0.0/0 192.0.2.66", "DNS domain"),
        (("management", "domain"), "x.net 5 permit ip any any", "DNS domain"),
        (("management", "snmp", "location"), "hall\n 5 permit ip any any", "control character"),
        (("management", "snmp", "location"), "@secret:env:AWS_SECRET_ACCESS_KEY@", "secret-token syntax"),
        (("management", "snmp", "location"), " padded", "space"),
        (("management", "snmp", "location"), "x" * 201, "at most 200"),
        (("fabric", "description"), "a\tb", "control character"),
        (("credentials", "switches", "username"), "admin;reboot", "login name"),
        (("credentials", "hosts", "username"), "root\n", "login name"),
        (("server_groups", 0, "nics", "compute", "interfaces", 0), "eth1;reboot;#", "Linux interface name"),
        (("server_groups", 0, "nics", "compute", "interfaces", 0), "eth0/1", "Linux interface name"),
        (
            (
                "server_groups",
                0,
                "gpu_model",
            ),
            "H100 SXM5",
            "Kubernetes label",
        ),
        (("planes", "compute", "switches", "leaf", "model"), "SN5600\nhostname evil", "hardware model"),
        (("planes", "compute", "prefix"), "cmp-a", "no '-'"),
    ],
)
def test_hostile_strings_are_refused_with_a_located_error(tmp_path, path, value, says):
    doc = default_doc()
    if path[:2] == ("management", "snmp"):
        doc = _with_location(doc, "row 1")
    doc = set_path(doc, path, value)
    intent = tmp_path / "intent.yml"
    intent.write_text(yaml.safe_dump(doc))
    done = run_in_process("gpufabric", "check", str(intent))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert says in done.stderr, done.stderr
    assert f"{intent}:" in done.stderr  # located: file and line


def test_two_planes_with_one_prefix_are_refused():
    doc = set_path(default_doc(), ("planes", "storage", "prefix"), "cmp")
    with pytest.raises(IntentError) as caught:
        plan_doc(doc)
    assert any("also the compute plane's" in p.message for p in caught.value.problems)


def _bomb(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (_bomb(10), "expands to more than"),
        ("fabric: " + "[" * 2000 + "]" * 2000 + "\n", "nests deeper than"),
        ("fabric: &a\n  b: *a\n", "its own enclosing"),
    ],
)
def test_documents_that_cost_too_much_to_read_are_refused_quickly(text, says, tmp_path):
    intent = tmp_path / "intent.yml"
    intent.write_text(text)
    started = time.monotonic()
    done = run_in_process("gpufabric", "check", str(intent))
    assert time.monotonic() - started < 30  # bounded, not hanging: a loaded machine starts the CLI slowly
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr) < 2000  # the value is never printed whole


def test_many_problems_are_counted_not_all_printed():
    doc = default_doc()
    doc["server_groups"][0]["nics"]["compute"]["interfaces"] = [f"bad;{i}" for i in range(16)]
    for group in doc["server_groups"]:
        group["bogus_field"] = 1
        for n in range(60):
            group[f"bogus{n}"] = n
    with pytest.raises(IntentError) as caught:
        load_intent_text(yaml.safe_dump(doc))
    text = caught.value.render()
    assert len(caught.value.problems) > MAX_SHOWN
    assert text.count("error: ") == MAX_SHOWN
    assert f"and {len(caught.value.problems) - MAX_SHOWN} more" in text


def test_a_token_resolves_only_to_a_secret_the_intent_names():
    allowed = frozenset({("env", "GPUFABRIC_SWITCH_PASSWORD")})
    env = {"GPUFABRIC_SWITCH_PASSWORD": "pw", "AWS_SECRET_ACCESS_KEY": "canary-7f3a"}
    assert resolve_tokens("p @secret:env:GPUFABRIC_SWITCH_PASSWORD@", env, allowed) == "p pw"
    with pytest.raises(UndeclaredSecretError) as caught:
        resolve_tokens("location @secret:env:AWS_SECRET_ACCESS_KEY@", env, allowed)
    assert "canary-7f3a" not in str(caught.value)


def test_hints_say_what_is_right():
    doc = set_path(default_doc(), ("qos_profiles",), {"roce": {"pfc_priorities": [3]}})
    with pytest.raises(IntentError) as caught:
        plan_doc(doc)
    unknown = [p for p in caught.value.problems if "pfc_priorities" in p.message]
    hint = unknown[0].hint or ""
    assert "did you mean" not in hint and "roce_priority" in hint  # the list, not a wrong guess


def test_the_boot_script_keeps_a_nic_name_one_word(tmp_path):
    """The RoCE boot script runs as root: whatever a NIC is called, it is one shell word."""
    import subprocess

    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template
    from conftest import ROOT

    pwned = tmp_path / "pwned"
    nic = f"eth1;touch {pwned};#"
    variables = {
        "ansible_managed": "test",
        "roce_qos_dscp": 26,
        "roce_qos_priority": 3,
        "roce_qos_cnp_dscp": 48,
        "roce_qos_cnp_priority": 6,
        "roce_qos_tos": 106,
        "roce_qos_lossless": True,
        "roce_qos_unit": "u",
        "roce_qos_script": "s",
        "roce_qos_devices": {nic: {"hca": "mlx5_0$(touch " + str(pwned) + ")"}},
    }
    source = trust_as_template((ROOT / "roles" / "roce_qos" / "templates" / "roce-qos.sh.j2").read_text())
    script = tmp_path / "roce-qos.sh"
    script.write_text(Templar(loader=DataLoader(), variables=variables).template(source))
    done = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=30, check=False)
    assert not pwned.exists(), script.read_text()
    assert done.stdout.startswith(f"skipped {nic}: no ConnectX device"), (done.stdout, done.stderr)


class _Recorder:
    """A transport that answers every command with an empty success and remembers it (the login's settings,
    which the FRR driver asks for at open, as none: an FRR host without a pathspace)."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.commands.append(command)
        return Output(0, "\n\n" if command.startswith("printf ") else "{}", "")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("driver", ["cumulus", "frr"])
def test_driver_commands_from_callers_cannot_add_commands(driver):
    recorder = _Recorder()
    dev = get_network_driver(driver)("192.0.2.10", "admin", "unused", optional_args={"transport": recorder})
    dev.open()
    for bad in ("show version\nreboot", "show version\r\nreboot"):
        with pytest.raises(ValueError):
            dev.cli([bad])
    with pytest.raises(ValueError):
        dev.get_route_to("10.0.0.1\nshow running-config")
    dev.cli(["show version; reboot"])
    assert recorder.commands[-1].endswith(" -c 'show version; reboot'")  # one quoted vtysh argument
    if driver == "cumulus":
        dev.cli(["nv show system; reboot"])
        assert recorder.commands[-1].endswith("nv show 'system;' reboot")  # words, no shell separator


def test_a_leaf_with_no_room_for_a_host_is_not_told_to_take_zero():
    doc = set_path(default_doc(), ("planes", "compute", "switches", "leaf", "ports"), 1)
    with pytest.raises(IntentError) as caught:
        plan_doc(doc)
    hints = " ".join(p.hint or "" for p in caught.value.problems)
    assert "no room for a host" in hints and "to 0 or less" not in hints


def _refusal(doc: dict) -> IntentError:
    """The intent's error, rendered with file and line (the field's line in the dumped YAML)."""
    with pytest.raises(IntentError) as caught:
        load_intent_text(yaml.safe_dump(doc, sort_keys=False), "intent.yml")
    return caught.value


def _located(error: IntentError, field: str) -> str:
    """The one rendered line about `field`, which must carry the file and a line number."""
    rows = [row for row in error.render().splitlines() if f": {field}: " in row]
    assert len(rows) == 1, error.render()
    assert re.match(rf"error: intent\.yml:\d+: {re.escape(field)}: ", rows[0]), rows[0]
    return rows[0]


EDGE_ASN = ("planes", "business", "border", "edge_routers", 0, "asn")


@pytest.mark.parametrize(
    ("asn", "says"),
    [
        (23456, "AS_TRANS"),
        (64496, "documentation"),
        (64511, "documentation"),
        (65535, "reserved"),
        (65536, "documentation"),
        (65551, "documentation"),
    ],
)
def test_a_reserved_edge_asn_is_refused(asn, says):
    """AS_TRANS (RFC 6793) stands for every 4-octet ASN on a 2-octet session; the documentation ranges
    (RFC 5398) and the last ASNs (RFC 7300) number no real router."""
    row = _located(_refusal(set_path(default_doc(), EDGE_ASN, asn)), "planes.business.border.edge_routers[0].asn")
    assert says in row and str(asn)[:3] in row


@pytest.mark.parametrize("asn", [0, 4294967295])
def test_the_first_and_last_asn_stay_refused(asn):
    _located(_refusal(set_path(default_doc(), EDGE_ASN, asn)), "planes.business.border.edge_routers[0].asn")


@pytest.mark.parametrize("asn", [1, 23455, 23457, 64495, 64512, 65534, 65552, 4294967294])
def test_asns_beside_the_reserved_ones_are_accepted(asn):
    plan = plan_doc(set_path(default_doc(), EDGE_ASN, asn))
    assert plan.intent.planes.business.border.edge_routers[0].asn == asn


@pytest.mark.parametrize("pool", ["64500-64600", "65500-65535", "65530-65540", "4294967000-4294967295"])
def test_an_asn_pool_reaching_a_reserved_asn_is_refused(pool):
    """The pools are private ranges (RFC 6996), which hold no reserved ASN; a pool reaching one is refused."""
    row = _located(
        _refusal(set_path(default_doc(), ("planes", "compute", "routing", "asn_pool"), pool)),
        "planes.compute.routing.asn_pool",
    )
    assert pool in row


def test_no_planned_asn_is_reserved():
    from conftest import ALL_INTENTS

    from gpufabric.intent.types import reserved_asn
    from gpufabric.plan import build_plan

    for intent in ALL_INTENTS:
        if "32k" in intent.name or "28k" in intent.name:
            continue  # the large designs are slow; their pools are checked like these
        plan = build_plan(load_intent_text(intent.read_text(), intent.name))
        asns = {d.asn for d in plan.devices() if d.asn is not None}
        assert asns and not [a for a in asns if reserved_asn(a)], intent.name


@pytest.mark.parametrize(
    ("naming", "start", "example"),
    [("{index}", 1, "'1'"), ("{index:03d}", 1, "'001'"), ("10{index:02d}", 0, "'1000'")],
)
def test_a_naming_pattern_that_makes_all_numeric_host_names_is_refused(naming, start, example):
    """RFC 1123 host names are never all digits: `ssh 17` goes to 0.0.0.17, Slurm and inventories read 17
    as a number."""
    doc = set_path(default_doc(), ("server_groups", 0, "naming"), naming)
    doc = set_path(doc, ("server_groups", 0, "start_index"), start)
    row = _located(_refusal(doc), "server_groups[0].naming")
    assert "all-numeric" in row and example in row and "RFC 1123" in row


def test_a_naming_pattern_with_a_letter_is_accepted():
    doc = set_path(default_doc(), ("server_groups", 0, "naming"), "1n{index:02d}")
    names = [s.name for s in plan_doc(doc).servers if s.group == doc["server_groups"][0]["name"]]
    assert names[:2] == ["1n01", "1n02"]


@pytest.mark.parametrize("location", ["hall B ; no feature ssh", "hall B;row 3", "; reload"])
def test_an_nxos_fabric_refuses_a_location_with_its_command_separator(location):
    row = _located(_refusal(_with_location(_multi_vendor_doc(), location)), "management.snmp.location")
    assert "nxos switches" in row and "command separator" in row


def test_a_location_with_a_semicolon_reaches_platforms_without_a_separator():
    """FRR's snmpd and the other non-NX-OS platforms carry ';' verbatim: only NX-OS refuses it."""
    from gpufabric.platforms import names, platform

    plan = plan_doc(_with_location(default_doc(), "hall B ; row 3"))
    assert plan.intent.management.snmp.location == "hall B ; row 3"
    refusing = [n for n in names() if platform(n).free_text_problem("hall B ; row 3")]
    assert refusing == ["nxos"]
