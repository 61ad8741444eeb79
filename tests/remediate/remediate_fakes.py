"""A FAKE scheduler for the remediation tests: it records every call and keeps node states in memory.
It is not Slurm nor Kubernetes; it keeps their contract (gpufabric.scheduler.model.Scheduler)."""

from __future__ import annotations

from collections.abc import Sequence

from gpufabric.scheduler import Mark, NodeState


class FakeScheduler:
    kind = "fake"

    def __init__(self, nodes: Sequence[str]) -> None:
        self.states = {name: NodeState(name, False, "") for name in nodes}
        self.calls: list[tuple[str, str, str]] = []  # (method, node, mark text)

    def person_drains(self, node: str, reason: str) -> None:
        self.states[node] = NodeState(node, True, reason, set_by="alice")

    def nodes(self, names: Sequence[str]) -> dict[str, NodeState]:
        return {n: self.states[n] for n in names if n in self.states}

    def take_out(self, node: str, mark: Mark) -> None:
        self.calls.append(("take_out", node, mark.text))
        self.states[node] = NodeState(node, True, mark.text)

    def put_back(self, node: str, mark: Mark) -> bool:
        self.calls.append(("put_back", node, mark.text))
        state = self.states[node]
        if not state.out or state.reason != mark.text:
            return False
        self.states[node] = NodeState(node, False, "")
        return True

    def move(self, states: dict[str, NodeState]) -> list[str]:
        return []

    def marked(self) -> list[NodeState]:
        return [s for s in self.states.values() if s.mark is not None]

    @property
    def drained(self) -> list[str]:
        return sorted(n for n, s in self.states.items() if s.out)


def alert(name: str, status: str = "firing", fingerprint: str = "a1", **labels: str) -> dict[str, object]:
    return {
        "status": status,
        "labels": {"alertname": name, **labels},
        "annotations": {},
        "startsAt": "2026-11-25T15:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "",
        "fingerprint": fingerprint,
    }


def payload(*alerts: dict[str, object]) -> dict[str, object]:
    return {
        "version": "4",
        "groupKey": "{}:{}",
        "truncatedAlerts": 0,
        "status": "firing",
        "receiver": "gpufabric-remediate",
        "groupLabels": {},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://127.0.0.1:9093",
        "alerts": list(alerts),
    }
