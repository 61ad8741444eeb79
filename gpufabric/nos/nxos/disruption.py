"""Which changes of a Cisco NX-OS switch disturb traffic, read from its rollback patch.

The driver's diff (gpufabric/nos/nxos/driver.py) is `show diff rollback-patch` from the running
configuration to the candidate: the commands that would run, indented under their parent commands (which
appear unmarked), a removal in the `no` form. So an unmarked parent (`interface Ethernet1/1`,
`router bgp 65001`) is context, not a change. What resets or reprograms what is in
docs/operating-disruptive.md, with what is assumed.
"""

from __future__ import annotations

from gpufabric.platforms.disruption import Classifier, DiffForm, Disruption, Reason, Rule

PATCH = DiffForm(added=r" *+(?!no )", removed=r" *+no ")

RULES = (
    Rule(r"router bgp \d+", Reason.BGP_RESET, "the BGP instance is removed (its ASN changes)", on="-"),
    Rule(r"router-id ", Reason.BGP_RESET, "the router-id changes"),
    Rule(r"neighbor \S+", Reason.BGP_RESET, "a neighbor is removed (or its address changes)", on="-"),
    Rule(
        r"(?:remote-as|local-as|update-source|password|ebgp-multihop) ",
        Reason.BGP_RESET,
        "a neighbor's remote-as (a new neighbor or a changed one) or session setting is set",
    ),
    Rule(r"mtu \d+", Reason.MTU, "an MTU changes (a port's, or the network-qos class's)"),
    Rule(r"interface breakout ", Reason.PORT_SPEED, "a breakout changes: NX-OS reloads the module's ports"),
    Rule(r"speed ", Reason.PORT_SPEED, "a port's speed changes"),
    Rule(
        r"(?:policy-map|class-map|class) type (?:network-qos|queuing|qos) |system qos|service-policy type |"
        r"pause pfc-cos|priority-flow-control|random-detect|bandwidth|priority level|match dscp|set qos-group|"
        r"hardware qos",
        Reason.BUFFERS,
        "buffers, PFC or the QoS policies change",
    ),
    Rule(r"hardware access-list tcam region", Reason.REBOOT, "a TCAM region change takes effect after a reload"),
    # Parents shown as context, and lines known to change no forwarding.
    Rule(r"(?:interface \S+|router bgp \d+|neighbor \S+|address-family \S+ \S+|vrf context \S+)$", None, on="+"),
    Rule(r"shutdown$", None, on="-"),  # `no shutdown`: a port brought up
    Rule(r"(?:description|network|maximum-paths|bestpath|vrf member|access-class|ip access-group) ", None),
    Rule(r"ip address ", None, on="+"),
    Rule(
        r"(?:hostname|username|ntp|logging|snmp-server|ip domain-name|clock|banner|feature (?:lldp|nxapi|scp-server)|"
        r"nxapi|line vty|ip access-list|\d+ (?:permit|deny) |!|end$|$)",
        None,
    ),
)
_CLASSIFY = Classifier(PATCH, RULES)


def disruptions(diff: str) -> tuple[Disruption, ...]:
    """NX-OS shows a parent unmarked whether it is new or context, so a new BGP instance cannot be told from
    a changed one: no exception for a first configuration here (drain it, or push it with --drain never)."""
    return _CLASSIFY(diff) if diff.strip() else ()
