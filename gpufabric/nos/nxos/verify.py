"""Cisco NX-OS: the running-config text, read back into facts.

NX-OS spreads the RoCE contract over three policies: the DSCP map is the join of a
class-map (match dscp) and the classification policy (set qos-group).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gpufabric.nos.nxos.hashing import NXOS_HASH
from gpufabric.verify.cli_text import children, line, parse, read_common, sections
from gpufabric.verify.facts import Fact, SwitchFacts, read_rendered


def read_nxos(device: str, path: Path) -> SwitchFacts:
    return nxos_facts(device, read_rendered(path), path.name)


def nxos_facts(device: str, text: str, file: str) -> SwitchFacts:
    """Facts of a config given as text: a rendered file, or a switch's running config."""
    facts = SwitchFacts(device, "nxos", [file])
    conf = parse(text.splitlines(), "nxos")
    read_common(facts, conf, file)
    members: dict[str, str] = {}  # port -> its port-channel
    for obj, m in sections(conf, r"^interface (\S+)"):
        for child, _ in children(obj, r"service-policy type qos input QOS_CLASSIFICATION"):
            facts.qos_ports[m.group(1)] = Fact("QOS_CLASSIFICATION", file, line(child))
        for _, cm in children(obj, r"channel-group (\d+)(?: mode \S+)?"):
            members[m.group(1)] = f"port-channel{cm.group(1)}"
    for port, channel in members.items():  # a port-channel's policy is its members' (NX-OS sets it there)
        if channel in facts.qos_ports and port not in facts.qos_ports:
            facts.qos_ports[port] = facts.qos_ports[channel]
    for obj, m in sections(conf, r"^router bgp (\d+)$"):
        facts.asn = Fact(int(m.group(1)), file, line(obj))
        facts.anchors["bgp"] = facts.anchors["ecmp"] = facts.asn
        for child, _ in children(obj, r"bestpath as-path multipath-relax"):
            facts.multipath_relax = Fact(True, file, line(child))
        for child, cm in children(obj, r"maximum-paths (\d+)", deep=True):
            facts.max_paths = Fact(int(cm.group(1)), file, line(child))
        for child, cm in children(obj, r"timers bgp (\d+) (\d+)"):
            facts.bgp_timers = Fact((int(cm.group(1)), int(cm.group(2))), file, line(child))
        for nbr, nm in children(obj, r"neighbor (\S+)"):
            for child, cm in children(nbr, r"remote-as (\d+)"):
                facts.neighbors[nm.group(1)] = Fact(int(cm.group(1)), file, line(child))
            for child, _ in children(nbr, r"bfd"):
                facts.bfd[nm.group(1)] = Fact(_bfd_timers(conf), file, line(child))
        for vrf, vm in children(obj, r"vrf (\S+)"):
            name = vm.group(1)
            for child, cm in children(vrf, r"timers bgp (\d+) (\d+)"):
                facts.vrf_timers[name] = Fact((int(cm.group(1)), int(cm.group(2))), file, line(child))
            for nbr, nm in children(vrf, r"neighbor (\S+)"):
                for child, cm in children(nbr, r"remote-as (\d+)"):
                    facts.vrf_neighbors[f"{name} {nm.group(1)}"] = Fact(int(cm.group(1)), file, line(child))
                for child, _ in children(nbr, r"bfd"):
                    facts.vrf_bfd[f"{name} {nm.group(1)}"] = Fact(_bfd_timers(conf), file, line(child))
    for obj, m in sections(conf, r"^interface (\S+\.\d+)$"):
        vlan = next((int(cm.group(1)) for _, cm in children(obj, r"encapsulation dot1q (\d+)")), None)
        member = next((cm.group(1) for _, cm in children(obj, r"vrf member (\S+)")), None)
        address = next((cm.group(1) for _, cm in children(obj, r"ip address (\S+/\d+)")), None)
        if vlan is not None and member is not None:
            facts.subinterfaces[m.group(1)] = Fact((member, vlan, address), file, line(obj))
    for obj, m in sections(conf, r"^vrf context (\S+)$"):
        for child, cm in children(obj, r"ip route (\S+/\d+) \S+"):
            facts.routes.append(Fact((m.group(1), cm.group(1)), file, line(child)))
    for obj, _ in sections(conf, r"^ip load-sharing address source-destination port source-destination$"):
        facts.hash_fields = Fact(NXOS_HASH, file, line(obj))
    _qos(facts, conf, file)
    return facts


def _bfd_timers(conf: Any) -> tuple[object, int]:
    """The switch-wide BFD timers a neighbor's `bfd` runs with: `bfd interval TX min_rx RX multiplier M`, else
    NX-OS's default of 50 ms x 3. The interval reads `tx/rx` when the two differ."""
    timers: tuple[object, int] = (50, 3)
    for _, m in sections(conf, r"^bfd interval (\d+) min_rx (\d+) multiplier (\d+)$"):
        tx, rx = int(m.group(1)), int(m.group(2))
        timers = (tx if tx == rx else f"{tx}/{rx}", int(m.group(3)))
    return timers


def _qos(facts: SwitchFacts, conf: Any, file: str) -> None:
    matches: dict[str, list[tuple[int, int]]] = {}
    for obj, m in sections(conf, r"^class-map type qos match-any (\S+)$"):
        for child, cm in children(obj, r"match dscp ([\d,\- ]+)"):
            dscps = [int(x) for x in re.split(r"[ ,]+", cm.group(1).strip()) if x.isdigit()]
            matches.setdefault(m.group(1), []).extend((d, line(child)) for d in dscps)
    for obj, _ in sections(conf, r"^policy-map type qos QOS_CLASSIFICATION$"):
        facts.anchors["qos"] = Fact("QOS_CLASSIFICATION", file, line(obj))
        facts.trust_dscp = Fact(True, file, line(obj))
        for cls, cm in children(obj, r"class (\S+)"):
            for child, sm in children(cls, r"set qos-group (\d+)"):
                for dscp, _ in matches.get(cm.group(1), []):
                    facts.dscp_map[dscp] = Fact(int(sm.group(1)), file, line(child))
    for obj, _ in sections(conf, r"^policy-map type network-qos \S+$"):
        for cls, _ in children(obj, r"class type network-qos \S+"):
            for child, pm in children(cls, r"pause pfc-cos ([\d,]+)"):
                for cos in pm.group(1).split(","):
                    facts.pfc[int(cos)] = Fact(True, file, line(child))
    for obj, _ in sections(conf, r"^policy-map type queuing \S+$"):
        for cls, qm in children(obj, r"class type queuing c-out-8q-q(\d+)"):
            tc = int(qm.group(1))
            for child, em in children(
                cls, r"random-detect minimum-threshold (\d+) kbytes maximum-threshold (\d+) kbytes .*\becn"
            ):
                facts.ecn[tc] = Fact((int(em.group(1)) * 1000, int(em.group(2)) * 1000), file, line(child))
            for child, _ in children(cls, r"priority level 1"):
                facts.strict[tc] = Fact(True, file, line(child))
            for child, bm in children(cls, r"bandwidth remaining percent (\d+)"):
                facts.shares[tc] = Fact(int(bm.group(1)), file, line(child))
        for cls, _ in children(obj, r"class type queuing c-out-8q-q-default"):
            for child, bm in children(cls, r"bandwidth remaining percent (\d+)"):
                facts.shares[0] = Fact(int(bm.group(1)), file, line(child))
        for cls, qm in children(obj, r"class type queuing c-in-q(\d+)"):
            for child, pm in children(cls, r"pause buffer-size (\d+) pause-threshold (\d+) resume-threshold (\d+)"):
                sizes = (int(pm.group(1)), int(pm.group(2)), int(pm.group(3)))
                facts.pause_buffer[int(qm.group(1))] = Fact(sizes, file, line(child))
    for obj, _ in sections(conf, r"^priority-flow-control watch-dog-interval on$"):
        facts.watchdog = Fact(True, file, line(obj))
