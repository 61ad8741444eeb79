"""Which changes of a Linux + FRR switch disturb traffic, read from the FRR driver's diff.

The driver's diff (gpufabric/nos/frr/driver.py) is `frr-reload.py --test` as '- line' / '+ line'
(a deletion is FRR's `no` form under its context lines: `- router bgp 65001`, `-  no bgp router-id
10.0.0.3`), then unified diffs of the nftables file and of the host settings (the system file and the
interfaces file). Facts (docs/operating-disruptive.md):

- bgpd resets every session when the router-id changes (`bgp_router_id_set`: a CEASE to each peer,
  PEER_DOWN_RID_CHANGE), and a session when its remote-as, local-as, update-source, password or
  multihop changes (FRR's bgpd.c); `no router bgp` (an ASN change) removes the instance.
- Adding a neighbor, a network or a description resets nothing.
- A port's MTU is set by the host settings (the interfaces file): a port whose MTU changes drops
  frames larger than one end takes while the two ends disagree.
- The nftables file is loaded with `nft -f`, which replaces the ruleset atomically: hitless.
"""

from __future__ import annotations

from gpufabric.platforms.disruption import Classifier, DiffForm, Disruption, Reason, Rule, merge

# frr-reload's diff: every added line is '+ ' and its content; a removed one is its `no` form (context
# lines of the deletions carry no `no` and are not changes).
RELOAD = DiffForm(added=r"\+ ", removed=r"- *no ")

# Rules over the FRR part, shared with SONiC (its routing is FRR with the same reload diff).
BGP_RULES = (
    Rule(r"router bgp \d+", Reason.BGP_RESET, "the BGP instance is removed (its ASN changes)", on="-"),
    # A router-id that changes or goes shows as its `no` form; a new one alone comes with a new instance.
    Rule(r" *bgp router-id ", Reason.BGP_RESET, "the router-id changes: bgpd resets every session", on="-"),
    Rule(r" *bgp router-id ", None, on="+"),
    Rule(
        r" *neighbor \S+ (?:interface )?remote-as ",
        Reason.BGP_RESET,
        "a neighbor is removed, or its address or remote-as changes",
        on="-",
    ),
    Rule(r" *neighbor \S+ (?:interface )?remote-as ", None, on="+"),  # a new neighbor: nothing resets
    Rule(
        r" *neighbor \S+ (?:local-as|update-source|password|ebgp-multihop|ttl-security|capability|shutdown|"
        r"interface v6only)",
        Reason.BGP_RESET,
        "a neighbor setting that resets its session changes",
    ),
    # Context lines frr-reload repeats above each added line, and lines known to change no forwarding.
    Rule(r"router bgp \d+$", None, on="+"),
    Rule(r"interface \S+$", None, on="+"),
    Rule(r" *address-family \S+(?: \S+)?$", None, on="+"),
    Rule(r" *exit(?:-address-family)?$", None),
    Rule(r" *description ", None),
    Rule(r" *neighbor \S+ description ", None),
    Rule(r" *network \S+", None),  # a prefix added or withdrawn: the plan's reachability, not a transient
    Rule(r" *maximum-paths ", None),  # routes reinstalled with more or fewer next hops
    Rule(r" *bgp bestpath as-path multipath-relax$", None, on="+"),
    Rule(r" *ip address ", None, on="+"),
    Rule(r"(?:hostname|log|service|line vty|end$|!)", None),
)
_RELOAD_RULES = Classifier(RELOAD, BGP_RULES)

# The host settings: a unified diff of the system file and the interfaces file. Everything there but a
# port's MTU and an address taken away is a host setting no forwarding depends on (users, time, NTP, syslog,
# DNS, SNMP, LLDP, the management port, the ECMP hash policy).
UNIFIED = DiffForm(added=r"\+(?!\+\+ )", removed=r"-(?!-- )")
_SYSTEM = Classifier(
    UNIFIED,
    (
        # A changed MTU shows its old line; an MTU with none before is a new port's (every port gpufabric
        # configures has one), which changes nothing that carries traffic.
        Rule(r"[ \t]+mtu \d+", Reason.MTU, "a port's MTU changes", on="-"),
        Rule(r"[ \t]+address ", Reason.UNCLASSIFIED, "a port's address is removed or changed", on="-"),
    ),
    catch_all=False,
)

NFT_PART = "--- nftables running"
SYSTEM_PART = "--- system running"
SECRETS_NOTE = "# system:"


def split(diff: str) -> tuple[str, str]:
    """(the FRR part, the host settings part) of the driver's diff; the nftables part is hitless."""
    cut = [i for i in (diff.find(NFT_PART), diff.find(SYSTEM_PART), diff.find(SECRETS_NOTE)) if i >= 0]
    frr = diff[: min(cut)] if cut else diff
    at = diff.find(SYSTEM_PART)
    return frr, diff[at:] if at >= 0 else ""


def first_bgp(frr: str) -> bool:
    """The change creates the switch's BGP instance: a router-id appears and none, nor any instance, goes.
    Such a switch routes no fabric traffic yet (day 0, or rebuilt), so nothing of its change is a drain's
    business. (Assumed: every configuration gpufabric renders names its router-id.)"""
    return (
        "\n+  bgp router-id " in f"\n{frr}"
        and "\n+ router bgp " in f"\n{frr}"
        and "no bgp router-id" not in frr
        and "no router bgp" not in frr
    )


def reload_disruptions(frr: str) -> tuple[Disruption, ...]:
    """The disruptions of frr-reload's diff alone (the FRR driver's, and SONiC's routing part)."""
    if not frr.strip() or first_bgp(frr):
        return ()
    return _RELOAD_RULES(frr)


def disruptions(diff: str) -> tuple[Disruption, ...]:
    if not diff.strip():
        return ()
    frr, system = split(diff)
    if first_bgp(frr):
        return ()
    return merge(reload_disruptions(frr), _SYSTEM(system) if system else ())
