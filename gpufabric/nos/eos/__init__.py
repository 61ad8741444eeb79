"""Arista EOS."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpufabric.nos.eos.hashing import SAND_MODEL, STRATA_UDF_OFFSETS, sand_udp_hash, strata_udf_hash
from gpufabric.platforms.disruption import Disruption
from gpufabric.platforms.spec import (
    BTH_DEST_QP,
    QOS_FACTS,
    ROUTING_FACTS,
    DrainSpec,
    DrainSteps,
    LoadBalancing,
    LosslessBuffers,
    Platform,
    PlatformFacts,
    TemplateFilter,
    VendorJudge,
    ZtpForm,
)

if TYPE_CHECKING:
    from gpufabric.config.context import DeviceContext
    from gpufabric.telemetry.buffers import PortBuffers
    from gpufabric.telemetry.optics import Optics
    from gpufabric.verify.facts import SwitchFacts
    from gpufabric.verify.running.ethtool import PortCounters

# An OSFP or QSFP-DD cage has 8 electrical lanes; EOS names a split port after its first lane.
CAGE_LANES = 8


def port_name(cage: int, lane: int, split: int) -> str:
    return f"Ethernet{cage}/{lane * (CAGE_LANES // split) + 1}"


def breakout_speed(speed_gbps: int, split: int) -> str:
    """The `speed` of a port on a split cage: its rate and the lanes it takes (`100g-2` on a 4-way 400G cage)."""
    return f"{speed_gbps}g-{CAGE_LANES // split}"


# Every DSCP the plan does not name goes to the default class (traffic class 0) explicitly: on Arista's Strata
# (Trident, Tomahawk) switches EOS's own DSCP map sends DSCP 0-7, unmarked traffic, to traffic class 1 and
# DSCP 8-15 to 0 (Arista EOS User Manual, Quality of Service, "QoS Configuration: Trident and Tomahawk Platform
# Switches", the default DSCP-to-traffic-class map), so a default class on tx-queue 0 would miss its guarantee.
DEFAULT_TRAFFIC_CLASS = 0
# `qos map dscp` takes a list of DSCP values; eight to a line, the most the EOS User Manual's syntax for the
# command shows (`qos map dscp dscp_1 [... dscp_8] to traffic-class tc`).
DSCP_PER_LINE = 8


def dscp_map(named: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """(DSCP values, traffic class) of each `qos map dscp` line: each named DSCP to its class, one a line, then
    every other DSCP 0-63 to the default class, eight to a line, so no DSCP is left to the platform's map."""
    mine = dict(named)
    rest = [d for d in range(64) if d not in mine]
    lines = [(str(d), tc) for d, tc in sorted(mine.items())]
    for i in range(0, len(rest), DSCP_PER_LINE):
        lines.append((" ".join(str(d) for d in rest[i : i + DSCP_PER_LINE]), DEFAULT_TRAFFIC_CLASS))
    return lines


def udf_offsets(model: str) -> tuple[int, ...]:
    """The outer-L4 offsets of the queue-pair bytes a Strata switch hashes through user-defined fields; none on
    a switch of another family (a SAND switch hashes them through its sand profile)."""
    return STRATA_UDF_OFFSETS if strata_udf_hash(model) else ()


class Eos(Platform):
    judge = VendorJudge("Arista's AVD eos_cli_config_gen", "pyavd", "pyavd>=5,<7", "gpufabric.nos.eos.judge")

    def port_name(self, cage: int, lane: int, split: int) -> str:
        return port_name(cage, lane, split)

    def anta_catalog(self, ctx: DeviceContext) -> dict[str, Any] | None:
        from gpufabric.nos.eos.anta import catalog

        return catalog(ctx)

    def template_filters(self) -> Mapping[str, TemplateFilter]:
        return {"eos_speed": breakout_speed, "eos_dscp_map": dscp_map, "eos_udf_offsets": udf_offsets}

    def read_files(self, device: str, folder: Path) -> SwitchFacts:
        from gpufabric.nos.eos.verify import read_eos

        return read_eos(device, folder / f"{device}.cfg")

    def read_running(self, text: str) -> SwitchFacts:
        from gpufabric.nos.eos.verify import eos_facts

        return eos_facts("", text, "running-config")

    def carried_planes_problem(self) -> str | None:
        return None  # VRFs on 802.1Q subinterfaces, BGP per VRF, a class per carried plane (docs/configs.md)

    def adaptive_routing(self) -> bool:
        return True  # dynamic load balancing: `ip hardware fib load-balance distribution dynamic`

    def load_balancing(self, ctx: DeviceContext) -> LoadBalancing:
        """Dynamic load balancing on or off as the plane asks; on a plane that carries RoCE the destination
        queue pair (the base transport header's bytes 5-7, after the UDP header) joins the LAG and ECMP hash:
        a SAND switch's `load-balance sand profile` hashes those bytes of the payload to UDP port 4791, a
        Strata switch's `port-channel load-balance trident udf` lines the same bytes at outer-L4 offsets 13-15
        (gpufabric/nos/eos/hashing.py)."""
        model = ctx.device.model
        roce = ctx.qos is not None and (sand_udp_hash(model, ctx.release) or strata_udf_hash(model))
        return LoadBalancing(adaptive=ctx.adaptive, hash_fields=(BTH_DEST_QP,) if roce else ())

    def balancing_problem(self, model: str, release: str, adaptive: bool) -> tuple[str, str] | None:
        """A compute switch balances by dynamic load balancing (`adaptive`) or by the queue-pair hash: on
        Strata hardware through user-defined hash fields, on SAND hardware from EOS 4.33.1F through a sand
        profile. A switch of neither family on `ecmp` would keep EOS's default hash, which neither a model nor
        a document gpufabric holds shows for RoCEv2."""
        if adaptive or sand_udp_hash(model, release) or strata_udf_hash(model):
            return None
        if SAND_MODEL.match(model):
            return (
                f"EOS {release} has no UDP payload hash for RoCEv2 on {model} (load-balance sand profile "
                "`fields udp`: EOS 4.33.1F on)",
                "pin platforms.eos.release to 4.33 or later, or set load_balancing: adaptive",
            )
        return (
            f"{model} is neither a Strata (7050X, 7060X, 7260X, 7300X) nor a SAND switch: EOS gives it no "
            "RoCE-aware hash gpufabric can render and prove",
            "set the plane's load_balancing: adaptive (dynamic load balancing), or use a Strata model (7060X5, "
            "...) or a SAND model (7280R3, 7800R3, ...) on EOS 4.33 or later for the queue-pair hash",
        )

    def lossless_buffers(self, ctx: DeviceContext) -> LosslessBuffers:
        """`platform trident mmu queue profile` `ingress headroom <bytes>` on the lossless ports."""
        want = ctx.lossless_buffer
        return LosslessBuffers(headroom=want.headroom if want is not None else None)

    def read_lossless(self, conn: Any, ports: list[str]) -> dict[str, PortCounters]:
        from gpufabric.nos.eos.telemetry import read_lossless

        return read_lossless(conn, ports)

    def read_optics(self, conn: Any, ports: list[str]) -> dict[str, Optics]:
        from gpufabric.nos.eos.telemetry import read_optics

        return read_optics(conn, ports)

    def disruptions(self, diff: str) -> tuple[Disruption, ...]:
        """The configuration session's unified diff of the running configuration."""
        from gpufabric.nos.eos.disruption import disruptions

        return disruptions(diff)

    # -- reboots and upgrades (docs/upgrade.md) ---------------------------------------------------------------

    def reboot_modes(self) -> tuple[str, ...]:
        """`reload fast-boot now` (Arista, EOS user manual, "Accelerated Software Upgrade (ASU)"), else `reload now`."""
        return ("fast", "cold")

    def image_fallback(self) -> str:
        return (
            "the running SWI stays on flash: and boot-config names the new one only from just before the reload; "
            "gpufabric sets `boot system flash:<previous>` back and reloads when the switch comes back on another "
            "release; a switch that does not come back at all boots from the Aboot shell on its console "
            "(`boot flash:<previous>`)"
        )

    # -- drain and maintenance ----------------------------------------------------------

    def drain_steps(self, spec: DrainSpec) -> DrainSteps:
        from gpufabric.nos.eos.drain import steps

        return steps(spec)

    def keep_drain(self, candidate: str, spec: DrainSpec) -> str:
        """Maintenance mode is configuration, which a session replacing the running configuration would drop:
        the candidate of a drained switch carries the quiesced unit (gpufabric.nos.eos.drain.keep)."""
        from gpufabric.nos.eos.drain import keep

        return keep(candidate, spec)

    def ztp(self, device: str, files: Mapping[str, str], base_url: str) -> ZtpForm:
        from gpufabric.nos.eos.ztp import ztp_form

        return ztp_form(device, files, base_url, self.title)

    def read_buffers(self, conn: Any, ports: list[str], queues: list[str]) -> dict[str, PortBuffers] | None:
        from gpufabric.nos.eos.telemetry import read_buffers

        return read_buffers(conn, ports, queues)


# What `read_running` returns, the facts validate compares on a running switch:
# `show running-config`: the same reader as the rendered file's.
RUNNING_FACTS = QOS_FACTS | ROUTING_FACTS

PLATFORM = Eos(
    PlatformFacts(
        running_facts=RUNNING_FACTS,
        name="eos",
        title="Arista EOS",
        releases=("4.32", "4.33", "4.34"),
        default_release="4.33",
        mgmt_port="Management1",
        mgmt_vrf="MGMT",
        max_mtu=9214,
        hash_algorithm="sha512",
        hash_prefix="$6$",
        numbered_only=True,
        mlag=True,
        outputs=((".cfg", "config.j2"),),
        candidate_suffix=".cfg",
        napalm_driver="eos",
        containerlab_kind="arista_ceos",
        containerlab_image="ceos:4.33.1F",
        eth_numbering=True,
        driver_class="gpufabric.nos.eos.driver:GpufabricEOSDriver",
        napalm_name="gpufabric_eos",  # napalm_gpufabric_eos: NAPALM's "eos" is not this driver
        confirm_timer=True,
        ecn_unit_bytes=1000,
        rank=1,
        bfd_interval_range=(50, 60_000),  # router bfd: interval / min-rx
        bfd_multiplier_range=(3, 50),
        password_login=True,  # eAPI
        templates_dir="eos",
        gnmi_port=6030,  # management api gnmi
        docs="Arista EOS User Manual; AVD eos_cli_config_gen (pyavd) for the configuration syntax",
        mlag_l3_vlan=4093,  # AVD's default MLAG L3 peering VLAN
    )
)
