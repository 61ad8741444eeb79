"""The intent's file name reaches export headers as one comment line, whatever the name holds.

A file name may hold any byte but `/` and NUL: a newline in it used to end topology.conf's comment and
write the rest of the name as a line of its own (`SwitchName=...`, read by slurmctld). Each export of a
file with such a name must say what the same export of a plainly named copy says, apart from the header
comment itself: the same lines (by every line break a reader may honour), the same parsed data.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
import yaml

from gpufabric.export import k8s_network
from gpufabric.export.registry import EXPORTERS
from gpufabric.intent import load_intent
from gpufabric.plan import Plan, build_plan
from tests.conftest import INVENTORY, run_in_process

# A newline and a carriage return, an injected Slurm line, a terminal escape, NEL and LINE SEPARATOR (line
# breaks to YAML 1.1 and to str.splitlines), a tab, a bidi override, and a byte that is not UTF-8.
HOSTILE = {
    "newline": b"fab\nSwitchName=evil Switches=cmp-spines.yml",
    "all": b"fab\nSwitchName=evil Switches=cmp-spines\r\n"
    b"BlockName=evil Nodes=gpu01\x1b[2J\t\xc2\x85\xe2\x80\xa8\xe2\x80\xae#x\xff.yml",
}
# ib-topology needs an InfiniBand compute plane, anta an EOS switch and storage a file system on the storage plane,
# which the default fabric does not have.
KINDS = sorted(k for k in EXPORTERS if k not in ("ib-topology", "anta", "storage"))


@pytest.fixture(scope="module", params=sorted(HOSTILE))
def plans(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Plan, bytes]:
    """The default fabric's plan from a plain file name, the same from a hostile one, and that name."""
    folder = tmp_path_factory.mktemp("names")
    text = (INVENTORY / "fabric.yml").read_bytes()
    plain = folder / "fabric.yml"
    plain.write_bytes(text)
    hostile = os.fsencode(folder) + b"/" + HOSTILE[request.param]
    with open(hostile, "wb") as out:
        out.write(text)
    return build_plan(load_intent(str(plain))), build_plan(load_intent(os.fsdecode(hostile))), hostile


def _lines(text: str) -> list[str]:
    """Every line by every break any reader of these formats honours (\\n, \\r, NEL, LS, PS, ...)."""
    return text.splitlines()


def _parsed(kind: str, text: str) -> object:
    if kind in ("plan", "structured"):
        doc = json.loads(text)
        if isinstance(doc, dict):
            doc.pop("source", None)
        return doc
    if kind in ("cabling", "bom"):
        return list(csv.reader(io.StringIO(text)))
    if kind == "drawing":
        return [line for line in _lines(text) if not line.lstrip().startswith(("#", "//"))]
    if kind.startswith("slurm") and not kind.endswith("yaml"):
        return [line for line in _lines(text) if not line.startswith("#")]
    return list(yaml.safe_load_all(text))


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_file_name_changes_no_line_of_any_export(plans: tuple[Plan, Plan, bytes], kind: str) -> None:
    plain, hostile, _ = plans
    want, got = EXPORTERS[kind].render(plain), EXPORTERS[kind].render(hostile)
    got.encode("utf-8")  # writable as UTF-8: an undecodable byte of the name is escaped, not passed on
    assert len(_lines(got)) == len(_lines(want)), [line for line in _lines(got) if line not in _lines(want)]
    for mine, theirs in zip(_lines(got), _lines(want), strict=True):
        # Only the header comment (or the plan's JSON "source" string, escaped by JSON itself) differs.
        said = (mine.startswith("#") and theirs.startswith("#")) or (mine.startswith(' "source": "') and kind == "plan")
        assert mine == theirs or said, mine
    assert _parsed(kind, got) == _parsed(kind, want)


def test_every_k8s_network_file_keeps_its_header_one_line(plans: tuple[Plan, Plan, bytes]) -> None:
    plain, hostile = k8s_network.documents(plans[0]), k8s_network.documents(plans[1])
    for name, text in hostile.items():
        assert len(_lines(text)) == len(_lines(plain[name])), name
        assert list(yaml.safe_load_all(text)) == list(yaml.safe_load_all(plain[name])), name


def test_topology_conf_from_the_command_line_has_no_line_outside_a_comment_but_the_tree(
    plans: tuple[Plan, Plan, bytes], tmp_path: Path
) -> None:
    """Offline stand-in for slurmctld (test_slurmctld.py reads the tree form in the lab tier): every line is
    a comment or one of the tree's own SwitchName lines, and the name's `SwitchName=evil` is in a comment."""
    out = tmp_path / "topology.conf"
    done = run_in_process("gpufabric", "export", "slurm", os.fsdecode(plans[2]), "-o", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    lines = _lines(text)
    assert all(line.startswith(("#", "SwitchName=cmp-")) for line in lines), lines
    assert not any("evil" in line for line in lines if not line.startswith("#"))
    assert sum("evil" in line for line in lines) == 1  # the whole name stayed on the header's one line
