"""`gpufabric maintenance on|off|status`: help, refusals and exit codes, without a switch."""

from __future__ import annotations

from conftest import run_in_process


def test_help_names_the_three_actions_and_each_vendor_s_mechanism():
    done = run_in_process("gpufabric", "maintenance", "--help")
    assert done.returncode == 0
    for word in ("on", "off", "status", "Cumulus maintenance units", "GIR", "TSA", "graceful shutdown"):
        assert word in done.stdout
    on = run_in_process("gpufabric", "maintenance", "on", "--help")
    assert on.returncode == 0 and "--reason" in on.stdout and "Exit codes" in on.stdout


def test_a_drain_without_device_is_refused_with_exit_2(tmp_path):
    done = run_in_process("gpufabric", "maintenance", "on", "--state-dir", str(tmp_path / "nolab"))
    assert done.returncode == 2 and "--device" in done.stderr, done.stderr
    off = run_in_process("gpufabric", "maintenance", "off", "--state-dir", str(tmp_path / "nolab"))
    assert off.returncode == 2 and "--device" in off.stderr


def test_a_reason_of_two_lines_is_refused_before_anything_is_reached(tmp_path):
    done = run_in_process("gpufabric", "maintenance", "on", "--device", "cmp-spine1", "--reason", "a\nb",
               "--state-dir", str(tmp_path / "nolab"))  # fmt: skip
    assert done.returncode == 2 and "--reason" in done.stderr, done.stderr


def test_no_lab_up_is_exit_2_naming_the_state_dir(tmp_path):
    done = run_in_process(
        "gpufabric", "maintenance", "status", "--device", "cmp-spine1", "--state-dir", str(tmp_path / "nolab")
    )
    assert done.returncode == 2 and "no lab" in done.stderr, done.stderr
