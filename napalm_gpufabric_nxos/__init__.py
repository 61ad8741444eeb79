"""NAPALM finds gpufabric's `nxos` driver here: `napalm.get_network_driver("gpufabric_nxos")`.

Cisco NX-OS through NX-API with its HTTPS certificate verified (a CA or a recorded
fingerprint) and a revert armed on the switch; NAPALM's own `nxos` trusts any certificate.
The module holds this one driver class: NAPALM returns the first NetworkDriver subclass it finds in it.
"""

from gpufabric.nos.nxos.driver import GpufabricNXOSDriver

__all__ = ["GpufabricNXOSDriver"]
