"""SONiC's own drain: Traffic Shift Away (TSA), Back (TSB) and Check (TSC).

sonic-utilities' `TSA` applies the BGP traffic-shift route-maps to every external neighbour (routes
leave with the traffic-shift community or are withdrawn, per the device's constants), `TSB` removes
them and `TSC` prints `System Mode: Normal` or `System Mode: Maintenance` (sonic-mgmt's
tests/bgp/test_traffic_shift.py reads it so). From 202205 the state is in CONFIG_DB
(`BGP_DEVICE_GLOBAL|STATE tsa_enabled`), so `config save -y` keeps it across a reload.

That row is configuration, and a push replaces CONFIG_DB whole (`config replace`). bgpcfgd
(sonic-buildimage src/sonic-bgpcfgd, managers_device_global.py) takes a deleted row for TSA's default,
`false`, and shifts the traffic back: so a drained switch's candidate carries `tsa_enabled: "true"`
(`keep`). TSB leaves `tsa_enabled: "false"` behind, which the planned CONFIG_DB does not hold, so the
undrain then removes the field (`HDEL`; bgpcfgd reads its absence as the same `false`, so nothing moves)
and the next push finds nothing to change.
"""

from __future__ import annotations

import json

from gpufabric.nos.sonic.candidate import FRR_MARKER, split
from gpufabric.outputs import json_dumps
from gpufabric.platforms.spec import DrainSpec, DrainSteps

STATUS = "TSC"
NORMAL = "System Mode: Normal"
MAINTENANCE = "System Mode: Maintenance"


TABLE, ROW, FIELD = "BGP_DEVICE_GLOBAL", "STATE", "tsa_enabled"
# TSB's leftover field removed (the row goes with its last field): CONFIG_DB as planned again.
TIDY = f'sonic-db-cli CONFIG_DB HDEL "{TABLE}|{ROW}" {FIELD} >/dev/null'


def steps(spec: DrainSpec) -> DrainSteps:
    return DrainSteps(
        "TSA (traffic shift away)",
        "commands",
        "TSA\nconfig save -y\n",
        f"TSB\n{TIDY}\nconfig save -y\n",
        "sonic-utilities scripts TSA, TSB, TSC; sonic-mgmt tests/bgp/test_traffic_shift.py",
    )


def in_maintenance(tsc: str) -> bool | None:
    """TSC's verdict; None when it says neither (inconsistent across ASICs, no external neighbours)."""
    if MAINTENANCE in tsc:
        return True
    if NORMAL in tsc:
        return False
    return None


def keep(candidate: str, spec: DrainSpec) -> str:
    """`candidate` (config_db.json, then frr.conf after the marker) with `BGP_DEVICE_GLOBAL|STATE tsa_enabled`
    "true" in its CONFIG_DB, the rest of it as it was; its FRR part as it was."""
    config_db, frr = split(candidate)
    doc = json.loads(config_db)
    if not isinstance(doc, dict):
        raise ValueError("the candidate's CONFIG_DB is not a JSON object")
    table = doc.setdefault(TABLE, {})
    table[ROW] = {**(table.get(ROW) or {}), FIELD: "true"}
    text = json_dumps(doc, indent=4, sort_keys=True)
    return text + "\n" if frr is None else f"{text}\n{FRR_MARKER}\n{frr}"
