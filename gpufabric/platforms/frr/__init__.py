"""Linux switches routed by FRR: the lab's platform, and the control plane of SONiC and Cumulus."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gpufabric.platforms.spec import PlatformSpec, linux_port
from gpufabric.verify.facts import SwitchFacts


def _read(name: str, folder: Path) -> SwitchFacts:
    from gpufabric.verify.read_frr import read_frr

    return read_frr(name, folder)


def _running(text: str) -> SwitchFacts:
    """QoS classification on a Linux switch lives in the nftables part of the running candidate."""
    from gpufabric.drivers.frr_files import split_candidate
    from gpufabric.verify.read_frr import nft_facts

    facts = SwitchFacts("", "frr", ["running-config"])
    nft_facts(facts, split_candidate(text)[1] or "", "running-config")
    return facts


def _candidate(name: str, files: Mapping[str, str]) -> str:
    """The driver loads FRR's configuration with the nftables, system and interfaces files joined to it."""
    from gpufabric.drivers.frr_files import join_candidate

    return join_candidate(
        files[f"{name}.frr.conf"],
        files.get(f"{name}.nft"),
        files.get(f"{name}.system.yaml"),
        files.get(f"{name}.interfaces"),
    )


PLATFORM = PlatformSpec(
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
    port_name=linux_port,
    reader=_read,
    running_reader=_running,
    confirm_timer=True,  # the project's driver arms a revert timer on the switch
    ecn_unit_bytes=1,
    rank=3,
    assemble_candidate=_candidate,
    lossless_qos=False,  # Linux has no PFC, ECN queue or scheduler to configure: the lab shows classification only
    templates_package=__name__,
    docs="FRR user guide (bgpd, zebra, frr-reload.py); nftables wiki",
)
