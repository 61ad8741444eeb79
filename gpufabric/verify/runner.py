"""Read every rendered file of the selected switches and run the checks: `nornir verify`.

Switches are read and checked in chunks on every core (gpufabric.parallel); what the link checks
need of each switch (port MTUs and addresses, BGP sessions, ASN) comes back as plain tuples, and
the links are checked once all their ends are in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.secrets import PasswordHasher
from gpufabric.gc_pause import gc_paused
from gpufabric.intent.types import SecretRef
from gpufabric.parallel import chunked, cores, fork_map
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.verify.checks import check_device, check_link
from gpufabric.verify.facts import Fact, Finding, SwitchFacts

PARALLEL_FROM = 64  # switches; fewer are read in-process
CHUNK = 16

# A fact as it crosses a process boundary: (key, value, file, line). Facts as objects pickle ~10x slower.
Row = tuple[object, object, str, int]


class _NoSecrets(PasswordHasher):
    """Verification reads hashes from the files; it never needs the password itself."""

    def hash(self, ref: SecretRef, user: str, algorithm: str, field: str, rounds: int = 0) -> str:
        return ""


@dataclass
class Report:
    switches: int = 0
    files: int = 0
    findings: list[Finding] = field(default_factory=list)


@dataclass
class _LinkFacts:
    """The part of a switch's facts that its links are checked against."""

    device: str
    platform: str
    asn: Row | None
    mtu: list[Row]
    address: list[Row]
    neighbors: list[Row]

    @classmethod
    def of(cls, facts: SwitchFacts) -> _LinkFacts:
        def rows(d: dict[str, Fact]) -> list[Row]:
            return [(k, f.value, f.file, f.line) for k, f in d.items()]

        asn = facts.asn
        return cls(
            facts.device,
            facts.platform,
            None if asn is None else ("asn", asn.value, asn.file, asn.line),
            rows(facts.mtu),
            rows(facts.address),
            rows(facts.neighbors),
        )

    def facts(self) -> SwitchFacts:
        def back(rows: list[Row]) -> dict[str, Fact]:
            return {str(k): Fact(v, f, n) for k, v, f, n in rows}

        out = SwitchFacts(self.device, self.platform)
        out.asn = None if self.asn is None else Fact(self.asn[1], self.asn[2], self.asn[3])
        out.mtu, out.address, out.neighbors = back(self.mtu), back(self.address), back(self.neighbors)
        return out


def _check_chunk(plan: Plan, index: LinkIndex, folder: Path, names: Sequence[str]) -> tuple[Report, list[_LinkFacts]]:
    report, ends = Report(), []
    with gc_paused():
        for name in names:
            device = index.devices[name]
            spec = platform(device.platform)
            missing = [f for f in spec.files(name) if not (folder / f).is_file()]
            if missing:
                report.findings.append(
                    Finding("files", name, missing[0], 0, "a rendered file (run `nornir render`)", "missing")
                )
                continue
            found = spec.reader(name, folder)
            report.switches += 1
            report.files += len(found.files)
            report.findings += check_device(plan, build(plan, device, index), found)
            ends.append(_LinkFacts.of(found))
    return report, ends


def verify(plan: Plan, folder: Path, plane: str | None = None, workers: int | None = None) -> Report:
    index = LinkIndex(plan, _NoSecrets(plan.intent.fabric.name))
    names = [d.name for d in plan.devices() if plane is None or d.plane == plane]
    workers = (workers or cores()) if len(names) >= PARALLEL_FROM else 1
    report = Report()
    facts: dict[str, SwitchFacts] = {}
    for part, ends in fork_map(partial(_check_chunk, plan, index, folder), chunked(names, CHUNK), workers):
        report.switches += part.switches
        report.files += part.files
        report.findings += part.findings
        facts.update((e.device, e.facts()) for e in ends)
    for link in plan.links():
        if link.kind in ("fabric", "edge") and (plane is None or link.plane == plane):
            report.findings += check_link(link, facts)
    return report
