"""A management port outside the Ethernet planes, which the OOB plane cables and addresses."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ManagementPort:
    """The management port of a switch outside the Ethernet planes (an InfiniBand switch): the OOB plane
    cables and addresses it like an Ethernet switch's, after every switch and server of the planes, so
    adding it moves no port or address those already have."""

    device: str
    port: str
    address: int | None = None
    oob_switch: str | None = None
    oob_port: str | None = None
