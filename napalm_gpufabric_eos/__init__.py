"""NAPALM finds gpufabric's `eos` driver here: `napalm.get_network_driver("gpufabric_eos")`.

Arista EOS through eAPI with its HTTPS certificate verified (a CA or a recorded
fingerprint) and a revert armed on the switch; NAPALM's own `eos` trusts any certificate.
The module holds this one driver class: NAPALM returns the first NetworkDriver subclass it finds in it.
"""

from gpufabric.nos.eos.driver import GpufabricEOSDriver

__all__ = ["GpufabricEOSDriver"]
