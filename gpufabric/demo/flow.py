"""The demo from an empty machine to a proven cluster: each step is the command a user would type.

lab up (switches and hosts), then two teams side by side. The switches' team: nornir push (every
plane) -> nornir validate until converged -> (once the hosts are configured) the end-to-end facts
and the acceptance pairs -> a second push -> the exports. The hosts' team: ansible-playbook site.yml
-> site.yml again (it must change nothing; it ends with playbooks/validate.yml's read-back). Then
JUnit under build/, and lab down unless kept. Steps side by side touch different machines, or only
read.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufabric.demo import measure
from gpufabric.demo.fact import Fact, fact
from gpufabric.demo.runner import Runner
from gpufabric.files import write_atomic
from gpufabric.lab.hosts import fleet, rootfs
from gpufabric.plan.model import Plan
from gpufabric.validate.report import as_junit
from gpufabric.verify.running.results import CheckResult

CONVERGE_TIMEOUT = 180.0
READ_BACK_TASK = "Every setting equals the plan"  # playbooks/validate.yml's last task, which site.yml ends with


@dataclass
class Report:
    fabric: str
    planes: dict[str, dict[str, Any]] = field(default_factory=dict)
    facts: list[Fact] = field(default_factory=list)
    chaos: list[Fact] = field(default_factory=list)
    artifacts: dict[str, str] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return all(f.passed for f in self.facts + self.chaos)


def _recap_changes(text: str) -> dict[str, int]:
    return {h: int(c) for h, c in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", text, re.M)}


def _recap_failures(text: str) -> int:
    return sum(int(n) for n in re.findall(r"\bfailed=(\d+)", text)) + len(re.findall(r"\bunreachable=[1-9]", text))


def prepare(runner: Runner, intent: Path, state_dir: Path) -> None:
    """The inventory Ansible uses: this intent's plan, and the lab's record of how to reach its hosts."""
    inv = runner.build / "demo-inventory"
    inv.mkdir(parents=True, exist_ok=True)
    write_atomic(
        inv / "gpufabric.yml", f"plugin: gpufabric\nintent: {intent.resolve()}\nlab_state: {state_dir.resolve()}\n"
    )
    (inv / "group_vars").mkdir(exist_ok=True)
    # No Kubernetes runs in the lab: gpu_operator derives and records its Helm values, helm is not called.
    write_atomic(inv / "group_vars" / "all.yml", "gpu_operator_deploy: false\n")
    runner.env.setdefault("GPUFABRIC_SWITCH_PASSWORD", secrets.token_urlsafe(18))
    runner.env.setdefault("GPUFABRIC_SALT_KEY", secrets.token_urlsafe(18))
    # Ansible's home (~/.ansible: its temporary files) in the demo's build folder, beside its other
    # outputs, so the demo leaves nothing in the user's home.
    runner.env.setdefault("ANSIBLE_HOME", str(runner.build / "ansible"))
    runner.env["ANSIBLE_NOCOLOR"] = "1"
    runner.env["ANSIBLE_FORCE_COLOR"] = "0"


def _playbook(runner: Runner, name: str, playbook: str) -> str:
    inv = str(runner.build / "demo-inventory")
    done = runner.run(name, [runner.tool("ansible-playbook"), "-i", inv, playbook], check=False)
    return done.stdout


def bring_up(runner: Runner, plan: Plan, intent: Path, state_dir: Path, report: Report) -> None:
    """lab up, then two teams side by side, as on a real bring-up. The switches' team: push, validate
    until converged, then (once the hosts are configured) the end-to-end facts and the acceptance
    pairs, a second push and the exports. The hosts' team: site.yml, then site.yml again, which must
    change nothing and ends with the read-back of every setting. The push changes only switches and
    site.yml only hosts (reached over the management network); the rest only reads."""
    f, sd = str(intent), ["--state-dir", str(state_dir)]
    if not fleet.image_built():  # lab up's own output goes to its log: say here why the step takes a minute
        runner.say(f"lab up builds the host image first (debootstrap: about a minute, once; into {rootfs.CACHE_DIR})")
    runner.run("lab up", [runner.tool("gpufabric"), "lab", "up", f, *sd])
    configured = threading.Event()  # the hosts' first site.yml has ended: traffic between them may be measured

    def hosts() -> tuple[str, str]:
        try:
            first = _playbook(runner, "site.yml", "site.yml")
        finally:
            configured.set()
        return first, _playbook(runner, "site.yml again", "site.yml")

    def switches() -> _Network:
        pushed = runner.json("push every plane", [runner.tool("nornir"), "push", f, "--lab", *sd, "--json"])
        validated = converge(runner, intent, report)
        configured.wait()
        network = _Network(pushed, validated, end_to_end(plan), acceptance(runner, intent, report))
        network.pushed_again = runner.json("push again", [runner.tool("nornir"), "push", f, "--lab", "--json"])
        exports(runner, intent, report)
        return network

    (first, again), network = runner.side_by_side(hosts, switches)
    _record_push(network.pushed, plan, report)
    changes = _recap_changes(first)
    report.facts.append(
        fact(
            "site.yml configured every host",
            f"{len(plan.servers)} hosts, 0 failed",
            f"{len(changes)} hosts, {_recap_failures(first)} failed",
        )
    )
    record_validation(network.validated, plan, report)
    report.facts += [host_validation(again, plan), *network.measured, network.accepted]
    _record_second_runs(network.pushed_again, again, report)


@dataclass
class _Network:
    """What the switches' team found."""

    pushed: dict[str, Any]
    validated: dict[str, Any]
    measured: list[Fact]
    accepted: Fact
    pushed_again: dict[str, Any] = field(default_factory=dict)


def _record_push(push: dict[str, Any], plan: Plan, report: Report) -> None:
    plane_of = {d.name: d.plane for d in plan.devices()}
    for outcome in push.get("devices", []):
        plane = plane_of.get(outcome["device"], "?")
        entry = report.planes.setdefault(plane, {"devices": 0, "configured": 0})
        entry["devices"] += 1
        entry["configured"] += outcome["status"] in ("changed", "unchanged")


def converge(runner: Runner, intent: Path, report: Report) -> dict[str, Any]:
    """Validate every plane until it passes (BGP takes seconds after a push) or the timeout."""
    deadline = time.monotonic() + CONVERGE_TIMEOUT
    args = [runner.tool("nornir"), "validate", str(intent), "--lab", "--format", "json"]
    while True:
        result = runner.json("validate every plane", args)
        if result.get("ok") or time.monotonic() > deadline:
            break
        time.sleep(2)  # BGP after a restart: seconds; a validate takes a few itself
    # The JUnit file is written from the same results (validate's own writer), not from a second run.
    checks = [CheckResult(**{k: v for k, v in r.items() if k != "verdict"}) for r in result.get("results", [])]
    write_atomic(runner.build / "validate-junit.xml", as_junit(checks, float(result.get("seconds", 0.0))))
    report.artifacts["junit"] = str(runner.build / "validate-junit.xml")
    return result


def record_validation(result: dict[str, Any], plan: Plan, report: Report) -> None:
    plane_of = {d.name: d.plane for d in plan.devices()}
    for r in result.get("results", []):
        entry = report.planes.setdefault(plane_of.get(r["device"], "?"), {"devices": 0, "configured": 0})
        entry["checks"] = entry.get("checks", 0) + 1
        entry["passed"] = entry.get("passed", 0) + bool(r["ok"])
    for plane, entry in sorted(report.planes.items()):
        if plane == "?":
            continue
        report.facts.append(
            fact(
                f"{plane}: switches configured",
                f"{entry['devices']}/{entry['devices']}",
                f"{entry['configured']}/{entry['devices']}",
                plane=plane,
            )
        )
        report.facts.append(
            fact(
                f"{plane}: nornir validate checks passed",
                f"{entry.get('checks', 0)}/{entry.get('checks', 0)}",
                f"{entry.get('passed', 0)}/{entry.get('checks', 0)}",
                plane=plane,
            )
        )


def host_validation(site: str, plan: Plan) -> Fact:
    """The read-back site.yml ends with (playbooks/validate.yml, imported), as the second run printed it:
    every server with data NICs compares its settings (a server without any has nothing to compare)."""
    hosts = len([s for s in plan.servers if s.nics])
    passed, failed = _read_back(site)
    return fact(
        "every host's settings read back equal the plan (NICs, sysctls; QoS, HugePages on GPU hosts)",
        f"{hosts} hosts, 0 failed",
        f"{len(passed - failed)} hosts, {len(failed)} failed",
    )


def _read_back(site: str) -> tuple[set[str], set[str]]:
    """The hosts whose read-back compared settings, and those where a setting differed from the plan."""
    _, _, section = site.partition(f"TASK [{READ_BACK_TASK}]")
    section = re.split(r"^(?:TASK|PLAY) ", section, maxsplit=1, flags=re.M)[0]
    passed = set(re.findall(r"^ok: \[([^\]]+)\]", section, re.M))
    failed = set(re.findall(r"^(?:failed|fatal): \[([^\]]+)\]", section, re.M))
    return passed, failed


def end_to_end(plan: Plan) -> list[Fact]:
    return [*measure.jumbo(plan), measure.dscp(plan), *measure.ecmp(plan), *measure.oob(plan)]


def acceptance(runner: Runner, intent: Path, report: Report) -> Fact:
    """Day 2 in the lab: the acceptance suite's pairs, with the lab's stand-in (iperf3, ping) for perftest."""
    results = runner.build / "acceptance"
    f = str(intent)
    runner.run("acceptance run (lab stand-in)",
               [runner.tool("gpufabric"), "acceptance", "run", f, "--lab", "--stand-in", "--results", str(results)],
               check=False)  # fmt: skip
    junit = runner.build / "acceptance-junit.xml"
    verdict = runner.json(
        "acceptance report",
        [runner.tool("gpufabric"), "acceptance", "report", f, "--stand-in", "--results", str(results), "--json",
         "--junit", str(junit)],
    )  # fmt: skip
    jobs = len(verdict.get("jobs", []))
    report.artifacts["acceptance"] = str(junit)
    return fact(
        "acceptance pairs pass on every rail (lab stand-in: iperf3 and ping for perftest)",
        f"{jobs}/{jobs} jobs passed",
        f"{verdict.get('passed', 0)}/{jobs} jobs passed",
    )


def _record_second_runs(push: dict[str, Any], site: str, report: Report) -> None:
    """A second push and a second site.yml must change nothing."""
    changed = sum(d["status"] != "unchanged" for d in push.get("devices", []))
    report.facts.append(fact("a second push changes nothing", "0 switches changed", f"{changed} switches changed"))
    total = sum(_recap_changes(site).values())
    report.facts.append(
        fact(
            "a second site.yml changes nothing",
            "0 tasks changed, 0 failed",
            f"{total} tasks changed, {_recap_failures(site)} failed",
        )
    )


def exports(runner: Runner, intent: Path, report: Report) -> None:
    for kind, name in (
        ("cabling", "cabling.csv"),
        ("bom", "bom.csv"),
        ("drawing", "drawing"),
        ("slurm", "topology.conf"),
    ):
        target = runner.build / name
        runner.run(f"export {kind}", [runner.tool("gpufabric"), "export", kind, str(intent), "-o", str(target)])
        report.artifacts[kind] = str(target)
