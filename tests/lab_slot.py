"""Which lab a lab test brings up, so lab tests run side by side on one machine.

CI runs the lab tests on three pytest-xdist workers (scripts/test.sh). A module marked `own_lab` brings up a lab
named after its worker (`w0`, `w1`, `w2`; GPUFABRIC_TEST_LAB names another; the default lab when run without
workers), so it runs beside whatever the other workers run. Any other lab module brings up the default lab and
holds the default lab's lock while it runs (tests/conftest.py): two of them never run at once.

Two labs may not share an OOB subnet (both would hold it in the root namespace: `lab up` refuses the second),
so a named lab's intents are the same intents with their OOB addresses moved to a subnet of the worker's own;
every other address stays as written. Everything else a lab holds on the machine carries its name already
(gpufabric/fleet/lab/names.py); what a test makes beside it (the Slurm harness's bridge and namespaces) takes
the worker's `SLURM_TAG` and `SLURM_SUBNET`.

An `own_lab` module: its intents through `intent_file` or `moved`, `lab up` with `*up_args()`, a switch's
namespace (`ip -n`, `vtysh -N`, /etc/frr/<pathspace>) through `ns(switch)`.
"""

from __future__ import annotations

import atexit
import functools
import ipaddress
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from gpufabric.fleet.lab.names import DEFAULT_LAB, LabNames

_WORKER = re.fullmatch(r"gw(\d{1,2})", os.environ.get("PYTEST_XDIST_WORKER", ""))
_INDEX = int(_WORKER.group(1)) if _WORKER else None
NAME = os.environ.get("GPUFABRIC_TEST_LAB") or (f"w{_INDEX}" if _INDEX is not None else DEFAULT_LAB)
NAMES = LabNames(NAME)  # checks the name: one no lab can have stops the run at collection
# A named lab's OOB space: the intents' own OOB subnets (172.16.0.0/16 and 172.20.0.0/24 among the shipped
# ones) are moved into it, keeping their length and each address's offset. One /16 a worker.
OOB_SPACE = ipaddress.ip_network(f"172.{27 if _INDEX is None else 28 + _INDEX}.0.0/16")
# What the Slurm harness of this process calls its bridge and namespaces, and its /24 (tests/slurm_cluster.py).
SLURM_TAG = "" if _INDEX is None else f"w{_INDEX}"
SLURM_SUBNET = "10.254.42" if _INDEX is None else f"10.254.{43 + _INDEX}"
DEFAULT_FABRIC = Path(__file__).resolve().parent.parent / "inventory" / "fabric.yml"


def is_default() -> bool:
    return NAMES.is_default


def up_args() -> tuple[str, ...]:
    """What `gpufabric lab up` is given besides the intent and state folder: the lane's lab name."""
    return () if NAMES.is_default else ("--name", NAME)


def ns(switch: str) -> str:
    """A switch's network namespace, which is also its FRR pathspace (`ip -n`, `vtysh -N`)."""
    return NAMES.netns(switch)


def plug_in(nic: Any, home: str, temp: str) -> None:
    """A planned server NIC brought into the namespace `home`: the stub veth `lab up --no-hosts` left on its leaf
    port (in the leaf's namespace) moved there under the NIC's planned name, with its planned address, up.
    `temp` names it on the way (unique among the leaf's ports and `home`'s)."""
    from gpufabric.plan.model import ip

    stub = f"p-{nic.leaf_port}"[:15]
    for args in (
        ("-n", ns(nic.leaf), "link", "set", stub, "down"),
        ("-n", ns(nic.leaf), "link", "set", stub, "name", temp),
        ("-n", ns(nic.leaf), "link", "set", temp, "netns", home),
        ("-n", home, "link", "set", temp, "name", nic.interface),
        ("-n", home, "address", "add", f"{ip(nic.address)}/{nic.prefixlen}", "dev", nic.interface),
        ("-n", home, "link", "set", nic.interface, "up"),
    ):
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def switch_of(netns: str) -> str | None:
    """The switch whose namespace `netns` is in the lane's lab; None for any other namespace."""
    return NAMES.switch_of(netns)


def moved(doc: dict[str, Any]) -> dict[str, Any]:
    """The intent `doc` for the lane: unchanged in the default lane; in a named one, every address and prefix
    inside the OOB plane's subnet (the switches' and servers' management addresses, the NTP and syslog
    servers on it, ZTP's server) moved to the same offset in the lane's OOB space."""
    if NAMES.is_default:
        return doc
    oob = (doc.get("planes") or {}).get("oob") or {}
    subnet = oob.get("subnet")
    if not subnet:
        return doc
    old = ipaddress.ip_network(subnet)
    new = ipaddress.ip_network(f"{OOB_SPACE.network_address}/{max(old.prefixlen, OOB_SPACE.prefixlen)}")
    return _walk(doc, old, new)


@functools.cache
def fabric() -> Path:
    """The default fabric (inventory/fabric.yml) as this process's lab runs it: the file itself for the default
    lab, else its moved copy, written once in a folder removed when the process ends."""
    if NAMES.is_default:
        return DEFAULT_FABRIC
    folder = Path(tempfile.mkdtemp(prefix=f"gpufabric-lab-{NAME}-"))
    atexit.register(shutil.rmtree, folder, True)
    return intent_file(DEFAULT_FABRIC, folder)


def intent_file(path: str | Path, folder: Path) -> Path:
    """The intent at `path` as the lane runs it: the file itself in the default lane, else its moved copy in
    `folder` (a folder of the test's own)."""
    if NAMES.is_default:
        return Path(path)
    doc = yaml.safe_load(Path(path).read_text())
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{Path(path).stem}-{NAME}.yml"
    out.write_text(yaml.safe_dump(moved(doc), sort_keys=False))
    return out


def _walk(node: Any, old: ipaddress.IPv4Network | ipaddress.IPv6Network, new: Any) -> Any:
    if isinstance(node, dict):
        return {key: _walk(value, old, new) for key, value in node.items()}
    if isinstance(node, list):
        return [_walk(value, old, new) for value in node]
    if isinstance(node, str):
        return _move(node, old, new)
    return node


def _move(text: str, old: Any, new: Any) -> str:
    """`text` moved from `old` to `new` when it is an address or prefix inside `old`; else `text`."""
    try:
        if "/" in text:
            net = ipaddress.ip_network(text, strict=False)
            if net.version == old.version and net.subnet_of(old):
                offset = int(ipaddress.ip_interface(text).ip) - int(old.network_address)
                return f"{ipaddress.ip_address(int(new.network_address) + offset)}/{net.prefixlen}"
            return text
        addr = ipaddress.ip_address(text)
    except ValueError:
        return text
    if addr.version == old.version and addr in old:
        return str(ipaddress.ip_address(int(new.network_address) + int(addr) - int(old.network_address)))
    return text
