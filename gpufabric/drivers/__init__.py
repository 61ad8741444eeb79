"""NAPALM drivers this project owns: `frr` (Linux + FRR over SSH) and `cumulus` (Cumulus Linux 5.x, NVUE).

NAPALM finds them by platform name through the `napalm_frr` and `napalm_cumulus` packages, so
`napalm.get_network_driver("frr")` / `("cumulus")` and nornir-napalm's `platform:` load them.
Both share LinuxSwitchDriver's session and FRR/iproute2/lldpd getters; `recording` records and
replays their command output.

`eos` and `nxos` subclass NAPALM's own drivers (verified TLS, `tls_pins`; sessions and files named after
the push, `push_id`; NX-OS's revert armed on the switch). NAPALM resolves the names `eos` and `nxos` to
its own modules first, so gpufabric opens these through `registry.network_driver` (push, validate and
telemetry do); a Nornir script of your own gets them from the GpufabricInventory plugin (its hosts'
`napalm` connection names `gpufabric_eos`/`gpufabric_nxos`) or by using
`gpufabric.fleet.access.RevealingNapalm` as its `napalm` connection plugin.
"""
