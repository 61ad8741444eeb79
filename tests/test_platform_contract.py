"""The contract every registered platform keeps, built-in or third-party: one test, parametrized over the registry.

A platform is found only through the `gpufabric.platforms` entry points, so the last tests register one
(`acmeos`) from a temporary distribution on sys.path, with its own spec and template, and render it
without touching gpufabric.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import example_plan
from napalm.base import NetworkDriver

from gpufabric import platforms
from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.fleet.candidates import candidate
from gpufabric.intent import load_intent, load_intent_text
from gpufabric.intent.loader import default_fabric_text
from gpufabric.plan import build_plan
from gpufabric.platforms.spec import templates_root
from gpufabric.verify.facts import SwitchFacts

ROOT = Path(__file__).resolve().parents[1]
# Every built-in platform appears in one of these: the lab fabric (frr) and the multi-vendor example.
EXAMPLES = (None, *(str(ROOT / "inventory" / "examples" / f) for f in ("multi-vendor.yml", "sonic.yml")))


class EverySecret(dict):
    """Whatever secret the candidate names resolves (push reads them from the environment or a vault)."""

    def __contains__(self, key):
        return True

    def __missing__(self, key):
        return "test-secret"


@pytest.fixture(scope="module")
def rendered_by_platform():
    """One rendered switch per platform: (plan, index, device name, its files)."""
    found = {}
    for example in EXAMPLES:
        plan = build_plan(load_intent(None)) if example is None else example_plan(example)
        index = LinkIndex(plan)
        for device in plan.devices():
            if device.platform not in found:
                found[device.platform] = (plan, index, device.name, render_device(plan, device, index).files)
    return found


def test_the_built_ins_come_from_the_entry_points_in_their_rank():
    assert platforms.names() == ("cumulus", "eos", "nxos", "frr", "sonic")
    assert [p.name for p in platforms.all_platforms()] == list(platforms.names())


@pytest.mark.parametrize("name", platforms.names())
def test_the_spec_is_sane(name):
    spec = platforms.platform(name)
    assert spec.name == name
    assert spec.default_release in spec.releases
    assert spec.candidate_suffix in [suffix for suffix, _ in spec.outputs]
    assert len({suffix for suffix, _ in spec.outputs}) == len(spec.outputs)
    low, high = spec.confirm_timeout_range
    assert 0 < low < high
    assert spec.ecn_unit_bytes >= 1 and spec.max_mtu >= 1500


@pytest.mark.parametrize("name", platforms.names())
def test_the_templates_are_in_the_templates_tree(name):
    spec = platforms.platform(name)
    if spec.builder is not None:
        return
    assert spec.templates_dir is not None
    folder = templates_root() / spec.templates_dir
    missing = [template for _, template in spec.outputs if not (folder / template).is_file()]
    assert missing == []


@pytest.mark.parametrize("name", platforms.names())
@pytest.mark.parametrize("split", [1, 2, 4, 8])
def test_port_names_are_unique_over_a_cage_split(name, split):
    spec = platforms.platform(name)
    ports = [spec.port_name(cage, lane, split) for cage in range(1, 33) for lane in range(split)]
    assert len(set(ports)) == len(ports)


@pytest.mark.parametrize("name", [p.name for p in platforms.all_platforms() if p.driver_class])
def test_the_named_driver_is_a_napalm_driver(name):
    module, _, cls = platforms.platform(name).driver_class.partition(":")
    driver = getattr(importlib.import_module(module), cls)
    assert issubclass(driver, NetworkDriver)


@pytest.mark.parametrize("name", platforms.names())
def test_the_readers_read_a_rendered_switch_back(name, rendered_by_platform, tmp_path):
    spec = platforms.platform(name)
    plan, index, device, rendered = rendered_by_platform[name]
    for file, text in rendered.items():
        (tmp_path / file).write_text(text)
    facts = spec.reader(device, tmp_path)
    assert isinstance(facts, SwitchFacts)
    assert facts.hostname is not None and facts.hostname.value == device
    running = spec.running_reader(candidate(plan, index, device, secrets=EverySecret(), folder=tmp_path))
    assert isinstance(running, SwitchFacts)


def test_an_unknown_platform_names_the_registered_ones():
    with pytest.raises(platforms.UnknownPlatformError, match="registered: cumulus, eos, nxos, frr, sonic"):
        platforms.platform("acmeos")


# A third-party distribution: its package (spec + template) and its dist-info declaring the entry point.
THIRD_PARTY_SPEC = """
from dataclasses import replace

from gpufabric.platforms import platform

PLATFORM = replace(
    platform("frr"),
    name="acmeos",
    title="Acme OS (a test's platform)",
    outputs=((".acmeos.conf", "config.j2"),),
    candidate_suffix=".acmeos.conf",
    templates_dir=None,
    templates_package=__name__,
    assemble_candidate=None,
    rank=1000,
)
"""
THIRD_PARTY_TEMPLATE = "! rendered by the acmeos platform's own template\nhostname {{ d.name }}\n"


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    package = tmp_path / "gpufabric_acmeos_test"
    (package / "templates").mkdir(parents=True)
    (package / "__init__.py").write_text(THIRD_PARTY_SPEC)
    (package / "templates" / "config.j2").write_text(THIRD_PARTY_TEMPLATE)
    meta = tmp_path / "gpufabric_acmeos_test-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: gpufabric-acmeos-test\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text("[gpufabric.platforms]\nacmeos = gpufabric_acmeos_test:PLATFORM\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    platforms.reset()
    yield
    monkeypatch.undo()
    sys.modules.pop("gpufabric_acmeos_test", None)
    platforms.reset()


def _lab_fabric_with(leaf_platform: str) -> str:
    text, _ = default_fabric_text()
    head = "leaf:  {platform: frr, model: lab-400g-32"
    assert head in text
    return text.replace(head, f"leaf:  {{platform: {leaf_platform}, model: lab-400g-32", 1)


def test_a_third_party_platform_is_accepted_and_rendered_by_its_own_template(third_party):
    assert platforms.names() == ("cumulus", "eos", "nxos", "frr", "sonic", "acmeos")
    plan = build_plan(load_intent_text(_lab_fabric_with("acmeos"), "acmeos.yml"))
    index = LinkIndex(plan)
    leaves = [d for d in plan.devices() if d.platform == "acmeos"]
    assert leaves
    rendered = render_device(plan, leaves[0], index).files
    assert rendered == {
        f"{leaves[0].name}.acmeos.conf": textwrap.dedent(f"""\
            ! rendered by the acmeos platform's own template
            hostname {leaves[0].name}
            """)
    }


def test_an_unregistered_platform_is_a_located_intent_error():
    from gpufabric.intent.errors import IntentError

    with pytest.raises(IntentError) as caught:
        load_intent_text(_lab_fabric_with("acmeos"), "acmeos.yml")
    message = str(caught.value)
    assert "'acmeos' is not a registered platform: cumulus, eos, nxos, frr, sonic" in message
    assert "acmeos.yml" in message and "platform" in message
