#!/usr/bin/env python3
"""STAND-IN for a ConnectX NIC and its tools: no ConnectX NIC runs here. Nothing in it talks to hardware.

    python3 nic_standin.py install ROOT eth1=mlx5_0 eth2=mlx5_1

builds, under ROOT, the sysfs and configfs files the roce_qos role reads and writes (ROOT/sys/...) and
copies this file as ROOT/bin/mlnx_qos, ROOT/bin/ethtool and ROOT/bin/cma_roce_tos. Each copy then acts as
that tool on the NICs installed (it knows which tool it is by the name it is called by, and finds ROOT as
the parent of its own folder). It keeps what mlnx_qos and ethtool set in ROOT/state/<NIC>.json, which
stands in for the NIC's firmware; the sysfs and configfs files are plain files a script writes with echo.

Each answer follows a documented layout (the source is named beside it). Called any other way than
documented below, a stand-in says so on stderr and exits 2, so that a use it does not model is never
answered with a made-up success. Standard library only: Molecule copies it into its Debian hosts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

TOOLS = ("mlnx_qos", "ethtool", "cma_roce_tos")
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")  # an interface or RDMA device name, one path component

# What a ConnectX port holds before anyone configures it: trust pcp, no PFC, link-level pause on (the mlx5
# driver's defaults), the RDMA-CM ToS 0, no traffic class, ECN off, CNPs with DSCP 48 on priority 6 (NVIDIA's
# documented defaults of cnp_dscp and cnp_802p_prio).
FRESH = {"trust": "pcp", "pfc": [0] * 8, "pause_rx": "on", "pause_tx": "on", "pause_autoneg": "off"}


def _root() -> Path:
    return Path(sys.argv[0]).resolve().parent.parent


def _fail(message: str) -> int:
    print(f"{Path(sys.argv[0]).name} (stand-in): {message}", file=sys.stderr)
    return 2


def _state_file(nic: str) -> Path | None:
    path = _root() / "state" / f"{nic}.json"
    return path if NAME.match(nic) and path.is_file() else None


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _save(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True))
    tmp.replace(path)


# -- mlnx_qos (mlnx-tools) ------------------------------------------------------------------------------


def _mlnx_qos_report(nic: str, state: dict) -> str:
    """`mlnx_qos -i IF` in the layout NVIDIA's MLNX_OFED documentation shows ("mlnx_qos", Quality of Service
    section of the MLNX_OFED user manual): the trust line, the DSCP-to-priority table in trust dscp, and the
    PFC table as a `priority` row and an `enabled` row, then one block per traffic class."""
    lines = ["DCBX mode: OS controlled", f"Priority trust state: {state['trust']}"]
    if state["trust"] == "dscp":
        lines.append("dscp2prio mapping:")
        for prio in range(8):
            dscps = ",".join(f"{d:02d}" for d in range(prio * 8 + 7, prio * 8 - 1, -1))
            lines.append(f"\tprio:{prio} dscp:{dscps},")
    lines += [
        "default priority:",
        "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,",
        "Cable len: 7",
        "PFC configuration:",
        "\tpriority    " + "   ".join(str(p) for p in range(8)),
        "\tenabled     " + "   ".join(str(v) for v in state["pfc"]),
        "\tbuffer      " + "   ".join(str(v) for v in state["pfc"]),
    ]
    for tc in range(8):
        lines += [f"tc: {tc} ratelimit: unlimited, tsa: vendor", f"\t priority:  {tc}"]
    return "\n".join(lines) + "\n"


def mlnx_qos(args: list[str]) -> int:
    """`mlnx_qos -i IF [--trust pcp|dscp] [--pfc b0,..,b7]`: sets what is given, then prints the port's
    configuration (as the tool does after a change)."""
    if len(args) < 2 or args[0] not in ("-i", "--interface"):
        return _fail("only `-i IF [--trust pcp|dscp] [--pfc 8 comma-separated 0/1]` is modelled")
    path = _state_file(args[1])
    if path is None:
        return _fail(f"no NIC {args[1]!r} installed under {_root()}")
    state = _load(path)
    rest = args[2:]
    while rest:
        if rest[0] == "--trust" and len(rest) > 1 and rest[1] in ("pcp", "dscp"):
            state["trust"] = rest[1]
        elif rest[0] in ("-f", "--pfc") and len(rest) > 1 and re.fullmatch(r"[01](,[01]){7}", rest[1]):
            state["pfc"] = [int(b) for b in rest[1].split(",")]
        else:
            return _fail(f"option {rest[0]!r} with {rest[1:2]} is not modelled")
        rest = rest[2:]
    _save(path, state)
    sys.stdout.write(_mlnx_qos_report(args[1], state))
    return 0


# -- ethtool -a / -A ------------------------------------------------------------------------------------


def ethtool(args: list[str]) -> int:
    """`ethtool -a IF` prints the pause parameters in ethtool's layout (ethtool(8), "-a --show-pause"; the
    "Pause parameters for IF:" header, then `Autonegotiate:`, `RX:`, `TX:` each on or off); `ethtool -A IF
    [autoneg on|off] [rx on|off] [tx on|off]` sets them."""
    if len(args) < 2 or args[0] not in ("-a", "--show-pause", "-A", "--pause"):
        return _fail("only `-a IF` and `-A IF [autoneg|rx|tx on|off]...` are modelled")
    path = _state_file(args[1])
    if path is None:
        return _fail(f"no NIC {args[1]!r} installed under {_root()}")
    state = _load(path)
    if args[0] in ("-a", "--show-pause"):
        if len(args) != 2:
            return _fail("`-a` takes the interface only")
        print(f"Pause parameters for {args[1]}:")
        print(f"Autonegotiate:\t{state['pause_autoneg']}")
        print(f"RX:\t\t{state['pause_rx']}")
        print(f"TX:\t\t{state['pause_tx']}")
        return 0
    pairs = args[2:]
    if not pairs or len(pairs) % 2:
        return _fail("`-A IF` takes pairs: autoneg|rx|tx on|off")
    for key, value in zip(pairs[::2], pairs[1::2], strict=True):
        if key not in ("autoneg", "rx", "tx") or value not in ("on", "off"):
            return _fail(f"`{key} {value}` is not a pause parameter")
        state[f"pause_{key}"] = value
    _save(path, state)
    return 0


# -- cma_roce_tos (mlnx-tools) --------------------------------------------------------------------------


def cma_roce_tos(args: list[str]) -> int:
    """`cma_roce_tos -d DEV [-p PORT] -t TOS` writes the RDMA-CM default ToS where the kernel keeps it:
    configfs rdma_cm/<DEV>/ports/<PORT>/default_roce_tos (the kernel's ABI, Documentation/ABI/testing/
    configfs-rdma_cm: "RDMA-CM QPs from HCA <hca> at port <port-num> will be created with this TOS as
    default", 0-255), making the device's folder first as that ABI asks. Here configfs is ROOT/sys/kernel/config."""
    options = dict(zip(args[::2], args[1::2], strict=False))
    if len(args) % 2 or set(options) - {"-d", "-p", "-t"} or "-d" not in options or "-t" not in options:
        return _fail("only `-d DEV [-p PORT] -t TOS` is modelled")
    dev, port, tos = options["-d"], options.get("-p", "1"), options["-t"]
    if (
        not NAME.match(dev)
        or not re.fullmatch(r"[1-9]", port)
        or not re.fullmatch(r"[0-9]{1,3}", tos)
        or int(tos) > 255
    ):
        return _fail(f"bad device, port or ToS: {dev!r} {port!r} {tos!r}")
    if not (_root() / "sys" / "class" / "infiniband" / dev).is_dir():
        return _fail(f"no RDMA device {dev!r} installed under {_root()}")
    folder = _root() / "sys" / "kernel" / "config" / "rdma_cm" / dev / "ports" / port
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "default_roce_tos").write_text(f"{int(tos)}\n")
    return 0


# -- the tree -------------------------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def install(root: Path, pairs: list[str]) -> None:
    """The files of each NIC=DEV pair under root, fresh as FRESH says, and the tools in root/bin."""
    for pair in pairs:
        nic, _, dev = pair.partition("=")
        if not NAME.match(nic) or not NAME.match(dev):
            raise SystemExit(f"nic_standin install: want NIC=RDMA_DEVICE, got {pair!r}")
        net = root / "sys" / "class" / "net" / nic
        # The kernel links the netdev's device/ to its PCI function, which lists its RDMA device.
        (net / "device" / "infiniband" / dev).mkdir(parents=True, exist_ok=True)
        for point in ("roce_np", "roce_rp"):
            for prio in range(8):
                _write(net / "ecn" / point / "enable" / str(prio), "0")
        _write(net / "ecn" / "roce_np" / "cnp_dscp", "48")
        _write(net / "ecn" / "roce_np" / "cnp_802p_prio", "6")
        _write(net / "ecn" / "roce_np" / "min_time_between_cnps", "4")
        _write(net / "ecn" / "roce_rp" / "rpg_min_rate", "1")
        # NVIDIA's mlx5 tc sysfs reads back "Global tclass=<value>" (MLNX_OFED, "RoCE Type of Service").
        _write(root / "sys" / "class" / "infiniband" / dev / "tc" / "1" / "traffic_class", "Global tclass=0")
        state = root / "state" / f"{nic}.json"
        state.parent.mkdir(parents=True, exist_ok=True)
        _save(state, dict(FRESH, pfc=list(FRESH["pfc"])))
    (root / "sys" / "kernel" / "config" / "rdma_cm").mkdir(parents=True, exist_ok=True)
    (root / "bin").mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        target = root / "bin" / tool
        shutil.copyfile(__file__, target)
        target.chmod(0o755)


def main() -> int:
    called = Path(sys.argv[0]).name
    if called in TOOLS:
        return {"mlnx_qos": mlnx_qos, "ethtool": ethtool, "cma_roce_tos": cma_roce_tos}[called](sys.argv[1:])
    if len(sys.argv) >= 3 and sys.argv[1] == "install":
        install(Path(sys.argv[2]), sys.argv[3:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main())
