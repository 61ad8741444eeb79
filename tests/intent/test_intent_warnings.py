"""Valid but dubious intents: planned (exit 0) with a warning that names the field, its line and the
risk; `--strict` turns any warning into exit 3 on every command that reads an intent."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ALL_INTENTS, INVENTORY, example_plan, run_in_process, sized

from gpufabric.intent import load_intent_text
from gpufabric.plan import build_plan

DEFAULT = (INVENTORY / "fabric.yml").read_text()


def _edited(*edits: tuple[str, str]) -> str:
    text = DEFAULT
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _warnings(text: str) -> list[str]:
    return build_plan(load_intent_text(text, "fabric.yml")).warnings


# (id, edits, the line's text, field, words of the message and the risk)
CASES = [
    (
        "NTP listed twice",
        [("ntp_servers: [172.20.0.1]", "ntp_servers: [172.20.0.1, 172.20.0.1]")],
        "ntp_servers:",
        "management.ntp_servers[1]",
        ["listed twice (also [0])", "there is no other"],
    ),
    (
        "DNS listed twice",
        [("  domain: lab", "  dns_servers: [172.20.0.53, 172.20.0.54, 172.20.0.53]\n  domain: lab")],
        "dns_servers:",
        "management.dns_servers[2]",
        ["172.20.0.53 is listed twice"],
    ),
    (
        "syslog listed twice",
        [("syslog_servers: [172.20.0.1]", "syslog_servers: [172.20.0.9, 172.20.0.9]")],
        "syslog_servers:",
        "management.syslog_servers[1]",
        ["listed twice"],
    ),
    (
        "ECN below two frames",
        [("ecn_min_bytes: 150000", "ecn_min_bytes: 9000")],
        "ecn_min_bytes:",
        "qos_profiles.roce.ecn_min_bytes",
        ["under 2 frames", "for no congestion"],
    ),
    (
        "ECN late for the link speed",
        [("ecn_min_bytes: 150000", "ecn_min_bytes: 10000000"), ("ecn_max_bytes: 1500000", "ecn_max_bytes: 20000000")],
        "ecn_min_bytes:",
        "qos_profiles.roce.ecn_min_bytes",
        ["200 µs of queue at the compute plane's 400G ports", "PFC pauses before ECN"],
    ),
    (
        "host MTU equal to the switch MTU",
        [("mtu: 9216\n    host_mtu: 9000\n    carries", "mtu: 9216\n    host_mtu: 9216\n    carries")],
        "host_mtu: 9216",
        "planes.compute.host_mtu",
        ["equals the switch MTU", "no room for encapsulation"],
    ),
    (
        "management ACL wider than the OOB plane",
        [("management_prefixes: [10.100.0.0/16]", "management_prefixes: [10.100.0.0/16, 172.16.0.0/12]")],
        "management_prefixes:",
        "planes.business.border.management_prefixes[1]",
        ["wider than the OOB plane 172.20.0.0/24", "1,048,576 addresses"],
    ),
    (
        "management ACL of everything",
        [("management_prefixes: [10.100.0.0/16]", "management_prefixes: [0.0.0.0/0]")],
        "management_prefixes:",
        "planes.business.border.management_prefixes[0]",
        ["0.0.0.0/0 is wider than the OOB plane", "SSH, gNMI, SNMP"],
    ),
    (
        "management ACL reaching into the fabric's pools",
        [("management_prefixes: [10.100.0.0/16]", "management_prefixes: [10.100.0.0/16, 10.0.0.0/9]")],
        "management_prefixes:",
        "planes.business.border.management_prefixes[1]",
        [
            "10.0.0.0/9 reaches into the fabric's own pool 10.0.0.0/24 (planes.compute.addressing.loopbacks)",
            "answers the fabric's servers and switches",
        ],
    ),
    (
        "management ACL inside a host pool",
        [("management_prefixes: [10.100.0.0/16]", "management_prefixes: [10.12.4.0/24]")],
        "management_prefixes:",
        "planes.business.border.management_prefixes[0]",
        ["10.12.4.0/24 reaches into the fabric's own pool 10.12.0.0/16 (planes.business.addressing.hosts)"],
    ),
    (
        "API port listed twice",
        [("api_prefixes: [10.200.0.0/16]", "api_prefixes: [10.200.0.0/16]\n      api_ports: [443, 6443, 443]")],
        "api_ports:",
        "planes.business.border.api_ports[2]",
        ["port 443 is listed twice (also [0])", "one API is opened where two were meant"],
    ),
    (
        "NTP in a data-plane pool",
        [("ntp_servers: [172.20.0.1]", "ntp_servers: [10.10.0.7]")],
        "ntp_servers:",
        "management.ntp_servers[0]",
        ["data-plane pool planes.compute.addressing.hosts", "no route into the data planes"],
    ),
    (
        "syslog in a data-plane pool",
        [("syslog_servers: [172.20.0.1]", "syslog_servers: [10.12.0.9]")],
        "syslog_servers:",
        "management.syslog_servers[0]",
        ["planes.business.addressing.hosts", "will not answer"],
    ),
    (
        "NTP is a switch's loopback",
        [("ntp_servers: [172.20.0.1]", "ntp_servers: [10.0.0.1]")],
        "ntp_servers:",
        "management.ntp_servers[0]",
        ["10.0.0.1 is the loopback of the switch cmp-", "send to itself"],
    ),
    (
        "syslog to loopback",
        [("syslog_servers: [172.20.0.1]", "syslog_servers: [127.0.0.1]")],
        "syslog_servers:",
        "management.syslog_servers[0]",
        ["127.0.0.1 is the switch's own loopback", "logs stay on each switch"],
    ),
    (
        "Cyrillic look-alike in the description",
        [("description: gpufabric default lab cluster", "description: gpufabric default lab clust\u0435r")],
        "description:",
        "fabric.description",
        ["U+0435 (cyrillic small letter ie)", "write plain ASCII"],
    ),
    (
        "fullwidth look-alike in the SNMP location",
        [
            (
                "  domain: lab",
                "  snmp: {community: {env: GPUFABRIC_SNMP_COMMUNITY}, location: 'hall \uff21'}\n  domain: lab",
            )
        ],
        "snmp:",
        "management.snmp.location",
        ["U+FF21 (fullwidth latin capital letter a)"],
    ),
]


@pytest.mark.parametrize(("edits", "needle", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_dubious_intent_warns_with_field_line_and_risk(edits, needle, field, words):
    text = _edited(*edits)
    mine = [w for w in _warnings(text) if f": {field}: " in w]
    assert len(mine) == 1, _warnings(text)
    assert mine[0].startswith(f"fabric.yml:{_line(text, needle)}: {field}: "), mine
    assert "; risk: " in mine[0]
    for word in words:
        assert word in mine[0], mine


@pytest.mark.parametrize("intent", sized(ALL_INTENTS), ids=[p.name for p in ALL_INTENTS])
def test_shipped_intents_raise_none_of_these_warnings(intent):
    """The examples stay quiet: every warning of theirs is a plan warning, not an intent one (the 28k and
    32k designs are marked slow by conftest, from their names)."""
    warnings = example_plan(intent).warnings
    assert not [w for w in warnings if "; risk: " in w], warnings


def _file(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "fabric.yml"
    f.write_text(text)
    return f


@pytest.mark.parametrize(
    ("command", "plain"),
    [
        (["check"], 0),
        (["plan"], 0),
        (["plan", "--json"], 0),
        (["export", "cabling"], 0),
        (["render", "-o", "{tmp}/configs"], 0),
    ],
    ids=["check", "plan", "plan-json", "export", "render"],
)
def test_strict_exits_3_on_a_warning(tmp_path, command, plain):
    text = _edited(("ntp_servers: [172.20.0.1]", "ntp_servers: [172.20.0.1, 172.20.0.1]"))
    f = _file(tmp_path, text)
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    relaxed = run_in_process("gpufabric", *args, str(f))
    assert relaxed.returncode == plain, relaxed.stderr
    line = _line(text, "ntp_servers:")
    assert f"warning: {f}:{line}: management.ntp_servers[1]: 172.20.0.1 is listed twice" in relaxed.stderr
    strict = run_in_process("gpufabric", *args, "--strict", str(f))
    assert strict.returncode == 3, strict.stderr
    assert "Traceback" not in strict.stderr


def test_strict_verify_exits_3_when_the_configs_pass_but_the_intent_warns(tmp_path):
    text = _edited(("ntp_servers: [172.20.0.1]", "ntp_servers: [172.20.0.1, 172.20.0.1]"))
    f = _file(tmp_path, text)
    configs = tmp_path / "configs"
    assert run_in_process("gpufabric", "render", str(f), "-o", str(configs)).returncode == 0
    relaxed = run_in_process("gpufabric", "verify", str(f), "--configs", str(configs))
    assert relaxed.returncode == 0 and "listed twice" in relaxed.stderr, relaxed.stderr
    strict = run_in_process("gpufabric", "verify", "--strict", str(f), "--configs", str(configs))
    assert strict.returncode == 3, strict.stderr


def test_strict_passes_a_quiet_intent(tmp_path):
    done = run_in_process("gpufabric", "check", "--strict", str(INVENTORY / "fabric.yml"))
    assert done.returncode == 0, done.stderr
    assert "warning:" not in done.stderr
