"""The lab's state folder: removed once empty, with gpufabric's folder above it when that is empty too."""

from __future__ import annotations

import pytest

from gpufabric.fleet.lab import state


@pytest.fixture
def ours(tmp_path, monkeypatch):
    """gpufabric's folder (/var/lib/gpufabric on a machine), here under tmp_path."""
    folder = tmp_path / "gpufabric"
    monkeypatch.setattr(state, "DEFAULT_DIR", folder / "lab")
    return folder


def test_the_last_state_dir_takes_gpufabrics_folder_with_it(ours):
    (ours / "lab").mkdir(parents=True)
    state.remove_state_dir(ours / "lab")
    assert not ours.exists()


def test_another_state_dir_keeps_gpufabrics_folder(ours):
    (ours / "lab").mkdir(parents=True)
    (ours / "molecule").mkdir()
    state.remove_state_dir(ours / "lab")
    assert [p.name for p in ours.iterdir()] == ["molecule"]
    state.remove_state_dir(ours / "molecule")
    assert not ours.exists()


def test_a_state_dir_that_still_holds_files_stays(ours):
    (ours / "lab").mkdir(parents=True)
    (ours / "lab" / "state.json").write_text("{}")
    state.remove_state_dir(ours / "lab")
    assert (ours / "lab" / "state.json").is_file()


def test_a_state_dir_elsewhere_leaves_its_parent_alone(ours, tmp_path):
    elsewhere = tmp_path / "mine" / "lab"
    elsewhere.mkdir(parents=True)
    state.remove_state_dir(elsewhere)
    assert not elsewhere.exists() and elsewhere.parent.is_dir()
