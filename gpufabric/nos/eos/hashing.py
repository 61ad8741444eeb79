"""Arista EOS: which switches hash RoCEv2 by its queue pair, and the profile's values."""

from __future__ import annotations

import re

# Arista's SAND family (Jericho packet processors: the 7020R, 7280R, 7500R, 7700R and 7800R series, any
# generation), whose load-balance sand profiles hash on bytes of a UDP payload. The Strata switches (7050X,
# 7060X, 7388X: Trident and Tomahawk) have no such profile.
SAND_MODEL = re.compile(r"^(?:DCS-)?7(?:020|280|500|700|800)[A-Z]*R", re.IGNORECASE)
# `fields udp` in a load-balance sand profile: EOS 4.33.1F on (AVD's schema says so); the pinned 4.33 is
# taken to mean 4.33.1F or later.
SAND_UDP_HASH_SINCE = (4, 33)
ROCE_PROFILE = "ROCE"  # the load-balance sand profile's name
ROCE_UDP_PORT = 4791  # RoCEv2's UDP destination port
BTH_DEST_QP_BYTES = "5-7"  # the base transport header's destination QP, as bytes of the UDP payload


def _release(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", release)[:2])


def sand_udp_hash(model: str, release: str) -> bool:
    """The switch can hash RoCEv2 by its destination queue pair (a SAND model on EOS 4.33.1F or later)."""
    return bool(SAND_MODEL.match(model)) and _release(release) >= SAND_UDP_HASH_SINCE
