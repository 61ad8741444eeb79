"""Which changes of an Arista EOS switch disturb traffic, read from its configuration session's diff.

NAPALM's `compare_config` on EOS is `show session-config named <session> diffs`: a unified diff of the
running configuration against the session's (`-line` / `+line`, context lines indented by a space).
What resets or reprograms what is in docs/operating-disruptive.md, with what is assumed.
"""

from __future__ import annotations

from gpufabric.platforms.disruption import Classifier, DiffForm, Disruption, Reason, Rule

UNIFIED = DiffForm(added=r"\+(?!\+\+ )", removed=r"-(?!-- )")

RULES = (
    Rule(r"router bgp \d+", Reason.BGP_RESET, "the BGP instance is removed (its ASN changes)", on="-"),
    Rule(r" +router-id ", Reason.BGP_RESET, "the router-id changes"),
    Rule(
        r" +neighbor \S+ remote-as ",
        Reason.BGP_RESET,
        "a neighbor is removed, or its address or remote-as changes",
        on="-",
    ),
    Rule(
        r" +neighbor \S+ (?:peer group|local-as|update-source|password|ebgp-multihop|shutdown)",
        Reason.BGP_RESET,
        "a neighbor setting that resets its session changes",
    ),
    # A changed MTU shows its old line; one with none before is a new port's (every port has one rendered).
    Rule(r" +mtu \d+", Reason.MTU, "a port's MTU changes", on="-"),
    Rule(r" +mtu \d+", None, on="+"),
    Rule(r"(?: +speed |hardware speed-group )", Reason.PORT_SPEED, "a port's speed or lanes change"),
    Rule(r"platform \S+ mmu|.* ingress headroom ", Reason.BUFFERS, "the ASIC's buffer profile changes"),
    Rule(
        r"qos (?:profile|map|trust)| +(?:service-profile|priority-flow-control|tx-queue|bandwidth|random-detect|"
        r"priority strict|qos trust)",
        Reason.BUFFERS,
        "the QoS profile, map or a port's PFC changes",
    ),
    Rule(r"hardware tcam", Reason.AGENT_RESTART, "a TCAM profile change restarts forwarding agents"),
    # Known to change no forwarding.
    Rule(r"router bgp \d+$", None, on="+"),
    Rule(r"interface \S+$", None, on="+"),
    Rule(r" +neighbor \S+ remote-as ", None, on="+"),  # a new neighbor
    Rule(r" +(?:neighbor \S+ )?description ", None),
    Rule(r" +(?:network|maximum-paths|bgp bestpath|address-family \S+$)", None),
    Rule(r" +ip address ", None, on="+"),
    Rule(r" +no shutdown$", None, on="+"),
    Rule(
        r"(?:hostname|username|ntp|logging|snmp-server|dns domain|ip name-server|ip domain|clock timezone|banner|"
        r"management|aaa|lldp|ip access-list|!|end$|$)",
        None,
    ),
    Rule(r" +(?:\d+ (?:permit|deny) |ip access-group |protocol https|no shutdown$|vrf \S+$)", None),
)
_CLASSIFY = Classifier(UNIFIED, RULES)


def disruptions(diff: str) -> tuple[Disruption, ...]:
    if not diff.strip():
        return ()
    text = f"\n{diff}"
    if "\n+router bgp " in text and "\n-router bgp " not in text:
        return ()  # the BGP instance is new: the switch routes no fabric traffic yet
    return _CLASSIFY(diff)
