"""FRR configurations: FRR's own parser accepts them, and what they say equals the plan."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import jinja2
import pytest
from conftest import INVENTORY, cli_env, run_in_process

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import environment, render_device
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan, ip
from gpufabric.platforms import platform

CANARY = "canary-Render-51d2"


def _rendered(path):
    plan = build_plan(load_intent(str(path)))
    index = LinkIndex(plan)
    files = {}
    for d in plan.devices():
        if d.platform == "frr":
            files |= render_device(plan, d, index).files
    return plan, files


@pytest.fixture(scope="module")
def default_rendered():
    return _rendered(INVENTORY / "fabric.yml")


def test_every_frr_file_passes_vtysh(tmp_path, default_rendered):
    if shutil.which("vtysh") is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs frr; vtysh should be on PATH")
        pytest.skip("vtysh (frr) is not installed")
    _, files = default_rendered
    _, oob_files = _rendered(INVENTORY / "examples" / "multi-vendor.yml")
    both = {f"default-{n}": t for n, t in files.items()} | {f"multi-vendor-{n}": t for n, t in oob_files.items()}
    confs = {n: t for n, t in both.items() if n.endswith(".frr.conf")}
    assert len(confs) == 17  # 16 default switches + multi-vendor's frr OOB switch
    for name, text in confs.items():
        f = tmp_path / name
        f.write_text(text)
        done = subprocess.run(["vtysh", "-C", "-f", str(f)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"


def test_vtysh_rejects_a_broken_file(tmp_path):
    if shutil.which("vtysh") is None:
        pytest.skip("vtysh (frr) is not installed")
    f = tmp_path / "bad.frr.conf"
    f.write_text("router bgp 65000\n neighbor swp1 interfce remote-as 65001\n")
    assert subprocess.run(["vtysh", "-C", "-f", str(f)], capture_output=True, check=False).returncode != 0


def _sessions(text: str) -> dict[str, int]:
    return {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^ neighbor (\S+) (?:interface )?remote-as (\d+)$", text, re.M)
    }


def test_bgp_sessions_match_the_plan_on_both_ends(default_rendered):
    plan, files = default_rendered
    by_name = {d.name: d for d in plan.devices()}
    checked = 0
    for link in plan.links():
        if link.kind != "fabric" or by_name[link.a].asn is None:
            continue
        a_conf, b_conf = files[f"{link.a}.frr.conf"], files[f"{link.b}.frr.conf"]
        a_key = link.a_port if link.a_ip is None else ip(link.b_ip)
        b_key = link.b_port if link.b_ip is None else ip(link.a_ip)
        assert _sessions(a_conf)[a_key] == by_name[link.b].asn
        assert _sessions(b_conf)[b_key] == by_name[link.a].asn
        assert f"router bgp {by_name[link.a].asn}\n" in a_conf and f"router bgp {by_name[link.b].asn}\n" in b_conf
        checked += 1
    assert checked == 8 + 8 + 12  # compute, storage, business fabric links


def test_oob_switch_has_no_routing(default_rendered):
    _, files = default_rendered
    assert "router bgp" not in files["oob-mgmt1.frr.conf"]
    assert "ip route" not in files["oob-mgmt1.frr.conf"]


def test_interface_files_carry_plan_mtu_and_addresses(default_rendered):
    plan, files = default_rendered
    leaf = files["sto-leaf1.interfaces"]
    assert "iface swp1\n    mtu 9216\n    address 10.11.0.0/31\n" in leaf
    spine_link = next(link for link in plan.planes["storage"].links if link.kind == "fabric")
    a_block = files[f"{spine_link.a}.interfaces"].split(f"iface {spine_link.a_port}\n")[1].split("\n\n")[0]
    b_block = files[f"{spine_link.b}.interfaces"].split(f"iface {spine_link.b_port}\n")[1].split("\n\n")[0]
    assert a_block.splitlines()[0] == b_block.splitlines()[0] == "    mtu 9216"
    assert a_block.splitlines()[1] == f"    address {ip(spine_link.a_ip)}/31"
    assert b_block.splitlines()[1] == f"    address {ip(spine_link.b_ip)}/31"


def test_templates_fail_loudly_on_a_missing_value():
    with pytest.raises(jinja2.UndefinedError):
        environment(platform("frr")).from_string("hostname {{ d.nmae }}").render(d={})


def test_render_command_writes_every_frr_switch_and_no_secret(tmp_path):
    out = tmp_path / "configs"
    done = run_in_process(
        "nornir", "render", "-o", str(out), GPUFABRIC_SWITCH_PASSWORD=CANARY, GPUFABRIC_HOST_SSH_KEY=CANARY
    )
    assert done.returncode == 0, done.stderr
    assert "rendered 64 files for 16 switches" in done.stderr
    assert len(list(out.glob("*.frr.conf"))) == 16
    assert not any(CANARY in p.read_text() for p in out.iterdir())
    assert CANARY not in done.stdout + done.stderr


def test_render_writes_every_platform(tmp_path):
    done = run_in_process("gpufabric", "render", str(INVENTORY / "examples" / "multi-vendor.yml"), "-o", str(tmp_path))
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert sum(n.endswith(".yaml") and not n.endswith(".system.yaml") for n in names) == 10  # cumulus compute
    assert sum(n.endswith(".cfg") for n in names) == 6 + 5  # eos storage, nxos business
    assert "skipped" not in done.stderr


def test_render_without_the_password_variable_is_an_input_error(tmp_path):
    env = {"GPUFABRIC_SWITCH_PASSWORD": ""}
    done = subprocess.run(
        ["gpufabric", "render", "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=INVENTORY.parent,
        env={k: v for k, v in cli_env(**env).items() if k != "GPUFABRIC_SWITCH_PASSWORD"},
        check=False,
    )
    assert done.returncode == 2
    assert "GPUFABRIC_SWITCH_PASSWORD, which is not set" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_render_into_a_folder_that_cannot_be_made_is_an_input_error(tmp_path):
    (tmp_path / "a-file").write_text("not a folder\n")
    done = run_in_process("gpufabric", "render", "-o", str(tmp_path / "a-file" / "configs"))
    assert done.returncode == 2, done.stderr
    assert "cannot write" in done.stderr and "choose another --output" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
