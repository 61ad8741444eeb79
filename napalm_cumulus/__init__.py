"""NAPALM finds the `cumulus` (NVUE) driver here: `napalm.get_network_driver("cumulus")`."""

from gpufabric.platforms.cumulus.driver import CumulusDriver

__all__ = ["CumulusDriver"]
