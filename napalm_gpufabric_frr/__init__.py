"""NAPALM finds gpufabric's `frr` driver here: `napalm.get_network_driver("gpufabric_frr")`.

FRR on a Linux switch over SSH with its host key checked: the driver `frr` names too.
The module holds this one driver class: NAPALM returns the first NetworkDriver subclass it finds in it.
"""

from gpufabric.nos.frr.driver import FrrDriver

__all__ = ["FrrDriver"]
