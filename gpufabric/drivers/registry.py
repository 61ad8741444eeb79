"""Which driver class a platform's connections use. EOS and NX-OS get gpufabric's subclasses of NAPALM's
drivers (verified TLS, a revert armed on the switch, sessions and files named after the push): NAPALM's
own `eos` / `nxos` would trust any certificate. Every other name goes to NAPALM's lookup (`frr` and
`cumulus` live in the napalm_frr / napalm_cumulus packages)."""

from __future__ import annotations

import importlib

from napalm import get_network_driver
from napalm.base.base import NetworkDriver

OWN = {"eos": "gpufabric.drivers.eos:GpufabricEOSDriver", "nxos": "gpufabric.drivers.nxos:GpufabricNXOSDriver"}


def network_driver(name: str) -> type[NetworkDriver]:
    if name in OWN:
        module, cls = OWN[name].split(":")
        found: type[NetworkDriver] = getattr(importlib.import_module(module), cls)
        return found
    return get_network_driver(name)
