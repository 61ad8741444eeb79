"""Cisco Nexus 9000 NX-OS."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpufabric.nos.nxos.hashing import NXOS_HASH
from gpufabric.platforms.disruption import Disruption
from gpufabric.platforms.spec import (
    QOS_FACTS,
    ROUTING_FACTS,
    DrainSpec,
    DrainSteps,
    LoadBalancing,
    LosslessBuffers,
    Platform,
    PlatformFacts,
    ZtpForm,
)

if TYPE_CHECKING:
    from gpufabric.config.context import DeviceContext
    from gpufabric.telemetry.buffers import PortBuffers
    from gpufabric.telemetry.optics import Optics
    from gpufabric.verify.facts import SwitchFacts
    from gpufabric.verify.running.ethtool import PortCounters

# Configuration replace with a commit timeout (`configure replace bootflash:FILE commit-timeout SECONDS`, then
# `configure replace commit`): Cisco's Nexus 9000 System Management Configuration Guide documents it from its
# Release 7.x edition on, the timer taking 30-3600 seconds. Every release below has it; the push arms it.
COMMIT_TIMEOUT_SINCE = (7, 0)  # the 7.x train: the oldest guide that documents it (its first sub-release unchecked)
COMMIT_TIMEOUT_RANGE = (30, 3600)


def free_text(value: str) -> str | None:
    """NX-OS reads ' ; ' as the end of one command and the start of another, at the prompt and in NX-API's
    command lists alike: `snmp-server location hall ; no feature ssh` is two commands. Refused, not quoted:
    a ';' alone is refused too, as no NX-OS document says which quoting keeps it inside a free-text value."""
    if ";" in value:
        return "holds ';', which NX-OS reads as a command separator: the rest of the text would run as a command"
    return None


def port_name(cage: int, lane: int, split: int) -> str:
    return f"Ethernet1/{cage}" if split == 1 else f"Ethernet1/{cage}/{lane + 1}"


class Nxos(Platform):
    def port_name(self, cage: int, lane: int, split: int) -> str:
        return port_name(cage, lane, split)

    def carried_planes_problem(self) -> str | None:
        return None  # `vrf context`, `encapsulation dot1q` subinterfaces with `vrf member`, BGP `vrf` (docs/configs.md)

    def read_files(self, device: str, folder: Path) -> SwitchFacts:
        from gpufabric.nos.nxos.verify import read_nxos

        return read_nxos(device, folder / f"{device}.cfg")

    def read_running(self, text: str) -> SwitchFacts:
        from gpufabric.nos.nxos.verify import nxos_facts

        return nxos_facts("", text, "running-config")

    def load_balancing(self, ctx: DeviceContext) -> LoadBalancing:
        """On a plane that carries RoCE, `ip load-sharing address source-destination port source-destination`
        gives the ECMP hash the addresses and the L4 ports (the UDP source port a queue pair gets above all).
        No adaptive routing: Cisco documents none for these releases that gpufabric can prove."""
        return LoadBalancing(hash_fields=NXOS_HASH if ctx.qos is not None else ())

    def lossless_buffers(self, ctx: DeviceContext) -> LosslessBuffers:
        """The ingress queuing policy's `pause buffer-size ... pause-threshold ... resume-threshold ...` for
        the lossless class."""
        want, q = ctx.lossless_buffer, ctx.qos
        if want is None or q is None:
            return LosslessBuffers()
        return LosslessBuffers(
            pause_buffer=(q.roce_priority, want.buffer_size, want.pause_threshold, want.resume_threshold)
        )

    def free_text_problem(self, value: str) -> str | None:
        return free_text(value)

    def read_lossless(self, conn: Any, ports: list[str]) -> dict[str, PortCounters]:
        from gpufabric.nos.nxos.telemetry import read_lossless

        return read_lossless(conn, ports)

    def read_optics(self, conn: Any, ports: list[str]) -> dict[str, Optics]:
        from gpufabric.nos.nxos.telemetry import read_optics

        return read_optics(conn, ports)

    def disruptions(self, diff: str) -> tuple[Disruption, ...]:
        """The rollback patch from the running configuration to the candidate."""
        from gpufabric.nos.nxos.disruption import disruptions

        return disruptions(diff)

    # -- reboots and upgrades (docs/upgrade.md) ---------------------------------------------------------------

    def image_fallback(self) -> str:
        return (
            "`install all` checks the image first (`show install all impact`) and reboots nothing when it is not "
            "bootable; the previous image stays on bootflash:, and gpufabric sets `boot nxos bootflash:<previous>` "
            "back and reloads when the switch comes back on another release; a switch that does not come back at "
            "all stops at the loader> prompt of its console"
        )

    # -- drain and maintenance ----------------------------------------------------------

    def drain_steps(self, spec: DrainSpec) -> DrainSteps:
        from gpufabric.nos.nxos.drain import steps

        return steps(spec)

    def keep_drain(self, candidate: str, spec: DrainSpec) -> str:
        """GIR's maintenance-mode profile isolates BGP with configuration (`isolate` under `router bgp`), which
        a configuration replace to the plan would undo: the candidate of a drained switch keeps the line
        (gpufabric.nos.nxos.drain.keep)."""
        from gpufabric.nos.nxos.drain import keep

        return keep(candidate, spec)

    def ztp(self, device: str, files: Mapping[str, str], base_url: str) -> ZtpForm:
        from gpufabric.nos.nxos.ztp import ztp_form

        return ztp_form(device, files, base_url, self.title)

    def read_buffers(self, conn: Any, ports: list[str], queues: list[str]) -> dict[str, PortBuffers] | None:
        from gpufabric.nos.nxos.telemetry import read_buffers

        return read_buffers(conn, ports, queues)


# What `read_running` returns, the facts validate compares on a running switch:
# `show running-config`: the same reader as the rendered file's.
RUNNING_FACTS = QOS_FACTS | ROUTING_FACTS

PLATFORM = Nxos(
    PlatformFacts(
        running_facts=RUNNING_FACTS,
        name="nxos",
        title="Cisco NX-OS (Nexus 9000)",
        releases=("10.3", "10.4", "10.5"),
        default_release="10.4",
        mgmt_port="mgmt0",
        mgmt_vrf="management",
        max_mtu=9216,
        hash_algorithm="sha256",
        hash_prefix="$5$",
        numbered_only=True,
        mlag=True,
        outputs=((".cfg", "config.j2"),),
        candidate_suffix=".cfg",
        napalm_driver="nxos",
        containerlab_kind="cisco_n9kv",
        containerlab_image="vrnetlab/cisco_n9kv:10.4.2",
        eth_numbering=True,
        driver_class="gpufabric.nos.nxos.driver:GpufabricNXOSDriver",
        napalm_name="gpufabric_nxos",  # napalm_gpufabric_nxos: NAPALM's "nxos" is not this driver
        confirm_timeout_range=COMMIT_TIMEOUT_RANGE,
        confirm_timer=True,  # configuration replace with a commit timeout
        ecn_unit_bytes=1000,
        rank=2,
        bfd_interval_range=(50, 999),  # bfd interval / min_rx
        bfd_multiplier_range=(1, 50),
        password_login=True,  # NX-API
        templates_dir="nxos",
        gnmi_port=9339,  # feature grpc (releases before 10.x: 50051)
        docs="Cisco Nexus 9000 NX-OS configuration guides (QoS, interfaces, unicast routing, security)",
        mlag_l3_vlan=3967,  # NX-OS keeps VLANs 3968-4094 for itself
    )
)
