"""The contract every registered platform keeps, built-in or third-party: one test, parametrized over the registry.

A platform is found only through the `gpufabric.platforms` entry points, so the last tests register one
(`acmeos`) from a temporary distribution on sys.path, with its own spec and template, and render it
without touching gpufabric.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import example_plan
from napalm.base import NetworkDriver

from gpufabric import platforms
from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_device
from gpufabric.fleet.candidates import candidate
from gpufabric.intent import load_intent, load_intent_text
from gpufabric.intent.loader import default_fabric_text
from gpufabric.plan import build_plan
from gpufabric.platforms import LoadBalancing, LosslessBuffers, Platform, PlatformFacts, templates_root
from gpufabric.platforms.spec import NoZtpFormError
from gpufabric.verify.checks import check_device
from gpufabric.verify.facts import SwitchFacts

ROOT = Path(__file__).resolve().parents[2]
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
def test_each_is_a_platform_subclass_with_sane_facts(name):
    found = platforms.platform(name)
    assert isinstance(found, Platform) and type(found) is not Platform
    facts = found.facts
    assert isinstance(facts, PlatformFacts) and facts.name == name
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.max_mtu = 1  # type: ignore[misc]
    assert facts.default_release in facts.releases
    assert facts.candidate_suffix in [suffix for suffix, _ in facts.outputs]
    assert len({suffix for suffix, _ in facts.outputs}) == len(facts.outputs)
    low, high = facts.confirm_timeout_range
    assert 0 < low < high
    assert facts.ecn_unit_bytes >= 1 and facts.max_mtu >= 1500


def test_no_fact_names_a_vendor_behaviour():
    """What differs in behaviour is a method an OS overrides: the facts hold no callables and no flag that
    names one vendor's buffer, load-balancing or reader."""
    fields = {f.name: f.type for f in dataclasses.fields(PlatformFacts)}
    retired = {"pause_buffer", "ingress_headroom", "cable_length", "adaptive_per_port", "linux_multipath_hash"}
    assert not retired & set(fields)
    assert not [n for n, t in fields.items() if "Callable" in str(t) or "Reader" in str(t)]


@pytest.mark.parametrize("name", platforms.names())
def test_the_templates_are_where_the_platform_loads_them(name):
    found = platforms.platform(name)
    loader = found.template_loader()
    if loader is None:  # a document-built platform renders without templates
        assert type(found).render is not Platform.render
        return
    assert found.facts.templates_dir is not None
    folder = templates_root() / found.facts.templates_dir
    missing = [template for _, template in found.facts.outputs if not (folder / template).is_file()]
    assert missing == []


@pytest.mark.parametrize("name", platforms.names())
@pytest.mark.parametrize("split", [1, 2, 4, 8])
def test_port_names_are_unique_over_a_cage_split(name, split):
    found = platforms.platform(name)
    ports = [found.port_name(cage, lane, split) for cage in range(1, 33) for lane in range(split)]
    assert len(set(ports)) == len(ports)


@pytest.mark.parametrize("name", [p.name for p in platforms.all_platforms() if p.facts.driver_class])
def test_the_named_driver_is_a_napalm_driver(name):
    module, _, cls = str(platforms.platform(name).facts.driver_class).partition(":")
    driver = getattr(importlib.import_module(module), cls)
    assert issubclass(driver, NetworkDriver)


@pytest.mark.parametrize("name", platforms.names())
def test_the_readers_read_a_rendered_switch_back(name, rendered_by_platform, tmp_path):
    found = platforms.platform(name)
    plan, index, device, rendered = rendered_by_platform[name]
    assert sorted(rendered) == sorted(found.files(device))
    for file, text in rendered.items():
        (tmp_path / file).write_text(text)
    facts = found.read_files(device, tmp_path)
    assert isinstance(facts, SwitchFacts)
    assert facts.hostname is not None and facts.hostname.value == device
    running = found.read_running(candidate(plan, index, device, secrets=EverySecret(), folder=tmp_path))
    assert isinstance(running, SwitchFacts)


@pytest.mark.parametrize("name", platforms.names())
def test_what_the_configuration_carries_is_what_verify_reads_back(name, rendered_by_platform, tmp_path):
    """Every buffer and load-balancing setting a platform says its configuration carries is found in its own
    rendered files: a method's answer and the templates cannot drift apart."""
    found = platforms.platform(name)
    plan, index, device, rendered = rendered_by_platform[name]
    for file, text in rendered.items():
        (tmp_path / file).write_text(text)
    ctx = build(plan, index.devices[device], index)
    facts = found.read_files(device, tmp_path)
    buffers, balancing = found.lossless_buffers(ctx), found.load_balancing(ctx)
    assert isinstance(buffers, LosslessBuffers) and isinstance(balancing, LoadBalancing)
    if buffers.cable_metres is not None:
        assert {f.value for f in facts.cable_length.values()} == {buffers.cable_metres}
    if buffers.pause_buffer is not None:
        tc, *sizes = buffers.pause_buffer
        assert facts.pause_buffer[tc].value == tuple(sizes)
    if buffers.headroom is not None:
        assert facts.headroom is not None and facts.headroom.value == buffers.headroom
    if balancing.multipath_hash is not None:
        assert facts.multipath_hash is not None and facts.multipath_hash.value == balancing.multipath_hash
    assert balancing.adaptive_ports <= set(facts.adaptive_ports)
    assert list(check_device(plan, ctx, facts)) == []


def test_the_base_class_does_the_common_thing():
    base = Platform(dataclasses.replace(platforms.platform("frr").facts, name="plainos"))
    assert base.port_name(3, 1, 4) == "swp3s1" and base.port_name(3, 0, 1) == "swp3"
    assert base.candidate("s1", {"s1.frr.conf": "conf", "s1.nft": "nft"}) == "conf"
    assert base.free_text_problem("hall B ; row 3") is None and base.role_problems(object()) == []
    assert base.lossless_qos() and not base.adaptive_routing() and base.template_filters() == {}
    assert base.read_lossless(None, ["swp1"]) is None and base.read_optics(None, ["swp1"]) is None
    assert base.judge is None
    with pytest.raises(NotImplementedError, match="plainos"):
        base.read_files("s1", Path("."))
    # A platform that does not classify its changes drains every one (the safe side), and no change is none.
    assert base.disruptions("") == ()
    assert [str(d) for d in base.disruptions("+ anything")] == [
        "unclassified: platform plainos does not classify its changes"
    ]
    with pytest.raises(NoZtpFormError, match=r"platform plainos .* has no zero-touch provisioning form"):
        base.ztp("s1", {}, "http://10.0.0.1:80/")


@pytest.mark.parametrize("name", platforms.names())
def test_each_reads_its_diffs_into_the_closed_set_of_reasons(name):
    """No change is no disruption; a line of text no rule knows is never taken for hitless."""
    from gpufabric.platforms.disruption import Disruption, Reason

    p = platforms.platform(name)
    assert p.disruptions("") == () and p.disruptions("\n  \n") == ()
    found = p.disruptions(
        "+ gpufabric-contract-unknown\n+gpufabric-contract-unknown\nnv set gpufabric-contract-unknown\n"
        'gpufabric-contract-unknown\n[{"op": "add", "path": "/GPUFABRIC_CONTRACT_UNKNOWN/x/y"}]'
    )
    assert found and all(isinstance(d, Disruption) and d.reason in Reason for d in found)


def test_an_unknown_platform_names_the_registered_ones():
    with pytest.raises(platforms.UnknownPlatformError, match="registered: cumulus, eos, nxos, frr, sonic"):
        platforms.platform("acmeos")


# A third-party distribution: its package (spec + template) and its dist-info declaring the entry point.
THIRD_PARTY_SPEC = """
from dataclasses import replace

from gpufabric.platforms import Platform, platform


class AcmeOs(Platform):
    \"\"\"Renders from its own package's templates; reads its files back as FRR's would (a test's shortcut).\"\"\"

    def read_files(self, device, folder):
        return platform("frr").read_files(device, folder)


PLATFORM = AcmeOs(
    replace(
        platform("frr").facts,
        name="acmeos",
        title="Acme OS (a test's platform)",
        outputs=((".acmeos.conf", "config.j2"),),
        candidate_suffix=".acmeos.conf",
        templates_dir=None,
        templates_package=__name__,
        rank=1000,
    )
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


def _distribution(root: Path, dist: str, entry: str) -> None:
    """A distribution's metadata folder declaring one entry point of the platforms group."""
    meta = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text(f"[gpufabric.platforms]\n{entry}\n")


@pytest.fixture
def registering(tmp_path, monkeypatch):
    """Installs distributions (name -> entry-point line) on sys.path for one test, the registry forgotten."""

    def install(**entries: str) -> None:
        for dist, entry in entries.items():
            _distribution(tmp_path, dist, entry)
        monkeypatch.syspath_prepend(str(tmp_path))
        platforms.reset()

    yield install
    monkeypatch.undo()
    platforms.reset()


def test_two_distributions_registering_one_platform_are_refused_by_name(registering):
    registering(
        **{
            "acme-one": "acmeos = acme_one:PLATFORM",
            "acme-two": "acmeos = acme_two.platform:PLATFORM",
        }
    )
    with pytest.raises(platforms.PlatformRegistryError) as caught:
        platforms.names()
    message = str(caught.value)
    assert "'acmeos' is registered twice" in message
    assert "acme-one (acmeos = acme_one:PLATFORM)" in message
    assert "acme-two (acmeos = acme_two.platform:PLATFORM)" in message
    with pytest.raises(platforms.PlatformRegistryError):
        platforms.platform("eos")  # nothing is chosen while the clash stands


def test_a_distribution_taking_a_built_in_name_is_refused_naming_gpufabric(registering):
    registering(**{"eos-impostor": "eos = eos_impostor:PLATFORM"})
    with pytest.raises(platforms.PlatformRegistryError) as caught:
        platforms.platform("eos")
    message = str(caught.value)
    assert "eos-impostor (eos = eos_impostor:PLATFORM)" in message
    assert "gpufabric (eos = gpufabric.nos.eos:PLATFORM)" in message


def test_an_entry_point_that_is_no_platform_is_refused(registering, tmp_path):
    (tmp_path / "not_a_platform.py").write_text("PLATFORM = {'name': 'oddos'}\n")
    registering(**{"odd-os": "oddos = not_a_platform:PLATFORM"})
    with pytest.raises(platforms.PlatformRegistryError, match=r"oddos = 'not_a_platform:PLATFORM'.*is not a Platform"):
        platforms.platform("oddos")
    sys.modules.pop("not_a_platform", None)


# What sits under the platform contract on the ground floor (pyproject.toml's import-linter layers).
GROUND_BELOW = ("gpufabric.errors", "gpufabric.files", "gpufabric.inputs", "gpufabric.yaml_lines", "gpufabric.outputs")


def test_the_layers_below_reach_an_os_only_through_the_registry():
    """The ground floor imports nothing of gpufabric above it, not even for the type checker, and no layer below
    the OS folders imports one: they ask `platform(name)`."""
    import grimp

    graph = grimp.build_graph("gpufabric", "nornir_tasks")
    upward = sorted(
        (module, imported)
        for module in graph.modules
        if module.startswith("gpufabric.platforms")
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("gpufabric.") and not imported.startswith(("gpufabric.platforms", *GROUND_BELOW))
    )
    assert upward == []
    into_an_os = sorted(
        (module, imported)
        for module in graph.modules
        if not module.startswith(("gpufabric.nos", "gpufabric.cli"))
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("gpufabric.nos")
    )
    assert into_an_os == []


def test_no_module_outside_the_os_folders_branches_on_a_vendor_name():
    """`if platform == "eos"` is a method the OS's subclass should override."""
    branch = re.compile(
        r"""(==|!=)\s*["'](cumulus|eos|nxos|sonic|frr)["']|["'](cumulus|eos|nxos|sonic|frr)["']\s*(==|!=)"""
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("gpufabric", "nornir_tasks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not {"nos", "platforms"} & set(path.relative_to(ROOT).parts)
        for n, row in enumerate(path.read_text().splitlines(), 1)
        if branch.search(row)
    ]
    assert offenders == []
