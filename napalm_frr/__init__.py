"""NAPALM finds the `frr` driver here: `napalm.get_network_driver("frr")`."""

from gpufabric.nos.frr.driver import FrrDriver

__all__ = ["FrrDriver"]
