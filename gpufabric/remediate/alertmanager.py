"""Alertmanager's configuration (alertmanager.yml) routing the fabric's failing-part alerts to the
remediation receiver.

- The root route sends nothing anywhere (a receiver with no integrations); a child route matches the
  alerts the loop acts on (`targets.ACTED`) and sends them to the webhook, resolved ones too
  (`send_resolved`: the loop resumes on them).
- `group_by: ['...']`: every alert is its own notification, so one part's alert is never held back
  waiting for another's; `group_wait` is short because acting late keeps jobs on a failing node.
- The fabric's name (the plan's source) is written in a comment; the rules carry no fabric label yet,
  so the routes match by alert name. Alertmanager's documentation, "Configuration".
- With a token file, the webhook's `http_config` sends it as a bearer token (`authorization: {type:
  Bearer, credentials_file: ...}`: Alertmanager reads the file, so the token is never in this
  configuration); with a CA file, an https webhook's certificate is checked against it (`tls_config:
  {ca_file: ...}`). Both are absolute paths on Alertmanager's machine (a relative one would be read from
  the configuration's folder), never read here. Alertmanager's documentation, "Configuration",
  `<http_config>` and `<tls_config>`.
"""

from __future__ import annotations

import re

import yaml

from gpufabric.errors import GpufabricError
from gpufabric.remediate.server import PATH
from gpufabric.remediate.targets import ACTED

RECEIVER = "gpufabric-remediate"
URL = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?")


class AlertmanagerConfigError(GpufabricError):
    """A setting that cannot go into alertmanager.yml (the message says which)."""


def _file(path: str, option: str) -> str:
    if not path.startswith("/") or not path.isprintable() or len(path) > 4096:
        raise AlertmanagerConfigError(f"{option}: {path!r} is not an absolute path on Alertmanager's machine")
    return path


def http_config(webhook: str, token_file: str | None, ca_file: str | None) -> dict[str, object]:
    """The webhook's `http_config`: the bearer token's file, the CA's file; {} for neither."""
    config: dict[str, object] = {}
    if token_file is not None:
        config["authorization"] = {"type": "Bearer", "credentials_file": _file(token_file, "--webhook-token-file")}
    if ca_file is not None:
        if not webhook.startswith("https://"):
            raise AlertmanagerConfigError(
                f"--webhook-ca-file checks a TLS receiver: the webhook must be https://, not {webhook!r}"
            )
        config["tls_config"] = {"ca_file": _file(ca_file, "--webhook-ca-file")}
    return config


def alertmanager_yaml(
    webhook: str,
    *,
    fabric: str = "",
    group_wait: str = "10s",
    group_interval: str = "30s",
    repeat: str = "5m",
    token_file: str | None = None,
    ca_file: str | None = None,
) -> str:
    if not URL.fullmatch(webhook):
        raise AlertmanagerConfigError(
            f"{webhook!r} is not an http(s) URL of the receiver (http://127.0.0.1:9095{PATH})"
        )
    hook: dict[str, object] = {"url": webhook, "send_resolved": True, "max_alerts": 0}
    guard = http_config(webhook, token_file, ca_file)
    if guard:
        hook["http_config"] = guard
    config = {
        "route": {
            "receiver": "nobody",
            "group_by": ["..."],
            "group_wait": group_wait,
            "group_interval": group_interval,
            "repeat_interval": repeat,
            "routes": [
                {
                    "receiver": RECEIVER,
                    "matchers": [f'alertname=~"{"|".join(sorted(ACTED))}"'],
                    "continue": False,
                }
            ],
        },
        "receivers": [
            {"name": "nobody"},
            {
                "name": RECEIVER,
                "webhook_configs": [hook],
            },
        ],
    }
    head = "# Alertmanager configuration written by `gpufabric telemetry alertmanager`"
    if fabric:
        head += f" for {fabric!r}"
    return head + "\n" + yaml.safe_dump(config, sort_keys=False, width=200)
