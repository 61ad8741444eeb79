"""Malformed intents, each with the located message it must give.

Each case edits the default fabric at one path and names the field the error must
point to and words the message (or its fix) must contain.
"""

from __future__ import annotations

import pytest
import yaml
from conftest import DELETE, INVENTORY, default_doc, plan_doc, run_in_process, set_path

from gpufabric.intent import IntentError, load_intent_text
from gpufabric.plan import build_plan

C = ("planes", "compute")
S = ("planes", "storage")
B = ("planes", "business")
G0 = ("server_groups", 0)
PW = "hunter2-canary-9f3a"


def _doc_with(*edits):
    doc = default_doc()
    for path, value in edits:
        doc = set_path(doc, path, value)
    return doc


CASES = [
    # (id, edits, field, words)
    ("missing fabric", [(("fabric",), DELETE)], "fabric", "required"),
    ("bad fabric name", [(("fabric", "name"), "Lab_1")], "fabric.name", "lower-case letters, digits and '-'"),
    ("unknown top-level key", [(("planez",), {})], "planez", "did you mean `planes`"),
    ("unknown nested key", [((*C, "routing", "ecpm"), 8)], "planes.compute.routing.ecpm", "did you mean `ecmp`"),
    ("no server groups", [(("server_groups",), [])], "server_groups", "at least 1"),
    ("zero servers", [((*G0, "count"), 0)], "server_groups[0].count", "out of range"),
    ("count not a number", [((*G0, "count"), "four")], "server_groups[0].count", "integer"),
    ("naming without index", [((*G0, "naming"), "gpu")], "server_groups[0].naming", "{index}"),
    ("naming with a positional field", [((*G0, "naming"), "gpu{0}")], "server_groups[0].naming", "{index}"),
    (
        "naming with a huge width",
        [((*G0, "naming"), "gpu{index:>999999999}")],
        "server_groups[0].naming",
        "zero-padded",
    ),
    ("group name twice", [(("server_groups", 1, "name"), "gpu")], "server_groups[1].name", "used twice"),
    (
        "server names collide",
        [(("server_groups", 1, "naming"), "gpu{index:02d}")],
        "server_groups[1].naming",
        "also made by group 'gpu'",
    ),
    (
        "NICs on undefined plane",
        [((*S[:1], "storage"), DELETE)],
        "server_groups[0].nics.storage",
        "not defined under planes",
    ),
    (
        "speed not a speed",
        [((*G0, "nics", "compute", "speed"), "fast")],
        "server_groups[0].nics.compute.speed",
        "not a speed",
    ),
    (
        "speed below 1G",
        [((*G0, "nics", "compute", "speed"), "100M")],
        "server_groups[0].nics.compute.speed",
        "whole number of Gb/s",
    ),
    (
        "interface twice",
        [((*G0, "nics", "compute", "interfaces"), ["eth1", "eth1"])],
        "server_groups[0].nics.compute.interfaces",
        "listed twice",
    ),
    (
        "rails wrong length",
        [((*G0, "nics", "compute", "rails"), [1])],
        "server_groups[0].nics.compute.rails",
        "1 rails for 2 interfaces",
    ),
    (
        "rails not 1..n",
        [((*G0, "nics", "compute", "rails"), [1, 3])],
        "server_groups[0].nics.compute.rails",
        "must number 1..2",
    ),
    (
        "two BMC ports",
        [((*G0, "nics", "oob", "interfaces"), ["eth0", "eth9"])],
        "server_groups[0].nics.oob.interfaces",
        "one management (BMC) port",
    ),
    (
        "NIC on two planes",
        [((*G0, "nics", "storage", "interfaces"), ["eth1"])],
        "server_groups[0].nics.storage.interfaces",
        "already a compute NIC",
    ),
    (
        "NIC slower than leaf port",
        [((*G0, "nics", "compute", "speed"), "200G")],
        "server_groups[0].nics.compute.speed",
        "200G NICs but compute leaf downlinks run at 400G",
    ),
    ("unknown topology", [((*C, "topology"), "fat-tree")], "planes.compute.topology", "'rail-optimized'"),
    ("four tiers", [((*C, "tiers"), 4)], "planes.compute.tiers", "use one of 2 or 3"),
    ("no spine role", [((*C, "switches", "spine"), DELETE)], "planes.compute.switches", "needs a `spine`"),
    ("3 tiers without superspine", [((*C, "tiers"), 3)], "planes.compute.switches", "needs a `superspine`"),
    (
        "superspine with 2 tiers",
        [((*C, "switches", "superspine"), {"platform": "frr", "model": "x", "ports": 32, "port_speed": "400G"})],
        "planes.compute.switches.superspine",
        "need `tiers: 3`",
    ),
    (
        "mgmt role on compute",
        [((*C, "switches", "mgmt"), {"platform": "frr", "model": "x", "ports": 48, "port_speed": "1G"})],
        "planes.compute.switches.mgmt",
        "belong to the oob plane",
    ),
    (
        "border on storage",
        [((*S, "border"), default_doc()["planes"]["business"]["border"])],
        "planes.storage.border",
        "only the business plane",
    ),
    ("border switches without section", [((*B, "border"), DELETE)], "planes.business.border", "come together"),
    (
        "unknown platform",
        [((*C, "switches", "leaf", "platform"), "junos")],
        "planes.compute.switches.leaf.platform",
        "'junos' is not a registered platform: cumulus, eos, nxos, frr",
    ),
    (
        "uneven breakout",
        [((*C, "switches", "leaf", "downlink_speed"), "300G")],
        "planes.compute.switches.leaf.downlink_speed",
        "does not split a 400G port evenly",
    ),
    (
        "tier speed mismatch",
        [((*C, "switches", "spine", "port_speed"), "200G")],
        "planes.compute.switches.leaf.uplink_speed",
        "leaf uplinks run at 400G but spine downlinks at 200G",
    ),
    (
        "host MTU above switch MTU",
        [((*C, "mtu"), 9000), ((*C, "host_mtu"), 9100)],
        "planes.compute.host_mtu",
        "host MTU 9100 is above the switch MTU 9000",
    ),
    (
        "host MTU above EOS maximum",
        [
            ((*C, "host_mtu"), 9216),
            ((*C, "switches", "leaf", "platform"), "eos"),
            ((*C, "switches", "spine", "platform"), "eos"),
        ],
        "planes.compute.host_mtu",
        "above what eos leaves carry (9214)",
    ),
    ("RoCE without QoS", [((*C, "qos"), DELETE)], "planes.compute.qos", "carries RoCE but names no QoS profile"),
    ("undefined QoS profile", [((*C, "qos"), "gold")], "planes.compute.qos", "'gold' is not defined"),
    (
        "lossy profile on RoCE plane",
        [(("qos_profiles", "roce", "lossless"), False)],
        "qos_profiles.roce.lossless",
        "lossy but compute carries RoCE",
    ),
    (
        "CNP shares RoCE priority",
        [(("qos_profiles", "roce", "cnp_priority"), 3)],
        "qos_profiles.roce.cnp_priority",
        "share priority 3",
    ),
    (
        "CNP shares RoCE DSCP",
        [(("qos_profiles", "roce", "cnp_dscp"), 26)],
        "qos_profiles.roce.cnp_dscp",
        "share DSCP 26",
    ),
    (
        "DSCP out of range",
        [(("qos_profiles", "roce", "roce_dscp"), 64)],
        "qos_profiles.roce.roce_dscp",
        "less than or equal to 63",
    ),
    (
        "ECN thresholds reversed",
        [(("qos_profiles", "roce", "ecn_min_bytes"), 2_000_000)],
        "qos_profiles.roce.ecn_min_bytes",
        "not below the maximum",
    ),
    (
        "p2p31 without pool",
        [((*C, "routing", "addressing"), "p2p31")],
        "planes.compute.addressing.p2p",
        "needs a p2p pool",
    ),
    (
        "loopback pool too small",
        [((*C, "addressing", "loopbacks"), "10.0.0.0/30")],
        "planes.compute.addressing.loopbacks",
        "6 switch loopbacks need 7",
    ),
    (
        "host pool too small",
        [((*C, "addressing", "hosts"), "10.10.0.0/29")],
        "planes.compute.addressing.hosts",
        "use a /28 or larger",
    ),
    (
        "overlapping pools",
        [((*S, "addressing", "loopbacks"), "10.0.0.128/25")],
        "planes.storage.addressing.loopbacks",
        "overlaps 10.0.0.0/24",
    ),
    (
        "host bits set",
        [((*C, "addressing", "loopbacks"), "10.0.0.1/24")],
        "planes.compute.addressing.loopbacks",
        "not an IPv4 network",
    ),
    (
        "pool written as a boolean",
        [((*C, "addressing", "hosts"), True)],
        "planes.compute.addressing.hosts",
        "not an address",
    ),
    (
        "overlapping ASN pools",
        [((*S, "routing", "asn_pool"), "4200000500-4200001500")],
        "planes.storage.routing.asn_pool",
        "overlaps the compute pool",
    ),
    (
        "public ASN pool",
        [((*C, "routing", "asn_pool"), "100-200")],
        "planes.compute.routing.asn_pool",
        "not inside a private ASN range",
    ),
    (
        "ASN range backwards",
        [((*C, "routing", "asn_pool"), "4200000999-4200000000")],
        "planes.compute.routing.asn_pool",
        "runs backwards",
    ),
    (
        "ASN pool too small",
        [((*C, "routing", "asn_pool"), "4200000000-4200000002")],
        "planes.compute.routing.asn_pool",
        "needs 5",
    ),
    (
        "edge ASN inside a fabric pool",
        [((*B, "border", "edge_routers", 0, "asn"), 4200000005)],
        "planes.business.border.edge_routers[0].asn",
        "inside the compute fabric pool",
    ),
    (
        "duplicate edge routers",
        [((*B, "border", "edge_routers"), [{"name": "e1", "asn": 1}, {"name": "e1", "asn": 2}])],
        "planes.business.border.edge_routers",
        "listed twice",
    ),
    (
        "API port out of range",
        [((*B, "border", "api_ports"), [443, 70000])],
        "planes.business.border.api_ports",
        "not a TCP port",
    ),
    (
        "plaintext password",
        [(("credentials", "switches", "password"), PW)],
        "credentials.switches.password",
        "secrets are referenced",
    ),
    (
        "env and vault both",
        [(("credentials", "switches", "password"), {"env": "A", "vault": "B"})],
        "credentials.switches.password",
        "exactly one",
    ),
    (
        "switch login without secret",
        [(("credentials", "switches", "password"), DELETE)],
        "credentials.switches",
        "password or an ssh_key",
    ),
    (
        "EOS switches with an SSH key only",
        [
            (("credentials", "switches", "password"), DELETE),
            (("credentials", "switches", "ssh_key"), {"env": "K"}),
            ((*C, "switches", "leaf", "platform"), "eos"),
        ],
        "credentials.switches.password",
        "logs in with a password",
    ),
    (
        "salt key in a vault",
        [(("credentials", "salt_key"), {"vault": "salt"})],
        "credentials.salt_key",
        "before any vault is opened",
    ),
    (
        "OOB gateway outside subnet",
        [(("planes", "oob", "gateway"), "10.9.9.9")],
        "planes.oob.gateway",
        "outside 172.20.0.0/24",
    ),
    ("OOB subnet too small", [(("planes", "oob", "subnet"), "172.20.0.0/28")], "planes.oob.subnet", "usable addresses"),
    (
        "OOB without mgmt switches",
        [(("planes", "oob", "switches", "mgmt"), DELETE)],
        "planes.oob.switches",
        "needs `mgmt` switches",
    ),
    (
        "OOB spine groups without a core",
        [(("planes", "oob", "spine_group"), 2)],
        "planes.oob.spine_group",
        "join at an OOB core",
    ),
    (
        "OOB core without spines",
        [
            (
                ("planes", "oob", "switches", "superspine"),
                {"platform": "frr", "model": "x", "ports": 8, "port_speed": "1G"},
            )
        ],
        "planes.oob.switches",
        "there are none",
    ),
    (
        "OOB core with a spine count",
        [
            (
                ("planes", "oob", "switches", "spine"),
                {"platform": "frr", "model": "x", "ports": 8, "port_speed": "1G", "count": 4},
            ),
            (
                ("planes", "oob", "switches", "superspine"),
                {"platform": "frr", "model": "x", "ports": 8, "port_speed": "1G"},
            ),
        ],
        "planes.oob.switches.spine.count",
        "the plan counts the spines",
    ),
    (
        "OOB mgmt uplinks over a spine group",
        [
            (("planes", "oob", "switches", "mgmt", "uplinks"), 3),
            (("planes", "oob", "spine_group"), 2),
            (("planes", "oob", "switches", "spine"), {"platform": "frr", "model": "x", "ports": 8, "port_speed": "1G"}),
            (
                ("planes", "oob", "switches", "superspine"),
                {"platform": "frr", "model": "x", "ports": 8, "port_speed": "1G"},
            ),
        ],
        "planes.oob.switches.mgmt.uplinks",
        "do not spread over a group of 2 spines",
    ),
    (
        "leaf radix too small",
        [((*C, "unit_nodes"), 20)],
        "planes.compute.switches.leaf.ports",
        "needs 40 ports, it has 32",
    ),
    (
        "spines cannot carry the leaves",
        [((*G0, "count"), 40), ((*C, "unit_nodes"), 1), ((*C, "addressing", "loopbacks"), "10.0.0.0/22")],
        "planes.compute.switches.spine.count",
        "2 spines cannot take",
    ),
    ("ratio not a ratio", [((*C, "oversubscription"), "abc")], "planes.compute.oversubscription", "not a ratio"),
    ("ratio below 1", [((*C, "oversubscription"), 0.5)], "planes.compute.oversubscription", "out of range"),
    ("LACP on frr leaves", [((*S, "host_links"), "lacp")], "planes.storage.host_links", "no MLAG"),
    (
        "EOS spines on an unnumbered plane",
        [((*C, "switches", "spine", "platform"), "eos")],
        "planes.compute.routing.addressing",
        "p2p31",
    ),
    (
        "plane without servers",
        [((*G0, "nics", "business"), DELETE)],
        "planes.business",
        "no server group has NICs on the business plane",
    ),
    (
        "no plane at all",
        [(("planes",), {}), ((*G0, "nics"), {}), (("server_groups", 1, "nics"), {})],
        "planes",
        "no plane is defined",
    ),
]


@pytest.mark.parametrize(("edits", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_intent_is_located_and_explained(edits, field, words):
    doc = _doc_with(*edits)
    with pytest.raises(IntentError) as info:
        plan_doc(doc, "fabric.yml")
    problems = [p for p in info.value.problems if p.field == field]
    assert problems, f"no problem at {field}; got {[(p.field, p.message) for p in info.value.problems]}"
    assert any(words in f"{p.message} {p.hint}" for p in problems), [(p.message, p.hint) for p in problems]
    assert info.value.line_of(problems[0].path) is not None  # every problem names a line


def test_table_is_large_enough():
    assert len(CASES) >= 40


def test_plaintext_secret_is_never_echoed():
    doc = _doc_with((("credentials", "switches", "password"), PW))
    with pytest.raises(IntentError) as info:
        plan_doc(doc)
    assert PW not in info.value.render()


def test_several_problems_reported_at_once():
    doc = _doc_with(((*C, "topology"), "fat-tree"), (("fabric", "name"), "Bad Name"), ((*G0, "count"), -1))
    with pytest.raises(IntentError) as info:
        plan_doc(doc)
    assert {p.field for p in info.value.problems} >= {
        "planes.compute.topology",
        "fabric.name",
        "server_groups[0].count",
    }


def test_cross_field_problems_come_with_the_schema_problems():
    doc = _doc_with(
        ((*C, "mtuu"), 9000),  # unknown field: schema
        (("qos_profiles", "roce", "ecn_probability"), 500),  # out of range: schema
        (("planes", "storage", "prefix"), "cmp"),  # another plane's prefix: cross-field
        (("credentials", "salt_key"), {"vault": "salt"}),  # salt key from a vault: cross-field
    )
    with pytest.raises(IntentError) as info:
        plan_doc(doc)
    found = {p.field: p.message for p in info.value.problems}
    assert set(found) == {
        "planes.compute.mtuu",
        "qos_profiles.roce.ecn_probability",
        "planes.storage.prefix",
        "credentials.salt_key",
    }, found
    assert "also the compute plane's" in found["planes.storage.prefix"]


def test_rules_are_left_out_when_what_failed_cannot_be_taken_out():
    """A missing required field: the rules would only see a different fabric, so none are guessed."""
    doc = _doc_with((("fabric", "name"), DELETE), (("planes", "storage", "prefix"), "cmp"))
    with pytest.raises(IntentError) as info:
        plan_doc(doc)
    assert [(p.field, p.message) for p in info.value.problems] == [("fabric.name", "is required but missing")]


TEXT = (INVENTORY / "fabric.yml").read_text()


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize(
    ("old", "new", "needle", "field"),
    [
        ("  name: lab\n", "  name: Lab!\n", "name: Lab!", "fabric.name"),
        ("    count: 4\n", "    count: zero\n", "count: zero", "server_groups[0].count"),
        ("    tiers: 2\n    prefix: sto", "    tiers: 5\n    prefix: sto", "tiers: 5", "planes.storage.tiers"),
        ("      ecmp: 64\n", "      ecmp: 64\n      ecpm: 2\n", "ecpm: 2", "planes.compute.routing.ecpm"),
        ("    roce_dscp: 26\n", "    roce_dscp: 99\n", "roce_dscp: 99", "qos_profiles.roce.roce_dscp"),
    ],
)
def test_error_names_the_line_in_the_file(old, new, needle, field):
    text = TEXT.replace(old, new, 1)
    assert text != TEXT
    with pytest.raises(IntentError) as info:
        build_plan(load_intent_text(text, "inventory/fabric.yml"))
    problem = next(p for p in info.value.problems if p.field == field)
    expected = _line_of(text, needle)
    assert info.value.line_of(problem.path) == expected
    assert f"inventory/fabric.yml:{expected}: {field}:" in info.value.render()


def test_yaml_syntax_error_names_the_line():
    text = TEXT.replace("    count: 4\n", "    count: [4\n", 1)
    with pytest.raises(IntentError) as info:
        load_intent_text(text, "f.yml")
    assert "not valid YAML" in info.value.render()
    assert info.value.line_of(()) is not None


def test_duplicate_key_is_an_error():
    text = TEXT.replace("    count: 4\n", "    count: 4\n    count: 5\n", 1)
    with pytest.raises(IntentError) as info:
        load_intent_text(text, "f.yml")
    assert info.value.problems[0].message == "'count' is given twice"
    assert info.value.line_of(info.value.problems[0].path) == _line_of(text, "    count: 5")


def test_top_level_must_be_a_mapping():
    with pytest.raises(IntentError, match="must be a mapping"):
        load_intent_text("- a\n- b\n")


def test_cli_exit_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump(_doc_with(((*C, "tiers"), 7), (("credentials", "switches", "password"), PW))))
    out = tmp_path / "plan.json"
    done = run_in_process("gpufabric", "export", "plan", str(bad), "-o", str(out))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr + done.stdout
    assert f"{bad}:" in done.stderr and "planes.compute.tiers" in done.stderr and "fix:" in done.stderr
    assert PW not in done.stderr + done.stdout
    assert not out.exists() and not list(tmp_path.glob(".plan.json*"))  # nothing half-written


def test_cli_json_errors(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump(_doc_with(((*C, "tiers"), 7))))
    done = run_in_process("gpufabric", "plan", str(bad), "--json")
    import json

    errors = json.loads(done.stdout)["errors"]
    assert done.returncode == 2
    assert errors[0]["field"] == "planes.compute.tiers" and isinstance(errors[0]["line"], int)
