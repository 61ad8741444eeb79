"""`gpufabric schema`, the intent's JSON Schema an editor's YAML language server checks a file against, judged
by a validator no one here wrote (jsonschema's Draft 2020-12): every intent gpufabric ships and the
tutorial's are valid under it, the spellings the intent takes for speeds, ratios and ASN ranges are
too, and intents gpufabric refuses for a reason the schema can say are refused by it as well.

The files are read as gpufabric and the YAML language server read them, YAML 1.2's core schema (an
unquoted `3:1` is text, not the base-60 number PyYAML's YAML 1.1 makes of it).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ALL_INTENTS, HUGE_DESIGNS, ROOT, SHIPPED_EXAMPLES, run_in_process
from jsonschema import Draft202012Validator, ValidationError

from gpufabric.intent.errors import IntentError
from gpufabric.intent.loader import load_intent_text
from gpufabric.yaml_lines import load_yaml

DEFAULT = ROOT / "gpufabric" / "data" / "fabric.yml"
TUTORIAL = ROOT / "docs" / "tutorial.md"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    done = run_in_process("gpufabric", "schema")
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    Draft202012Validator.check_schema(schema)  # a schema the dialect allows, before anything is judged by it
    return Draft202012Validator(schema)


def _read(text: str, name: str) -> Any:
    data, _lines = load_yaml(text, name, core_schema=True)
    return data


def _tutorial_intent() -> str:
    (block,) = re.findall(r"```yaml\n(.*?)```", TUTORIAL.read_text(), re.S)
    return block


def _errors(validator: Draft202012Validator, doc: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def _where(error: ValidationError) -> str:
    return "/".join(map(str, error.absolute_path))


def _leaves(errors: Iterable[ValidationError]) -> Iterator[ValidationError]:
    """The errors inside each anyOf/oneOf (a plane is one of several forms): where the schema says it failed."""
    for error in errors:
        if error.context:
            yield from _leaves(error.context)
        else:
            yield error


# The huge designs too: reading one is quick, only planning and rendering it is not.
SHIPPED = [*ALL_INTENTS, *(p for p in SHIPPED_EXAMPLES if p.stem in HUGE_DESIGNS), DEFAULT]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_intent_is_valid_under_the_schema(validator, path: Path):
    text = path.read_text()
    assert _checks(text)  # gpufabric takes it: so must the schema
    assert _errors(validator, _read(text, str(path))) == []


def test_the_tutorial_s_intent_is_valid_under_the_schema(validator):
    doc = _read(_tutorial_intent(), "docs/tutorial.md")
    assert doc["server_groups"][0]["nics"]["compute"]["speed"] == "400G"  # the form that was refused
    assert _errors(validator, doc) == []


def _default() -> dict[str, Any]:
    return _read((ROOT / "inventory" / "fabric.yml").read_text(), "fabric.yml")


def _with(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(_default())
    at = doc
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return doc


SPEED = ("server_groups", 0, "nics", "compute", "speed")
PORT_SPEED = ("planes", "compute", "switches", "leaf", "port_speed")
RATIO = ("planes", "compute", "oversubscription")
ASN_POOL = ("planes", "compute", "routing", "asn_pool")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (SPEED, "400G"), (SPEED, "400g"), (SPEED, "400Gbps"), (SPEED, "400 G"), (SPEED, 400), (SPEED, "400Gb"),
        (PORT_SPEED, "400G"), (PORT_SPEED, "0.4T"), (PORT_SPEED, "400000M"), (PORT_SPEED, "400Gbps"),
        (RATIO, "1:1"), (RATIO, "3:1"), (RATIO, "1.5:1"), (RATIO, "3 : 1"), (RATIO, 3), (RATIO, 2.5), (RATIO, "2"),
        (ASN_POOL, "4200000000-4200000999"), (ASN_POOL, "4200000000 - 4200000999"),
        (ASN_POOL, {"first": 4200000000, "last": 4200000999}),
    ],
)  # fmt: skip
def test_the_spellings_the_intent_takes_are_valid_under_the_schema(validator, path, value):
    doc = _with(path, value)
    assert _errors(validator, doc) == [], (path, value)
    assert _checks(json.dumps(doc)), (path, value)  # JSON is YAML: the same document through gpufabric's reader


def _checks(text: str) -> bool:
    """Whether gpufabric loads the intent (schema and cross-field rules)."""
    try:
        load_intent_text(text, "mutated.yml")
    except IntentError:
        return False
    return True


def _without(path: tuple[str | int, ...]) -> dict[str, Any]:
    doc = copy.deepcopy(_default())
    at = doc
    for key in path[:-1]:
        at = at[key]
    del at[path[-1]]
    return doc


MALFORMED = {
    "speed-word": (_with(SPEED, "fast"), "server_groups/0/nics/compute/speed"),
    "speed-bool": (_with(SPEED, True), "server_groups/0/nics/compute/speed"),
    "speed-above-1600": (_with(PORT_SPEED, 3200), "planes/compute/switches/leaf/port_speed"),
    "ratio-dash": (_with(RATIO, "3-1"), "planes/compute/oversubscription"),
    "ratio-below-1": (_with(RATIO, 0.5), "planes/compute/oversubscription"),
    "asn-pool-one-number": (_with(ASN_POOL, 4200000000), "planes/compute/routing/asn_pool"),
    "asn-pool-words": (_with(ASN_POOL, "private"), "planes/compute/routing/asn_pool"),
    "unknown-field": (_with(("planes", "compute", "oversubscribe"), "1:1"), "planes/compute"),
    "missing-name": (_without(("fabric", "name")), "fabric"),
    "topology-unknown": (_with(("planes", "compute", "topology"), "torus"), "planes/compute/topology"),
    "prefix-pattern": (_with(("planes", "compute", "prefix"), "Cmp-1"), "planes/compute/prefix"),
    "count-text": (_with(("server_groups", 0, "count"), "4"), "server_groups/0/count"),
    "platform-unregistered": (_with(("planes", "compute", "switches", "leaf", "platform"), "junos"),
                              "planes/compute/switches/leaf/platform"),
    "secret-literal": (_with(("credentials", "switches", "password"), "hunter2"), "credentials/switches/password"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_intent_is_refused_by_the_schema_where_gpufabric_refuses_it(validator, name):
    doc, where = MALFORMED[name]
    assert not _checks(json.dumps(doc)), f"{name}: gpufabric takes it, so the case proves nothing"
    errors = list(validator.iter_errors(doc))
    # Refused at the field, or at a form (a plane, a speed) holding it, and nowhere else.
    assert errors and all(where.startswith(_where(e)) for e in errors), _errors(validator, doc)
    assert where in {_where(e) for e in _leaves(errors)}, [f"{_where(e)}: {e.message}" for e in _leaves(errors)]
