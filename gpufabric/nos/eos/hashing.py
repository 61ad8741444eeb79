"""Arista EOS: which switches hash RoCEv2 by its queue pair, and the values each family's hash takes.

EOS's hardware families, by the packet processor each series' Arista data sheet names (for instance the 7280R3
and 7800R3 on Jericho2, the 7050X3 and 7300X3 on Trident3, the 7260X3 on Tomahawk2, the 7060X5 on Tomahawk4):
- SAND (Broadcom Jericho and Arad, "DNX"): the 7020R, 7280R, 7500R, 7700R and 7800R series, any generation,
  whose settings AVD keeps under `platform sand`. A `load-balance sand profile` hashes on bytes of a UDP payload
  (`fields udp dst-port ... payload bytes ...`).
- Strata (Broadcom StrataXGS Trident and Tomahawk): the 7050X series (Trident), the 7060X and 7260X series
  (Tomahawk) and the 7300X series (Trident), whose settings AVD keeps under `platform trident` (the MMU queue
  profile gpufabric renders for the lossless headroom among them). Their LAG and ECMP hash takes user-defined
  fields (UDF) of a packet's headers, `port-channel load-balance trident udf`.
Models of other series (the 7130 FPGA switches, the 7170 Tofino switches, campus 72x series) are neither here:
gpufabric proves no RoCE-aware hash on them.
"""

from __future__ import annotations

import re

SAND_MODEL = re.compile(r"^(?:DCS-)?7(?:020|280|500|700|800)[A-Z]*R", re.IGNORECASE)
STRATA_MODEL = re.compile(r"^(?:DCS-)?7(?:050|060|260|300)[A-Z]*X", re.IGNORECASE)
# `fields udp` in a load-balance sand profile: EOS 4.33.1F on (AVD's schema says so); the pinned 4.33 is
# taken to mean 4.33.1F or later.
SAND_UDP_HASH_SINCE = (4, 33)
ROCE_PROFILE = "ROCE"  # the load-balance sand profile's name
ROCE_UDP_PORT = 4791  # RoCEv2's UDP destination port
BTH_DEST_QP_BYTES = "5-7"  # the base transport header's destination QP, as bytes of the UDP payload

# The same three bytes on a Strata switch, counted from the start of the outer L4 header: the UDP header's 8
# bytes, then the base transport header's destination QP at its bytes 5-7 (InfiniBand Architecture
# Specification, Annex A17 RoCEv2: the BTH follows the UDP header). AVD's port_channel.load_balance_trident_udf
# renders one `port-channel load-balance trident udf eth-type IPv4 ip-protocol udp header outer l4 offset N
# mask 0xff` line per byte; Arista asked AVD for exactly these offsets to hash RoCEv2 on Tomahawk AI fabrics.
# `ip-protocol udp` keeps the bytes out of TCP's hash, where offsets 13-15 are the flags and window, which
# change within a connection. The UDF cannot match a UDP port: other UDP flows hash on their own payload's
# bytes 5-7 too.
UDP_HEADER_BYTES = 8
STRATA_UDF_OFFSETS = tuple(UDP_HEADER_BYTES + b for b in (5, 6, 7))  # 13, 14, 15
STRATA_UDF_MASK = "0xff"


def _release(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", release)[:2])


def sand_udp_hash(model: str, release: str) -> bool:
    """The switch can hash RoCEv2 by its destination queue pair (a SAND model on EOS 4.33.1F or later)."""
    return bool(SAND_MODEL.match(model)) and _release(release) >= SAND_UDP_HASH_SINCE


def strata_udf_hash(model: str) -> bool:
    """The switch hashes RoCEv2 by its destination queue pair through user-defined fields (a Strata model)."""
    return bool(STRATA_MODEL.match(model))
