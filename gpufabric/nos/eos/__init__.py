"""Arista EOS."""

from __future__ import annotations

from gpufabric.platforms.spec import (
    PlatformSpec,
    VendorJudge,
    file_reader,
    lossless_reader,
    optics_reader,
    running_reader,
)

# An OSFP or QSFP-DD cage has 8 electrical lanes; EOS names a split port after its first lane.
CAGE_LANES = 8


def port_name(cage: int, lane: int, split: int) -> str:
    return f"Ethernet{cage}/{lane * (CAGE_LANES // split) + 1}"


def breakout_speed(speed_gbps: int, split: int) -> str:
    """The `speed` of a port on a split cage: its rate and the lanes it takes (`100g-2` on a 4-way 400G cage)."""
    return f"{speed_gbps}g-{CAGE_LANES // split}"


PLATFORM = PlatformSpec(
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
    port_name=port_name,
    reader=file_reader("gpufabric.nos.eos.verify", "read_eos", ".cfg"),
    running_reader=running_reader("gpufabric.nos.eos.verify", "eos_facts"),
    lossless_reader=lossless_reader("gpufabric.nos.eos.telemetry", "read_lossless"),
    optics_reader=optics_reader("gpufabric.nos.eos.telemetry", "read_optics"),
    driver_class="gpufabric.nos.eos.driver:GpufabricEOSDriver",
    confirm_timer=True,
    ecn_unit_bytes=1000,
    rank=1,
    ingress_headroom=True,  # platform trident mmu queue profile ROCE / ingress headroom <bytes>
    adaptive_routing=True,  # dynamic load balancing: `ip hardware fib load-balance distribution dynamic`
    password_login=True,  # eAPI
    bfd_interval_range=(50, 60_000),  # router bfd: interval / min-rx
    bfd_multiplier_range=(3, 50),
    templates_dir="eos",
    filters=(("eos_speed", breakout_speed),),
    gnmi_port=6030,  # management api gnmi
    docs="Arista EOS User Manual; AVD eos_cli_config_gen (pyavd) for the configuration syntax",
    mlag_l3_vlan=4093,  # AVD's default MLAG L3 peering VLAN
    judge=VendorJudge("Arista's AVD eos_cli_config_gen", "pyavd", "pyavd>=5,<7", "gpufabric.nos.eos.judge"),
)
