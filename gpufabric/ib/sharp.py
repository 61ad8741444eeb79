"""NVIDIA SHARP (in-network reductions): the aggregation manager's configuration and NVIDIA OpenSM's option.

SHARP reduces in the switch ASICs along trees that the aggregation manager (`sharp_am`, beside the
subnet manager; NVIDIA SHARP documentation, "Modifying NVIDIA SHARP Aggregation Manager Configuration")
sets up over the fabric OpenSM routes. From the plan:

- `sharp_am.cfg` (sharp_am's `key value` lines, `#` comments, read from /etc/sharp/sharp_am.cfg or `-O`):
  `ib_port_guid`, the port sharp_am sends its MADs to the switches from (Appendix "SHARP_am Network
  Interfaces"): its subnet manager's (primary or standby); `root_guids_file`, the trees' roots: the plan's top tier,
  the file OpenSM's up/down routing roots at; `ignore_sm_guids` (SHARP 3.2.0 "Changes and New Features"):
  TRUE where the SMs run on fabric-manager hosts, FALSE where they run on compute hosts, whose adapters
  must stay leaves of the trees (Known Issues 3340353); `ignore_host_guids_file` (same release), the
  fabric manager's adapter ports, which are no job's leaves.
- `opensm-sharp.conf`: `sharp_enabled 2` for NVIDIA's OpenSM (UFM's `ib sm sharp enable`), kept out of
  opensm.conf: the open-source OpenSM (3.3.23 here) does not know the option and says `Unrecognized token`
  for it; NVIDIA's takes it appended to opensm.conf.

Every value is checked on its way into a line (gpufabric.ib.names), as for OpenSM's own files.
"""

from __future__ import annotations

from pathlib import Path

from gpufabric.ib import names
from gpufabric.ib.discovery import Discovery
from gpufabric.ib.errors import IbError, Problem
from gpufabric.ib.hardware import SWITCH_MODELS
from gpufabric.ib.model import IbFabric

AM_CONF = "sharp_am.cfg"
IGNORE_HOSTS = "sharp-ignore-host-guids.conf"
OPENSM_FRAGMENT = "opensm-sharp.conf"
# NVIDIA OpenSM's SHARP switch (the option UFM's `ib sm sharp enable` / `ib sm sharp ignore` set: NVIDIA UFM-SDN
# Appliance Command Reference Guide, "SHARP Configuration in OpenSM"): 0 disabled, 1 ignore (leave the switches
# as they are), 2 enabled. The UFM commands are documented there; this opensm.conf spelling and its numbers were
# not found in the NVIDIA documents searched (unconfirmed). No model here checks the name or the value: the
# open-source OpenSM refuses the option whatever its spelling (`Unrecognized token`), and NVIDIA's OpenSM does not
# install here (docs/not-shown.md).
SHARP_OPTION = "sharp_enabled"
SHARP_ENABLED = 2
# sharp_am.cfg's keys, NVIDIA SHARP documentation: `ib_port_guid` ("sharp_am Network Interfaces"),
# `root_guids_file`, and `ignore_sm_guids` / `ignore_host_guids_file` (SHARP 3.2.0, "Changes and New Features").
# sharp_am does not install here either: no model checks them.
AM_PORT_GUID, AM_ROOT_GUIDS, AM_IGNORE_SMS, AM_IGNORE_HOSTS = (
    "ib_port_guid",
    "root_guids_file",
    "ignore_sm_guids",
    "ignore_host_guids_file",
)


def check(fabric: IbFabric) -> None:
    """Every switch of the fabric can aggregate: a tree through a switch without SHARP has no parent there."""
    without = sorted({n.model for n in fabric.switches if not _sharp_of(n.model)})
    if without:
        having = ", ".join(f"{m.name} ({m.sharp})" for m in SWITCH_MODELS.values() if m.sharp)
        raise IbError(
            [
                Problem(
                    "design.switch_model",
                    f"{', '.join(without)} switches have no SHARP aggregation (it is in the Quantum switch ASICs)",
                    f"use NVIDIA Quantum switches ({having}), or drop sharp",
                )
            ]
        )


def _sharp_of(model: str) -> str:
    known = SWITCH_MODELS.get(model)
    return known.sharp if known is not None else ""


def render(fabric: IbFabric, found: Discovery, directory: Path, sm: str) -> dict[str, str]:
    """File name -> text, for the aggregation manager beside the subnet manager on adapter port `sm` (node
    description), whose files live in `directory`."""
    check(fabric)
    d = Path(names.sm_path(directory))
    fm_ports = [found.nodes[n.name].port for n in fabric.role("fabric-manager")]
    # The SMs on compute hosts (no fabric-manager ports): their adapters are leaves of the trees like any other.
    sms_on_fabric_managers = bool(fm_ports)
    options: list[tuple[str, object]] = [
        (AM_PORT_GUID, names.guid(found.nodes[sm].port, sm)),
        (AM_ROOT_GUIDS, d / "root-guids.conf"),
        (AM_IGNORE_SMS, "TRUE" if sms_on_fabric_managers else "FALSE"),
    ]
    files: dict[str, str] = {}
    if fm_ports:
        options.append((AM_IGNORE_HOSTS, d / IGNORE_HOSTS))
        files[IGNORE_HOSTS] = "".join(f"{names.guid(g, 'fabric-manager port')}\n" for g in fm_ports)
    fabric_name = names.fabric_name(fabric.design.name)
    names.node_description(sm, AM_CONF)
    tiers = {n.model for n in fabric.switches}
    head = [
        f"# NVIDIA SHARP aggregation manager (sharp_am) for {fabric_name}, beside the subnet manager on {sm!r}.",
        f"# Trees rooted at the {fabric.roots[0].role} tier ({len(fabric.roots)} switches); "
        f"aggregation on {', '.join(f'{m} ({_sharp_of(m)})' for m in sorted(tiers))}.",
    ]
    files[AM_CONF] = "\n".join([*head, *(" ".join(names.option(k, v)) for k, v in options)]) + "\n"
    files[OPENSM_FRAGMENT] = (
        "# NVIDIA's OpenSM only (UFM, DOCA-OFED): append to opensm.conf. The open-source OpenSM refuses this\n"
        "# option (Unrecognized token). 2: SHARP enabled on every switch that supports it.\n"
        f"{' '.join(names.option(SHARP_OPTION, SHARP_ENABLED))}\n"
    )
    return files
