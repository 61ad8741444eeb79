"""Lossless buffer sizes of a port: PFC headroom from its rate, its cable length class and the MTU.

One formula for every platform (docs/configs.md, "Lossless headroom"). When a switch sends PAUSE for
the lossless priority, its peer keeps sending until the frame arrives and takes effect, and what is
already on the cable still lands: the priority group must hold about twice the one-way cable delay
at the port's rate, the response time of both ends, and a maximum-size frame at each end (one being
sent when the pause is decided, one when it arrives).

Cumulus and SONiC take the cable length and compute this themselves; a platform that is given the
sizes (NX-OS's ingress queuing `pause buffer-size ... pause-threshold ... resume-threshold ...`) gets
them from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Signal speed in fibre or copper, about two thirds of c (2e8 m/s): 5 ns per metre.
PROPAGATION_NS_PER_M = 5
# gpufabric's allowance for the PHY, MAC and pause-processing delay of both ends together. Not a vendor
# figure: the vendors that compute headroom themselves use their ASIC's own; this is what is assumed
# where the sizes are given to the switch.
RESPONSE_NS = 1000


@dataclass(frozen=True, slots=True)
class LosslessBuffer:
    """Sizes in bytes of the lossless priority group of a port (or of the ports a policy covers)."""

    headroom: int  # absorbs what arrives after PAUSE is decided
    pause_threshold: int  # fill at which PAUSE (XOFF) is sent
    resume_threshold: int  # fill below which the pause is lifted (XON)

    @property
    def buffer_size(self) -> int:
        """The whole reservation: the fill before PAUSE plus the headroom behind it."""
        return self.pause_threshold + self.headroom


def headroom_bytes(speed_gbps: int, metres: int, mtu: int) -> int:
    """`rate * (2 * length / v + response time) + 2 * MTU`, rounded up to a whole byte."""
    if speed_gbps <= 0 or metres <= 0 or mtu <= 0:
        raise ValueError(f"headroom needs a positive speed, length and MTU: {speed_gbps}G, {metres} m, MTU {mtu}")
    nanoseconds = 2 * metres * PROPAGATION_NS_PER_M + RESPONSE_NS
    in_flight_bits = speed_gbps * nanoseconds  # a rate in Gb/s is bits per nanosecond: exact integers
    return math.ceil(in_flight_bits / 8) + 2 * mtu


def lossless_buffer(speed_gbps: int, metres: int, mtu: int) -> LosslessBuffer:
    """Headroom from the formula; PAUSE once two maximum-size frames wait, resumed below one. The two
    thresholds are gpufabric's choice (small, so the shared buffer stays free for the lossy classes),
    not a vendor default."""
    return LosslessBuffer(headroom_bytes(speed_gbps, metres, mtu), 2 * mtu, mtu)
