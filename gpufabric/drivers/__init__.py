"""NAPALM drivers this project owns: `frr` (Linux + FRR over SSH) and `cumulus` (NVUE).

NAPALM finds them by platform name through the `napalm_frr` and `napalm_cumulus` packages,
so `napalm.get_network_driver("frr")` and nornir-napalm's `platform: frr` load them.
"""
