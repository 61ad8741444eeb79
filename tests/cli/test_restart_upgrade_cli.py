"""`nornir restart` and `nornir upgrade` on the command line: dry runs print the batches (one failure domain
of a plane at a time, a canary first) and each switch's reboot mode; what is refused exits 2 before any
switch is reached."""

from __future__ import annotations

import hashlib
import json

from conftest import ROOT, run_in_process

MULTI = str(ROOT / "inventory" / "examples" / "multi-vendor.yml")
SHA = hashlib.sha512(b"image").hexdigest()
ENV = {"GPUFABRIC_SWITCH_PASSWORD": "not-used-cli", "GPUFABRIC_SALT_KEY": "not-used-cli"}


def test_restart_dry_run_lists_the_batches_with_each_platforms_least_disruptive_reboot() -> None:
    done = run_in_process(
        "nornir", "restart", MULTI, "--plane", "compute", "--plane", "storage", "--dry-run", "--json", **ENV
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["kind"] == "restart" and result["dry_run"] and result["drain"]
    modes = {d["device"]: d["mode"] for d in result["devices"]}
    assert {m for n, m in modes.items() if n.startswith("cmp-")} == {"warm"}  # Cumulus
    assert {m for n, m in modes.items() if n.startswith("sto-")} == {"fast"}  # EOS
    assert result["batches"][0]["domain"].startswith("canary") and len(result["batches"][0]["devices"]) == 1
    every = [n for b in result["batches"] for n in b["devices"]]
    assert sorted(every) == sorted(modes) and len(every) == len(set(every))
    assert all(n.startswith(("cmp-", "sto-")) for n in every)


def test_restart_refuses_a_reboot_mode_a_platform_lacks() -> None:
    done = run_in_process("nornir", "restart", MULTI, "--plane", "storage", "--mode", "warm", "--dry-run", **ENV)
    assert done.returncode == 2
    assert "reboots fast, cold, not warm" in done.stderr


def test_upgrade_refuses_what_it_cannot_install_before_reaching_a_switch() -> None:
    base = ("nornir", "upgrade", MULTI, "--image", "http://192.0.2.1/cumulus-linux-5.14.0-mlx-amd64.bin")
    commands = {
        "bad_sha": (*base, "--plane", "compute", "--release", "5.14", "--sha512", "abc", "--dry-run"),
        "mixed": (*base, "--release", "5.14", "--sha512", SHA, "--dry-run"),
        "unknown": (*base, "--plane", "compute", "--release", "5.99", "--sha512", SHA, "--dry-run"),
        "frr": (*base, "--plane", "oob", "--release", "8.4", "--sha512", SHA, "--dry-run"),
        "lab": (*base, "--lab", "--release", "8.4", "--sha512", SHA),
        "hostile": ("nornir", "upgrade", MULTI, "--plane", "compute", "--release", "5.14", "--sha512", SHA,
                    "--image", "http://192.0.2.1/a.bin;reboot", "--dry-run"),
    }  # fmt: skip
    done = {name: run_in_process(*argv, **ENV) for name, argv in commands.items()}
    assert done["bad_sha"].returncode == 2 and "128 hexadecimal digits" in done["bad_sha"].stderr
    assert done["mixed"].returncode == 2 and "an image is one platform's" in done["mixed"].stderr
    assert done["unknown"].returncode == 2 and "--release 5.99: gpufabric renders" in done["unknown"].stderr
    assert done["frr"].returncode == 2 and "FRR comes from the host's packages" in done["frr"].stderr
    assert done["lab"].returncode == 2 and "no image to install" in done["lab"].stderr
    assert done["hostile"].returncode == 2 and "image URL" in done["hostile"].stderr


def test_upgrade_dry_run_notes_a_release_the_intent_does_not_pin() -> None:
    # The example pins no Cumulus release: the platform's default (5.14) is the pin; 5.15 is not it.
    done = run_in_process("nornir", "upgrade", MULTI, "--plane", "compute", "--release", "5.15", "--sha512", SHA,
               "--image", "http://192.0.2.1/cumulus-linux-5.15.0-mlx-amd64.bin", "--dry-run", **ENV)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "the intent pins cumulus release 5.14; `nornir validate` will report these switches until it pins 5.15" in (
        done.stderr
    )
    assert "upgrade dry run:" in done.stderr


def test_restart_of_one_plane_of_a_multiplane_compute_plane_touches_that_plane_only(tmp_path) -> None:
    text = (ROOT / "inventory" / "examples" / "multiplane-b300.yml").read_text()
    assert "password: {vault: vault_switch_password}" in text  # the example keeps it in a vault; here an env var
    example = tmp_path / "multiplane.yml"
    example.write_text(text.replace("{vault: vault_switch_password}", "{env: GPUFABRIC_SWITCH_PASSWORD}"))
    done = run_in_process("nornir", "restart", str(example), "--plane", "compute-p2", "--dry-run", "--json", **ENV)
    assert done.returncode == 0, done.stderr
    every = [n for b in json.loads(done.stdout)["batches"] for n in b["devices"]]
    assert every and all(n.startswith("cmp-p2-") for n in every), every
    literal = run_in_process("nornir", "restart", str(example), "--plane", "compute-pN", "--dry-run", **ENV)
    assert literal.returncode == 2 and "compute-p1, compute-p2" in literal.stderr
