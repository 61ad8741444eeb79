"""Cisco NX-OS's own drain: Graceful Insertion and Removal (GIR).

Cisco Nexus 9000 Series NX-OS System Management Configuration Guide, "Configuring Graceful Insertion and
Removal": `system mode maintenance` isolates every Layer 3 protocol (BGP `isolate`) and `no system mode
maintenance` restores them; `show system mode` says which mode the switch is in. `terminal dont-ask`
first, as Cisco's own Ansible module (cisco.nxos nxos_gir) sends them, so the command asks no question.

GIR isolates BGP by applying its maintenance-mode profile, configuration commands that the guide shows as
`router bgp <asn>` / `isolate` (and the normal-mode profile's `no isolate` on the way back). A push is a
configuration replace to the planned text, which has no `isolate`: its patch would take BGP out of
isolation while the switch still says it is in maintenance. So a drained switch's candidate carries the
`isolate` line under its `router bgp` (`keep`). That the profile's `isolate` shows in the running
configuration, and that `no system mode maintenance` leaves no profile line the plan lacks, are assumed
(not shown on a Nexus: docs/not-shown.md).
"""

from __future__ import annotations

from gpufabric.platforms.spec import DrainSpec, DrainSteps

# Cisco Nexus 9000 Series NX-OS System Management Configuration Guide, "Configuring Graceful Insertion and
# Removal": the commands Cisco's own module (cisco.nxos nxos_gir) sends too, which judges them in the tests.
STATUS = "show system mode"
NO_QUESTIONS = "terminal dont-ask"
ENTER = "system mode maintenance"
LEAVE = f"no {ENTER}"


def steps(spec: DrainSpec) -> DrainSteps:
    return DrainSteps(
        "GIR system mode maintenance",
        "commands",
        f"{NO_QUESTIONS}\n{ENTER}\n",
        f"{NO_QUESTIONS}\n{LEAVE}\n",
        "Cisco Nexus 9000 Series NX-OS System Management Configuration Guide, Graceful Insertion and Removal",
    )


def in_maintenance(show_system_mode: str) -> bool:
    """`show system mode`'s text: "System Mode: Normal" or "System Mode: Maintenance" (cisco.nxos reads it
    the same way: anything not saying normal is maintenance)."""
    return "normal" not in show_system_mode.lower()


ISOLATE = "  isolate"


def keep(candidate: str, spec: DrainSpec) -> str:
    """`candidate` (NX-OS configuration text) with `isolate` as the first line under its `router bgp`; as it
    is when it has no BGP (nothing for GIR to isolate there) or already isolates it."""
    lines = candidate.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("router bgp ")), None)
    if at is None:
        return candidate
    end = next((i for i in range(at + 1, len(lines)) if lines[i].strip() and not lines[i].startswith(" ")), len(lines))
    if any(line.strip() == "isolate" for line in lines[at + 1 : end]):
        return candidate
    return "\n".join([*lines[: at + 1], ISOLATE, *lines[at + 1 :]]) + "\n"
