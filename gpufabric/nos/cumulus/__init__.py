"""NVIDIA Spectrum switches running Cumulus Linux 5 (NVUE)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpufabric.nos.cumulus.dialect import DEFAULT_RELEASE, RELEASES
from gpufabric.platforms.disruption import Classifier, Disruption
from gpufabric.platforms.spec import (
    QOS_FACTS,
    ROCE_HASH,
    ROUTING_FACTS,
    Bootstrap,
    DrainSpec,
    DrainSteps,
    LoadBalancing,
    LosslessBuffers,
    Platform,
    PlatformFacts,
    VendorJudge,
    ZtpForm,
)

if TYPE_CHECKING:
    from gpufabric.config.context import DeviceContext
    from gpufabric.platforms.spec import TemplateRender
    from gpufabric.telemetry.buffers import PortBuffers
    from gpufabric.verify.facts import SwitchFacts


class Cumulus(Platform):
    """Its configuration is one NVUE document, built in Python rather than printed by a template."""

    judge = VendorJudge("NVIDIA's NVUE object model", "nvueschema", "nvueschema>=0.1", "gpufabric.nos.cumulus.judge")
    _classify: Classifier | None = None  # its diff rules, compiled on first use

    def render(self, ctx: DeviceContext, template: TemplateRender) -> dict[str, str]:
        from gpufabric.nos.cumulus.document import build

        return build(ctx)

    def carried_planes_problem(self) -> str | None:
        return None  # VRFs on 802.1Q subinterfaces, BGP per VRF, a class per carried plane (docs/configs.md)

    def read_files(self, device: str, folder: Path) -> SwitchFacts:
        from gpufabric.nos.cumulus.verify import read_nvue

        return read_nvue(device, folder / f"{device}.yaml")

    def read_running(self, text: str) -> SwitchFacts:
        from gpufabric.nos.cumulus.verify import nvue_facts

        return nvue_facts("", text, "running-config", tree_ok=True)

    def adaptive_routing(self) -> bool:
        return True

    def spectrum_x(self, model: str) -> bool:
        """Spectrum-4 switches, the SN5000 series (SN5400, SN5600): the switches of NVIDIA's Spectrum-X reference
        architectures, whose adaptive routing the SuperNICs' Spectrum-X settings pair with."""
        return model.upper().startswith("SN5")

    def load_balancing(self, ctx: DeviceContext) -> LoadBalancing:
        """NVUE switches adaptive routing on per port too (interface <port> router adaptive-routing), on
        every fabric port of an adaptive plane; on a plane that carries RoCE the ECMP hash takes the five-tuple."""
        ports = frozenset(p.name for p in ctx.ports if p.kind == "fabric") if ctx.adaptive else frozenset()
        hashing = ROCE_HASH if ctx.qos is not None else ()  # `system forwarding ecmp-hash` on a RoCE plane
        return LoadBalancing(adaptive=ctx.adaptive, adaptive_ports=ports, hash_fields=hashing)

    def lossless_buffers(self, ctx: DeviceContext) -> LosslessBuffers:
        """`qos pfc ... cable-length`: the switch sizes PFC headroom itself from the plane's cable length."""
        lossless = ctx.lossless_buffer is not None
        return LosslessBuffers(cable_metres=ctx.cable_metres if lossless else None)

    def disruptions(self, diff: str) -> tuple[Disruption, ...]:
        """NVUE's `nv config diff -o commands`; its rules, compiled once, know the management port."""
        from gpufabric.nos.cumulus.disruption import classifier, disruptions

        if self._classify is None:
            self._classify = classifier(self.facts.mgmt_port)
        return disruptions(self._classify, diff)

    # -- reboots and upgrades (docs/upgrade.md) ---------------------------------------------------------------

    def reboot_modes(self) -> tuple[str, ...]:
        """`nv action reboot system mode warm|fast|cold` (NVIDIA, Cumulus Linux user guide, "In-Service System
        Upgrade (ISSU)" and "Upgrading Cumulus Linux"): warm keeps forwarding while the control plane restarts."""
        return ("warm", "fast", "cold")

    def image_fallback(self) -> str:
        return (
            "optimized (two-partition) image upgrade: the new image goes into the other partition and the running "
            "one stays where it is; `nv action boot-next system image other` boots the partition not running "
            "(gpufabric sets it back when the switch comes back on another release); a switch that does not come "
            "back at all needs its console or ONIE to pick the old partition"
        )

    # -- drain and maintenance ----------------------------------------------------------

    def drain_steps(self, spec: DrainSpec) -> DrainSteps:
        from gpufabric.nos.cumulus.drain import steps

        return steps(spec)

    def keep_drain(self, candidate: str, spec: DrainSpec) -> str:
        """From 5.13 the maintenance unit is configuration, which `nv config replace` would drop: the candidate
        of a drained switch carries it enabled (gpufabric.nos.cumulus.drain.keep)."""
        from gpufabric.nos.cumulus.drain import keep

        return keep(candidate, spec)

    def ztp(self, device: str, files: Mapping[str, str], base_url: str) -> ZtpForm:
        from gpufabric.nos.cumulus.ztp import ztp_form

        return ztp_form(device, files, base_url, self.title)

    def console_bootstrap(self, device: str, files: Mapping[str, str], bootstrap: Bootstrap) -> dict[str, str]:
        from gpufabric.nos.cumulus.bootstrap import document

        release = bootstrap.release or DEFAULT_RELEASE
        return {f"{device}.bootstrap.yaml": document(device, files[f"{device}.yaml"], release, bootstrap)}

    def read_buffers(self, conn: Any, ports: list[str], queues: list[str]) -> dict[str, PortBuffers] | None:
        from gpufabric.nos.cumulus.telemetry import read_buffers

        return read_buffers(conn, ports, queues)


# What `read_running` returns, the facts validate compares on a running switch:
# NVUE's running tree (`nv config show`): the same reader as the rendered startup file's.
RUNNING_FACTS = QOS_FACTS | ROUTING_FACTS

PLATFORM = Cumulus(
    PlatformFacts(
        running_facts=RUNNING_FACTS,
        name="cumulus",
        title="NVIDIA Cumulus Linux (NVUE)",
        releases=RELEASES,
        default_release=DEFAULT_RELEASE,
        mgmt_port="eth0",
        mgmt_vrf="mgmt",
        max_mtu=9216,
        hash_algorithm="sha512",
        hash_prefix="$6$",
        hash_rounds=100_000,  # glibc/libxcrypt crypt(3) takes $6$rounds=N$: 20x the default's cost to guess
        numbered_only=False,
        mlag=True,
        outputs=((".yaml", "cumulus"),),  # built by gpufabric.nos.cumulus.document, not a Jinja template
        candidate_suffix=".yaml",
        napalm_driver="cumulus",
        containerlab_kind="nvidia_cumulusvx",
        containerlab_image="cumulusvx:5.14",
        eth_numbering=False,
        confirm_timer=True,
        ecn_unit_bytes=1,
        rank=0,
        bfd_interval_range=(50, 60_000),  # NVUE bfd min-tx-interval / min-rx-interval
        gnmi_port=9339,  # Cumulus Linux 5.x's gNMI server
        docs="Cumulus Linux 5 user guide and NVUE command reference; NVUE object model per release",
        mlag_l3_interface="peerlink.4094",  # NVIDIA's MLAG-with-routing peering, unnumbered
    )
)
