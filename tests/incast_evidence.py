"""Stand-ins for an incast job's evidence: switches that answer in their published formats (NX-OS and
EOS show commands through NAPALM's `cli`, `ethtool -S` of a Linux switch port), mlx5 `ethtool -S`
text, perftest's recorded output; and a result folder written as the job's Slurm script writes it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from gpufabric.acceptance.counters import dump, snapshot_switches
from gpufabric.acceptance.model import IncastJob

OUTPUTS = Path(__file__).parent / "acceptance_outputs"


def bw_text(gbits: float) -> str:
    return (OUTPUTS / "ib_write_bw.txt").read_text().replace("{BW}", f"{gbits:.2f}")


@dataclass
class PortState:
    pfc_rx: int = 100
    pfc_tx: int = 200
    q3_drops: int = 0
    ecn: int = 50
    discards: int = 0


@dataclass
class SwitchState:
    platform: str
    ports: dict[str, PortState] = field(default_factory=dict)

    def nxos(self) -> dict[str, str]:
        rows = [{"if_name_str": p, "mode": "On", "oper": "On", "rx-stats": str(s.pfc_rx), "tx-stats": str(s.pfc_tx)}
                for p, s in self.ports.items()]  # fmt: skip
        answers = {"show interface priority-flow-control | json": json.dumps(
            {"TABLE_module": {"ROW_module": {"TABLE_pfc_interface": {"ROW_pfc_interface": rows}}}})}  # fmt: skip
        for p, s in self.ports.items():
            entries = [
                {"eq-stat-type": "Tx", "eq-stat-units": "Pkts", "eq-uc-stat-value": "123456"},
                {"eq-stat-type": "WRED/AFD & Tail Drop", "eq-stat-units": "Pkts", "eq-uc-stat-value": str(s.q3_drops),
                 "eq-oobfc-uc-stat-value": "0", "eq-mc-stat-value": "0"},
                {"eq-stat-type": "WRED/AFD & Tail Drop", "eq-stat-units": "Byts", "eq-uc-stat-value": "999999"},
                {"eq-stat-type": "ECN", "eq-stat-units": "Pkts", "eq-uc-stat-value": str(s.ecn)},
            ]  # fmt: skip
            group = {"eq-qosgrp": "3", "TABLE_qosgrp_egress_stats_entry": {"ROW_qosgrp_egress_stats_entry": entries}}
            egress = {"dir": "Egress", "TABLE_qosgrp_egress_stats": {"ROW_qosgrp_egress_stats": group}}
            doc = {"TABLE_queuing_interface": {"ROW_queuing_interface": [egress, {"dir": "Ingress"}]}}
            answers[f"show queuing interface {p} | json"] = json.dumps(doc)
        return answers

    def eos(self) -> dict[str, str]:
        table = ["Port       RxPfc       TxPfc"]
        table += [f"Et{p.removeprefix('Ethernet'):<8}{s.pfc_rx:>6}{s.pfc_tx:>12}" for p, s in self.ports.items()]
        return {"show priority-flow-control counters": "\n".join(table) + "\n",
                "show priority-flow-control counters watchdog | json": '{"interfaces": {}}'}  # fmt: skip

    def ethtool(self, port: str) -> str:
        """A Linux switch port: mlxsw's per-priority pauses, switchd's per-queue WRED drops."""
        s = self.ports[port]
        return (f"NIC statistics:\n     rx_octets: 1000\n     rx_pause_prio_3: {s.pfc_rx}\n"
                f"     tx_pause_prio_3: {s.pfc_tx}\n     rx_pause_prio_0: 0\n     HwIfOutQ3WredDrops: {s.q3_drops}\n"
                f"     ecn_marked: {s.ecn}\n")  # fmt: skip


class StandInSwitch:
    """What a NAPALM driver answers: `cli` for EOS and NX-OS, `get_ethtool_stats` for a Linux switch."""

    def __init__(self, state: SwitchState) -> None:
        self.state = state
        if state.platform in ("frr", "cumulus"):
            self.get_ethtool_stats = lambda ports: {p: state.ethtool(p) for p in ports}

    def cli(self, commands: list[str]) -> dict[str, str]:
        answers = self.state.nxos() if self.state.platform == "nxos" else self.state.eos()
        return {c: answers.get(c, "") for c in commands}

    def get_interfaces_counters(self) -> dict:
        return {p: {"rx_discards": 0, "tx_discards": s.discards, "rx_errors": 0, "tx_errors": 0}
                for p, s in self.state.ports.items()}  # fmt: skip


def nic_text(**changes: int) -> str:
    text = (OUTPUTS / "mlx5_ethtool_S.txt").read_text()
    for name, value in changes.items():
        text, n = re.subn(rf"(\b{name}:\s*)\d+", rf"\g<1>{value}", text)
        assert n == 1, name
    return text


class Run:
    """An incast job's result folder, written as its Slurm script would, counters changed at will."""

    def __init__(self, plan, job: IncastJob, folder: Path) -> None:
        self.job, self.folder = job, folder
        platforms = {d.name: d.platform for d in plan.devices()}
        self.platforms = {d: platforms[d] for d in job.crosses}
        self.switches = {d: SwitchState(self.platforms[d]) for d in job.crosses}
        for d, p in job.ports:
            self.switches[d].ports[p] = PortState()
        self.nic_after: dict[str, dict[str, int]] = {e.server: {} for e in job.servers()}
        self.rate = job.threshold * 1.05 / len(job.senders)
        folder.mkdir(parents=True, exist_ok=True)

    def snapshot(self, phase: str) -> None:
        snap = snapshot_switches(self.job, self.platforms, lambda d: StandInSwitch(self.switches[d]))
        (self.folder / f"switches.{phase}.json").write_text(dump(snap))

    def lossless(self) -> None:
        """What a working fabric shows: the receiver's leaf sent pauses upstream and marked its queue; the
        receiver's NIC saw the marks and sent CNPs, the senders handled them and were paused."""
        leaf, port = self.job.congested
        self.switches[leaf].ports[port].ecn += 4000
        for d, p in self.job.ports:
            if d == leaf and p != port:
                self.switches[d].ports[p].pfc_tx += 900
        self.nic_after[self.job.receiver.server] |= {"np_ecn_marked_roce_packets": 8112 + 5000,
                                                     "np_cnp_sent": 7731 + 4800}  # fmt: skip
        for s in self.job.senders:
            self.nic_after[s.server] |= {"rp_cnp_handled": 6102 + 2400, "rx_prio3_pause": 48213 + 700}

    def write(self) -> Path:
        for e in self.job.servers():
            (self.folder / f"nic.before.{e.server}.txt").write_text(nic_text())
            (self.folder / f"nic.after.{e.server}.txt").write_text(nic_text(**self.nic_after[e.server]))
        for s in self.job.senders:
            (self.folder / f"{s.server}.txt").write_text(bw_text(self.rate))
        return self.folder


def lossless_results(plan, suite, results: Path) -> None:
    """Every incast job of the suite as a working fabric would leave it."""
    for job in suite.incast:
        r = Run(plan, job, results / job.id)
        r.snapshot("before")
        r.lossless()
        r.snapshot("after")
        r.write()
