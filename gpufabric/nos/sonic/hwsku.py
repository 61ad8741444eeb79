"""The NVIDIA Spectrum switches gpufabric renders SONiC for: the facts of each hardware SKU.

Source: NVIDIA's device files in SONiC's build tree (sonic-net/sonic-buildimage, `device/mellanox/`):
`x86_64-nvidia_sn5600-r0/platform.json` and `x86_64-mlnx_msn4700-r0/platform.json` (cage names, lanes,
aliases, breakout modes), and the SKUs' `buffers_defaults_t1.j2` / NVIDIA's SKU generator there (the
egress lossless pool: the ASIC's shared buffer). Both name a cage's ports Ethernet<8 * (cage - 1) + offset>
over 8 SerDes lanes, alias them etp<cage>[a-d], and break a cage out 1, 2 or 4 ways. The SN5600's 65th
port (Ethernet512, a 25G management-side SFP) carries no fabric link and is not rendered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpufabric.errors import GpufabricError

LANES_PER_CAGE = 8
_MODE = re.compile(r"^([0-9]+)x([0-9]+)G\[([0-9G,]*)\]$")


class UnknownSkuError(ValueError, GpufabricError):
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

    def speeds(self, ways: int) -> tuple[int, ...]:
        """The port speeds (Gb/s) a cage split `ways` ways runs at, fastest first; () when it cannot split so."""
        for split, name in self.modes:
            found = _MODE.match(name)
            if split == ways and found is not None:
                others = [int(s.rstrip("G")) for s in found.group(3).split(",") if s]
                return (int(found.group(2)), *others)
        return ()


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


def role_problems(role: Any) -> list[tuple[str, str, str]]:
    """What a switch role of the intent (model, ports, speeds) asks of a SONiC switch that its SKU does not
    have, as (field, what is wrong, what would be right): the plan would put cables on cages that do not
    exist, and CONFIG_DB could not be rendered for it. Checked when the intent is read, before any plan."""
    hw = SKUS.get(role.model)
    if hw is None:
        return [
            (
                "model",
                f"no SONiC hardware SKU is known for model {role.model!r}",
                f"use one of {', '.join(sorted(SKUS))} (gpufabric/nos/sonic/hwsku.py lists their facts)",
            )
        ]
    problems: list[tuple[str, str, str]] = []
    if role.ports > hw.cages:
        problems.append(
            ("ports", f"the {hw.model} has {hw.cages} cages, not {role.ports}", f"set ports: {hw.cages} or fewer")
        )
    whole = hw.speeds(1)
    if role.port_speed not in whole:
        problems.append(
            (
                "port_speed",
                f"a {hw.model} cage does not run at {role.port_speed}G",
                f"use one of {', '.join(f'{s}G' for s in whole)}",
            )
        )
        return problems  # the breakouts are measured against the port speed
    for key in ("downlink_speed", "uplink_speed"):
        speed = getattr(role, key)
        if speed is None or speed == role.port_speed or role.port_speed % speed:
            continue  # unsplit, or an uneven split the general rules already refuse
        ways = role.port_speed // speed
        if speed not in hw.speeds(ways):
            modes = "; ".join(name for _, name in hw.modes)
            problems.append(
                (
                    key,
                    f"a {hw.model} cage at {role.port_speed}G does not break out {ways} ways at {speed}G",
                    f"use a breakout the SKU has ({modes})",
                )
            )
    return problems
