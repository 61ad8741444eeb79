"""Which driver class a platform's connections use: the platform's own `driver_class` where it names one
(EOS and NX-OS: gpufabric's subclasses of NAPALM's drivers, with verified TLS and a revert armed on the
switch; NAPALM's own would trust any certificate), else NAPALM's lookup of the name (`frr` and `cumulus`
live in the napalm_frr / napalm_cumulus packages)."""

from __future__ import annotations

import importlib

from napalm import get_network_driver
from napalm.base.base import NetworkDriver

from gpufabric.platforms import all_platforms


def network_driver(name: str) -> type[NetworkDriver]:
    for spec in all_platforms():
        if spec.facts.napalm_driver == name and spec.facts.driver_class:
            module, cls = spec.facts.driver_class.split(":")
            found: type[NetworkDriver] = getattr(importlib.import_module(module), cls)
            return found
    return get_network_driver(name)
