"""Bill of material: switches, transceivers and cables, per plane and in total.

Counting rules (also in docs/exports.md):
- one transceiver per used switch cage (a cage split 2x400G holds one 800G module),
  one per server NIC cage: one per port, but one for all the ports of a NIC whose ports share a cage
  (a ConnectX-8 on a multi-plane compute plane, 2 x 400G in one 800G cage: `a_split` on the host link),
  counted with its first port's plane; links below 25G are copper (RJ45) and need none;
- one cable per logical link; the far side of an edge link is not ours to count;
- a compute plane built as several planes is counted plane by plane (`compute-p1`, `compute-p2`, ...).
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass, field

from gpufabric import media
from gpufabric.ib.hardware import SWITCH_MODELS
from gpufabric.ib.model import IbCable
from gpufabric.plan.infiniband import IbPlan
from gpufabric.plan.model import Link, Plan, PlanePlan, link_length
from gpufabric.plan.multiplane import parts

COPPER_BELOW_GBPS = media.COPPER_BELOW_GBPS


@dataclass
class PlaneBom:
    switches: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (role, platform, model) -> n
    transceivers: dict[str, int] = field(default_factory=dict)
    cables: dict[str, int] = field(default_factory=dict)

    @property
    def transceiver_total(self) -> int:
        return sum(self.transceivers.values())

    @property
    def cable_total(self) -> int:
        return sum(self.cables.values())


def _module(speed: int, split: int) -> str:
    return f"{speed * split}G module" + (f" (breakout {split}x{speed}G)" if split > 1 else "")


def plane_bom(plane: PlanePlan) -> PlaneBom:
    """Counted over the plane's links (a 32k-GPU plane has ~100k) with comprehensions, then named."""
    if plane.lengths is not None:
        return _bom_by_reach(plane)
    bom = PlaneBom()
    switches = {d.name for d in plane.devices}
    for d in plane.devices:
        key = (d.role, d.platform, d.model)
        bom.switches[key] = bom.switches.get(key, 0) + 1
    links = plane.links
    by_speed: Counter[int] = Counter(link.speed for link in links)
    fast = [link for link in links if link.speed >= COPPER_BELOW_GBPS]
    # Every logical port of one cage runs at one speed and split: whichever link is read last says it.
    cages: dict[tuple[str, int], tuple[int, int]] = {
        (link.a, link.a_cage): (link.speed, link.a_split) for link in fast if link.a in switches
    }
    cages |= {(link.b, link.b_cage): (link.speed, link.b_split) for link in fast if link.b in switches}
    nic_ports = _nic_modules(plane, [link for link in fast if link.kind == "host" and link.a not in switches])
    for speed, n in by_speed.items():
        bom.cables[f"{speed}G {'copper' if speed < COPPER_BELOW_GBPS else 'fiber'}"] = n
    for (speed, ways), n in Counter(cages.values()).items():
        bom.transceivers[_module(speed, ways)] = n
    bom.transceivers |= nic_ports
    return bom


def _nic_modules(plane: PlanePlan, host_links: list[Link]) -> dict[str, int]:
    """The server NICs' modules on these host links (each needing one): one per port, and one per shared cage
    (`a_split` > 1), in the plane of the cage's first port (plane 1 of a multi-plane compute plane)."""
    ports: Counter[str] = Counter()
    shared: dict[tuple[str, int], str] = {}
    for link in host_links:
        if link.a_split == 1:
            ports[f"{link.speed}G module (server NIC)"] += 1
        elif plane.plane_of.get(link.b, 1) == 1:
            shared[(link.a, link.a_cage)] = (
                f"{link.speed * link.a_split}G module (server NIC, {link.a_split}x{link.speed}G)"
            )
    ports.update(shared.values())
    return dict(ports)


def render(plan: Plan) -> str:
    """CSV: plane, category, item, quantity; rows with plane `total` sum the planes."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["plane", "category", "item", "quantity"])
    total: dict[tuple[str, str], int] = {}
    for name, plane in [part for n, p in plan.planes.items() for part in parts(n, p)]:
        bom = plane_bom(plane)
        rows = [("switch", f"{model} ({platform}, {role})", n) for (role, platform, model), n in bom.switches.items()]
        rows += [("transceiver", k, n) for k, n in sorted(bom.transceivers.items())]
        rows += [("cable", k, n) for k, n in sorted(bom.cables.items())]
        for category, item, n in rows:
            w.writerow([name, category, item, n])
            total[(category, item)] = total.get((category, item), 0) + n
    if plan.infiniband is not None:
        for category, item, n in infiniband_rows(plan.infiniband):
            w.writerow([plan.infiniband.plane, category, item, n])
            total[(category, item)] = total.get((category, item), 0) + n
    for (category, item), n in total.items():
        w.writerow(["total", category, item, n])
    return out.getvalue()


def infiniband_rows(ib: IbPlan) -> list[tuple[str, str, int]]:
    """Switches per role and model, and cables per rate; with the plane's lengths each cable by its medium
    and length (media.py, at the lane rate Ethernet shares), and for fibre a transceiver in each switch cage
    it uses (a twin-port OSFP cage holds one module for both its ports) and in each adapter port."""
    switches = Counter((n.role, n.model) for n in ib.fabric.switches)
    rows = [("switch", f"{model} (infiniband, {role})", n) for (role, model), n in switches.items()]
    if ib.lengths is None:
        cables = Counter(c.rate.label for c in ib.fabric.cables)
        return rows + [("cable", f"{label} InfiniBand", n) for label, n in cables.items()]
    nodes = ib.fabric.by_name
    per_cage = {n.name: max(1, n.ports // SWITCH_MODELS[n.model].cages) for n in ib.fabric.switches}
    named: Counter[str] = Counter()
    cages: dict[tuple[str, int], tuple[str, str, int]] = {}  # (switch, cage) -> (medium, rate label, ports)
    adapters: Counter[tuple[str, str]] = Counter()
    for cable in ib.fabric.cables:
        named[ib_cable_name(ib, cable)] += 1
        medium = media.choose_infiniband(cable.rate.speed, ib.length(cable) or 0)
        if medium is None or not medium.transceivers:
            continue
        for end in (cable.down, cable.up):
            node = nodes[end.node]
            if node.kind == "switch":
                ports = per_cage[node.name]
                cages[(node.name, (end.port - 1) // ports)] = (medium.name, cable.rate.label, ports)
            else:
                adapters[(medium.name, cable.rate.label)] += 1
    modules: Counter[str] = Counter()
    for (medium_name, label, ports), n in Counter(cages.values()).items():
        modules[f"InfiniBand {medium_name} module, {ports} x {label}"] += n
    for (medium_name, label), n in adapters.items():
        modules[f"InfiniBand {medium_name} module, {label} (adapter)"] += n
    rows += [("transceiver", k, n) for k, n in sorted(modules.items())]
    rows += [("cable", k, n) for k, n in sorted(named.items())]
    return rows


def ib_transceivers(ib: IbPlan) -> int:
    """The InfiniBand plane's transceivers (0 without lengths: cables are then counted by rate only)."""
    return sum(n for category, _, n in infiniband_rows(ib) if category == "transceiver") if ib.lengths else 0


def ib_cable_name(ib: IbPlan, cable: IbCable) -> str:
    """An InfiniBand cable in the bill of material: its rate, and with lengths its medium and length."""
    length = ib.length(cable)
    if length is None:
        return f"{cable.rate.label} InfiniBand"
    medium = media.choose_infiniband(cable.rate.speed, length)
    return f"{cable.rate.label} InfiniBand {medium.name if medium else 'beyond every reach'}, {length} m"


def _bom_by_reach(plane: PlanePlan) -> PlaneBom:
    """Each cable by its medium and length (media.py): copper and active cables carry their own ends;
    fibre needs a transceiver in each cage it uses (one per cage, as above) and in each server NIC."""
    bom = PlaneBom()
    switches = {d.name for d in plane.devices}
    roles = {d.name: d.role for d in plane.devices}
    for d in plane.devices:
        key = (d.role, d.platform, d.model)
        bom.switches[key] = bom.switches.get(key, 0) + 1
    cables: Counter[str] = Counter()
    cages: dict[tuple[str, int], tuple[int, int]] = {}
    nic_links: list[Link] = []
    for link in plane.links:
        medium = media.choose(link.speed, link_length(plane, link, roles) or 0)
        cables[cable_name(plane, link, roles)] += 1
        if medium is None or not medium.transceivers:
            continue
        for end, cage, split in ((link.a, link.a_cage, link.a_split), (link.b, link.b_cage, link.b_split)):
            if end in switches:
                cages[(end, cage)] = (link.speed, split)
        if link.kind == "host" and link.a not in switches:
            nic_links.append(link)
    bom.cables = dict(cables)
    for (speed, ways), n in Counter(cages.values()).items():
        bom.transceivers[_module(speed, ways)] = n
    bom.transceivers |= _nic_modules(plane, nic_links)
    return bom


def cable_name(plane: PlanePlan, link: Link, roles: dict[str, str]) -> str:
    """What a cable is called in the bill of material and the work order: its medium and length where the
    plane gives lengths, else its speed and copper or fibre."""
    length = link_length(plane, link, roles)
    if length is None:
        return f"{link.speed}G {'copper' if link.speed < COPPER_BELOW_GBPS else 'fiber'}"
    medium = media.choose(link.speed, length)
    return f"{link.speed}G {medium.name if medium else 'beyond every reach'}, {length} m"
