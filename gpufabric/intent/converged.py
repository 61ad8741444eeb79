"""Converged north-south: logical planes that ride another plane's switches (docs/planning.md).

A storage or business plane may say `carries:` and name the logical planes its switches carry
besides its own traffic: `storage` (lossless RoCE or lossy) and `inband` (in-band management). Each
carried plane gets its own VRF, its own 802.1Q tag on every host and fabric port of the physical
plane (a routed subinterface, a /31 per port as the plane's own traffic has), its own host and
fabric address pools, and its own traffic class with a share of the egress scheduler. The physical
plane's own traffic keeps the default VRF, the untagged port, the border and the default class.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpufabric.intent.types import NAME_PATTERN, Network

CarriedName = Literal["storage", "inband"]
# The switch roles that hold a carried plane's VRF; border leaves stay outside every one (no way out).
CARRYING_ROLES = frozenset({"leaf", "spine", "superspine"})
CARRIED_NAMES: tuple[CarriedName, ...] = ("storage", "inband")

# A VRF name reaches every platform's configuration and a Linux device name (IFNAMSIZ: 15 characters), on
# SONiC behind its `Vrf_` prefix: 11 characters at most (SONiC's YANG model refuses a name of 16).
VRF_PATTERN = r"^[A-Z][A-Z0-9_]{0,10}$"
# Names each platform keeps for itself: the default table and the management VRFs.
RESERVED_VRFS = frozenset({"DEFAULT", "MGMT", "MANAGEMENT", "GLOBAL", "ALL"})
# The lowest VLAN a targeted platform reserves is EOS's internal range (1006-4094 by default, allocated
# to routed ports); Cumulus Linux reserves 3725-3999 and NX-OS 3968-4094. 2-1005 is free on all of them.
MAX_VLAN = 1005


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class CarriedPlane(_Strict):
    """A logical plane carried on the physical plane's switches: its VRF, tag, pools and traffic class."""

    vrf: str = Field(
        pattern=VRF_PATTERN,
        description="VRF of the plane on every switch: upper-case letters, digits and '_', starting with a letter, "
        "at most 11 (a Linux device name, with SONiC's `Vrf_` prefix in front). Not DEFAULT, MGMT, MANAGEMENT, "
        "GLOBAL or ALL.",
    )
    vlan: int = Field(
        ge=2,
        le=MAX_VLAN,
        description="802.1Q tag of the plane on every host and fabric port (a routed subinterface). 2-1005: "
        "EOS allocates internal VLANs from 1006, Cumulus Linux reserves 3725-3999, NX-OS 3968-4094.",
    )
    hosts: Network = Field(
        description="Host-facing addresses: a /31 per host port, at the same place in this pool as the plane's "
        "own `addressing.hosts` gives the port (so it must be at least as large).",
    )
    p2p: Network | None = Field(
        None,
        description="A /31 per fabric link in this VRF, at the link's place in `addressing.p2p`; required when "
        "the physical plane's `routing.addressing` is `p2p31` (unnumbered planes peer over IPv6 link-local).",
    )
    traffic: Literal["lossless", "lossy"] = Field(
        "lossy",
        description="`lossless`: RoCE, in the physical plane's `qos` profile class (its DSCP and priority, PFC, "
        "ECN); `lossy`: its own class, `priority` and `dscp`.",
    )
    priority: int | None = Field(
        None,
        ge=1,
        le=7,
        description="Switch priority (traffic class) of a lossy plane; 0 is the physical plane's own traffic. "
        "Not with `traffic: lossless` (the profile's RoCE priority is used).",
    )
    dscp: list[Annotated[int, Field(ge=1, le=63)]] = Field(
        default_factory=list,
        max_length=16,
        description="DSCP values the hosts mark the plane's traffic with (lossy planes); the switches map them "
        "to `priority`. Unmarked traffic stays in the default class.",
    )
    bandwidth_percent: int = Field(
        ge=1,
        le=98,
        description="Share of every port's egress bandwidth the plane's class is guaranteed (DWRR weight); the "
        "physical plane's own traffic gets what the carried planes leave.",
    )
    groups: list[Annotated[str, Field(pattern=NAME_PATTERN)]] | None = Field(
        None,
        description="Server groups whose hosts join this plane (a tagged subinterface on each NIC they have on "
        "the physical plane). Default: every group attached to the physical plane.",
    )

    @field_validator("vrf")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_VRFS:
            raise ValueError(f"{value} is a name the platforms keep for themselves; choose another VRF name")
        return value
