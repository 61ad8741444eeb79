"""NAPALM finds gpufabric's `sonic` driver here: `napalm.get_network_driver("gpufabric_sonic")`.

SONiC over SSH with its host key checked; NAPALM has no SONiC driver of its own.
The module holds this one driver class: NAPALM returns the first NetworkDriver subclass it finds in it.
"""

from gpufabric.nos.sonic.driver import SonicDriver

__all__ = ["SonicDriver"]
