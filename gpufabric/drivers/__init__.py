"""NAPALM drivers this project owns: `frr` (Linux + FRR over SSH) and `cumulus` (Cumulus Linux 5.x, NVUE).

NAPALM finds them by platform name through the `napalm_frr` and `napalm_cumulus` packages, so
`napalm.get_network_driver("frr")` / `("cumulus")` and nornir-napalm's `platform:` load them.
Both share LinuxSwitchDriver's session and FRR/iproute2/lldpd getters; `recording` records and
replays their command output.
"""
