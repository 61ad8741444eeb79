"""Which changes of a SONiC switch disturb traffic, read from its driver's diff.

The driver's diff (gpufabric/nos/sonic/driver.py) is the JSON patch `config replace --dry-run` prints
(RFC 6902 operations on CONFIG_DB paths, `/TABLE/key/field`), then FRR's reload diff of the routing
configuration. CONFIG_DB paths say what changes; the routing part is judged as on an FRR switch. What
reprograms what, and what is assumed, is in docs/operating-disruptive.md.
"""

from __future__ import annotations

from gpufabric.nos.frr.disruption import first_bgp, reload_disruptions
from gpufabric.platforms.disruption import Classifier, DiffForm, Disruption, Reason, Rule, merge

# Every `"path": "/...` of the patch, wherever it sits on its line (the dry run may print it on one line).
PATCH = DiffForm(added=r'.*?"path": *"/', removed=r"(?!)")

RULES = (
    Rule(r"DEVICE_METADATA/localhost/bgp_asn", Reason.BGP_RESET, "the ASN changes", on="+"),
    Rule(
        r"DEVICE_METADATA/localhost/(?:hwsku|platform|buffer_model)",
        Reason.REBOOT,
        "read when the switch's services start: a config reload or a reboot",
        on="+",
    ),
    Rule(
        r"DEVICE_METADATA/localhost/docker_routing_config_mode",
        Reason.AGENT_RESTART,
        "the routing container restarts",
        on="+",
    ),
    Rule(r'PORT/[^/"]+/mtu', Reason.MTU, "a port's MTU changes", on="+"),
    Rule(
        r'(?:PORT/[^/"]+/(?:speed|lanes|fec|autoneg)|BREAKOUT_CFG)',
        Reason.PORT_SPEED,
        "a port's speed, lanes, FEC or breakout changes",
        on="+",
    ),
    Rule(
        r"(?:BUFFER_[A-Z_]+|CABLE_LENGTH|LOSSLESS_TRAFFIC_PATTERN|DEFAULT_LOSSLESS_BUFFER_PARAMETER|PORT_QOS_MAP|"
        r"DSCP_TO_TC_MAP|TC_TO_[A-Z_]+|MAP_PFC_PRIORITY_TO_QUEUE|QUEUE|SCHEDULER|WRED_PROFILE)\b",
        Reason.BUFFERS,
        "buffers or QoS tables change: the ASIC is reprogrammed",
        on="+",
    ),
    # Known to change no forwarding.
    Rule(r'PORT/[^/"]+/(?:description|alias)"', None, on="+"),
    Rule(r'DEVICE_METADATA/localhost/hostname"', None, on="+"),
    Rule(
        r"(?:NTP|NTP_SERVER|SYSLOG_SERVER|DNS_NAMESERVER|MGMT_[A-Z_]+|ACL_TABLE|ACL_RULE|LLDP|PFC_WD|SNMP[A-Z_]*)\b",
        None,
        on="+",
    ),
)
_CLASSIFY = Classifier(PATCH, RULES)


def routing_part(diff: str) -> tuple[str, str]:
    """(the JSON patch, FRR's reload diff as the FRR driver shows it: '+ line', '- no line')."""
    at = diff.find("Lines To ")
    if at < 0:
        return diff, ""
    lines: list[str] = []
    for raw in diff[at:].splitlines():
        if raw.startswith("Lines To") or raw.startswith("==="):
            continue
        if raw.startswith("+"):
            lines.append("+ " + raw[1:].removeprefix(" "))
        elif raw.startswith("-"):
            body = raw[1:].removeprefix(" ")
            indent = body[: len(body) - len(body.lstrip(" "))]
            bare = body.lstrip(" ")
            lines.append("- " + indent + (bare if bare.startswith("no ") else f"no {bare}"))
    return diff[:at], "\n".join(lines)


def disruptions(diff: str) -> tuple[Disruption, ...]:
    if not diff.strip():
        return ()
    patch, frr = routing_part(diff)
    if first_bgp(frr):
        return ()  # BGP is being set up: the switch routes no fabric traffic yet
    return merge(_CLASSIFY(patch) if patch.strip() else (), reload_disruptions(frr))
