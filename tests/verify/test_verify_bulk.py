"""NVIDIA's model judges every Cumulus file `verify` reads, however many and however alike they are.

`verify` shares one reading of a file between its reader and the vendor's judge, spreads the files
over forked workers, and screens each document with a plain-dict form of NVIDIA's model before the
model itself words a refusal. None of that may let a broken document through: one bad value among
many identical good documents is found, in sequence and in parallel, and the screen agrees with
the key walk and the model on every document of a seeded set of broken ones.
"""

from __future__ import annotations

import copy
import random
import shutil
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from conftest import INVENTORY
from pydantic import BaseModel, ValidationError
from render_helpers import render_into

from gpufabric.config.context import LinkIndex, build
from gpufabric.intent import load_intent
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.nos.cumulus.verify import read_nvue
from gpufabric.plan import build_plan
from gpufabric.verify import runner
from gpufabric.verify.runner import verify

GOOD = "      snmp-server:\n        state: enabled\n"
BAD = "      snmp-server:\n        state: enabeld\n"  # the same length: no size or shape tells them apart
SWITCH = "cmp-su1-leaf1"


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    plan = build_plan(load_intent(str(INVENTORY / "examples" / "multi-vendor.yml")))
    folder = tmp_path_factory.mktemp("multi-vendor")
    render_into(plan, folder)
    return plan, folder


def _context(plan):
    return build(plan, next(d for d in plan.devices() if d.name == SWITCH), LinkIndex(plan))


def _copies(folder: Path, into: Path, count: int, broken: int) -> list[Path]:
    """`count` byte-identical copies of one switch's document; the `broken` one with the NVUE typo."""
    text = (folder / f"{SWITCH}.yaml").read_text()
    assert GOOD in text
    into.mkdir()
    paths = []
    for i in range(count):
        path = into / f"copy{i:03}.yaml"
        path.write_text(text.replace(GOOD, BAD, 1) if i == broken else text)
        paths.append(path)
    return paths


def test_one_broken_document_among_identical_good_ones_is_found(fabric, tmp_path):
    plan, folder = fabric
    ctx = _context(plan)
    paths = _copies(folder, tmp_path / "copies", 60, broken=37)
    judged = {}
    for path in paths:  # as `verify` does: the reader, then the judge, file by file
        read_nvue(SWITCH, path)
        judged[path.name] = nvue.judge(ctx, path)
    assert {name for name, found in judged.items() if found} == {"copy037.yaml"}
    (finding,) = judged["copy037.yaml"]
    line = paths[37].read_text().splitlines().index("        state: enabeld") + 1
    assert (finding.check, finding.line) == ("vendor-nvue", line)
    assert "/system/snmp-server/state" in finding.expected and "enabled" in finding.found


def test_the_judge_reads_the_file_it_is_given_not_the_one_the_reader_read_last(fabric, tmp_path):
    plan, folder = fabric
    ctx = _context(plan)
    good, bad = _copies(folder, tmp_path / "copies", 2, broken=1)
    read_nvue(SWITCH, good)
    assert len(nvue.judge(ctx, bad)) == 1
    read_nvue(SWITCH, bad)
    assert nvue.judge(ctx, good) == []


def test_forked_workers_judge_every_file_and_find_the_broken_one(fabric, tmp_path, monkeypatch):
    plan, folder = fabric
    changed = tmp_path / "configs"
    shutil.copytree(folder, changed)
    target = changed / f"{SWITCH}.yaml"
    target.write_text(target.read_text().replace(GOOD, BAD, 1))
    monkeypatch.setattr(runner, "PARALLEL_FROM", 1)  # the small fabric in chunks of two, on two workers
    monkeypatch.setattr(runner, "CHUNK", 2)
    report = verify(plan, changed, workers=2)
    cumulus = sorted(d.name for d in plan.devices() if d.platform == "cumulus")
    assert report.judged["cumulus"] == len(cumulus) > 2
    assert [(f.check, f.device) for f in report.findings] == [("vendor-nvue", SWITCH)]


# The judge before the screen: a walk of every key by the models' annotations, then NVIDIA's model
# on every document. The screen may only make the same findings faster.
def _reference(tree: dict[str, Any], release: str) -> list[nvue.NvueFinding]:
    found: list[nvue.NvueFinding] = []
    _walk(nvue.model(release), tree, "", found)
    try:
        nvue.model(release).model_validate(tree)
    except ValidationError as exc:
        for err in exc.errors():
            found.append(nvue.NvueFinding(nvue.nvue_path(err["loc"]), err["msg"][:160]))
    return found


def _members(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _walk(node: type[BaseModel], data: dict[str, Any], path: str, out: list[nvue.NvueFinding]) -> None:
    fields = {(f.alias or name): f for name, f in node.model_fields.items()}
    for key, value in data.items():
        if str(key) not in fields:
            out.append(nvue.NvueFinding(f"{path}/{key}", f"not a key of {path or '/'} in this release's object model"))
        else:
            _value(fields[str(key)].annotation, value, f"{path}/{key}", out)


def _value(annotation: Any, value: Any, path: str, out: list[nvue.NvueFinding]) -> None:
    if not isinstance(value, dict):
        return
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            _walk(member, value, path, out)
            return
        if typing.get_origin(member) is dict:
            for key, sub in value.items():
                _value(typing.get_args(member)[1], sub, f"{path}/{key}", out)
            return


JUNK: list[Any] = ["x y!", "", -1, 0, 4294967296, True, False, None, 2.5, [1, "a"], {}, {"no-such-key": 1}, "on"]


def _places(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if not isinstance(node, dict):
        return [path]
    return [path] + [p for key, sub in node.items() for p in _places(sub, (*path, key))]


def _broken(tree: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    out = copy.deepcopy(tree)
    for _ in range(rng.choice((1, 1, 2))):
        path = rng.choice(_places(out)[1:])
        node = out
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = copy.deepcopy(rng.choice(JUNK))
    return out


def test_the_screen_and_the_model_agree_on_broken_documents(fabric):
    plan, folder = fabric
    release = _context(plan).release
    tree = nvue.set_tree((folder / f"{SWITCH}.yaml").read_text())
    assert nvue.check(tree, release) == _reference(tree, release) == []
    rng = random.Random(41)
    refused = 0
    for _ in range(150):
        broken = _broken(tree, rng)
        expected = _reference(broken, release)
        assert nvue.check(broken, release) == expected
        try:
            nvue._screen(nvue.model(release)).validate_python(broken)
            screened = False
        except ValidationError:
            screened = True
        # The screen passes a document exactly when the walk and the model find nothing in it.
        assert screened == bool(expected)
        refused += any(not f.problem.startswith("not a key of") for f in expected)
    assert refused > 50  # the model itself refuses many of them: not only unknown keys
