"""The remediation loop: Alertmanager's notifications in, scheduler drains out.

`remediate serve` receives Alertmanager's webhook (payload.py reads it strictly), maps each alert to
the servers it takes a path from by the plan (targets.py), and drains those nodes in Slurm and
Kubernetes through gpufabric.scheduler under its own mark, within blast-radius guards, resuming
exactly its own drains once the alert has stayed resolved for the hold-down (loop.py). Every action
goes to an audit trail of JSON lines, a drain's or resume's intent fsynced before it is acted on
(trail.py); the loop's state is kept in a record file, checked at load, so a restart still resumes
(record.py). Only Alertmanager may ask: a bearer token, TLS, loopback without a token (auth.py).
`telemetry alertmanager` writes Alertmanager's configuration routing to it (alertmanager.py). A
service: beside telemetry, above the scheduler. docs/remediation.md.
"""

from gpufabric.remediate.loop import Action, Guards, RemediateError, Remediator
from gpufabric.remediate.payload import Alert, PayloadError, parse_payload
from gpufabric.remediate.targets import ACTED, Target, target_of

__all__ = [
    "ACTED",
    "Action",
    "Alert",
    "Guards",
    "PayloadError",
    "RemediateError",
    "Remediator",
    "Target",
    "parse_payload",
    "target_of",
]
