"""The NVIDIA Spectrum switches gpufabric renders SONiC for: the facts of each hardware SKU.

Source: NVIDIA's device files in SONiC's build tree (sonic-net/sonic-buildimage, `device/mellanox/`):
`x86_64-nvidia_sn5600-r0/platform.json` and `x86_64-mlnx_msn4700-r0/platform.json` (cage names, lanes,
aliases, breakout modes), and the SKUs' `buffers_defaults_t1.j2` / NVIDIA's SKU generator there (the
egress lossless pool: the ASIC's shared buffer). Both name a cage's ports Ethernet<8 * (cage - 1) + offset>
over 8 SerDes lanes, alias them etp<cage>[a-d], and break a cage out 1, 2 or 4 ways. The SN5600's 65th
port (Ethernet512, a 25G management-side SFP) carries no fabric link and is not rendered.
"""

from __future__ import annotations

from dataclasses import dataclass

LANES_PER_CAGE = 8


class UnknownSkuError(ValueError):
    """The plan puts SONiC on a switch model this table does not describe."""


@dataclass(frozen=True)
class Sku:
    model: str  # the intent's `model:`
    hwsku: str  # DEVICE_METADATA hwsku: the SKU folder SONiC loads on this switch
    platform: str  # DEVICE_METADATA platform: ONIE's platform string
    asic: str
    cages: int
    speed: int  # Gb/s of an unsplit cage
    # Breakout mode per split, as platform.json spells it: (ways, speed of each port) -> mode name.
    modes: tuple[tuple[int, str], ...]
    egress_lossless_pool: int  # bytes

    def mode(self, ways: int) -> str:
        for split, name in self.modes:
            if split == ways:
                return name
        raise UnknownSkuError(f"{self.model} has no {ways}-way breakout (it has {', '.join(n for _, n in self.modes)})")


SKUS: dict[str, Sku] = {
    s.model: s
    for s in (
        Sku(
            model="SN5600",
            hwsku="ACS-SN5600",
            platform="x86_64-nvidia_sn5600-r0",
            asic="Spectrum-4",
            cages=64,
            speed=800,
            modes=(
                (1, "1x800G[400G,200G,100G,50G,40G,25G,10G]"),
                (2, "2x400G[200G,100G,50G,40G,25G,10G]"),
                (4, "4x200G[100G,50G,25G,10G]"),
            ),
            egress_lossless_pool=158_229_504,
        ),
        Sku(
            model="SN4700",
            hwsku="ACS-MSN4700",
            platform="x86_64-mlnx_msn4700-r0",
            asic="Spectrum-3",
            cages=32,
            speed=400,
            modes=(
                (1, "1x400G[200G,100G,50G,40G,25G,10G,1G]"),
                (2, "2x200G[100G,50G,40G,25G,10G,1G]"),
                (4, "4x100G[50G,25G,10G,1G]"),
            ),
            egress_lossless_pool=60_817_392,
        ),
    )
}


def sku(model: str) -> Sku:
    try:
        return SKUS[model]
    except KeyError:
        raise UnknownSkuError(
            f"no SONiC hardware SKU is known for model {model!r}; known: {', '.join(sorted(SKUS))}"
        ) from None


def port_name(cage: int, lane: int, split: int) -> str:
    """SONiC names a port by its first SerDes lane: Ethernet0, Ethernet8; split 2 ways, Ethernet0, Ethernet4."""
    return f"Ethernet{(cage - 1) * LANES_PER_CAGE + lane * (LANES_PER_CAGE // split)}"


def alias(cage: int, lane: int, split: int) -> str:
    """The front-panel name NVIDIA gives the port: etp1, or etp1a, etp1b.. for a split cage."""
    return f"etp{cage}" if split == 1 else f"etp{cage}{'abcd'[lane]}"
