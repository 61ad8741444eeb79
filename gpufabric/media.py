"""What each cable is, from its speed and length: the medium with the shortest reach that covers it.

Reaches (metres), from NVIDIA's LinkX documentation:
- "LinkX User Guide for 400Gbps 100G-PAM4 OSFP & QSFP112-based Cables and Transceivers", product line
  overview: direct attach copper (DAC) up to 3 m at 100G-PAM4 (400G, 800G); linear active copper (LACC)
  extends that to 5 m; multimode transceivers reach 50 m; single-mode up to 2 km.
- "NVIDIA Interconnect Structured Cabling Requirements for InfiniBand NDR/XDR and 400/800G ETH":
  MPO single-mode straight cables up to 500 m, LC single-mode up to 2,000 m, MPO multimode up to 50 m
  for NDR and 400G Ethernet (patch panels included).
- "Cable Management Guidelines and FAQ": DACs reach 2-5 m depending on the rate; active optical cables
  (AOC) are used from 3 m to about 100 m; multimode SR transceivers up to 100 m; single-mode parallel
  (PSM4/DR) to 500 m, then CWDM/FR to 2 km.
So: below 400G a DAC to 5 m (NRZ lanes, 100G and less) or 3 m (200G, 50G-PAM4 lanes), then an AOC to
100 m; from 400G (100G-PAM4 lanes) a DAC to 3 m, an active copper cable to 5 m, then transceivers: on
multimode fibre to 50 m, single-mode DR (MPO) to 500 m, single-mode FR (LC) to 2 km. Links below 25G
are copper (RJ45), to 100 m.

InfiniBand cables are the same LinkX families at the same lane signalling ("LinkX User Guide for 400Gbps
100G-PAM4 ..." covers NDR and 400G Ethernet alike; HDR is 50G-PAM4 as 200G Ethernet), so an InfiniBand
link takes the media of the Ethernet speed with its lanes: NDR and NDR200 (4 or 2 lanes of 100G-PAM4)
those of 400G, HDR and HDR100 (50G-PAM4) those of 200G. Assumed: NVIDIA's straight twin-port NDR DAC
(MCP4Y10-Nxxx) is sold to 2 m only, the splitter DACs to 3 m; 3 m is kept for both.
"""

from __future__ import annotations

from dataclasses import dataclass

COPPER_BELOW_GBPS = 25


@dataclass(frozen=True)
class Medium:
    name: str  # what the bill of material and the cabling plan say
    reach_m: int
    transceivers: bool  # a pluggable module at each end (the cable is fibre), else the cable has its ends


def media(speed: int) -> tuple[Medium, ...]:
    """The media a link of `speed` Gb/s can use, shortest reach first."""
    if speed < COPPER_BELOW_GBPS:
        return (Medium("copper (RJ45)", 100, False),)
    if speed >= 400:
        return (
            Medium("DAC", 3, False),
            Medium("active copper (ACC)", 5, False),
            Medium("multimode fibre (SR)", 50, True),
            Medium("single-mode fibre (DR)", 500, True),
            Medium("single-mode fibre (FR)", 2000, True),
        )
    return (
        Medium("DAC", 3 if speed >= 200 else 5, False),
        Medium("AOC", 100, False),
        Medium("single-mode fibre (FR)", 2000, True),
    )


def longest_reach(speed: int) -> int:
    return media(speed)[-1].reach_m


def choose(speed: int, length_m: int) -> Medium | None:
    """The medium with the shortest reach that covers `length_m` metres at `speed` (None: none does)."""
    return next((m for m in media(speed) if length_m <= m.reach_m), None)


# The Ethernet speed whose lanes an InfiniBand generation signals at (the media table it shares).
IB_LANES_AS = {"NDR": 400, "HDR": 200}


def infiniband(generation: str) -> tuple[Medium, ...]:
    """The media an InfiniBand link of `generation` (NDR, HDR) can use, shortest reach first."""
    return media(IB_LANES_AS[generation])


def choose_infiniband(generation: str, length_m: int) -> Medium | None:
    return next((m for m in infiniband(generation) if length_m <= m.reach_m), None)
