"""SONiC's own drain: Traffic Shift Away (TSA), Back (TSB) and Check (TSC).

sonic-utilities' `TSA` applies the BGP traffic-shift route-maps to every external neighbour (routes
leave with the traffic-shift community or are withdrawn, per the device's constants), `TSB` removes
them and `TSC` prints `System Mode: Normal` or `System Mode: Maintenance` (sonic-mgmt's
tests/bgp/test_traffic_shift.py reads it so). From 202205 the state is in CONFIG_DB
(`BGP_DEVICE_GLOBAL|STATE tsa_enabled`), so `config save -y` keeps it across a reload.
"""

from __future__ import annotations

from gpufabric.platforms.spec import DrainSpec, DrainSteps

STATUS = "TSC"
NORMAL = "System Mode: Normal"
MAINTENANCE = "System Mode: Maintenance"


def steps(spec: DrainSpec) -> DrainSteps:
    return DrainSteps(
        "TSA (traffic shift away)",
        "commands",
        "TSA\nconfig save -y\n",
        "TSB\nconfig save -y\n",
        "sonic-utilities scripts TSA, TSB, TSC; sonic-mgmt tests/bgp/test_traffic_shift.py",
    )


def in_maintenance(tsc: str) -> bool | None:
    """TSC's verdict; None when it says neither (inconsistent across ASICs, no external neighbours)."""
    if MAINTENANCE in tsc:
        return True
    if NORMAL in tsc:
        return False
    return None
