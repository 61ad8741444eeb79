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


def test_lab_down_removes_the_candidate_folders_its_switches_left_and_nothing_else(tmp_path):
    """A session cut off mid-push leaves its candidate folder on the switch, in the /tmp the lab's switches
    share with this machine: the lab's own switches' folders go with the lab, nobody else's."""
    from gpufabric.drivers.switch_paths import candidate_folder
    from gpufabric.lab.daemons import remove_candidate_folders

    def folder(pathspace: str | None) -> str:
        return candidate_folder(pathspace, "0123456789abcdef").removeprefix("/tmp/")

    lab = state.LabState("default", namespaces=["cmp-spine1", "cmp-su1-leaf1", "*"])
    for switch in ("cmp-spine1", "cmp-su1-leaf1"):
        (tmp_path / folder(switch)).mkdir()
        (tmp_path / folder(switch) / "system.secrets").write_text("kept by a cut session")
    kept = [folder("cmp-spine2"), folder(None), "gpufabric-candidate.cmp-spine1x.00"]
    for name in kept:
        (tmp_path / name).mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file").write_text("not the lab's")
    linked = tmp_path / "gpufabric-candidate.cmp-su1-leaf1.link"
    linked.symlink_to(outside)  # a link named like one: never followed, never removed

    removed = remove_candidate_folders(lab, tmp_path)

    assert sorted(p.name for p in removed) == sorted(folder(s) for s in ("cmp-spine1", "cmp-su1-leaf1"))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*kept, "outside", linked.name])
    assert (outside / "file").read_text() == "not the lab's"
