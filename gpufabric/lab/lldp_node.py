"""lldpd per switch, on the fabric ports, sending every second so cabling shows within seconds."""

from __future__ import annotations

from pathlib import Path

from gpufabric.lab.processes import spawn

TX_INTERVAL = 1  # seconds; 30 by default, which would make every lab check wait half a minute


def socket_path(node_dir: Path) -> Path:
    return node_dir / "lldpd.sock"


def start(node: str, node_dir: Path, uts: Path) -> int:
    socket = socket_path(node_dir)
    conf = node_dir / "lldpd.conf"
    # Port IDs are interface names, as on switches, so neighbours name the planned port.
    conf.write_text(f"configure lldp tx-interval {TX_INTERVAL}\nconfigure lldp portidsubtype ifname\n")
    args = ["lldpd", "-d", "-u", str(socket), "-O", str(conf), "-I", "swp*"]
    return spawn(["nsenter", f"--net=/run/netns/{node}", f"--uts={uts}", *args], node_dir / "lldpd.log")
