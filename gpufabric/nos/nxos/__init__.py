"""Cisco Nexus 9000 NX-OS."""

from __future__ import annotations

from gpufabric.platforms.spec import PlatformSpec, file_reader, lossless_reader, optics_reader, running_reader

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


PLATFORM = PlatformSpec(
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
    port_name=port_name,
    reader=file_reader("gpufabric.nos.nxos.verify", "read_nxos", ".cfg"),
    running_reader=running_reader("gpufabric.nos.nxos.verify", "nxos_facts"),
    lossless_reader=lossless_reader("gpufabric.nos.nxos.telemetry", "read_lossless"),
    optics_reader=optics_reader("gpufabric.nos.nxos.telemetry", "read_optics"),
    driver_class="gpufabric.nos.nxos.driver:GpufabricNXOSDriver",
    confirm_timeout_range=COMMIT_TIMEOUT_RANGE,
    confirm_timer=True,  # configuration replace with a commit timeout
    ecn_unit_bytes=1000,
    rank=2,
    pause_buffer=True,  # ingress queuing policy: pause buffer-size / pause-threshold / resume-threshold
    password_login=True,  # NX-API
    bfd_interval_range=(50, 999),  # bfd interval / min_rx
    bfd_multiplier_range=(1, 50),
    templates_dir="nxos",
    gnmi_port=9339,  # feature grpc (releases before 10.x: 50051)
    docs="Cisco Nexus 9000 NX-OS configuration guides (QoS, interfaces, unicast routing, security)",
    mlag_l3_vlan=3967,  # NX-OS keeps VLANs 3968-4094 for itself
    free_text=free_text,
)
