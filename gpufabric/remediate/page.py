"""Past a cap the loop only alerts: each node it did not take out becomes an alert of its own in
Alertmanager (`GpufabricRemediationCapped`, posted to its API v2, `POST /api/v2/alerts`), which routes it
to whoever the configuration pages. The alert names the node, the part and the alert that wanted it out;
it ends `PAGE_FOR` after the last time the loop was capped on that node (Alertmanager's repeat of the
failing part's alert, which the loop tries again, posts it anew), or when a person silences it.
Alertmanager's documentation, "Clients" (https://prometheus.io/docs/alerting/latest/clients/).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from gpufabric.remediate.loop import Action
from gpufabric.telemetry.alert_post import AlertPostError, post_alerts

log = logging.getLogger(__name__)
CAPPED_ALERT = "GpufabricRemediationCapped"
PAGE_FOR = timedelta(minutes=30)


def capped_alerts(actions: Sequence[Action], now: datetime) -> list[dict[str, object]]:
    """Alertmanager's alert objects (API v2 postableAlert) for the capped actions among `actions`."""
    out: list[dict[str, object]] = []
    for action in actions:
        if action.action != "capped":
            continue
        for node in action.nodes:
            out.append(
                {
                    "labels": {
                        "alertname": CAPPED_ALERT,
                        "severity": "critical",
                        "node": node,
                        "part": action.part,
                        "cause": str(action.alert.get("name", "")),
                    },
                    "annotations": {
                        "summary": f"{node} was not taken out ({action.alert.get('name', '?')} "
                        f"{action.part}): {action.detail}"
                    },
                    "startsAt": now.isoformat(timespec="seconds"),
                    "endsAt": (now + PAGE_FOR).isoformat(timespec="seconds"),
                }
            )
    return out


def page(alertmanager: str, actions: Sequence[Action]) -> int:
    """Post the capped actions' alerts to Alertmanager at `alertmanager` (its base URL); how many were posted.
    A failure is logged, never raised: the trail already holds the capped action."""
    alerts = capped_alerts(actions, datetime.now(UTC))
    try:
        post_alerts(alertmanager, alerts)
    except AlertPostError as exc:
        log.warning("%d capped nodes not paged: %s", len(alerts), exc)
        return 0
    return len(alerts)
