"""Cisco NX-OS: the fields of the ECMP hash gpufabric renders."""

from __future__ import annotations

# What `ip load-sharing address source-destination port source-destination` hashes on (ROCE_HASH's names):
# Cisco's guide names the addresses and the L4 ports, not the protocol.
NXOS_HASH = ("src-ip", "dst-ip", "l4-src-port", "l4-dst-port")
