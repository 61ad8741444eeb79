"""One validation result: check id, device, expected, observed, verdict."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    check: str
    device: str
    item: str  # what was checked on the device: a port, a peer, a prefix
    expected: str
    observed: str
    ok: bool

    @property
    def verdict(self) -> str:
        return "pass" if self.ok else "fail"

    def as_dict(self) -> dict[str, object]:
        # Field by field, as dataclasses.asdict orders them (which deep-copies each: 1.5 million results
        # at 32k, mostly the ECMP width of every remote loopback on every switch).
        return {
            "check": self.check,
            "device": self.device,
            "item": self.item,
            "expected": self.expected,
            "observed": self.observed,
            "ok": self.ok,
            "verdict": self.verdict,
        }


def result(
    check: str, device: str, item: str, expected: object, observed: object, *, ok: bool | None = None
) -> CheckResult:
    """A result that passes when observed equals expected, or as `ok` says (thresholds)."""
    verdict = str(expected) == str(observed) if ok is None else ok
    return CheckResult(check, device, item, str(expected), str(observed), verdict)
