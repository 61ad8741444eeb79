"""Arista EOS."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpufabric.nos.eos.hashing import SAND_MODEL, sand_udp_hash
from gpufabric.platforms.disruption import Disruption
from gpufabric.platforms.spec import (
    BTH_DEST_QP,
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


class Eos(Platform):
    judge = VendorJudge("Arista's AVD eos_cli_config_gen", "pyavd", "pyavd>=5,<7", "gpufabric.nos.eos.judge")

    def port_name(self, cage: int, lane: int, split: int) -> str:
        return port_name(cage, lane, split)

    def anta_catalog(self, ctx: DeviceContext) -> dict[str, Any] | None:
        from gpufabric.nos.eos.anta import catalog

        return catalog(ctx)

    def template_filters(self) -> Mapping[str, TemplateFilter]:
        return {"eos_speed": breakout_speed}

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
        """Dynamic load balancing on or off as the plane asks; on a plane that carries RoCE a SAND switch's
        `load-balance sand profile` adds the destination queue pair (bytes 5-7 of the UDP payload to port
        4791, the base transport header) to the LAG and ECMP hash."""
        roce = ctx.qos is not None and sand_udp_hash(ctx.device.model, ctx.release)
        return LoadBalancing(adaptive=ctx.adaptive, hash_fields=(BTH_DEST_QP,) if roce else ())

    def balancing_problem(self, model: str, release: str, adaptive: bool) -> tuple[str, str] | None:
        """A compute switch balances by dynamic load balancing (`adaptive`) or, on SAND hardware from EOS
        4.33.1F, by the queue-pair hash; a Strata switch on `ecmp` would keep EOS's default hash, which
        neither a model nor a document gpufabric holds shows for RoCEv2."""
        if adaptive or sand_udp_hash(model, release):
            return None
        if SAND_MODEL.match(model):
            return (
                f"EOS {release} has no UDP payload hash for RoCEv2 on {model} (load-balance sand profile "
                "`fields udp`: EOS 4.33.1F on)",
                "pin platforms.eos.release to 4.33 or later, or set load_balancing: adaptive",
            )
        return (
            f"{model} is no SAND switch: EOS gives it no RoCE-aware hash gpufabric can render and prove",
            "set the plane's load_balancing: adaptive (dynamic load balancing), or use a SAND model "
            "(7280R3, 7800R3, ...) on EOS 4.33 or later for the queue-pair hash",
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


PLATFORM = Eos(
    PlatformFacts(
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
