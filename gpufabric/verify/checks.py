"""Cross-checks of rendered configurations against the plan, written once for every platform.

What the text says (SwitchFacts) is held to the switch's one expectation by the comparison validate runs
on a running switch too (gpufabric/verify/expect.py); here the failing outcomes become findings with file and
line. What only a file can show stays here: the OOB switch's static routes, the secrets, both ends of a link.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from ipaddress import IPv4Interface, IPv4Network

from gpufabric.config.context import DeviceContext
from gpufabric.config.secrets import HASH_TOKEN, TOKEN
from gpufabric.intent.rules import address_pools
from gpufabric.plan.model import Device, Link, Plan, ip
from gpufabric.platforms import platform
from gpufabric.verify.expect import compare, expect
from gpufabric.verify.facts import Fact, Finding, LinkEnd, Row, SwitchFacts

_COMMUNITY = re.compile(r"community[\s:'\"]*([^\s'\"]+)")


def _at(facts: SwitchFacts, fact: Fact | None, anchor: str) -> tuple[str, int]:
    """Where a finding points: its fact, or where the missing fact's section starts (a carried plane's, at
    its BGP or its QoS)."""
    if anchor == "carried":
        fact = fact or facts.anchors.get("bgp") or facts.anchors.get("qos")
    fact = fact or facts.anchors.get(anchor)
    if fact is not None:
        return fact.file, fact.line
    return (facts.files[0] if facts.files else "?"), 1


def _finding(
    check: str, facts: SwitchFacts, fact: Fact | None, expected: object, found: object, *, anchor: str = ""
) -> Finding:
    file, line = _at(facts, fact, anchor or check.split("-", maxsplit=1)[0])
    return Finding(check, facts.device, file, line, str(expected), str(found))


def check_device(plan: Plan, ctx: DeviceContext, facts: SwitchFacts) -> Iterator[Finding]:
    yield from facts.problems
    if any(f.check == "parse" for f in facts.problems):
        return  # nothing else can be read from a file that does not parse
    d = ctx.device
    want = expect(ctx, plan.planes[d.plane].host_mtu)
    for o in compare(want, facts, failing_only=True):
        file, line = _at(facts, o.fact, o.anchor)
        yield Finding(o.check, facts.device, file, line, o.expected, o.found)
    if d.plane == "oob":
        yield from _oob(plan, facts)
    yield from _secrets(d, facts)


def _oob(plan: Plan, facts: SwitchFacts) -> Iterator[Finding]:
    data = [net for path, net in address_pools(plan.intent) if path[1] != "oob"]
    for route in facts.routes:
        vrf, prefix = route.value
        net = IPv4Network(prefix)
        if net.prefixlen == 0 and vrf is not None:
            continue  # the management VRF's default route toward the OOB gateway
        if any(net.overlaps(d) for d in data) or net.prefixlen == 0:
            yield _finding(
                "oob-isolation",
                facts,
                route,
                "no route toward a data plane",
                f"route {prefix}" + (f" vrf {vrf}" if vrf else ""),
            )


def _secrets(d: Device, facts: SwitchFacts) -> Iterator[Finding]:
    for fact in facts.secrets:
        text = str(fact.value)
        if "community" in text:
            m = _COMMUNITY.search(text)
            community = m.group(1) if m else ""
            if community not in ("null", "") and not TOKEN.fullmatch(community):
                yield _finding(
                    "secret", facts, fact, "a community reference (@secret:env:NAME@)", "a literal community"
                )
        elif (prefix := platform(d.platform).facts.hash_prefix) not in text and not HASH_TOKEN.search(text):
            yield _finding(
                "secret",
                facts,
                fact,
                f"a {prefix} hashed password",
                "a password that is not hashed",
            )


def check_link(link: Link, ends: dict[str, LinkEnd]) -> list[Finding]:
    """Both ends of a fabric or edge link agree: same MTU, same /31, and each names the other's ASN.
    A list, not a generator: it runs in the parent once per link (552,636 links in the 131k-GPU example,
    after the workers), nearly always finding nothing."""
    a, b = ends.get(link.a), ends.get(link.b)
    if a is None or b is None:
        return []
    found: list[Finding] = []
    ma, mb = a.mtu.get(link.a_port), b.mtu.get(link.b_port)
    if ma is not None and mb is not None and ma[0] != mb[0]:
        found.append(_link_finding("link-mtu", a, ma, f"{link.a_port} mtu equal to {link.b} {link.b_port} ({mb[0]})"))
    aa, ab = a.address.get(link.a_port), b.address.get(link.b_port)
    if aa is not None and ab is not None:
        ia, ib = IPv4Interface(aa[0]), IPv4Interface(ab[0])
        if ia.network != ib.network or ia.ip == ib.ip:
            expected = f"{link.a_port} in the same /31 as {link.b} {link.b_port} ({ab[0]})"
            found.append(_link_finding("link-subnet", a, aa, expected))
    if a.neighbors or b.neighbors:
        _session(a, b, ip(link.b_ip) or link.a_port, found)
        _session(b, a, ip(link.a_ip) or link.b_port, found)
    return found


def _session(me: LinkEnd, other: LinkEnd, key: str, found: list[Finding]) -> None:
    """`me`'s session toward `other` (by its address, or by `me`'s port where unnumbered) names other's ASN."""
    session = me.neighbors.get(key)
    if session is not None and other.asn is not None and session[0] != other.asn[0]:
        expected = f"remote-as {other.asn[0]} (what {other.device} declares)"
        found.append(_link_finding("bgp-both-ends", me, session, expected))


def _link_finding(check: str, end: LinkEnd, row: Row, expected: str) -> Finding:
    value, file, line = row
    return Finding(check, end.device, file, line, expected, str(value))
