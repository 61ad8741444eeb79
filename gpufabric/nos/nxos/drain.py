"""Cisco NX-OS's own drain: Graceful Insertion and Removal (GIR).

Cisco Nexus 9000 Series NX-OS System Management Configuration Guide, "Configuring Graceful Insertion and
Removal": `system mode maintenance` isolates every Layer 3 protocol (BGP `isolate`) and `no system mode
maintenance` restores them; `show system mode` says which mode the switch is in. `terminal dont-ask`
first, as Cisco's own Ansible module (cisco.nxos nxos_gir) sends them, so the command asks no question.
"""

from __future__ import annotations

from gpufabric.platforms.spec import DrainSpec, DrainSteps

STATUS = "show system mode"


def steps(spec: DrainSpec) -> DrainSteps:
    return DrainSteps(
        "GIR system mode maintenance",
        "commands",
        "terminal dont-ask\nsystem mode maintenance\n",
        "terminal dont-ask\nno system mode maintenance\n",
        "Cisco Nexus 9000 Series NX-OS System Management Configuration Guide, Graceful Insertion and Removal",
    )


def in_maintenance(show_system_mode: str) -> bool:
    """`show system mode`'s text: "System Mode: Normal" or "System Mode: Maintenance" (cisco.nxos reads it
    the same way: anything not saying normal is maintenance)."""
    return "normal" not in show_system_mode.lower()
