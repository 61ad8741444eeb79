"""The modes of the files gpufabric writes: what the umask allows for a new file, the old mode for a
file written over, owner-only for a file holding a secret whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpufabric.cli import main
from gpufabric.config.batch import render_switch
from gpufabric.config.render import LinkIndex
from gpufabric.files import PRIVATE, current_umask, write_atomic, write_if_changed, write_new

EXAMPLE = Path(__file__).resolve().parents[2] / "inventory" / "fabric.yml"


@pytest.fixture
def umask() -> Iterator[None]:
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _export(tmp_path: Path, name: str) -> Path:
    out = tmp_path / name
    with pytest.raises(SystemExit) as done:
        main(["export", "slurm", str(EXAMPLE), "-o", str(out)])
    assert done.value.code == 0
    return out


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_a_new_export_gets_what_the_umask_allows(tmp_path: Path, umask: None, mask: int, expected: int) -> None:
    os.umask(mask)
    assert current_umask() == mask
    assert _mode(_export(tmp_path, "topology.conf")) == expected


def test_an_existing_export_keeps_its_mode_when_written_over(tmp_path: Path, umask: None) -> None:
    target = tmp_path / "topology.conf"
    target.write_text("old\n")
    target.chmod(0o664)
    os.umask(0o077)  # the umask does not decide for a file that is already there
    _export(tmp_path, "topology.conf")
    assert _mode(target) == 0o664
    assert target.read_text() != "old\n"


def test_written_over_through_each_writer_keeps_the_mode(tmp_path: Path, umask: None) -> None:
    target = tmp_path / "page.md"
    target.write_text("old\n")
    target.chmod(0o664)
    assert write_if_changed(target, "new\n")
    assert (_mode(target), target.read_text()) == (0o664, "new\n")
    write_atomic(target, b"newer\n")
    assert _mode(target) == 0o664


def test_a_link_planted_at_the_name_gives_no_mode_and_is_replaced(tmp_path: Path, umask: None) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("keep\n")
    elsewhere.chmod(0o666)
    link = tmp_path / "out.txt"
    link.symlink_to(elsewhere)
    write_atomic(link, "mine\n")
    assert not link.is_symlink() and _mode(link) == 0o644  # the umask's, not the link target's
    assert elsewhere.read_text() == "keep\n"


def test_a_secret_stays_owner_only_whatever_the_umask_or_old_mode(tmp_path: Path, umask: None) -> None:
    secret = tmp_path / "login.json"
    secret.write_text("{}")
    secret.chmod(0o644)
    os.umask(0o000)
    write_atomic(secret, '{"password": "x"}', PRIVATE)
    assert _mode(secret) == 0o600
    fresh = tmp_path / "fresh"
    assert write_new(fresh, "hash", PRIVATE)
    assert _mode(fresh) == 0o600


def test_rendered_configs_hold_password_hashes_and_stay_owner_only(
    tmp_path: Path, umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUFABRIC_SWITCH_PASSWORD", "correct horse")
    monkeypatch.setenv("GPUFABRIC_SALT_KEY", "battery staple")
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    plan = build_plan(load_intent(str(EXAMPLE)))
    index = LinkIndex(plan)
    name = sorted(index.devices)[0]
    os.umask(0o000)
    files, written = render_switch(plan, index, name, tmp_path)
    assert written == len(files) > 0
    assert any("$6$" in text or "$y$" in text or "$5$" in text for text in files.values())  # a hash is there
    assert {_mode(tmp_path / f) for f in files} == {0o600}
    first = tmp_path / next(iter(files))
    first.write_text("stale\n")
    first.chmod(0o644)  # widened by hand: the next render narrows it again
    render_switch(plan, index, name, tmp_path)
    assert _mode(first) == 0o600
