"""`checks | gpufabric_differences`: the settings a read-back found other than expected, one line each
("eth1 MTU: expected 9000, found 1500"). The role's read-back and playbooks/validate.yml word their
verdicts with it; validate.yml imports this role, which brings the filter along."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def differences(checks: Iterable[Mapping[str, Any]]) -> list[str]:
    return [
        f"{c['setting']}: expected {c['expected']}, found {c['found']}" for c in checks if c["found"] != c["expected"]
    ]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"gpufabric_differences": differences}
