"""NAPALM finds the `cumulus` (NVUE) driver here: `napalm.get_network_driver("cumulus")`."""
