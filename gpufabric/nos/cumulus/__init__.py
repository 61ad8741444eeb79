"""NVIDIA Spectrum switches running Cumulus Linux 5 (NVUE)."""

from __future__ import annotations

from gpufabric.nos.cumulus.dialect import DEFAULT_RELEASE, RELEASES
from gpufabric.platforms.spec import PlatformSpec, VendorJudge, file_reader, lazy, linux_port, running_reader

PLATFORM = PlatformSpec(
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
    port_name=linux_port,
    reader=file_reader("gpufabric.nos.cumulus.verify", "read_nvue", ".yaml"),
    running_reader=running_reader("gpufabric.nos.cumulus.verify", "nvue_facts", tree_ok=True),
    confirm_timer=True,
    ecn_unit_bytes=1,
    builder=lazy("gpufabric.nos.cumulus.document", "build"),
    rank=0,
    adaptive_routing=True,
    bfd_interval_range=(50, 60_000),  # NVUE bfd min-tx-interval / min-rx-interval
    cable_length=True,
    adaptive_per_port=True,
    gnmi_port=9339,  # Cumulus Linux 5.x's gNMI server
    docs="Cumulus Linux 5 user guide and NVUE command reference; NVUE object model per release",
    mlag_l3_interface="peerlink.4094",  # NVIDIA's MLAG-with-routing peering, unnumbered
    judge=VendorJudge("NVIDIA's NVUE object model", "nvueschema", "nvueschema>=0.1", "gpufabric.nos.cumulus.judge"),
)
