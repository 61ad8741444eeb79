"""Linux switches routed by FRR: the lab's platform, and the routing part of the Linux-based network OSes."""

from __future__ import annotations

from gpufabric.platforms.spec import PlatformSpec, lazy, linux_port

# Every reference below is imported on first use: checking an intent loads this file only.
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
    reader=lazy("gpufabric.nos.frr.verify", "read_frr"),
    running_reader=lazy("gpufabric.nos.frr.verify", "running_facts"),
    confirm_timer=True,  # the project's driver arms a revert timer on the switch
    ecn_unit_bytes=1,
    rank=3,
    linux_multipath_hash=True,
    assemble_candidate=lazy("gpufabric.nos.frr.files", "assemble_candidate"),
    lossless_qos=False,  # Linux has no PFC, ECN queue or scheduler to configure: the lab shows classification only
    templates_dir="frr",
    docs="FRR user guide (bgpd, zebra, frr-reload.py); nftables wiki",
)
