"""NAPALM finds the `cumulus` (NVUE) driver here: `napalm.get_network_driver("cumulus")`."""

from gpufabric.nos.cumulus.driver import CumulusDriver

__all__ = ["CumulusDriver"]
