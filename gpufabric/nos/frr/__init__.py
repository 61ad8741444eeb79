"""Linux switches routed by FRR: the lab's platform, and the routing part of the Linux-based network OSes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gpufabric.platforms.disruption import Disruption
from gpufabric.platforms.spec import (
    QOS_FACTS,
    ROUTING_FACTS,
    Bootstrap,
    LoadBalancing,
    Platform,
    PlatformFacts,
    ZtpForm,
)

if TYPE_CHECKING:
    from gpufabric.config.context import DeviceContext
    from gpufabric.verify.facts import SwitchFacts


# Every reader below is imported on first use: checking an intent loads this file only.
class Frr(Platform):
    def candidate(self, device: str, files: Mapping[str, str]) -> str:
        """frr.conf, nftables, the system file and the interfaces joined into the one text the driver loads."""
        from gpufabric.nos.frr.files import assemble_candidate

        return assemble_candidate(device, files)

    def carried_planes_problem(self) -> str | None:
        return None  # VRF devices and 802.1Q subinterfaces (ifupdown2), `router bgp ASN vrf NAME` (docs/configs.md)

    def read_files(self, device: str, folder: Path) -> SwitchFacts:
        from gpufabric.nos.frr.verify import read_frr

        return read_frr(device, folder)

    def read_running(self, text: str) -> SwitchFacts:
        from gpufabric.nos.frr.verify import running_facts

        return running_facts(text)

    def load_balancing(self, ctx: DeviceContext) -> LoadBalancing:
        """The Linux kernel forwards, its ECMP hash set by sysctl: net.ipv4.fib_multipath_hash_policy=1 (the
        L4 five-tuple) in the host settings."""
        return LoadBalancing(multipath_hash=1)

    def lossless_qos(self) -> bool:
        return False  # Linux has no PFC, ECN queue or scheduler to configure: the lab shows classification only

    def disruptions(self, diff: str) -> tuple[Disruption, ...]:
        """frr-reload's diff, the nftables file (replaced atomically: hitless) and the host settings."""
        from gpufabric.nos.frr.disruption import disruptions

        return disruptions(diff)

    # -- reboots and upgrades (docs/upgrade.md) ---------------------------------------------------------------

    def reboot_modes(self) -> tuple[str, ...]:
        """FRR's daemons restarted: what the lab calls a switch's reboot (gpufabric/nos/frr/restart.py)."""
        return ("daemons",)

    def installs_images(self) -> bool:
        return False

    def image_fallback(self) -> str:
        return "FRR comes from the host's packages: gpufabric installs no FRR image and keeps no previous one"

    def ztp(self, device: str, files: Mapping[str, str], base_url: str) -> ZtpForm:
        from gpufabric.nos.frr.ztp import ztp_form

        return ztp_form(device, files, base_url)

    def console_bootstrap(self, device: str, files: Mapping[str, str], bootstrap: Bootstrap) -> dict[str, str]:
        from gpufabric.nos.frr.bootstrap import script

        text = script(device, files[f"{device}.system.yaml"], bootstrap, files.get(f"{device}.interfaces", ""))
        return {f"{device}.bootstrap.sh": text}


# What `read_running` returns, the facts validate compares on a running switch:
# vtysh's running configuration, the nftables ruleset and the kernel's ECMP hash policy.
RUNNING_FACTS = QOS_FACTS | ROUTING_FACTS | {"max_med"}

PLATFORM = Frr(
    PlatformFacts(
        running_facts=RUNNING_FACTS,
        bgp_max_med=True,  # FRR's `bgp max-med on-startup`, proven by FRR's own parser (vtysh -C)
        name="frr",
        title="Linux + FRR",
        releases=("8.4", "9.1", "10.2"),
        default_release="8.4",
        mgmt_port="eth0",
        mgmt_vrf=None,
        max_mtu=9216,
        hash_algorithm="sha512",
        hash_prefix="$6$",
        hash_rounds=100_000,  # glibc/libxcrypt crypt(3) takes $6$rounds=N$: 20x the default's cost to guess
        numbered_only=False,
        mlag=False,
        outputs=(
            (".frr.conf", "frr.conf.j2"),
            (".interfaces", "interfaces.j2"),
            (".nft", "nftables.j2"),
            (".system.yaml", "system.yaml.j2"),
        ),
        candidate_suffix=".frr.conf",
        napalm_driver="frr",
        containerlab_kind="linux",
        containerlab_image="frrouting/frr:10.2.1",
        eth_numbering=False,
        confirm_timer=True,  # the project's driver arms a revert timer on the switch
        ecn_unit_bytes=1,
        rank=3,
        templates_dir="frr",
        docs="FRR user guide (bgpd, zebra, frr-reload.py); nftables wiki",
    )
)
