"""Every compute-plane switch of every shipped intent renders a load-balancing setting of its platform, or the
intent is refused with a located error that says why.

The walk plans each intent under inventory/ (the default fabric and every example), renders every switch of
its compute plane and looks for the platform's load-balancing lines in the text itself (not through the
platform's own reader, so a reader cannot vouch for the text it reads). An InfiniBand compute plane has no
switch configuration: its switches forward as the subnet manager routes them, so the setting looked for is
OpenSM's routing engine in the opensm.conf rendered from the plan.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.errors import LocatedError
from gpufabric.ib import discovery, opensm, topology
from gpufabric.intent import load_intent_text
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.plan import Plan, build_plan
from gpufabric.platforms import platform
from tests.conftest import ALL_INTENTS, HUGE_DESIGNS, INVENTORY, example_plan, plan_doc
from tests.vendor_variants import one_platform

# The big fabrics render a thousand compute switches or more: the slow tier walks them.
BIG = {"rail-28k.yml", "three-tier-32k.yml"}
ENABLED = {"on", "enabled"}  # NVUE's flag before and from 5.15


def _set_sections(text: str, keys: set[str]) -> str:
    """The startup file with only the `set` document's top-level sections named `keys`, each whole, in its
    order: libyaml (nvue.set_tree's loader) then reads only the sections the walk looks at. A 32k fabric's
    switch's whole document (2,100 lines, most of them its interfaces) took 58 ms to load: 74 s of the
    32k walk's 80 s under cProfile. Lines are only kept or dropped, so the sections read as in the whole
    file; a section not written as a block under `- set:` is dropped, reads as no setting and fails the walk."""
    kept: list[str] = []
    keep = True
    for line in text.splitlines(keepends=True):
        if not line.startswith("     ") and line.strip():  # a document, or a top-level key of one
            keep = not line.startswith("    ") or line.strip().removesuffix(":") in keys
        if keep:
            kept.append(line)
    return "".join(kept)


def _cumulus(name: str, files: Mapping[str, str]) -> list[str]:
    tree = nvue.set_tree(_set_sections(files[f"{name}.yaml"], {"system", "router"}))
    found = []
    hashing = tree.get("system", {}).get("forwarding", {}).get("ecmp-hash", {})
    found += [f"ecmp-hash {k}" for k, v in hashing.items() if v in ENABLED]
    adaptive = tree.get("router", {}).get("adaptive-routing", {})
    if adaptive.get("enable") in ENABLED or adaptive.get("state") in ENABLED:
        found.append("adaptive-routing")
    return found


def _sonic(name: str, files: Mapping[str, str]) -> list[str]:
    db = json.loads(files[f"{name}.config_db.json"])
    return [f"ecmp_hash {f}" for f in db.get("SWITCH_HASH", {}).get("GLOBAL", {}).get("ecmp_hash", [])]


def _frr(name: str, files: Mapping[str, str]) -> list[str]:
    settings = yaml.safe_load(files[f"{name}.system.yaml"]) or {}
    policy = (settings.get("sysctl") or {}).get("net.ipv4.fib_multipath_hash_policy")
    return ["fib_multipath_hash_policy=1"] if policy == 1 else []  # 1: the L4 five-tuple


def _eos(name: str, files: Mapping[str, str]) -> list[str]:
    text = files[f"{name}.cfg"]
    found = []
    if "\nip hardware fib load-balance distribution dynamic\n" in text:
        found.append("dynamic load balancing")
    profile = "\nload-balance policies\n   load-balance sand profile ROCE\n      fields udp dst-port 4791\n"
    if profile + "         payload bytes 5-7\n" in text and "\nport-channel load-balance sand profile ROCE\n" in text:
        found.append("sand profile ROCE: udp 4791 payload bytes 5-7")
    return found


def _nxos(name: str, files: Mapping[str, str]) -> list[str]:
    line = "ip load-sharing address source-destination port source-destination"
    return [line] if f"\n{line}\n" in files[f"{name}.cfg"] else []


# platform -> what of its text is a load-balancing setting. A platform missing here fails the walk: its
# lines must be named before any of its switches can pass.
LINES: dict[str, Callable[[str, Mapping[str, str]], list[str]]] = {
    "cumulus": _cumulus,
    "sonic": _sonic,
    "frr": _frr,
    "eos": _eos,
    "nxos": _nxos,
}


def _intent_ids(paths: list[Path]) -> list[object]:
    return [
        pytest.param(p, id=p.name, marks=pytest.mark.slow) if p.name in BIG else pytest.param(p, id=p.name)
        for p in paths
    ]


def compute_settings(plan: Plan) -> dict[str, list[str]]:
    """Each compute-plane switch's load-balancing lines as its rendered text carries them."""
    index = LinkIndex(plan)
    out: dict[str, list[str]] = {}
    for device in plan.devices():
        if device.plane != "compute":
            continue
        ctx = build(plan, device, index)
        files = render_context(ctx)
        reader = LINES.get(device.platform)
        assert reader is not None, f"{device.name}: no load-balancing lines known for platform {device.platform}"
        out[device.name] = reader(device.name, files)
        # What verify and validate expect the text to say: a setting, not the platform's silence.
        want = platform(device.platform).load_balancing(ctx)
        assert want.hash_fields or want.multipath_hash is not None or want.adaptive, device.name
    return out


def ib_routing_engine(plan: Plan) -> str:
    """The routing engine the plan's opensm.conf names (the GUIDs made up: a planned fabric has none yet)."""
    assert plan.infiniband is not None
    fabric = plan.infiniband.fabric
    guids = {n.name: 0x10_0000 + 2 * i for i, n in enumerate(fabric.nodes)}
    found = discovery.discover(fabric, topology.parse(topology.render(fabric, guids)))
    files = opensm.render(fabric, found, plan.infiniband.settings, Path("/srv/sm"))
    conf = dict(line.split(" ", 1) for line in files["opensm.conf"].splitlines() if line and line[0] != "#")
    return conf["routing_engine"]


@pytest.mark.parametrize("path", _intent_ids(ALL_INTENTS))
def test_every_compute_switch_renders_its_platform_s_load_balancing(path: Path) -> None:
    plan = example_plan(path)
    if plan.infiniband is not None:
        assert not any(d.plane == "compute" for d in plan.devices())  # the SM routes the IB switches
        assert ib_routing_engine(plan) == plan.intent.planes.compute.routing_engine  # type: ignore[union-attr]
        return
    settings = compute_settings(plan)
    assert settings, f"{path.name}: no compute-plane switch"
    bare = sorted(name for name, lines in settings.items() if not lines)
    assert bare == [], f"{path.name}: compute switches without a load-balancing setting: {bare[:5]}"


@pytest.mark.parametrize("name", ["eos", "nxos"])
def test_every_platform_s_compute_switches_render_a_setting(name: str) -> None:
    """Beyond the examples: the multi-vendor example with every role on one platform (EOS's compute plane
    balanced dynamically, its models being of neither EOS family, with no RoCE hash gpufabric can prove)."""
    settings = compute_settings(plan_doc(one_platform(name), f"all-{name}"))
    assert settings and all(settings.values()), {n: v for n, v in settings.items() if not v}


def test_the_walk_sees_every_shipped_intent() -> None:
    """Nothing under inventory/ escapes the walk: the intents it plans are every *.yml there but the
    InfiniBand design files (`gpufabric ib plan`'s input, no fabric intent), the inventory settings and the
    huge designs (conftest.HUGE_DESIGNS, proved by their own tests)."""
    shipped = {
        p
        for p in INVENTORY.rglob("*.yml")
        if "infiniband" not in p.relative_to(INVENTORY).parts[:-1] and p.name != "gpufabric.yml"
    }
    assert {p for p in shipped if p.stem not in HUGE_DESIGNS} == set(ALL_INTENTS)


def test_a_switch_whose_text_lacks_the_setting_fails_the_walk() -> None:
    """The walk can fail: the FRR spine's sysctl set back to the L3 hash is seen as no setting."""
    files = {"s1.system.yaml": "hostname: s1\nsysctl:\n  net.ipv4.fib_multipath_hash_policy: 0\n"}
    assert _frr("s1", files) == []
    files = {"s1.yaml": "- set:\n    system:\n      forwarding:\n        ecmp-hash:\n          source-port: 'off'\n"}
    assert _cumulus("s1", files) == []


def _refused(doc: dict) -> LocatedError:
    with pytest.raises(LocatedError) as info:
        build_plan(load_intent_text(yaml.safe_dump(doc, sort_keys=False), "fabric.yml"))
    return info.value


def test_a_compute_plane_the_platform_cannot_balance_is_refused_at_its_line() -> None:
    """The other way out of the walk: `adaptive` on switches without it is refused, located."""
    doc = yaml.safe_load((INVENTORY / "examples" / "sonic.yml").read_text())
    doc["planes"]["compute"]["load_balancing"] = "adaptive"
    error = _refused(doc)
    found = [p for p in error.problems if p.path == ("planes", "compute", "load_balancing")]
    assert found and "sonic" in found[0].message
    assert error.file == "fabric.yml" and error.line_of(found[0].path) is not None
