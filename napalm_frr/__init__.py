"""NAPALM finds the `frr` driver here: `napalm.get_network_driver("frr")`."""

from gpufabric.drivers.frr import FrrDriver

__all__ = ["FrrDriver"]
