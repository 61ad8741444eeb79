"""NAPALM finds the `cumulus` (NVUE) driver here: `napalm.get_network_driver("cumulus")`."""

from gpufabric.drivers.cumulus import CumulusDriver

__all__ = ["CumulusDriver"]
