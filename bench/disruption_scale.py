"""What deciding the drains costs at 32k: every switch's diff read by its platform (`Platform.disruptions`).

    python -m bench.disruption_scale               # the 32k example, Cumulus (1,280 switches)
    python -m bench.disruption_scale --platform eos

The switches' configurations are rendered from the 32k example in memory, then three diffs per switch are
made in the form its driver returns (NVUE's `nv set` lines; EOS's session diff), and only the reading is
timed, as the push does it once per switch after its preview (in the preview's forked readers):

- first push: the whole configuration added to a switch with no BGP instance (what the benchmark fleet
  shows a dry run: the platform answers "hitless" from one search);
- every line changed: the same lines read as changes of a running switch (the first-configuration answer
  removed), so every rule runs over a full configuration: the most a diff can cost;
- one MTU: a one-line change, what a day-to-day push reads.

It prints milliseconds per switch and the total for the fleet, one process (a push spreads the previews over
every core, so the share of its wall time is at most this total over the cores).
"""

from __future__ import annotations

import argparse
import difflib
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from bench.fabrics import EXAMPLES, eos_32k_text, use_placeholder_secrets
from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.config.secrets import PasswordHasher
from gpufabric.intent import load_intent
from gpufabric.plan import Plan, build_plan
from gpufabric.platforms import platform


def _plan(which: str) -> Plan:
    if which != "eos":
        return build_plan(load_intent(str(EXAMPLES / "three-tier-32k.yml")))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "eos-32k.yml"
        path.write_text(eos_32k_text())
        return build_plan(load_intent(str(path)))


def diffs(which: str) -> dict[str, tuple[str, dict[str, str]]]:
    """switch -> (its platform, {case: its driver's diff})."""
    from gpufabric.nos.cumulus import nvue

    plan = _plan(which)
    index = LinkIndex(plan, PasswordHasher.for_intent(plan.intent))
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for device in plan.devices():
        files = render_device(plan, device, index).files
        name = device.name
        if device.platform == "cumulus":
            full = nvue.tree_diff({}, nvue.set_tree(files[f"{name}.yaml"]))
            cases = {
                "first push": full,
                "every line changed": full.replace("nv set router bgp enable on\n", ""),
                "one MTU": "nv set interface swp1s0 link mtu 9000",
            }
        elif device.platform == "eos":
            text = files[f"{name}.cfg"].splitlines()
            added = "\n".join(["--- system:/running-config", "+++ session:/s", *(f"+{ln}" for ln in text)])
            at = next(i for i, ln in enumerate(text) if ln.strip() == "mtu 9214")
            mtu = [*text[:at], text[at].replace("9214", "9000"), *text[at + 1 :]]
            cases = {
                "first push": added,
                "every line changed": added.replace("\n+router bgp ", "\n-router bgp 1\n+router bgp ", 1),
                "one MTU": "\n".join(difflib.unified_diff(text, mtu, "system:/running-config", "s", lineterm="")),
            }
        else:
            continue
        out[name] = (device.platform, cases)
    return out


def timed(read: Mapping[str, tuple[Callable[[str], object], str]]) -> float:
    started = time.perf_counter()
    for classify, diff in read.values():
        classify(diff)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", choices=("cumulus", "eos"), default="cumulus")
    args = parser.parse_args()
    use_placeholder_secrets()
    started = time.perf_counter()
    made = diffs(args.platform)
    print(f"{len(made)} switches rendered and their diffs made in {time.perf_counter() - started:.1f} s")
    cases = next(iter(made.values()))[1]
    print(f"{'case':<22}{'lines/switch':>14}{'ms/switch':>12}{'total s':>10}{'drained':>9}")
    for case in cases:
        read = {n: (platform(p).disruptions, c[case]) for n, (p, c) in made.items()}
        timed(read)  # compiles each platform's rules once, as the first switch of a push does
        seconds = min(timed(read) for _ in range(3))
        drained = sum(bool(classify(diff)) for classify, diff in read.values())
        lines = sum(d.count("\n") + 1 for _, d in read.values()) / len(read)
        print(f"{case:<22}{lines:>14.0f}{1000 * seconds / len(read):>12.3f}{seconds:>10.3f}{drained:>9}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
