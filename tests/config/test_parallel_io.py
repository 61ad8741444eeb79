"""Fast paths of large fabrics hold to the slow, general ones: the block-YAML reader to PyYAML,
rendering and verifying on several processes to doing it in one."""

from __future__ import annotations

import os

import pytest
import yaml
from conftest import INVENTORY, example_plan, plan_doc
from render_helpers import render_all as render_in_memory
from render_helpers import render_into

from gpufabric.config import batch
from gpufabric.config.context import LinkIndex
from gpufabric.intent.errors import IntentError
from gpufabric.nos.cumulus import nvue
from gpufabric.nos.cumulus.verify import nvue_facts
from gpufabric.verify import runner, yaml_block
from gpufabric.verify.runner import verify
from gpufabric.verify.yaml_block import load_block_yaml
from gpufabric.yaml_lines import load_yaml

EXAMPLES = ["fabric.yml", "examples/multi-vendor.yml", "examples/superpod-1su.yml", "examples/superpod-4su.yml"]
NVUE_EXAMPLES = EXAMPLES[1:]  # the default fabric has no Cumulus switch


def _nvue(name: str) -> bool:
    return name.endswith(".yaml") and not name.endswith(".system.yaml")  # FRR's system file is not NVUE


def _nvue_documents(example: str, release: str | None) -> dict[str, str]:
    doc = yaml.safe_load((INVENTORY / example).read_text())
    if release is not None:
        doc["platforms"] = {"cumulus": {"release": release}}
    return {n: t for n, t in render_in_memory(plan_doc(doc, example)).items() if _nvue(n)}


@pytest.mark.parametrize(
    ("example", "release"),
    [
        *((example, None) for example in NVUE_EXAMPLES[:-1]),
        pytest.param(NVUE_EXAMPLES[-1], None, marks=pytest.mark.slow),  # 4 SUs: 1 SU's roles, 4 times over
        ("examples/superpod-1su.yml", "5.11"),  # before the 5.15 object-model changes
    ],
)
def test_block_reader_reads_every_rendered_nvue_document_as_pyyaml_does(example, release):
    docs = _nvue_documents(example, release)
    assert docs
    for name, text in docs.items():
        fast = load_block_yaml(text)
        assert fast is not None, f"{name}: fell back to PyYAML (verify of large fabrics would be slow)"
        data, lines = load_yaml(text, name)
        assert fast[0] == data, name
        assert fast[1].as_dict() == lines, name


def test_nvue_facts_are_the_same_when_pyyaml_reads_the_document():
    """A document the block reader leaves to PyYAML (here for a comment after a value) gives the same
    facts, at the same lines: both readers give the line of every key of every mapping."""
    for name, text in _nvue_documents("examples/superpod-1su.yml", None).items():
        assert load_block_yaml(text) is not None
        commented = text.replace("        type: swp\n", "        type: swp # a switch port\n")
        assert load_block_yaml(commented) is None, name
        assert nvue_facts(name, commented, name) == nvue_facts(name, text, name), name


def test_the_cumulus_driver_reads_candidates_and_applied_text_as_pyyaml_does():
    """The driver's candidate check and validate's trees take the block reader's fast path on what the
    renderer and NVUE write, and PyYAML's reading on the rest: the same documents, users and trees."""
    docs = sorted(_nvue_documents("examples/multi-vendor.yml", None).items())[:4]
    assert len(docs) == 4
    for name, text in docs:
        commented = text.replace("        type: swp\n", "        type: swp # a switch port\n")
        flow = yaml.safe_dump(yaml.safe_load(text), default_flow_style=True)
        for variant in (text, commented, flow):
            assert nvue.documents(variant) == yaml.safe_load(text), name
            assert nvue.set_tree(variant) == yaml.safe_load(text)[1]["set"], name
        assert nvue.users(nvue.documents(text)) == set(yaml.safe_load(text)[1]["set"]["system"]["aaa"]["user"])
    with pytest.raises(yaml.YAMLError):
        nvue.documents("- set:\n    system: [unclosed\n")


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb:\n  c: x\n  d: {}\ne:\n",
        "- set:\n    a: 1\n- x:\n",
        "k: 'it''s'\n",
        "'': 1\n",
        "# comment\n\na: on\nb: 'on'\nc: 1.0\nd: 010\ne: 0x1f\nf: 12:30\ng: null\nh: ~\ni: 2024-01-01\n",
        "a: 10.0.0.1/31\nb: swp1s0\nc: 'host: gpu1 rail1'\n",
        "a: 0\nb: 9216\nc: 007\nd: 1_000\ne: \u00b2\nf: 4200000001\ng: '10'\nh: 'a''b'\n",
        "a: <<\n",
        "a: =\n",
        "<<: 1\n",
        # Beyond the subset: PyYAML reads these (or refuses them) and the block reader steps aside.
        "top:\n  - a\n",
        "a:\n  b: 1\n c: 2\n",
        "a: 1\na: 2\n",
        "- a: 1\nb: 2\n",
        "'a: b': 1\n",
        "a #c: 1\n",
        "'a'b: 1\n",
        "? a\n: b\n",
        "a: b # c\n",
        "a: |\n  x\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: [1]\n",
        "a:\tb\n",
        "on: 1\n",
        "1: x\n",
        'a: "x\\ty"\n',
        "a: -1\n",
        "---\na: 1\n",
        "a: b\n  c\n",
    ],
)
def test_block_reader_agrees_with_pyyaml_or_steps_aside(text):
    fast = load_block_yaml(text)
    try:
        reference = load_yaml(text, "f")
    except IntentError:
        assert fast is None, "PyYAML refuses this text; the block reader must not accept it"
        return
    if fast is not None:
        assert fast[0] == reference[0]
        assert fast[1].as_dict() == reference[1]


def test_block_reader_takes_the_text_it_was_made_for():
    for text in ("a: 1\nb:\n  c: x\n", "- set:\n    a: 1\n", "a: 'x y'\n"):
        assert load_block_yaml(text) is not None


def test_block_reader_gives_every_document_its_own_mappings():
    """`{}` and `key:` lines are looked up from the lines seen before: the mappings they open must
    still be new ones, or a change to one document's data would show in the next one's."""
    text = "- set:\n    interface:\n      swp1:\n        link: {}\n"
    first, second = load_block_yaml(text), load_block_yaml(text)
    assert first is not None and second is not None
    first[0][0]["set"]["interface"]["swp1"]["link"]["mtu"] = 9216
    assert second[0][0]["set"]["interface"]["swp1"]["link"] == {}
    assert first[0][0]["set"]["interface"] is not second[0][0]["set"]["interface"]


def test_block_reader_reads_the_same_once_its_rows_are_dropped(monkeypatch):
    """The rows kept per line are bounded: past the bound they are dropped and the lines read again."""
    monkeypatch.setattr(yaml_block, "ROWS_KEPT", 3)
    monkeypatch.setattr(yaml_block, "_ROWS", {})
    text = "a: 1\nb:\n  c: x\n  d: {}\ne: 'it''s'\n" + "f: " + "x" * 200 + "\n"
    for _ in range(3):
        fast = load_block_yaml(text)
        assert fast is not None
        assert fast[0] == load_yaml(text, "f")[0]
        assert len(yaml_block._ROWS) <= 3
        assert not any(len(line) > yaml_block.ROW_KEPT_CHARS for line in yaml_block._ROWS)


@pytest.fixture(scope="module")
def nvue_plan():
    """A fabric of NVUE switches (the default fabric's are FRR): one file per switch."""
    return example_plan(INVENTORY / "examples" / "superpod-1su.yml")


@pytest.fixture
def parallel_from_one(monkeypatch):
    """Fork even for the small default fabric, so the parallel path is what runs."""
    monkeypatch.setattr(batch, "PARALLEL_FROM", 1)
    monkeypatch.setattr(runner, "PARALLEL_FROM", 1)


def test_render_on_two_processes_writes_what_one_writes(nvue_plan, tmp_path, parallel_from_one):
    names = [d.name for d in nvue_plan.devices()]
    index = LinkIndex(nvue_plan)
    one = batch.render_all(nvue_plan, names, index, tmp_path / "one", workers=1)
    two = batch.render_all(nvue_plan, names, index, tmp_path / "two", workers=2)
    expected = (len(names), len(names), {})
    assert (one.switches, one.files, one.errors) == (two.switches, two.files, two.errors) == expected
    files = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "two").iterdir())
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_a_second_render_leaves_unchanged_files_alone(nvue_plan, tmp_path, parallel_from_one):
    names = [d.name for d in nvue_plan.devices()]
    index = LinkIndex(nvue_plan)
    assert batch.render_all(nvue_plan, names, index, tmp_path, workers=2).written == len(names)
    victim = tmp_path / f"{names[0]}.yaml"
    os.utime(victim, (1_000_000, 1_000_000))
    (tmp_path / f"{names[1]}.yaml").write_text("edited by hand\n")
    again = batch.render_all(nvue_plan, names, index, tmp_path, workers=2)
    assert again.written == 1  # only the edited file is put back
    assert victim.stat().st_mtime == 1_000_000
    assert (tmp_path / f"{names[1]}.yaml").read_text() != "edited by hand\n"


def test_one_failing_switch_is_reported_and_the_others_render(nvue_plan, tmp_path, monkeypatch, parallel_from_one):
    names = [d.name for d in nvue_plan.devices()]
    real = batch.render_device

    def flaky(plan, device, index):
        if device.name == names[3]:
            raise ValueError("planted")
        return real(plan, device, index)

    monkeypatch.setattr(batch, "render_device", flaky)
    result = batch.render_all(nvue_plan, names, LinkIndex(nvue_plan), tmp_path, workers=2)
    assert result.errors == {names[3]: "ValueError: planted"}
    assert result.switches == len(names) - 1
    assert not (tmp_path / f"{names[3]}.yaml").exists()


def test_a_new_folder_appears_whole_or_not_at_all(nvue_plan, tmp_path, monkeypatch, parallel_from_one):
    """Into a folder that does not exist, render writes beside it and renames: while it runs, and
    after it is stopped, there is no half-written folder, and no scratch folder is left behind."""
    names = [d.name for d in nvue_plan.devices()]
    out = tmp_path / "configs"
    real, seen = batch.render_device, []

    def stopped(plan, device, index):
        seen.append(out.exists())
        if device.name == names[-1]:
            raise KeyboardInterrupt  # Ctrl-C on the last switch: not a per-switch error
        return real(plan, device, index)

    monkeypatch.setattr(batch, "render_device", stopped)
    with pytest.raises(KeyboardInterrupt):
        batch.render_all(nvue_plan, names, LinkIndex(nvue_plan), out, workers=1)
    assert seen and not any(seen)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(batch, "render_device", real)
    umask = os.umask(0o027)
    try:
        result = batch.render_all(nvue_plan, names, LinkIndex(nvue_plan), out, workers=2)
    finally:
        os.umask(umask)
    assert result.written == len(names) and [p.name for p in tmp_path.iterdir()] == ["configs"]
    assert out.stat().st_mode & 0o777 == 0o750  # as mkdir makes it under that umask
    assert {p.stat().st_mode & 0o777 for p in out.iterdir()} == {0o600}


def test_verify_on_two_processes_finds_what_one_finds(nvue_plan, tmp_path, parallel_from_one):
    render_into(nvue_plan, tmp_path)
    leaf = next(d.name for d in nvue_plan.devices() if d.role == "leaf")
    doc = tmp_path / f"{leaf}.yaml"
    doc.write_text(doc.read_text().replace("mtu: 9216", "mtu: 1500", 1))
    one, two = verify(nvue_plan, tmp_path, workers=1), verify(nvue_plan, tmp_path, workers=2)
    assert [f.as_dict() for f in one.findings] == [f.as_dict() for f in two.findings]
    assert (one.switches, one.files) == (two.switches, two.files) == (len(nvue_plan.devices()),) * 2
    mtu = [f for f in two.findings if f.device == leaf and "mtu" in f.check]
    assert mtu, [f.as_dict() for f in two.findings]
    assert doc.read_text().splitlines()[mtu[0].line - 1].strip() == "mtu: 1500"


def test_verify_hands_a_large_fabric_to_its_workers_in_larger_tasks():
    """Each task costs the parent a message both ways: the 131k-GPU example's 12,702 switches go in
    tasks of 64, the 32k one's 1,366 in tasks of 21 (65 tasks for two workers), a small fabric's in 16s."""
    assert runner._chunk(12_702, 2) == runner.CHUNK_MAX == 64
    assert runner._chunk(1_366, 2) == 21
    assert runner._chunk(100, 2) == runner.CHUNK == 16
    assert len(runner.chunked(list(range(12_702)), runner._chunk(12_702, 2))) == 199
