"""InfiniBand compute fabrics: planned, exported for ibsim and the real OpenSM, configured.

One module per concern: `hardware` (switch and adapter models), `design` (what to build,
with NVIDIA's published DGX SuperPOD sizes), `planner` (the deterministic fat tree),
`topology` (ibnetdiscover's format, written and read), `discovery` (names to GUIDs),
`opensm` (the subnet manager's files) and `sim` (ibsim, OpenSM and the diagnostics run here).
No IP and no BGP: an InfiniBand plane is names, ports, cables, GUIDs and the subnet manager.
"""
