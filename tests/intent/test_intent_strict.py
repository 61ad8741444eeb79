"""Inputs that would silently change the network: each is refused through the real CLI with exit 2,
the file and line, the field, and what to write instead; never a traceback.

The intent is read as YAML 1.2's core schema with strict types. Under PyYAML's YAML 1.1 reading,
`count: yes` planned one server, `count: 010` eight, `roce_dscp: 024` moved RoCE to DSCP 20,
`roce_priority: on` gave 1, `ecmp: 1:30` gave 90 and `count: 4.0` was 4.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import INVENTORY, cli_env, run, run_in_process

from gpufabric.intent import IntentError, load_intent_text

DEFAULT = (INVENTORY / "fabric.yml").read_text()


def _edited(old: str, new: str) -> str:
    assert DEFAULT.count(old) >= 1, old
    return DEFAULT.replace(old, new, 1)


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _refused(tmp_path: Path, text: str, *args: str) -> str:
    """`gpufabric ARGS fabric.yml` on `text` must exit 2 without a traceback; its stderr, the path shortened."""
    f = tmp_path / "fabric.yml"
    f.write_text(text)
    done = run_in_process("gpufabric", *args, str(f))
    assert "Traceback" not in done.stdout + done.stderr
    stderr = done.stderr.replace(str(f), "fabric.yml")
    assert done.returncode == 2, stderr
    return stderr


# (id, old text, new text, field, words the message or fix must hold)
YAML11 = [
    ("count yes", "count: 4\n", "count: yes\n", "server_groups[0].count", "write a whole number, not yes/no/on/off"),
    ("count octal", "count: 4\n", "count: 010\n", "server_groups[0].count", "write 10"),
    ("count float", "count: 4\n", "count: 4.0\n", "server_groups[0].count", "write 4, without the decimal point"),
    ("count quoted", "count: 4\n", "count: '4'\n", "server_groups[0].count", "unquoted"),
    ("dscp octal", "roce_dscp: 26", "roce_dscp: 024", "qos_profiles.roce.roce_dscp", "octal 20"),
    ("priority on", "roce_priority: 3", "roce_priority: on", "qos_profiles.roce.roce_priority", "on is text"),
    ("ecmp base 60", "ecmp: 64", "ecmp: 1:30", "planes.compute.routing.ecmp", "base-60 number 90"),
    ("lossless yes", "lossless: true", "lossless: yes", "qos_profiles.roce.lossless", "write true or false"),
    ("lossless 1", "lossless: true", "lossless: 1", "qos_profiles.roce.lossless", "write true"),
    ("tiers float", "tiers: 2\n    prefix: cmp", "tiers: 2.0\n    prefix: cmp", "planes.compute.tiers", "write 2"),
    (
        "mtu float",
        "mtu: 9216\n    host_mtu: 9000\n    carries",
        "mtu: 9216.0\n    host_mtu: 9000\n    carries",
        "planes.compute.mtu",
        "write 9216",
    ),
    (
        "set of interfaces",
        "interfaces: [eth1, eth2]",
        "interfaces: !!set {eth1, eth2}",
        "server_groups[0].nics.compute.interfaces",
        "write a list",
    ),
    ("binary text", "gpu_model: H100-SXM5", "gpu_model: !!binary SDEwMA==", "server_groups[0].gpu_model", "!!binary"),
    ("timestamp", "domain: lab.gpufabric.test", "domain: !!timestamp 2001-12-14", "management.domain", "!!timestamp"),
    (
        "python tag",
        "domain: lab.gpufabric.test",
        "domain: !!python/name:os.system ''",
        "management.domain",
        "not part of YAML 1.2",
    ),
]


@pytest.mark.parametrize(("old", "new", "field", "words"), [c[1:] for c in YAML11], ids=[c[0] for c in YAML11])
def test_yaml11_readings_are_refused_with_line_field_and_fix(tmp_path, old, new, field, words):
    text = _edited(old, new)
    stderr = _refused(tmp_path, text, "plan")
    line = _line(text, new.splitlines()[0].strip())
    assert f"error: fabric.yml:{line}: {field}: " in stderr, stderr
    assert words in stderr, stderr
    assert "fix:" in stderr


def test_yaml12_values_are_those_written():
    """What stays valid keeps its meaning: `yes` as text is text, an unquoted 3:1 a ratio, not 181."""
    text = _edited('oversubscription: "1:1"', "oversubscription: 3:1").replace(
        "description: gpufabric default lab cluster", "description: yes"
    )
    intent = load_intent_text(text, "f.yml").intent
    assert intent.fabric.description == "yes"
    assert intent.planes.compute is not None and intent.planes.compute.oversubscription == 3.0


def test_explicit_int_tag_with_a_leading_zero_is_refused():
    with pytest.raises(IntentError) as info:
        load_intent_text(_edited("count: 4\n", "count: !!int 010\n"), "f.yml")
    assert "leading zero" in info.value.render()
    assert info.value.line_of(info.value.problems[0].path) == _line(DEFAULT, "count: 4")


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        (
            "description: gpufabric default lab cluster",
            'description: \'{{ lookup("pipe", "id") }}\'',
            "fabric.description",
        ),
        ("qos_profiles:\n  roce:", "qos_profiles:\n  '{% raw %}':", "qos_profiles.{% raw %}"),
        ("domain: lab.gpufabric.test", "domain: 'a{#b#}'", "management.domain"),
    ],
)
def test_template_syntax_is_refused_anywhere(tmp_path, old, new, field):
    text = _edited(old, new)
    stderr = _refused(tmp_path, text, "plan")
    assert f"{field}: holds template syntax" in stderr, stderr
    assert f"fabric.yml:{_line(text, new.splitlines()[-1].strip())}:" in stderr


def test_qos_profile_name_has_a_pattern(tmp_path):
    text = _edited("qos_profiles:\n  roce:", "qos_profiles:\n  'Ro CE':").replace("qos: roce", "qos: 'Ro CE'")
    stderr = _refused(tmp_path, text, "plan")
    assert "qos_profiles.Ro CE" in stderr and "lower-case letters" in stderr


@pytest.mark.parametrize(
    ("word", "written"),
    [(w, w) for w in ("no", "off", "yes", "on", "none", "n", "y")] + [(w, f"'{w}'") for w in ("true", "false", "null")],
)
def test_a_qos_profile_named_like_a_yaml11_boolean_is_refused(word, written):
    """`qos: no` reads as "no QoS" to a person and to YAML 1.1 (Ansible), yet with a profile named `no` the
    plane got that profile's lossless PFC queues, silently. (Unquoted, `true`, `false` and `null` are not
    text in YAML 1.2 and were refused already; quoted, they are names like `no`.)"""
    text = _edited("qos_profiles:\n  roce:", f"qos_profiles:\n  {written}:").replace("qos: roce", f"qos: {written}")
    with pytest.raises(IntentError) as info:
        load_intent_text(text, "fabric.yml")
    rows = [r for r in info.value.render().splitlines() if f": qos_profiles.{word}: " in r]
    assert len(rows) == 1, info.value.render()
    line = _line(text, f"  {written}:")
    assert rows[0].startswith(f"error: fabric.yml:{line}: qos_profiles.{word}: a QoS profile may not be named")
    assert "YAML 1.1 (Ansible, PyYAML) reads it as" in rows[0] and f"`qos: {word}` as no QoS" in rows[0]


def test_a_qos_profile_name_holding_a_yaml11_word_is_accepted():
    text = _edited("qos_profiles:\n  roce:", "qos_profiles:\n  no-drop:").replace("qos: roce", "qos: no-drop")
    assert "no-drop" in load_intent_text(text, "fabric.yml").intent.qos_profiles


def test_escape_sequences_are_not_echoed(tmp_path):
    """A value that would retitle or clear the operator's terminal is shown escaped."""
    text = _edited("speed: 400G", 'speed: "\\e]0;pwned\\a\\e[2J400G"')
    stderr = _refused(tmp_path, text, "plan")
    assert "\x1b" not in stderr and "\x07" not in stderr
    assert "\\x1b]0;pwned\\x07\\x1b[2J400G" in stderr, stderr


# (id, old text, new text, field, words): values of the wrong kind that planned without a word before.
WRONG_KIND = [
    (
        "multicast ntp",
        "ntp_servers: [172.20.0.1]",
        "ntp_servers: [224.0.1.1]",
        "management.ntp_servers[0]",
        "multicast",
    ),
    ("loopback ntp", "ntp_servers: [172.20.0.1]", "ntp_servers: [127.0.0.1]", "management.ntp_servers[0]", "loopback"),
    (
        "link-local dns",
        "domain: lab",
        "dns_servers: [169.254.1.1]\n  domain: lab",
        "management.dns_servers[0]",
        "link-local",
    ),
    (
        "class E pool",
        "loopbacks: 10.0.0.0/24",
        "loopbacks: 240.0.0.0/24",
        "planes.compute.addressing.loopbacks",
        "class E",
    ),
    (
        "broadcast ntp",
        "ntp_servers: [172.20.0.1]",
        "ntp_servers: [255.255.255.255]",
        "management.ntp_servers[0]",
        "broadcast",
    ),
    (
        "this-network pool",
        "hosts: 10.10.0.0/16",
        "hosts: 0.0.0.0/16",
        "planes.compute.addressing.hosts",
        "this network",
    ),
    (
        "unspecified ntp",
        "ntp_servers: [172.20.0.1]",
        "ntp_servers: [0.0.0.0]",
        "management.ntp_servers[0]",
        "this network",
    ),
    (
        "multicast pool",
        "edge_p2p: 10.250.0.0/29",
        "edge_p2p: 239.0.0.0/29",
        "planes.business.border.edge_p2p",
        "multicast",
    ),
    (
        "gateway on the network address",
        "subnet: 172.20.0.0/24",
        "subnet: 172.20.0.0/24\n    gateway: 172.20.0.0",
        "planes.oob.gateway",
        "network address",
    ),
    (
        "server named like a leaf",
        'naming: "stor{index:02d}"',
        'naming: "sto-leaf{index}"',
        "server_groups[1].naming",
        "the storage leaf switch sto-leaf1",
    ),
    (
        "edge router named like a server",
        "{name: edge1, asn: 65000}",
        "{name: gpu01, asn: 65000}",
        "planes.business.border.edge_routers[0].name",
        "server gpu01",
    ),
    (
        "edge router named like a switch",
        "{name: edge1, asn: 65000}",
        "{name: biz-border1, asn: 65000}",
        "planes.business.border.edge_routers[0].name",
        "business border switch",
    ),
    (
        "NIC named lo",
        "interfaces: [eth4]",
        "interfaces: [lo]",
        "server_groups[0].nics.business.interfaces[0]",
        "reserves",
    ),
    (
        "NIC named all",
        "interfaces: [eth3]",
        "interfaces: [all]",
        "server_groups[0].nics.storage.interfaces[0]",
        "reserves",
    ),
    (
        "NIC named default",
        "interfaces: [eth4]",
        "interfaces: [default]",
        "server_groups[0].nics.business.interfaces[0]",
        "reserves",
    ),
]


@pytest.mark.parametrize(("old", "new", "field", "words"), [c[1:] for c in WRONG_KIND], ids=[c[0] for c in WRONG_KIND])
def test_values_of_the_wrong_kind_are_refused(tmp_path, old, new, field, words):
    text = _edited(old, new)
    stderr = _refused(tmp_path, text, "verify", "--configs", str(tmp_path))
    assert f": {field}: " in stderr and words in stderr and "fix:" in stderr, stderr
    line = int(re.search(rf"fabric\.yml:(\d+): {re.escape(field)}:", stderr).group(1))  # type: ignore[union-attr]
    key = re.sub(r"\[\d+\]$", "", field).rsplit(".", 1)[-1]
    assert key in text.splitlines()[line - 1], (line, stderr)


def test_a_server_named_like_a_leaf_no_longer_replaces_it_in_the_inventory(tmp_path):
    """Before, `sto-leaf1` the server took the switch's place among the Nornir hosts."""
    text = _edited('naming: "stor{index:02d}"', 'naming: "sto-leaf{index}"')
    with pytest.raises(IntentError) as info:
        from gpufabric.plan import build_plan

        build_plan(load_intent_text(text, "f.yml"))
    assert [p.field for p in info.value.problems] == ["server_groups[1].naming"]


@pytest.mark.parametrize("kind", ["fifo", "device", "large"])
def test_files_that_are_not_an_intent_end_quickly(tmp_path, kind):
    """A FIFO with no writer hung the read; /dev/zero ran out of memory; both are refused before reading."""
    import os
    import time

    if kind == "fifo":
        target = tmp_path / "fabric.yml"
        os.mkfifo(target)
        words = "is a FIFO, not a regular file"
    elif kind == "device":
        target = Path("/dev/zero")
        words = "is a device, not a regular file"
    else:
        target = tmp_path / "fabric.yml"
        target.write_text("# " + "x" * (5 << 20) + "\n")
        words = "is larger than 4 MiB"
    started = time.monotonic()
    done = subprocess.run(
        ["gpufabric", "plan", str(target)], check=False, capture_output=True, text=True, timeout=30, env=cli_env()
    )
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def test_fan_out_is_bounded_before_servers_are_built(tmp_path):
    """256 groups of 65,536 servers ran 106 s into MemoryError; now one located error at once."""
    import time

    import yaml
    from conftest import default_doc

    doc = default_doc()
    group = {**doc["server_groups"][1], "count": 65536}
    doc["server_groups"] = [
        doc["server_groups"][0],
        *({**group, "name": f"s{i}", "naming": f"s{i}-{{index}}"} for i in range(256)),
    ]
    f = tmp_path / "fabric.yml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    started = time.monotonic()
    done = subprocess.run(
        ["gpufabric", "plan", str(f)],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
        env=cli_env(),
        preexec_fn=_two_gib,  # the bound a malformed intent must stay within
    )
    assert done.returncode == 2, done.stderr
    assert "server_groups[1].count: the storage and CPU groups add up to 16,777,216 servers" in done.stderr
    assert "at most 4,096 storage and CPU servers" in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def test_gpu_servers_are_bounded_at_the_intents_limit():
    """16,384 GPU servers (131,072 GPUs at 8 each) pass the bound, one more does not; the storage
    servers beside them are bounded on their own."""
    from conftest import default_doc

    from gpufabric.intent.loader import load_intent_text
    from gpufabric.intent.rules import MAX_GPU_SERVERS, MAX_OTHER_SERVERS

    def problems(gpus: int, storage: int) -> list[str]:
        import yaml

        from gpufabric.errors import IntentError

        doc = default_doc()
        doc["server_groups"][0]["build_out"] = gpus
        doc["server_groups"][1]["build_out"] = storage
        try:
            load_intent_text(yaml.safe_dump(doc, sort_keys=False), "<test>")
        except IntentError as exc:
            return [f"{p.field}: {p.message}" for p in exc.problems if "servers per intent" in p.message]
        return []

    assert problems(MAX_GPU_SERVERS, MAX_OTHER_SERVERS) == []
    over = problems(MAX_GPU_SERVERS + 1, 2)
    assert len(over) == 1 and "server_groups[0].count: the GPU groups add up to 16,385 servers" in over[0], over
    assert "at most 16,384 GPU servers" in over[0]
    over = problems(4, MAX_OTHER_SERVERS + 1)
    assert len(over) == 1 and "the storage and CPU groups add up to 4,097 servers" in over[0], over


def _two_gib() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.slow
def test_template_syntax_reaching_the_static_inventory_is_unsafe_for_ansible(tmp_path, default_plan):
    """Defence behind the intent's refusal: should a value with template syntax reach the exported
    inventory, Ansible itself (its ad-hoc `debug`, which templates the variable) reads it literally."""
    import copy

    from gpufabric.export.inventory import render_ansible

    plan = copy.deepcopy(default_plan)
    plan.servers[0].gpu_model = "{{ 6 * 7 }}"
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(render_ansible(plan))
    assert "gpufabric_gpu_model: !unsafe '{{ 6 * 7 }}'" in inventory.read_text()
    done = run(
        "ansible",
        "-i",
        str(inventory),
        plan.servers[0].name,
        "-m",
        "debug",
        "-a",
        "var=gpufabric_gpu_model",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert '"gpufabric_gpu_model": "{{ 6 * 7 }}"' in done.stdout, done.stdout
    # Unmarked, Ansible would have evaluated it: the test proves the marking, not a quiet Ansible.
    inventory.write_text(inventory.read_text().replace("!unsafe ", ""))
    bare = run(
        "ansible",
        "-i",
        str(inventory),
        plan.servers[0].name,
        "-m",
        "debug",
        "-a",
        "var=gpufabric_gpu_model",
        cwd=tmp_path,
    )
    assert '"gpufabric_gpu_model": 42' in bare.stdout, bare.stdout


def test_a_number_of_thousands_of_digits_is_an_error_not_a_crash(tmp_path):
    """Python refuses to convert 4,300 digits or more; that ended as an internal error (exit 1)."""
    stderr = _refused(tmp_path, _edited("count: 4\n", "count: " + "9" * 5000 + "\n"), "check")
    assert "server_groups[0].count: '99999" in stderr and "is not an integer" in stderr


@pytest.mark.slow
def test_template_syntax_reaching_the_inventory_plugin_stays_literal(tmp_path):
    """The dynamic plugin hands marked text to Ansible as unsafe (ansible-core 2.19 also distrusts plugin
    values by itself; older releases, which the project supports, evaluated them). A test double of the
    plan's inventory data, installed through sitecustomize, plants the value the intent would refuse."""
    (tmp_path / "sitecustomize.py").write_text(
        "import gpufabric.export.inventory as inv\n"
        "_build = inv.build\n"
        "def build(plan):\n"
        "    hosts = _build(plan)\n"
        "    for h in hosts:\n"
        "        if h.name == 'gpu01':\n"
        "            h.data['gpu_model'] = '{{ 6 * 7 }}'\n"
        "            h.data['nics'][0]['interface'] = '{% raw %}x'\n"
        "    return hosts\n"
        "inv.build = build\n"
    )
    import os

    from conftest import ROOT

    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", str(ROOT))])
    done = run(
        "ansible",
        "-i",
        str(INVENTORY / "gpufabric.yml"),
        "gpu01",
        "-m",
        "debug",
        "-a",
        "msg={{ [gpufabric_gpu_model, gpufabric_nics[0].interface] }}",
        PYTHONPATH=path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"{{ 6 * 7 }}"' in done.stdout and '"{% raw %}x"' in done.stdout, done.stdout


def _leaves(node: object, path: tuple = ()) -> list[tuple[tuple, object]]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(node, list):
        return [leaf for i, v in enumerate(node) for leaf in _leaves(v, (*path, i))]
    return [(path, node)]


@pytest.mark.slow
def test_every_number_and_boolean_of_the_default_fabric_refuses_yaml11_spellings():
    """Property over the whole default fabric: wherever it has a number or a boolean, the spellings
    YAML 1.1 would silently convert (yes, on, a leading zero, base 60, a decimal point) are refused at
    that field, never planned."""
    import yaml
    from conftest import default_doc, set_path

    from gpufabric.intent.errors import dotted

    doc = default_doc()
    typed = [(p, v) for p, v in _leaves(doc) if isinstance(v, int) and p[-1] not in ("tiers",)]
    assert len(typed) >= 30
    for path, value in typed:
        spellings = ["yes", "off"] if isinstance(value, bool) else ["on", f"0{value}", f"{value}.0", "1:30"]
        for spelling in spellings:
            text = yaml.safe_dump(set_path(doc, path, "@@X@@"), sort_keys=False).replace("'@@X@@'", spelling)
            with pytest.raises(IntentError) as info:
                load_intent_text(text, "f.yml")
            fields = [p.field for p in info.value.problems]
            assert dotted(path) in fields, (path, spelling, fields)


def test_a_key_with_brackets_is_named_as_written():
    """pydantic's own location parts are dropped, a user's key is not: it was reported as field '0'."""
    text = _edited("  - name: gpu\n", "  - name: gpu\n    x[1]: 1\n")
    with pytest.raises(IntentError) as info:
        load_intent_text(text, "f.yml")
    assert [(p.field, p.message) for p in info.value.problems] == [("server_groups[0].x[1]", "unknown field 'x[1]'")]
    assert info.value.line_of(info.value.problems[0].path) == _line(text, "x[1]: 1")
