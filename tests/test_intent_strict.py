"""Inputs that would silently change the network: each is refused through the real CLI with exit 2,
the file and line, the field, and what to write instead; never a traceback.

The intent is read as YAML 1.2's core schema with strict types. Under PyYAML's YAML 1.1 reading,
`count: yes` planned one server, `count: 010` eight, `roce_dscp: 024` moved RoCE to DSCP 20,
`roce_priority: on` gave 1, `ecmp: 1:30` gave 90 and `count: 4.0` was 4.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import INVENTORY, run

from gpufabric.intent import IntentError, load_intent_text

DEFAULT = (INVENTORY / "fabric.yml").read_text()


def _edited(old: str, new: str) -> str:
    assert DEFAULT.count(old) >= 1, old
    return DEFAULT.replace(old, new, 1)


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _cli(tmp_path: Path, text: str, *args: str) -> tuple[int, str]:
    f = tmp_path / "fabric.yml"
    f.write_text(text)
    done = run("gpufabric", *args, str(f))
    assert "Traceback" not in done.stdout + done.stderr
    return done.returncode, done.stderr.replace(str(f), "fabric.yml")


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
    code, stderr = _cli(tmp_path, text, "plan")
    assert code == 2, stderr
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
    code, stderr = _cli(tmp_path, text, "plan")
    assert code == 2
    assert f"{field}: holds template syntax" in stderr, stderr
    assert f"fabric.yml:{_line(text, new.splitlines()[-1].strip())}:" in stderr


def test_qos_profile_name_has_a_pattern(tmp_path):
    text = _edited("qos_profiles:\n  roce:", "qos_profiles:\n  'Ro CE':").replace("qos: roce", "qos: 'Ro CE'")
    code, stderr = _cli(tmp_path, text, "plan")
    assert code == 2
    assert "qos_profiles.Ro CE" in stderr and "lower-case letters" in stderr


def test_escape_sequences_are_not_echoed(tmp_path):
    """A value that would retitle or clear the operator's terminal is shown escaped."""
    text = _edited("speed: 400G", 'speed: "\\e]0;pwned\\a\\e[2J400G"')
    code, stderr = _cli(tmp_path, text, "plan")
    assert code == 2
    assert "\x1b" not in stderr and "\x07" not in stderr
    assert "\\x1b]0;pwned\\x07\\x1b[2J400G" in stderr, stderr
