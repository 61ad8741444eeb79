"""NVIDIA Spectrum switches running SONiC: CONFIG_DB (`config_db.json`) plus FRR's frr.conf in split-unified mode."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpufabric.nos.sonic.candidate import join, split
from gpufabric.nos.sonic.hwsku import port_name, role_problems
from gpufabric.platforms.disruption import Disruption
from gpufabric.platforms.spec import (
    QOS_FACTS,
    ROCE_HASH,
    DrainSpec,
    DrainSteps,
    LoadBalancing,
    LosslessBuffers,
    Platform,
    PlatformFacts,
    ZtpForm,
    templates_root,
)

if TYPE_CHECKING:
    import jinja2

    from gpufabric.config.context import DeviceContext
    from gpufabric.intent.model import SwitchRole
    from gpufabric.platforms.spec import TemplateRender
    from gpufabric.telemetry.buffers import PortBuffers
    from gpufabric.verify.facts import SwitchFacts

CONFIG_DB = ".config_db.json"
FRR_CONF = ".frr.conf"
TEMPLATES = templates_root() / "sonic"


@cache
def _frr_template() -> jinja2.Template:
    """The switch's frr.conf: SONiC's own preamble around the FRR platform's BGP template (one BGP
    template for every FRR-routed platform), loaded through the FRR platform's environment."""
    from gpufabric.config.render import environment
    from gpufabric.nos.frr import PLATFORM as FRR

    return environment(FRR).from_string((TEMPLATES / "frr.conf.j2").read_text())


class Sonic(Platform):
    def port_name(self, cage: int, lane: int, split: int) -> str:
        return port_name(cage, lane, split)

    def render(self, ctx: DeviceContext, template: TemplateRender) -> dict[str, str]:
        """CONFIG_DB built as a document; frr.conf from the FRR platform's BGP template."""
        from gpufabric.config.render import variables
        from gpufabric.nos.sonic.configdb import text

        name = ctx.device.name
        return {f"{name}{CONFIG_DB}": text(ctx), f"{name}{FRR_CONF}": _frr_template().render(variables(ctx))}

    def candidate(self, device: str, files: Mapping[str, str]) -> str:
        return join(device, files)

    def carried_planes_problem(self) -> str | None:
        return None  # VRF and VLAN_SUB_INTERFACE in CONFIG_DB, BGP per VRF in frr.conf (docs/configs.md)

    def vrf_name(self, name: str) -> str:
        return f"Vrf_{name}"  # sonic-vrf's VRF names match `Vrf[a-zA-Z0-9_-]+`

    def read_files(self, device: str, folder: Path) -> SwitchFacts:
        from gpufabric.nos.sonic.verify import read_sonic

        return read_sonic(device, folder / f"{device}{CONFIG_DB}")

    def read_running(self, text: str) -> SwitchFacts:
        """`validate` reads the QoS contract out of a running CONFIG_DB dump (`show runningconfiguration all`)."""
        from gpufabric.nos.sonic.verify import configdb_facts

        return configdb_facts("", split(text)[0], "running-config")

    def load_balancing(self, ctx: DeviceContext) -> LoadBalancing:
        """On a plane that carries RoCE, CONFIG_DB's `SWITCH_HASH|GLOBAL` gives the ECMP hash the five-tuple
        (SONiC's sonic-hash model; the hash fields of the SONiC "Generic hash" design)."""
        return LoadBalancing(hash_fields=ROCE_HASH if ctx.qos is not None else ())

    def lossless_buffers(self, ctx: DeviceContext) -> LosslessBuffers:
        """CABLE_LENGTH, read by the dynamic buffer model, which sizes the PFC headroom itself."""
        lossless = ctx.lossless_buffer is not None
        return LosslessBuffers(cable_metres=ctx.cable_metres if lossless else None)

    def role_problems(self, role: SwitchRole) -> list[tuple[str, str, str]]:
        return role_problems(role)  # the SKU table: cages, speeds, breakouts

    def disruptions(self, diff: str) -> tuple[Disruption, ...]:
        """The CONFIG_DB JSON patch, then FRR's reload diff (judged as on an FRR switch)."""
        from gpufabric.nos.sonic.disruption import disruptions

        return disruptions(diff)

    # -- releases, reboots and upgrades (docs/upgrade.md) ----------------------------------------------------

    def running_release(self, os_version: str) -> str | None:
        """SONiC's build_version ("SONiC.202411.123456-abcdef" or "202411.12"): its six-digit branch."""
        found = re.search(r"(?<![0-9])(20[0-9]{4})(?![0-9])", os_version)
        return found.group(1) if found else None

    def reboot_modes(self) -> tuple[str, ...]:
        """`warm-reboot`, `fast-reboot`, `reboot` (sonic-utilities' Command Reference, "Reboot Commands")."""
        return ("warm", "fast", "cold")

    def image_fallback(self) -> str:
        return (
            "sonic-installer keeps the previous image installed; gpufabric boots the new one once "
            "(`sonic-installer set-next-boot`) and keeps the previous one the default, so a switch that hangs on "
            "the new image boots the previous one at its next reset (watchdog or power cycle); the new image is "
            "made the default (`sonic-installer set-default`) only once the switch runs it and passes its checks"
        )

    # -- drain and maintenance ----------------------------------------------------------

    def drain_steps(self, spec: DrainSpec) -> DrainSteps:
        from gpufabric.nos.sonic.drain import steps

        return steps(spec)

    def keep_drain(self, candidate: str, spec: DrainSpec) -> str:
        """TSA's state is a CONFIG_DB row, which `config replace` of the planned file alone would drop (and bgpcfgd
        then shifts the traffic back), and route-map sequences, which frr-reload drops: the candidate of a drained
        switch carries both (gpufabric.nos.sonic.drain.keep). The driver replaces CONFIG_DB with the running one
        merged with gpufabric's tables (gpufabric.nos.sonic.owned), which keeps the row anyway, so it takes only
        the frr.conf from here."""
        from gpufabric.nos.sonic.drain import keep

        return keep(candidate, spec)

    def ztp(self, device: str, files: Mapping[str, str], base_url: str) -> ZtpForm:
        from gpufabric.nos.sonic.ztp import ztp_form

        return ztp_form(device, files, base_url, self.title)

    def read_buffers(self, conn: Any, ports: list[str], queues: list[str]) -> dict[str, PortBuffers] | None:
        from gpufabric.nos.sonic.telemetry import read_buffers

        return read_buffers(conn, ports, queues)


# What `read_running` returns, the facts validate compares on a running switch:
# The running CONFIG_DB: QoS, hashing and buffers; BGP lives in FRR, which it does not carry.
RUNNING_FACTS = QOS_FACTS

PLATFORM = Sonic(
    PlatformFacts(
        running_facts=RUNNING_FACTS,
        bgp_max_med=True,  # FRR's `bgp max-med on-startup`, proven by FRR's own parser (vtysh -C)
        name="sonic",
        title="NVIDIA Spectrum with SONiC",
        releases=("202411", "202505"),
        default_release="202411",
        mgmt_port="eth0",
        mgmt_vrf="mgmt",
        max_mtu=9216,  # sonic-port.yang: PORT mtu 68..9216
        hash_algorithm="sha512",
        hash_prefix="$6$",
        numbered_only=False,
        mlag=False,  # SONiC's MCLAG is not rendered
        outputs=((CONFIG_DB, "sonic"), (FRR_CONF, "sonic")),  # built by gpufabric.nos.sonic, not Jinja alone
        candidate_suffix=CONFIG_DB,
        napalm_driver="sonic",
        driver_class="gpufabric.nos.sonic.driver:SonicDriver",
        napalm_name="gpufabric_sonic",  # NAPALM has no "sonic": a napalm_sonic package would be another's driver
        containerlab_kind="sonic-vs",
        containerlab_image="docker-sonic-vs:latest",
        eth_numbering=True,  # containerlab's sonic-vs: eth1 is Ethernet0
        confirm_timer=True,  # the project's driver arms a revert timer on the switch before `config replace`
        ecn_unit_bytes=1,  # WRED_PROFILE thresholds are bytes
        rank=4,
        gnmi_port=9339,  # the gnmi service
        docs="SONiC CONFIG_DB schema (sonic-yang-models); SONiC's generic config updater "
        "(config checkpoint, replace, rollback); FRR user guide",
    )
)
