"""NAPALM drivers this project owns: `frr` (Linux + FRR over SSH). The `cumulus` (NVUE) driver is not written yet.

NAPALM finds `frr` by platform name through the `napalm_frr` package, so
`napalm.get_network_driver("frr")` and nornir-napalm's `platform: frr` load it.
"""
