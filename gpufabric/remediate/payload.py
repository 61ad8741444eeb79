"""Alertmanager's webhook notification (payload version "4"), read strictly.

The shape is Alertmanager's own (its documentation, "Configuration", section `<webhook_config>`):
`{"version": "4", "groupKey", "truncatedAlerts", "status", "receiver", "groupLabels",
"commonLabels", "commonAnnotations", "externalURL", "alerts": [{"status", "labels", "annotations",
"startsAt", "endsAt", "generatorURL", "fingerprint"}, ...]}`. Everything the loop uses is checked
for its type and form; anything else is refused whole (`PayloadError`, a 400 for the sender), never
half-read. Label names follow Prometheus's data model; values are bounded and printable, since they
reach the audit trail and the service's lines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gpufabric.errors import GpufabricError

MAX_BODY = 1024 * 1024  # bytes: a notification of a few hundred alerts is well under it
MAX_ALERTS = 1000
MAX_LABELS = 64
MAX_VALUE = 256
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]{0,127}")
ALERT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_:]{0,63}")
FINGERPRINT = re.compile(r"[0-9a-f]{1,32}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)")
STATUSES = ("firing", "resolved")


class PayloadError(GpufabricError):
    """A notification the receiver does not read: the message says which field and why."""


@dataclass(frozen=True, slots=True)
class Alert:
    """One alert of a notification."""

    status: str  # firing | resolved
    labels: dict[str, str]
    starts_at: str
    ends_at: str
    fingerprint: str

    @property
    def name(self) -> str:
        return self.labels["alertname"]

    @property
    def key(self) -> str:
        """The alert's identity across notifications: Alertmanager's fingerprint of its labels."""
        return self.fingerprint

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "fingerprint": self.fingerprint,
                "starts_at": self.starts_at, "labels": dict(sorted(self.labels.items()))}  # fmt: skip


def _text(value: object, where: str, limit: int = MAX_VALUE) -> str:
    if not isinstance(value, str):
        raise PayloadError(f"{where}: a string is expected, not {type(value).__name__}")
    if len(value) > limit:
        raise PayloadError(f"{where}: longer than {limit} characters")
    if not value.isprintable():
        raise PayloadError(f"{where}: holds characters that are not printable")
    return value


def _labels(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise PayloadError(f"{where}: an object of label names to values is expected")
    if len(value) > MAX_LABELS:
        raise PayloadError(f"{where}: more than {MAX_LABELS} labels")
    out: dict[str, str] = {}
    for name, text in value.items():
        if not LABEL_NAME.fullmatch(name):
            raise PayloadError(f"{where}: {name[:64]!r} is not a label name")
        out[name] = _text(text, f"{where}.{name}")
    return out


def _alert(value: object, where: str) -> Alert:
    if not isinstance(value, dict):
        raise PayloadError(f"{where}: an object is expected")
    for field in ("status", "labels", "startsAt", "fingerprint"):
        if field not in value:
            raise PayloadError(f"{where}: {field!r} is missing")
    status = value["status"]
    if status not in STATUSES:
        raise PayloadError(f"{where}.status: 'firing' or 'resolved'")
    labels = _labels(value["labels"], f"{where}.labels")
    if not ALERT_NAME.fullmatch(labels.get("alertname", "")):
        raise PayloadError(f"{where}.labels.alertname: missing, or not an alert name (letters, digits, '_', ':')")
    starts = _text(value["startsAt"], f"{where}.startsAt", 64)
    if not TIME.fullmatch(starts):
        raise PayloadError(f"{where}.startsAt: an RFC 3339 time is expected")
    ends = _text(value.get("endsAt", ""), f"{where}.endsAt", 64)
    if ends and not TIME.fullmatch(ends):
        raise PayloadError(f"{where}.endsAt: an RFC 3339 time is expected")
    fingerprint = _text(value["fingerprint"], f"{where}.fingerprint", 32)
    if not FINGERPRINT.fullmatch(fingerprint):
        raise PayloadError(f"{where}.fingerprint: lower-case hexadecimal is expected")
    return Alert(status, labels, starts, ends, fingerprint)


def parse_payload(body: bytes) -> list[Alert]:
    """The alerts of one notification, or `PayloadError` saying what is wrong with it."""
    if len(body) > MAX_BODY:
        raise PayloadError(f"the body is larger than {MAX_BODY} bytes")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise PayloadError(f"the body is not JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise PayloadError("the body is not a JSON object")
    if data.get("version") != "4":
        raise PayloadError('version: Alertmanager\'s webhook payload version "4" is expected')
    alerts = data.get("alerts")
    if not isinstance(alerts, list):
        raise PayloadError("alerts: a list is expected")
    if len(alerts) > MAX_ALERTS:
        raise PayloadError(f"alerts: more than {MAX_ALERTS}")
    return [_alert(a, f"alerts[{i}]") for i, a in enumerate(alerts)]
