"""NAPALM finds gpufabric's `cumulus` driver here: `napalm.get_network_driver("gpufabric_cumulus")`.

Cumulus Linux through NVUE over SSH with its host key checked: the driver `cumulus`
names too.
The module holds this one driver class: NAPALM returns the first NetworkDriver subclass it finds in it.
"""

from gpufabric.nos.cumulus.driver import CumulusDriver

__all__ = ["CumulusDriver"]
