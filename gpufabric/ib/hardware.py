"""Switch and adapter models of InfiniBand compute fabrics, with the rates their ports run at.

A rate is a signalling generation (HDR, NDR) and a lane count (width): 4 lanes of NDR are
400 Gb/s, 2 lanes (an NDR200 split port) 200 Gb/s. ibnetdiscover writes a port's rate as
WIDTHxSPEED ("4xNDR"), which is how the exported topology and the diagnostics spell it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.ib.errors import fail

LANE_GBPS = {"HDR": 50, "NDR": 100}


@dataclass(frozen=True, slots=True)
class Rate:
    speed: str  # HDR | NDR
    width: int  # lanes: 4 (full port) or 2 (split port)

    @property
    def gbps(self) -> int:
        return LANE_GBPS[self.speed] * self.width

    @property
    def label(self) -> str:
        """As ibnetdiscover prints it: 4xNDR."""
        return f"{self.width}x{self.speed}"


# The names operators write: NDR200 and HDR100 are split ports (two lanes of a four-lane cage port).
RATES: dict[str, Rate] = {
    "NDR": Rate("NDR", 4),
    "NDR200": Rate("NDR", 2),
    "HDR": Rate("HDR", 4),
    "HDR100": Rate("HDR", 2),
}


@dataclass(frozen=True, slots=True)
class SwitchModel:
    name: str
    speed: str  # the generation of its ports
    ports: int  # four-lane ports
    split_ports: int  # ports when every port is split in two (two lanes each)
    cages: int  # pluggable cages on the front panel: a transceiver each (a twin-port OSFP carries two ports)
    sharp: str = ""  # the SHARP generation its ASIC aggregates with; "" where it has none

    @property
    def rate(self) -> Rate:
        return Rate(self.speed, 4)


# The out-of-band management port of an NVIDIA Quantum switch (MLNX-OS's `interface mgmt0`, "management
# port 0 (out of band)": NVIDIA MLNX-OS User Manual, Management Interface Commands).
MGMT_PORT = "mgmt0"

# NVIDIA Quantum-2 QM9700: 32 OSFP cages of two NDR ports, 64 x 400G or 128 x NDR200.
# NVIDIA Quantum QM8700: 40 QSFP56 ports of HDR 200G, or 80 x HDR100 split.
# SHARP (in-network reductions) is in the switch ASIC: SHARPv2 on Quantum, SHARPv3 on Quantum-2 (NVIDIA
# SHARP documentation, Introduction).
SWITCH_MODELS: dict[str, SwitchModel] = {
    "QM9700": SwitchModel("QM9700", "NDR", 64, 128, 32, sharp="SHARPv3"),
    "QM8700": SwitchModel("QM8700", "HDR", 40, 80, 40, sharp="SHARPv2"),
}


def switch_model(name: str, where: str = "design.switch_model") -> SwitchModel:
    try:
        return SWITCH_MODELS[name]
    except KeyError:
        raise fail(
            where, f"unknown InfiniBand switch model {name!r}", f"use one of {', '.join(SWITCH_MODELS)}"
        ) from None


def rate(name: str, where: str) -> Rate:
    try:
        return RATES[name]
    except KeyError:
        raise fail(where, f"unknown InfiniBand port rate {name!r}", f"use one of {', '.join(RATES)}") from None
