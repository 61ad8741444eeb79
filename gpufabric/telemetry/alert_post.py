"""Alerts posted to Alertmanager's API v2 (`POST /api/v2/alerts`, a list of postableAlert objects: labels,
annotations, startsAt, endsAt), as Prometheus posts its own. Alertmanager's documentation, "Clients"
(https://prometheus.io/docs/alerting/latest/clients/). What posts here: the slow-node screen's signals and
the remediation loop's capped nodes, both routed by Alertmanager like any other alert."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.outputs import json_dumps

BASE_URL = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+(:[0-9]{1,5})?/?")


class AlertPostError(GpufabricError):
    """Alertmanager did not take the alerts (the message says why)."""


def post_alerts(base: str, alerts: Sequence[dict[str, Any]], *, timeout: float = 30.0) -> None:
    """Post `alerts` to the Alertmanager at `base` (http(s)://host:port); raises AlertPostError."""
    if not BASE_URL.fullmatch(base):
        raise AlertPostError(f"{base!r} is not an Alertmanager base URL (http://127.0.0.1:9093)")
    if not alerts:
        return
    request = urllib.request.Request(
        base.rstrip("/") + "/api/v2/alerts", json_dumps(list(alerts)).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            answer.read()
    except urllib.error.HTTPError as exc:
        raise AlertPostError(f"Alertmanager at {base} refused {len(alerts)} alerts: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise AlertPostError(f"Alertmanager at {base} was not reached: {exc}") from None
