"""Which changes of a Cumulus Linux switch disturb traffic, read from NVUE's diff.

The driver's diff is `nv config diff -o commands`: `nv set <path> <value>` and `nv unset <path>` lines
(a changed value is a `set`, so a new neighbor and a changed one look alike). NVIDIA's QoS page: NVUE
reloads switchd for QoS changes, which does not disturb forwarding except when the buffers
(qos_infra.conf), link pause or PFC change; enabling BGP or changing the ASN restarts FRR. The rest, and
what is assumed, is in docs/operating-disruptive.md.
"""

from __future__ import annotations

from gpufabric.platforms.disruption import Classifier, DiffForm, Disruption, Reason, Rule

NVUE = DiffForm(added="nv set ", removed="nv unset ")


def classifier(mgmt_port: str) -> Classifier:
    return Classifier(
        NVUE,
        (
            Rule(r"router bgp (?:autonomous-system|enable) ", Reason.BGP_RESET, "the ASN changes: NVUE restarts FRR"),
            Rule(r"router bgp (?:autonomous-system|enable)$", Reason.BGP_RESET, "BGP is removed", on="-"),
            Rule(r"router bgp router-id", Reason.BGP_RESET, "the router-id changes: bgpd resets every session"),
            Rule(r"vrf \S+ router bgp neighbor \S+(?: remote-as)?$", Reason.BGP_RESET, "a neighbor is removed", on="-"),
            Rule(
                r"vrf \S+ router bgp neighbor \S+ (?:remote-as|type|local-as|update-source|password|multihop-ttl) ",
                Reason.BGP_RESET,
                "a neighbor's remote-as or session setting is set (a new neighbor or a changed one)",
            ),
            Rule(r"interface \S+ link mtu", Reason.MTU, "a port's MTU changes"),
            Rule(
                r"interface \S+ link (?:breakout|speed|lanes|fec)",
                Reason.PORT_SPEED,
                "a port's breakout, speed, lanes or FEC changes",
            ),
            Rule(
                r"qos (?:roce|pfc|link-pause|traffic-pool|buffer-pool|advance-buffer-config)|"
                r"interface \S+ qos (?:pfc(?!-watchdog)|link-pause|buffer)",
                Reason.BUFFERS,
                "buffers, PFC or link pause change: switchd reprograms the ASIC's buffers",
            ),
            # Known to change no forwarding (NVIDIA: QoS maps, the scheduler and ECN reload switchd hitlessly).
            Rule(r"qos (?:mapping|egress-scheduler|congestion-control|remark)", None),
            Rule(r"interface \S+ qos pfc-watchdog", None),
            Rule(rf"interface {mgmt_port} ", None),  # the management port carries no fabric traffic
            Rule(r"interface \S+ (?:description|type)", None),
            Rule(r"interface \S+ ip address ", None, on="+"),
            Rule(r"interface \S+ link state up", None, on="+"),
            Rule(r"vrf \S+ router bgp neighbor \S+ description", None),
            Rule(r"vrf \S+ router bgp address-family \S+ (?:network|multipaths)", None),
            Rule(r"(?:system (?:hostname|timezone|aaa|snmp-server|syslog|message|control-plane)|service |acl )", None),
        ),
    )


def disruptions(classify: Classifier, diff: str) -> tuple[Disruption, ...]:
    if not diff.strip():
        return ()
    if "nv set router bgp enable on" in diff:
        return ()  # BGP is being enabled: the switch routes no fabric traffic yet
    return classify(diff)
