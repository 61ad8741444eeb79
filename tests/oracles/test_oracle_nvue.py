"""Every NVUE document gpufabric renders, judged by NVIDIA's object model of its pinned release.

The oracle (tests/oracles/nvue.py) is NVIDIA's: the `nvueschema` package's models are generated
from NVIDIA's NVUE OpenAPI documents. Nothing here compares an output with the code that made it.
"""

from __future__ import annotations

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_device
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.nos.cumulus.document import document
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from tests.conftest import ALL_INTENTS, INVENTORY, example_plan, plan_doc, sized

SMALL_INTENTS = [p for p in ALL_INTENTS if "32k" not in p.name]
LARGE = INVENTORY / "examples" / "three-tier-32k.yml"
RELEASES = platform("cumulus").facts.releases


def _plan(path, release: str | None = None) -> Plan:
    if release is None:
        return example_plan(path)  # one per test process, shared with the other files' per-example tests
    doc = yaml.safe_load(path.read_text())
    if release is not None:
        doc["platforms"] = {"cumulus": {"release": release}}
    return plan_doc(doc, path.name)


def _nvue_texts(plan: Plan) -> dict[str, str]:
    index = LinkIndex(plan)
    return {
        d.name: render_device(plan, d, index).files[f"{d.name}.yaml"] for d in plan.devices() if d.platform == "cumulus"
    }


def _findings(plan: Plan) -> dict[str, list[nvue.NvueFinding]]:
    release = plan.intent.release("cumulus")
    out = {}
    for name, text in _nvue_texts(plan).items():
        found = nvue.check(nvue.set_tree(text), release)
        if found:
            out[name] = found
    return out


@pytest.mark.parametrize("path", sized(SMALL_INTENTS), ids=lambda p: p.stem)
def test_every_rendered_nvue_document_fits_the_pinned_release(path):
    plan = _plan(path)
    assert _findings(plan) == {}


# The fast tier checks multi-vendor at the releases at either end of each generation (5.15 changed the
# model) and superpod-1su at one of them; the other cases run in the full suite.
GENERATION_ENDS = {RELEASES[0], "5.14", "5.15", RELEASES[-1]}
FAST_CASES = {("multi-vendor", r) for r in GENERATION_ENDS} | {("superpod-1su", "5.14")}


@pytest.mark.parametrize(
    ("name", "release"),
    [
        pytest.param(n, r, marks=() if (n, r) in FAST_CASES else pytest.mark.slow)
        for n in ("superpod-1su", "multi-vendor")
        for r in RELEASES
    ],
)
def test_every_supported_release_accepts_its_documents(name, release):
    """5.11 to 5.18: before and after 5.15 moved NTP, DNS, LLDP and the time zone under `system`,
    renamed `ip` to `ipv4` and replaced `enable: on` with `state: enabled`."""
    plan = _plan(INVENTORY / "examples" / f"{name}.yml", release)
    assert plan.intent.release("cumulus") == release
    texts = _nvue_texts(plan)
    assert texts
    assert _findings(plan) == {}


@pytest.mark.slow
def test_a_document_for_one_release_is_refused_by_the_other_generation():
    """The oracle tells the generations apart: proof that pinning matters."""
    plan = _plan(INVENTORY / "examples" / "superpod-1su.yml", "5.14")
    text = next(iter(_nvue_texts(plan).values()))
    found = nvue.check(nvue.set_tree(text), "5.16")
    paths = {f.path for f in found}
    assert "/system/timezone" in paths
    assert any(p.endswith("/ip") for p in paths)


@pytest.mark.slow
def test_the_32k_fabric_fits_its_release_in_memory_and_as_text():
    """1,280 switches: every tree against the model; the text of one switch per role read back equal."""
    plan = _plan(LARGE)
    release = plan.intent.release("cumulus")
    index = LinkIndex(plan)
    root = nvue.model(release)
    seen_roles: set[str] = set()
    bad: dict[str, list[nvue.NvueFinding]] = {}
    for d in plan.devices():
        ctx = build(plan, d, index)
        tree = document(ctx)
        walked: list[nvue.NvueFinding] = []
        nvue._walk(root, tree, "", walked)
        root.model_validate(tree)  # raises on any value the model refuses
        if walked:
            bad[d.name] = walked
        if d.role not in seen_roles:
            seen_roles.add(d.role)
            text = render_device(plan, d, index).files[f"{d.name}.yaml"]
            assert nvue.set_tree(text) == _plain(tree)
            assert nvue.check(nvue.set_tree(text), release) == []
    assert bad == {}
    assert seen_roles == {"leaf", "spine", "superspine"}


def _plain(tree):
    return {str(k): _plain(v) if isinstance(v, dict) else v for k, v in tree.items()}


def test_planted_unknown_key_is_caught():
    plan = _plan(INVENTORY / "examples" / "superpod-1su.yml")
    tree = nvue.set_tree(next(iter(_nvue_texts(plan).values())))
    tree["system"]["hostnme"] = "x"
    tree["interface"]["swp1"]["link"]["mtuu"] = 9216
    paths = {f.path for f in nvue.check(tree, plan.intent.release("cumulus"))}
    assert paths == {"/system/hostnme", "/interface/swp1/link/mtuu"}


def test_planted_wrong_value_is_caught():
    plan = _plan(INVENTORY / "examples" / "superpod-1su.yml")
    tree = nvue.set_tree(next(iter(_nvue_texts(plan).values())))
    tree["system"]["timezone"] = "UTC"  # not an IANA name in NVUE's list
    tree["interface"]["swp1"]["link"]["mtu"] = 99999  # above 9216
    found = nvue.check(tree, plan.intent.release("cumulus"))
    assert {f.path.split("/")[1] for f in found} == {"system", "interface"}
    assert any("timezone" in f.path for f in found)
    assert any("mtu" in f.path for f in found)


def test_on_and_off_are_read_as_text():
    assert nvue.set_tree("- set:\n    a: on\n    b: off\n    c: true\n") == {"a": "on", "b": "off", "c": True}
