"""Arista EOS: the running-config text, read back into facts."""

from __future__ import annotations

from pathlib import Path

from gpufabric.nos.eos.hashing import BTH_DEST_QP_BYTES, ROCE_UDP_PORT, STRATA_UDF_MASK, STRATA_UDF_OFFSETS
from gpufabric.platforms.spec import BTH_DEST_QP
from gpufabric.verify.cli_text import children, line, parse, read_common, sections
from gpufabric.verify.facts import Fact, SwitchFacts, read_rendered


def read_eos(device: str, path: Path) -> SwitchFacts:
    return eos_facts(device, read_rendered(path), path.name)


def eos_facts(device: str, text: str, file: str) -> SwitchFacts:
    """Facts of a config given as text: a rendered file, or a switch's running config."""
    facts = SwitchFacts(device, "eos", [file])
    conf = parse(text.splitlines(), "ios")
    read_common(facts, conf, file)
    for obj, _ in sections(conf, r"^interface (\S+)"):
        port = obj.text.split()[1]
        for child, _ in children(obj, r"service-profile ROCE"):
            facts.qos_ports[port] = Fact("ROCE", file, line(child))
    for obj, m in sections(conf, r"^router bgp (\d+)$"):
        facts.asn = Fact(int(m.group(1)), file, line(obj))
        facts.anchors["bgp"] = facts.anchors["ecmp"] = facts.asn
        for child, cm in children(obj, r"neighbor (\S+) remote-as (\d+)"):
            facts.neighbors[cm.group(1)] = Fact(int(cm.group(2)), file, line(child))
        for child, cm in children(obj, r"maximum-paths (\d+)(?: ecmp \d+)?"):
            facts.max_paths = Fact(int(cm.group(1)), file, line(child))
        for child, _ in children(obj, r"bgp bestpath as-path multipath-relax"):
            facts.multipath_relax = Fact(True, file, line(child))
        for child, cm in children(obj, r"neighbor (\S+) bfd"):
            facts.bfd[cm.group(1)] = Fact(_bfd_timers(conf), file, line(child))
        for child, cm in children(obj, r"timers bgp (\d+) (\d+)"):
            facts.bgp_timers = Fact((int(cm.group(1)), int(cm.group(2))), file, line(child))
        for vrf, vm in children(obj, r"vrf (\S+)"):
            name = vm.group(1)
            for child, cm in children(vrf, r"neighbor (\S+) remote-as (\d+)"):
                facts.vrf_neighbors[f"{name} {cm.group(1)}"] = Fact(int(cm.group(2)), file, line(child))
            for child, cm in children(vrf, r"neighbor (\S+) bfd"):
                facts.vrf_bfd[f"{name} {cm.group(1)}"] = Fact(_bfd_timers(conf), file, line(child))
            for child, cm in children(vrf, r"timers bgp (\d+) (\d+)"):
                facts.vrf_timers[name] = Fact((int(cm.group(1)), int(cm.group(2))), file, line(child))
    _subinterfaces(facts, conf, file)
    for obj, m in sections(conf, r"^qos map dscp ([\d ]+) to traffic-class (\d+)$"):
        for dscp in m.group(1).split():
            facts.dscp_map[int(dscp)] = Fact(int(m.group(2)), file, line(obj))
    for obj, _ in sections(conf, r"^ip hardware fib load-balance distribution dynamic$"):
        facts.adaptive = Fact(True, file, line(obj))
    _sand_hash(facts, conf, file)
    _strata_hash(facts, conf, file)
    _mmu(facts, conf, file)
    for obj, _ in sections(conf, r"^qos profile ROCE$"):
        facts.anchors["qos"] = Fact("ROCE", file, line(obj))
        _profile(facts, obj, file)
    return facts


def _subinterfaces(facts: SwitchFacts, conf: object, file: str) -> None:
    """Routed subinterfaces in a VRF: `interface EthernetN.V` with `encapsulation dot1q vlan V` and `vrf X`."""
    for obj, m in sections(conf, r"^interface (\S+\.\d+)$"):
        vlan = next((int(cm.group(1)) for _, cm in children(obj, r"encapsulation dot1q vlan (\d+)")), None)
        vrf = next((cm.group(1) for _, cm in children(obj, r"vrf (\S+)")), None)
        address = next((cm.group(1) for _, cm in children(obj, r"ip address (\S+/\d+)")), None)
        if vlan is not None and vrf is not None:
            facts.subinterfaces[m.group(1)] = Fact((vrf, vlan, address), file, line(obj))


def _sand_hash(facts: SwitchFacts, conf: object, file: str) -> None:
    """The queue-pair hash: a load-balance sand profile that, for UDP to RoCEv2's port, hashes the payload's
    bytes 5-7 (the destination QP), and the `port-channel load-balance sand profile` line that applies it."""
    applied = {m.group(1) for _, m in sections(conf, r"^port-channel load-balance sand profile (\S+)$")}
    for policies, _ in sections(conf, r"^load-balance policies$"):
        for profile, pm in children(policies, r"load-balance sand profile (\S+)"):
            if pm.group(1) not in applied:
                continue
            for fields, fm in children(profile, r"fields udp dst-port (\d+)"):
                for child, cm in children(fields, r"payload bytes (\S+)"):
                    if int(fm.group(1)) == ROCE_UDP_PORT and cm.group(1) == BTH_DEST_QP_BYTES:
                        facts.hash_fields = Fact((BTH_DEST_QP,), file, line(child))


# EOS writes the Ethernet type `IPv4` (as AVD renders it); either case is read.
_UDF = (
    r"(?i)^port-channel load-balance trident udf eth-type ipv4 ip-protocol udp header outer l4 offset (\d+)"
    r"(?: mask (0x[0-9a-f]{1,2}))?$"
)


def _strata_hash(facts: SwitchFacts, conf: object, file: str) -> None:
    """The queue-pair hash of a Strata switch: user-defined hash fields on every byte of the destination QP
    (outer-L4 offsets 13-15 of IPv4 UDP), each byte whole (mask 0xff, or none)."""
    found: dict[int, object] = {}
    for obj, m in sections(conf, _UDF):
        mask = m.group(2)
        if mask is None or int(mask, 16) == int(STRATA_UDF_MASK, 16):
            found.setdefault(int(m.group(1)), obj)
    if all(o in found for o in STRATA_UDF_OFFSETS):
        facts.hash_fields = Fact((BTH_DEST_QP,), file, line(found[STRATA_UDF_OFFSETS[0]]))


def _bfd_timers(conf: object) -> tuple[object, int]:
    """The switch-wide BFD timers a neighbor's `bfd` runs with: `router bfd` / `interval TX min-rx RX multiplier
    M default`, else EOS's default of 300 ms x 3. The interval reads `tx/rx` when the two differ."""
    timers: tuple[object, int] = (300, 3)
    for obj, _ in sections(conf, r"^router bfd$"):
        for _, cm in children(obj, r"interval (\d+) min-rx (\d+) multiplier (\d+) default"):
            tx, rx = int(cm.group(1)), int(cm.group(2))
            timers = (tx if tx == rx else f"{tx}/{rx}", int(cm.group(3)))
    return timers


def _mmu(facts: SwitchFacts, conf: object, file: str) -> None:
    """The `ingress headroom` of the MMU queue profile the switch applies (a profile not applied is inert)."""
    headroom: dict[str, Fact] = {}
    for obj, m in sections(conf, r"^platform trident mmu queue profile (\S+)$"):
        for child, cm in children(obj, r"ingress headroom (\d+)"):
            headroom[m.group(1)] = Fact(int(cm.group(1)), file, line(child))
    for _, m in sections(conf, r"^platform trident mmu queue profile (\S+) apply$"):
        facts.headroom = headroom.get(m.group(1))


def _profile(facts: SwitchFacts, obj: object, file: str) -> None:
    for child, _ in children(obj, r"qos trust dscp"):
        facts.trust_dscp = Fact(True, file, line(child))
    for child, cm in children(obj, r"priority-flow-control priority (\d+) no-drop"):
        facts.pfc[int(cm.group(1))] = Fact(True, file, line(child))
    for child, _ in children(obj, r"priority-flow-control pause watchdog"):
        facts.watchdog = Fact(True, file, line(child))
    for queue, qm in children(obj, r"tx-queue (\d+)"):
        tc = int(qm.group(1))
        for child, cm in children(
            queue, r"random-detect ecn minimum-threshold (\d+) kbytes maximum-threshold (\d+) kbytes.*"
        ):
            facts.ecn[tc] = Fact((int(cm.group(1)) * 1000, int(cm.group(2)) * 1000), file, line(child))
        for child, _ in children(queue, r"priority strict"):
            facts.strict[tc] = Fact(True, file, line(child))
        for child, cm in children(queue, r"bandwidth guaranteed percent (\d+)"):
            facts.shares[tc] = Fact(int(cm.group(1)), file, line(child))
