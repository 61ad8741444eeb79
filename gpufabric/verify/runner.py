"""Read every rendered file of the selected switches and run the checks: `nornir verify`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.secrets import PasswordHasher
from gpufabric.intent.types import SecretRef
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.verify.checks import check_device, check_link
from gpufabric.verify.facts import Finding, SwitchFacts


class _NoSecrets(PasswordHasher):
    """Verification reads hashes from the files; it never needs the password itself."""

    def hash(self, ref: SecretRef, user: str, algorithm: str, field: str) -> str:
        return ""


@dataclass
class Report:
    switches: int = 0
    files: int = 0
    findings: list[Finding] = field(default_factory=list)


def verify(plan: Plan, folder: Path, plane: str | None = None) -> Report:
    index = LinkIndex(plan, _NoSecrets(plan.intent.fabric.name))
    report = Report()
    facts: dict[str, SwitchFacts] = {}
    for device in plan.devices():
        if plane is not None and device.plane != plane:
            continue
        spec = platform(device.platform)
        missing = spec.files(device.name)
        missing = [name for name in missing if not (folder / name).is_file()]
        if missing:
            report.findings.append(
                Finding("files", device.name, missing[0], 0, "a rendered file (run `nornir render`)", "missing")
            )
            continue
        found = spec.reader(device.name, folder)
        facts[device.name] = found
        report.switches += 1
        report.files += len(found.files)
        report.findings += check_device(plan, build(plan, device, index), found)
    for link in plan.links():
        if link.kind in ("fabric", "edge") and (plane is None or link.plane == plane):
            report.findings += check_link(link, facts)
    return report
