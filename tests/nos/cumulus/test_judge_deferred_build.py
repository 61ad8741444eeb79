"""NVIDIA's model with only its root built judges as the fully built model does.

`judge.model` defines the release's 741 classes with pydantic's `defer_build` and builds the root
alone. These tests load the same release a second time the ordinary way (every class built as it is
defined) and hold the two to the same fields, the same screen verdicts and the same messages on a
seeded set of broken documents, so the deferral can never change a finding.
"""

from __future__ import annotations

import copy
import importlib.util
import random
import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from conftest import INVENTORY
from pydantic import BaseModel, ValidationError
from render_helpers import render_into

from gpufabric.intent import load_intent
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.plan import build_plan

pytest.importorskip("nvueschema")

SWITCH = "cmp-su1-leaf1"
JUNK: list[Any] = ["x y!", "", -1, 0, 4294967296, True, None, 2.5, [1, "a"], {}, {"no-such-key": 1}, "on"]


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> tuple[dict[str, Any], str]:
    plan = build_plan(load_intent(str(INVENTORY / "examples" / "multi-vendor.yml")))
    folder = tmp_path_factory.mktemp("multi-vendor")
    render_into(plan, folder)
    return nvue.set_tree((folder / f"{SWITCH}.yaml").read_text()), plan.intent.release("cumulus")


def _built_the_ordinary_way(release: str) -> Any:
    """The release's module loaded again under another name, each class built as it is defined."""
    name = "nvueschema.models.v" + release.replace(".", "_")
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    again = importlib.util.spec_from_file_location(name + "_built", spec.origin)
    assert again is not None and again.loader is not None
    module = importlib.util.module_from_spec(again)
    sys.modules[again.name] = module  # pydantic resolves the annotations in the module's namespace
    try:
        again.loader.exec_module(module)
    finally:
        del sys.modules[again.name]
    return module


def _classes(module: Any) -> dict[str, type[BaseModel]]:
    return {
        name: c
        for name, c in vars(module).items()
        if isinstance(c, type) and issubclass(c, BaseModel) and c.__module__ == module.__name__
    }


def _errors(root: type[BaseModel], tree: dict[str, Any]) -> list[tuple[Any, ...]]:
    try:
        root.model_validate(tree)
    except ValidationError as exc:
        # A place inside NVIDIA's validators names the function, at its address in this copy.
        return [(re.sub(" at 0x[0-9a-f]+", "", repr(e["loc"])), e["msg"], e["type"]) for e in exc.errors()]
    return []


def _broken(tree: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    out = copy.deepcopy(tree)
    places: list[tuple[Any, ...]] = []
    todo: list[tuple[Any, tuple[Any, ...]]] = [(out, ())]
    while todo:
        node, path = todo.pop()
        for key, sub in node.items():
            places.append((*path, key))
            if isinstance(sub, dict):
                todo.append((sub, (*path, key)))
    for _ in range(rng.choice((1, 2))):
        *above, last = rng.choice(sorted(places, key=repr))
        node = out
        for key in above:
            node = node[key]
        if isinstance(node, dict) and last in node:
            node[last] = copy.deepcopy(rng.choice(JUNK))
    return out


def test_the_deferred_model_has_the_fields_and_verdicts_of_the_built_one(document):
    tree, release = document
    deferred = nvue.model(release)
    built = _built_the_ordinary_way(release)
    ours, theirs = _classes(sys.modules[deferred.__module__]), _classes(built)
    assert len(ours) == len(theirs) == 741
    for name, cls in theirs.items():  # the key walk reads these: the same key names and shapes
        assert {k: v and v[0] for k, v in nvue._fields(ours[name]).items()} == {
            k: v and v[0] for k, v in nvue._fields(cls).items()
        }, name
    screens = (nvue._screen(deferred), nvue._screen(built.NvueConfig))
    assert screens[0] is not None and screens[1] is not None
    rng = random.Random(7)
    differing = 0
    for _ in range(120):
        broken = _broken(tree, rng)
        expected = _errors(built.NvueConfig, broken)
        assert _errors(deferred, broken) == expected
        verdicts = []
        for screen in screens:
            try:
                screen.validate_python(broken)
                verdicts.append(True)
            except ValidationError:
                verdicts.append(False)
        assert verdicts[0] == verdicts[1]
        differing += bool(expected)
    assert differing > 40  # the model refuses many of them: the comparison is not of empty lists


def test_a_fresh_process_builds_only_the_root(document):
    """The deferral holds where `verify` builds the model (a fresh process): the root is ready to
    validate, the classes below it are left for their first use, and the root still judges."""
    _, release = document
    code = textwrap.dedent(
        f"""
        import sys
        from pydantic import BaseModel
        from gpufabric.nos.cumulus import judge
        root = judge.model({release!r})
        module = sys.modules[root.__module__]
        built = [n for n, c in vars(module).items() if isinstance(c, type) and issubclass(c, BaseModel)
                 and c.__module__ == module.__name__ and c.__pydantic_complete__]
        print(built, BaseModel.model_config.get("defer_build"))
        print(judge.check({{"interface": {{"swp1": {{"link": {{"mtu": "x"}}}}}}}}, {release!r}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    built, findings = out.splitlines()
    assert built == "['NvueConfig'] None"  # and BaseModel's own config is as it was
    assert "/interface/swp1/link/mtu" in findings and "valid integer" in findings


def test_a_finding_s_path_leaves_out_the_validators_pydantic_names_in_its_location():
    from gpufabric.nos.cumulus.judge import nvue_path

    wrapper = "function-before[functools.partial(<function _validate_string at 0x7f3a2c1d0e50>, pattern='x')]"
    assert nvue_path(("interface", "swp1", "description", wrapper)) == "/interface/swp1/description"
    assert nvue_path(("router", "bgp", 0, "str")) == "/router/bgp/0/str"
