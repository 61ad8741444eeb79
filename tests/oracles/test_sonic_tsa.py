"""SONiC's TSA, TSB and TSC, as SONiC's own code runs them, on the frr.conf gpufabric renders for a SONiC switch.

SONiC's bgp-container scripts and bgpcfgd's TSA templates come from a sonic-buildimage tree (tests/sonic_ts_scripts.py
says which files, and where they are looked for); FRR's own parser (`vtysh -C`) judges what they load. Shown:

- Every rendered switch binds the route map on each fabric session; TSA finds it and loads its sequences 20, 30
  and 40; the frr.conf with them passes FRR's parser; TSC then says `Maintenance`, and `Normal` before.
- bgpcfgd's way (its reading of outbound route maps, its templates rendered as its TemplateFabric renders them)
  gives the same lines as the bgp container's TSA.
- What gpufabric keeps on a drained switch's frr.conf (`keep`) is exactly what TSA loaded: a push leaves TSC
  saying `Maintenance`, and FRR's parser takes it.
- TSB loads the `no` of each of those sequences, which FRR's parser takes after them.

Without the outbound route map (the frr.conf before), TSA loads nothing and TSC says `No external neighbors`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.intent import load_intent
from gpufabric.nos.sonic.candidate import join, split
from gpufabric.nos.sonic.drain import keep
from gpufabric.plan import build_plan
from gpufabric.platforms.spec import DrainSpec
from tests.conftest import INVENTORY
from tests.sonic_ts_scripts import ISOLATE, TsScripts, bgpcfgd_render, buildimage, constants

EXAMPLE = INVENTORY / "examples" / "sonic.yml"


@pytest.fixture(scope="module")
def confs() -> dict[str, str]:
    plan = build_plan(load_intent(EXAMPLE))
    index = LinkIndex(plan)
    out = {}
    for d in plan.devices():
        files = render_device(plan, d, index).files
        if d.platform == "sonic":
            out[d.name] = join(d.name, files)
    assert len(out) == 10
    return out


@pytest.fixture
def ts(tmp_path: Path) -> TsScripts:
    return TsScripts(buildimage(), tmp_path)


def _vtysh_check(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("vtysh") is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs frr; vtysh should be on PATH")
        pytest.skip("vtysh (frr) is not installed")
    conf = tmp_path / "check.conf"
    conf.write_text(text)
    return subprocess.run(["vtysh", "-C", "-f", str(conf)], capture_output=True, text=True, check=False)


def _stanzas(text: str) -> set[tuple[str, ...]]:
    """route-map stanzas as (header, its indented lines...), whatever their indentation."""
    found: set[tuple[str, ...]] = set()
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if current is not None and raw[:1] == " " and line:
            current.append(line)
            continue
        if current is not None:
            found.add(tuple(current))
            current = None
        if re.match(r"(no )?route-map ", line):
            current = [line]
    if current is not None:
        found.add(tuple(current))
    return found


def _before_end(frr: str, lines: str) -> str:
    body, _, _ = frr.rpartition("\nend\n")
    return f"{body}\n{lines}\nend\n"


def test_tsa_takes_effect_on_every_rendered_switch_and_tsc_reads_maintenance(
    confs: dict[str, str], ts: TsScripts, tmp_path: Path
) -> None:
    for name, candidate in confs.items():
        # Every switch binds the route map on each fabric session; SONiC's scripts run on a spine and a leaf.
        frr = split(candidate)[1]
        assert frr is not None
        sessions = re.findall(r"^ neighbor (\S+) remote-as ", frr, re.MULTILINE)
        bound = re.findall(r"^  neighbor (\S+) route-map GF-FABRIC-OUT-V4 out$", frr, re.MULTILINE)
        assert sessions and sorted(bound) == sorted(sessions), name
    for name in ("cmp-spine1", "cmp-leaf1a"):
        candidate = confs[name]
        frr = split(candidate)[1]
        assert frr is not None
        said, _ = ts.run("TSC", frr)
        assert said.strip() == "System Mode: Normal", (name, said)
        said, loaded = ts.run("TSA", frr)
        assert said.strip() == "System Mode: Normal -> Maintenance", (name, said)
        assert _stanzas(loaded) == {
            ("route-map GF-FABRIC-OUT-V4 permit 20", "match ip address prefix-list PL_LoopbackV4",
             "set community 12345:12345"),
            ("route-map GF-FABRIC-OUT-V4 permit 30", "match tag 201", "set community 12345:12345"),
            ("route-map GF-FABRIC-OUT-V4 deny 40",),
        }, name  # fmt: skip
        drained = _before_end(frr, loaded)
        checked = _vtysh_check(drained, tmp_path)
        assert checked.returncode == 0, (name, checked.stdout + checked.stderr)
        said, _ = ts.run("TSC", drained)
        assert said.strip() == "System Mode: Maintenance", (name, said)
        # gpufabric keeps on a drained switch exactly what TSA loaded.
        kept = split(keep(candidate, DrainSpec("202411")))[1]
        assert kept is not None
        assert _stanzas(kept) - _stanzas(frr) == _stanzas(loaded), name
        said, _ = ts.run("TSC", kept)
        assert said.strip() == "System Mode: Maintenance", (name, said)
        checked = _vtysh_check(kept, tmp_path)
        assert checked.returncode == 0, (name, checked.stdout + checked.stderr)


def test_bgpcfgd_renders_the_same_lines_as_the_bgp_container_s_tsa(confs: dict[str, str], ts: TsScripts) -> None:
    """bgpcfgd (202205 on): the names of `neighbor X route-map NAME out` in FRR's running configuration, and for
    each with V4 or V6 the isolate template rendered with its name, family and protocol, and SONiC's constants."""
    frr = split(confs["cmp-spine1"])[1]
    assert frr is not None
    names = sorted(set(re.findall(r"^\s*neighbor \S+ route-map (\S+) out$", frr, re.MULTILINE)))
    assert names == ["GF-FABRIC-OUT-V4"]
    rendered = bgpcfgd_render(ts.tree, ISOLATE, route_map_name=names[0], ip_version="V4", ip_protocol="ip",
                              internal_route_map="0", constants=constants(ts.tree)["constants"])  # fmt: skip
    _, loaded = ts.run("TSA", frr)
    assert _stanzas(rendered) == _stanzas(loaded) and len(_stanzas(loaded)) == 3


def test_tsb_takes_tsa_s_sequences_away(confs: dict[str, str], ts: TsScripts, tmp_path: Path) -> None:
    frr = split(confs["cmp-leaf1a"])[1]
    assert frr is not None
    _, isolate = ts.run("TSA", frr)
    drained = _before_end(frr, isolate)
    said, unisolate = ts.run("TSB", drained)
    assert said.strip() == "System Mode: Maintenance -> Normal"
    assert _stanzas(unisolate) == {
        ("no route-map GF-FABRIC-OUT-V4 permit 20",),
        ("no route-map GF-FABRIC-OUT-V4 permit 30",),
        ("no route-map GF-FABRIC-OUT-V4 deny 40",),
    }
    checked = _vtysh_check(_before_end(frr, isolate + unisolate), tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_without_an_outbound_route_map_tsa_moves_nothing(confs: dict[str, str], ts: TsScripts) -> None:
    """The frr.conf as it was before: TSA finds no route map to rewrite, and TSC says so."""
    frr = split(confs["cmp-spine1"])[1]
    assert frr is not None
    bare = "\n".join(line for line in frr.splitlines() if "route-map GF-FABRIC-OUT-V4" not in line) + "\n"
    said, loaded = ts.run("TSA", bare)
    assert said.strip() == "System Mode: No external neighbors" and loaded == ""
    said, _ = ts.run("TSC", bare)
    assert said.strip() == "System Mode: No external neighbors"


def test_tsa_moves_a_converged_switch_s_carried_planes_too(ts: TsScripts, tmp_path: Path) -> None:
    """A carried plane's sessions bind the same outbound route map in their VRF's BGP instance, so SONiC's TSA,
    which rewrites route maps by name, withdraws their routes with the default VRF's: storage and in-band
    traffic leave a drained switch too."""
    from tests.oracles.test_converged_oracles import _plan

    plan = _plan("sonic", lossless=True)
    index = LinkIndex(plan)
    spine = next(d for d in plan.planes["business"].devices if d.platform == "sonic" and d.role == "spine")
    frr = split(join(spine.name, render_device(plan, spine, index).files))[1]
    assert frr is not None
    vrfs = re.findall(r"^router bgp \d+ vrf (\S+)$", frr, re.MULTILINE)
    assert len(vrfs) == 2
    for vrf in vrfs:
        block = frr.split(f" vrf {vrf}\n", 1)[1].split("\nexit\n", 1)[0]
        sessions = re.findall(r"^ neighbor (\S+) (?:interface )?remote-as ", block, re.MULTILINE)
        bound = re.findall(r"^  neighbor (\S+) route-map GF-FABRIC-OUT-V4 out$", block, re.MULTILINE)
        assert sessions and sorted(bound) == sorted(sessions), vrf
    said, loaded = ts.run("TSA", frr)
    assert said.strip() == "System Mode: Normal -> Maintenance"
    assert ("route-map GF-FABRIC-OUT-V4 deny 40",) in _stanzas(loaded)  # every route but the loopback withdrawn
    drained = _before_end(frr, loaded)
    checked = _vtysh_check(drained, tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    said, _ = ts.run("TSC", drained)
    assert said.strip() == "System Mode: Maintenance"
