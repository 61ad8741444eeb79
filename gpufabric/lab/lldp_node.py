"""lldpd per switch, on the fabric ports, sending every second so cabling shows within seconds."""

from __future__ import annotations

from pathlib import Path

from gpufabric.files import write_atomic
from gpufabric.lab.processes import spawn

TX_INTERVAL = 1  # seconds; 30 by default, which would make every lab check wait half a minute


# Socket and config: lldpd hands both to lldpcli running as _lldpd, which may not enter a root-only state dir.
RUN_DIR = Path("/run/gpufabric-lab")


def socket_path(node_dir: Path) -> Path:
    return RUN_DIR / node_dir.name / "lldpd.sock"


def start(node: str, node_dir: Path, uts: Path) -> int:
    socket = socket_path(node_dir)
    socket.parent.mkdir(parents=True, exist_ok=True)
    conf = socket.parent / "lldpd.conf"  # read by lldpcli as _lldpd: not under a root-only state dir
    # Port IDs are interface names, as on switches, so neighbours name the planned port.
    write_atomic(conf, f"configure lldp tx-interval {TX_INTERVAL}\nconfigure lldp portidsubtype ifname\n", mode=0o644)
    args = ["lldpd", "-d", "-u", str(socket), "-O", str(conf), "-I", "swp*"]
    return spawn(["nsenter", f"--net=/run/netns/{node}", f"--uts={uts}", *args], node_dir / "lldpd.log")
