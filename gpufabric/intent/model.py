"""The intent schema: what a user writes in inventory/fabric.yml.

Only structure and single-field limits live here; rules that relate several
fields (pools large enough, radix can carry the design, ...) are in rules.py and
in the planner's sizing, so each message can name every field involved.
"""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from gpufabric.intent.converged import CarriedName, CarriedPlane
from gpufabric.intent.storage import FileSystem, StorageDemand
from gpufabric.intent.types import (
    DATA_PLANES,
    NAME_PATTERN,
    PREFIX_PATTERN,
    Address,
    Asn,
    AsnRange,
    DomainName,
    HostName,
    InterfaceName,
    LabelValue,
    ModelName,
    Network,
    PlaneName,
    Platform,
    RackName,
    Ratio,
    SecretRef,
    Serial,
    Speed,
    SwitchName,
    Text,
    TimeZone,
    UserName,
    whole_number,
)


class Model(BaseModel):
    """Base of every intent section: unknown fields are errors, values are immutable, and types are
    strict: `count: 4.0`, `count: "4"` or `lossless: 1` are refused, not quietly converted."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class FabricInfo(Model):
    """Identity of the cluster."""

    name: str = Field(description="Short name of the cluster; used in file names and labels.", pattern=NAME_PATTERN)
    description: Text = Field("", description="Free text shown in reports and drawings (printable, one line).")


class NicSet(Model):
    """A server's NICs on one plane."""

    speed: Speed = Field(description="Port speed of each NIC, e.g. 400G.")
    interfaces: list[InterfaceName] = Field(
        min_length=1,
        max_length=64,
        description="Linux interface names, in rail order: the first serves rail 1 (or the first entry of `rails`). "
        "At most 16 rails: 16 interfaces, or on a compute plane built as several planes 16 per plane.",
    )
    rails: list[int] | None = Field(
        None,
        description="Rail served by each interface (1-based), when it differs from the interface order.",
    )
    bond: InterfaceName = Field(
        "bond0",
        description="Bond interface name, used only when the plane's `host_links` is `lacp`.",
    )
    native: bool = Field(
        True,
        description="Whether these NICs carry the plane's own traffic (untagged, with an address of "
        "`addressing.hosts`). `false` on a converged plane (`carries`) for hosts that join only carried planes, "
        "such as storage servers on a business fabric: their ports then have no untagged address at all.",
    )
    model: Literal["ConnectX-7", "ConnectX-8", "ConnectX-9", "BlueField-3"] | None = Field(
        None,
        description="The NICs' model, where their settings depend on it: on a Spectrum-X compute plane "
        "(`spectrum_x`) the SuperNICs (ConnectX-8, ConnectX-9, BlueField-3) are configured for its adaptive "
        "routing and congestion control. Omitted: unknown, and no NIC-side setting is rendered.",
    )


class Host(Model):
    """One server of a group, by name, with where it stands."""

    name: HostName = Field(description="The server's host name.")
    rack: RackName | None = Field(None, description="The rack it stands in: a name under `site.racks`.")
    position: int | None = Field(None, ge=1, le=60, description="Its lowest rack unit (1 is the bottom), with `rack`.")
    serial: Serial | None = Field(None, description="Its serial number, as the source of truth keeps it.")


class Bmc(Model):
    """How the group's BMCs are read: DMTF Redfish at each server's OOB address, with `credentials.bmc`.

    The address is the one the plan gives the server's `oob` port; `gpufabric telemetry bmc` reads them, and
    `telemetry serve` beside the switches."""

    scheme: Literal["https", "http"] = Field(
        "https",
        description="`https`: the BMC's certificate is verified (against `ca_file`, else the system's CAs). "
        "`http` is for a lab only: the login would cross in clear, so the commands refuse it unless given "
        "`--plain-http`.",
    )
    port: int = Field(443, ge=1, le=65535, description="TCP port of the BMC's Redfish service.")
    ca_file: Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/-]{1,250}$")] | None = Field(
        None,
        description="Absolute path of the CA bundle the BMCs' certificates are checked against; omitted: the system's.",
    )


class ServerGroup(Model):
    """A set of identical servers (GPU nodes, storage servers, ...): a count and a naming pattern, or a
    list of hosts."""

    name: str = Field(description="Group name; becomes an inventory group.", pattern=NAME_PATTERN)
    kind: Literal["gpu", "storage", "cpu"] = Field("gpu", description="What the servers are for.")
    count: int = Field(
        0,  # not written and no `hosts`: the rules say what is missing
        ge=1,
        le=65536,
        description="Number of servers installed. With `hosts` it may be left out: it is then their number.",
    )
    build_out: int | None = Field(
        None,
        ge=1,
        le=65536,
        description="Servers the group will hold when fully built. Spines, port positions, addresses, ASNs "
        "and management ports are planned for this many, so growing `count` up to it only adds switches, "
        "cables and configuration lines. Default: `count`.",
    )
    naming: str = Field(
        "",
        description="Name pattern with an `{index}` field in Python format syntax, e.g. `gpu{index:03d}`. "
        "Required unless `hosts` names the servers.",
    )
    hosts: list[Host] | None = Field(
        None,
        min_length=1,
        max_length=65536,
        description="The servers installed, by name, in the order they take leaf ports (instead of `count` and "
        "`naming`). With `build_out`, the servers still to come are planned without names until listed.",
    )
    start_index: int = Field(1, ge=0, le=1_000_000, description="Index of the first server in `naming`.")
    gpus: int = Field(0, ge=0, le=16, description="GPUs per server.")
    gpu_model: LabelValue = Field("", description="GPU model, for reports and labels (e.g. H100-SXM5).")
    nics: dict[PlaneName, NicSet] = Field(
        description="NICs per plane. `oob` is the BMC / management port. A plane not listed is not attached.",
    )
    nvlink_domain: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="Servers per NVLink domain (e.g. 18 for an NVL72 rack of 4-GPU trays): consecutive servers "
        "of the group, in index order, share one. Feeds Slurm's block topology and the Kubernetes accelerator label. "
        "Only on a group of GPU servers (`kind: gpu`, `gpus` above 0).",
    )
    bmc: Bmc | None = Field(
        None,
        description="Read the servers' BMCs over Redfish (power, thermal, PSUs, fans, health) at their OOB "
        "address; needs an `oob` NIC, `planes.oob` and `credentials.bmc`. Omitted: the BMCs are not read.",
    )

    @model_validator(mode="before")
    @classmethod
    def _count_of_hosts(cls, data: Any) -> Any:
        if isinstance(data, dict) and "count" not in data and isinstance(data.get("hosts"), list):
            return {**data, "count": len(data["hosts"])}
        return data

    def server_name(self, i: int) -> str:
        """The name of the group's `i`-th server (0-based, up to the build-out): listed, or made by `naming`;
        a server past the host list is not installed, and is planned under a name of its place."""
        if self.hosts is not None:
            return self.hosts[i].name if i < len(self.hosts) else f"{self.name}-unlisted-{i + 1}"
        return self.naming.format(index=self.start_index + i)


class SwitchRole(Model):
    """The switch model used for one role of a plane."""

    platform: Platform = Field(description="Network OS: the name of a registered platform (the schema lists them).")
    model: ModelName = Field(description="Hardware model, for the bill of material (e.g. SN5600, 7060X6-64PE).")
    ports: int = Field(ge=1, le=512, description="Physical front-panel ports (the radix before breakout).")
    port_speed: Speed = Field(description="Speed of one physical port, e.g. 800G.")
    downlink_speed: Speed | None = Field(
        None,
        description="Speed of a downlink; below `port_speed` it means a breakout (800G ports at 400G = 2x400G).",
    )
    uplink_speed: Speed | None = Field(
        None, description="Speed of an uplink; below `port_speed` it means a breakout. Default: `port_speed`."
    )
    count: int | None = Field(
        None, ge=1, le=100_000, description="Fixed number of switches in this role; computed when omitted."
    )
    uplinks: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="Uplinks per switch; computed from the oversubscription target when omitted.",
    )


class SwitchRoles(Model):
    """Switch models per role. Which roles a plane needs depends on its tiers."""

    leaf: SwitchRole | None = Field(None, description="Leaves: host-facing switches (tier 1).")
    spine: SwitchRole | None = Field(None, description="Spines (tier 2). On the OOB plane: aggregation switches.")
    superspine: SwitchRole | None = Field(
        None,
        description="Superspines (tier 3), only with `tiers: 3`. On the OOB plane: its core, joining groups of "
        "spines (`spine_group`).",
    )
    border: SwitchRole | None = Field(None, description="Border leaves toward the edge (business plane only).")
    mgmt: SwitchRole | None = Field(None, description="Management switches (OOB plane only).")


class Bfd(Model):
    """BFD (RFC 5880/5881) on the plane's switch-to-switch BGP sessions, which find a silent link in ms.

    A link that drops everything while staying up (a stuck optic, a wedged ASIC queue) is found within
    `interval` x `multiplier` ms instead of the BGP hold time."""

    enabled: bool = Field(
        False,
        description="Run BFD on every fabric session and tear BGP down when it fails. Off by default, so a "
        "fabric without it renders as before; edge sessions never get it (the edge router is not ours).",
    )
    interval: int = Field(
        300,
        ge=10,
        le=60_000,
        description="Transmit and minimum receive interval in milliseconds. Each platform takes its own range "
        "(docs/configs.md); a value a targeted platform refuses is refused here.",
    )
    multiplier: int = Field(
        3,
        ge=1,
        le=255,
        description="Missed packets before the session is declared down; detection takes interval x multiplier.",
    )


class Routing(Model):
    """The eBGP underlay (RFC 7938)."""

    protocol: Literal["ebgp"] = Field("ebgp", description="Underlay protocol. Only eBGP is supported.")
    addressing: Literal["unnumbered", "p2p31"] = Field(
        "unnumbered",
        description="`unnumbered` (RFC 5549 over IPv6 link-local) or `p2p31` (a /31 per fabric link).",
    )
    asn_pool: AsnRange = Field(description="Private ASNs for this plane's switches, e.g. 4200000000-4200000999.")
    ecmp: int = Field(64, ge=1, le=512, description="Maximum equal-cost paths (`maximum-paths`).")
    bfd: Bfd = Field(default_factory=Bfd, description="BFD on the fabric sessions.")
    keepalive: int | None = Field(
        None,
        ge=1,
        le=3600,
        description="BGP keepalive interval in seconds, with `hold`. Default: the platform's own (FRR's "
        "`datacenter` profile and Cumulus Linux 3 s, EOS and NX-OS 60 s), and nothing is rendered.",
    )
    hold: int | None = Field(
        None,
        ge=3,
        le=3600,
        description="BGP hold time in seconds, with `keepalive`, and above it (RFC 4271 suggests three "
        "keepalives; eBGP fabric guides use 3/9). Default: the platform's own (9 s on FRR and Cumulus, 180 s "
        "on EOS and NX-OS). 0 (no hold timer) is not offered: a fabric session must end when its peer falls "
        "silent.",
    )
    max_med_on_startup: int | None = Field(
        None,
        ge=5,
        le=86400,
        description="Seconds a switch whose BGP has just started advertises its routes with the highest MED "
        "(`bgp max-med on-startup`), so a rebooted switch attracts no traffic until its routes have settled; "
        "its peers' multipath leaves it out of ECMP meanwhile. Only on platforms whose vendor model proves "
        "the line (FRR, SONiC): refused on a plane with others. Default: none, and nothing is rendered.",
    )


class Addressing(Model):
    """Address pools of a data plane."""

    loopbacks: Network = Field(description="One /32 per switch, taken in plan order.")
    p2p: Network | None = Field(None, description="A /31 per fabric link; required with `addressing: p2p31`.")
    hosts: Network = Field(
        description="Host-facing addresses: a /31 per host port (`routed`) or a subnet per leaf pair (`lacp`).",
    )


class EdgeRouter(Model):
    """A router outside the fabric that the border leaves peer with."""

    name: str = Field(description="Name of the edge router.", pattern=NAME_PATTERN)
    asn: Asn = Field(
        description="Its AS number (public or private; not 0, AS_TRANS 23456, 65535, 4294967295 or the "
        "documentation ranges 64496-64511 and 65536-65551)."
    )


class Border(Model):
    """The business plane's way in and out."""

    edge_routers: list[EdgeRouter] = Field(min_length=1, description="Every border leaf peers with every edge router.")
    edge_p2p: Network = Field(description="A /31 per border-to-edge link.")
    default_route: Literal["from-edge", "originate", "none"] = Field(
        "from-edge",
        description="`from-edge`: accept 0.0.0.0/0 from the edge; `originate`: borders originate it; `none`.",
    )
    management_prefixes: list[Network] = Field(
        default_factory=list, description="Prefixes allowed to reach switch management (SSH, gNMI, SNMP)."
    )
    api_prefixes: list[Network] = Field(
        default_factory=list, description="Prefixes allowed to reach cluster APIs on the business plane."
    )
    api_ports: list[int] = Field(
        default_factory=lambda: [443, 6443], description="TCP ports of the cluster APIs (HTTPS, Kubernetes)."
    )


class LinkLengths(Model):
    """How long a plane's cables run, in metres, by where their ends sit."""

    host: int = Field(
        ge=1,
        le=10_000,
        description="A server's NIC to its leaf port (in the rack, or across the row to the leaves' rack).",
    )
    leaf_spine: int = Field(ge=1, le=10_000, description="A leaf to a spine (to the spines' rack or row).")
    spine_superspine: int | None = Field(
        None, ge=1, le=10_000, description="A spine to a superspine (3-tier planes). Default: as `leaf_spine`."
    )
    edge: int | None = Field(
        None, ge=1, le=10_000, description="A border leaf to an edge router. Default: as `leaf_spine`."
    )


class Multiplane(Model):
    """The compute plane built as several independent planes (NVIDIA Spectrum-X multiplane, a dual compute
    fabric): each NIC port lands on one plane, and each plane has its own switches, addresses, ASNs and
    failure domains. The servers' interfaces are shared out over the planes; the address and ASN pools are
    cut into one equal share per plane (docs/planning.md#multi-plane-compute)."""

    planes: int = Field(
        ge=2,
        le=8,
        description="How many planes: 2 (dual plane) or 4 (quad plane) as Spectrum-X multiplane builds them, up "
        "to 8 (one per GPU NIC, as DeepSeek's multi-plane fat tree).",
    )
    ports: Literal["interleaved", "blocked"] = Field(
        "interleaved",
        description="How a server's compute interfaces map to planes. `interleaved`: consecutive interfaces go "
        "to planes 1..N in turn, so a SuperNIC whose N ports are listed together spreads over every plane "
        "(interface i is on plane i mod N + 1, rail i div N + 1); `blocked`: the first 1/N of the interfaces "
        "are plane 1, the next 1/N plane 2, and so on (rail = place within the block).",
    )


class SpectrumX(Model):
    """The SuperNICs' side of an NVIDIA Spectrum-X compute plane: adaptive routing (out-of-order RoCE placement,
    adaptive retransmission) and Spectrum-X congestion control, as NVIDIA's NIC Configuration Operator applies
    them from a Spectrum-X profile (docs/kubernetes.md, docs/configs.md)."""

    profile: str = Field(
        pattern=r"^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$",
        description="The Spectrum-X profile: the name of the ConfigMap holding NVIDIA's profile for the reference "
        "architecture release (the NicConfigurationTemplate's `spectrumXOptimized.version`), e.g. `spectrum-x-ra2-3`.",
    )
    platform: str = Field(
        pattern=r"^[a-z0-9]([a-z0-9_-]{0,30}[a-z0-9])?$",
        description="The server platform the profile's recipe is chosen by (`spectrumXOptimized.platformType`, "
        "e.g. `gb300`).",
    )


class DataPlane(Model):
    """A routed plane: compute (RoCE), storage or business/frontend."""

    transport: Literal["ethernet"] = Field(
        "ethernet", description="`ethernet` (the default; compute may say `infiniband`, see InfinibandPlane)."
    )
    topology: Literal["rail-optimized", "clos"] = Field(
        description="`rail-optimized`: NIC r of every node in a scalable unit lands on that unit's leaf r; "
        "`clos`: servers fill racks, NIC i on the rack's leaf i."
    )
    tiers: Annotated[Literal[2, 3], BeforeValidator(whole_number)] = Field(
        2, description="2 (leaf-spine) or 3 (leaf-spine-superspine in pods)."
    )
    prefix: str = Field(pattern=PREFIX_PATTERN, description="Switch name prefix, e.g. `cmp`.")
    unit_nodes: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="Servers per scalable unit (rail-optimized) or rack (clos); leaves are sized for a full unit. "
        "Default: as many as a leaf's downlink ports allow at the oversubscription target.",
    )
    pod_units: int | None = Field(
        None, ge=1, le=4096, description="Units per pod with `tiers: 3`. Default: as many as the spines can carry."
    )
    switches: SwitchRoles = Field(description="Switch models per role.")
    oversubscription: Ratio = Field(
        1.0, description="Target downlink:uplink bandwidth per tier; `1:1` is non-blocking."
    )
    mtu: int = Field(
        9216, ge=1280, le=9216, description="Switch port MTU; capped at each platform's maximum (EOS 9214)."
    )
    host_mtu: int = Field(9000, ge=1280, le=9216, description="MTU of the servers' NICs on this plane.")
    host_links: Literal["routed", "lacp"] = Field(
        "routed",
        description="`routed`: each host port is a /31; `lacp`: a host bonds its two NICs to a leaf pair (MLAG/vPC).",
    )
    routing: Routing = Field(description="The eBGP underlay.")
    addressing: Addressing = Field(description="Address pools.")
    load_balancing: Literal["ecmp", "adaptive"] = Field(
        "ecmp",
        description="How a switch spreads flows over its equal-cost uplinks. `ecmp`: a per-flow hash (on a plane "
        "that carries RoCE over the L4 ports too, so RoCE's varied UDP source ports spread; on EOS Strata and SAND "
        "switches over the queue pair); `adaptive`: the ASIC picks "
        "the least loaded uplink per packet or flowlet (Cumulus adaptive routing, EOS dynamic load balancing), "
        "which reorders packets: use it only where the NICs tolerate out-of-order RoCE. "
        "Refused on platforms without it; `ecmp` is refused on an EOS compute plane of models of neither family "
        "(no RoCE hash gpufabric can prove there) and of SAND models before EOS 4.33.",
    )
    spectrum_x: SpectrumX | None = Field(
        None,
        description="Compute plane of NVIDIA Spectrum switches with `load_balancing: adaptive` and SuperNICs "
        "(`nics.compute.model`): the SuperNICs are configured for it too, through the NIC Configuration Operator "
        "(`gpufabric export k8s-network`) and the `supernic` host role where no Kubernetes runs.",
    )
    cable_length: Literal["5m", "30m", "100m"] = Field(
        "5m",
        description="Length class of the plane's longest lossless link (5m: within a rack, 30m: a row, 100m: "
        "a hall). PFC headroom must absorb what is in flight on the cable while a pause takes effect, so it "
        "grows with length and speed: Cumulus (`qos pfc ... cable-length`) and SONiC's dynamic buffer model "
        "(`CABLE_LENGTH`) size it from this, the port speed and the MTU. A class shorter than the cable "
        "leaves too little headroom, and lossless traffic is dropped.",
    )
    carries_roce: bool = Field(False, description="Whether RoCE traffic crosses this plane (needs a lossless `qos`).")
    qos: str | None = Field(None, description="Name of a profile under `qos_profiles`.")
    lengths: LinkLengths | None = Field(
        None,
        description="Cable lengths by position. With them the bill of material and the cabling plan pick each "
        "cable's medium by reach and speed (DAC, active copper, AOC, multimode or single-mode fibre with "
        "transceivers); without them cables are counted by speed only. On a RoCE plane the longest must fit "
        "`cable_length`, which the PFC headroom is sized for.",
    )
    border: Border | None = Field(None, description="Edge connectivity; business plane only.")
    multiplane: Multiplane | None = Field(
        None,
        description="Compute plane only: build it as several independent planes, each NIC port on one. "
        "Omitted: one plane.",
    )
    carries: dict[CarriedName, CarriedPlane] | None = Field(
        None,
        description="Converged north-south (storage or business plane): logical planes these switches carry "
        "beside the plane's own traffic, each in its own VRF and 802.1Q tag, with its own pools and traffic "
        "class. The plane's own traffic keeps the default VRF, the untagged ports and the border.",
    )


class StoragePlane(DataPlane):
    """The storage fabric: a routed plane, with its clients' demand and the file systems they mount.

    docs/storage.md: the demand's sizing, the checkpoint's time, the clients' files."""

    demand: StorageDemand | None = Field(
        None,
        description="The data-loading rate per GPU and the checkpoint to write: the leaf uplinks are sized to carry "
        "both, and `plan` reports the checkpoint's write time and where it is limited. Omitted: sized by "
        "`oversubscription` alone.",
    )
    file_systems: list[FileSystem] = Field(
        default_factory=list,
        max_length=16,
        description="File systems the GPU servers mount over this plane, with their data and metadata servers "
        "apart (`gpufabric export storage`, the `storage_client` host role). Omitted: every server group of "
        "`kind: storage` counts as data.",
    )


def _pkey(value: Any) -> Any:
    """A PKey as written: a whole number, or its hexadecimal text ("0x0101", as OpenSM and smpquery show it)."""
    if isinstance(value, str) and value.lower().startswith("0x"):
        try:
            return int(value, 16)
        except ValueError:
            return value
    if isinstance(value, str) and len(value) > 1 and value.isdigit() and value.startswith("0"):
        # The schema's generic hint would be the decimal 101, but a PKey is usually written in hex.
        raise ValueError(
            f"{value!r} is ambiguous: a leading zero reads as octal in YAML 1.1 and PKeys are mostly written "
            f"in hexadecimal; write 0x{value.lstrip('0').zfill(4)} for hexadecimal or {int(value)} for decimal"
        )
    return whole_number(value)


# For editors (`gpufabric schema`): a number, or the hexadecimal text `_pkey` reads; the range is checked on load.
PKEY_JSON_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "integer", "minimum": 0x0001, "maximum": 0x7FFE},
        {"type": "string", "pattern": "^0[xX][0-9a-fA-F]{1,4}$"},
    ],
    "examples": ["0x0101"],
}


class IbPartition(Model):
    """A tenant's InfiniBand partition: every adapter port of its server groups' hosts is a full member."""

    name: str = Field(pattern=NAME_PATTERN, description="Partition name (OpenSM's partitions.conf).")
    pkey: Annotated[int, BeforeValidator(_pkey), WithJsonSchema(PKEY_JSON_SCHEMA)] = Field(
        ge=0x0001,
        le=0x7FFE,
        description="Partition key, 0x0001-0x7ffe (0x7fff is the default partition); written as a number or "
        "as hexadecimal text such as `0x0101`.",
    )
    groups: list[Annotated[str, Field(pattern=NAME_PATTERN)]] = Field(
        default_factory=list,
        description="The tenant: server groups attached to this plane whose hosts' adapters are full members. "
        "Hosts outside every partition are limited members of the default partition only, and so reach "
        "nobody but the subnet manager.",
    )
    sl: int = Field(0, ge=0, le=15, description="Service level of the partition's traffic (qos-policy.conf).")
    ipoib: bool = Field(True, description="Whether the partition carries an IPoIB broadcast group (MTU 4096).")
    pod_subnet: Network | None = Field(
        None,
        description="Addresses for pods' IPoIB interfaces in this partition: `gpufabric export k8s-network` "
        "writes an IPoIBNetwork and an nv-ipam IPPool for it, on the hosts whose IPoIB interface is in this "
        "partition. Without it the partition gets no Kubernetes network.",
    )


class IbIpoib(Model):
    """IP over InfiniBand on one adapter of every host of the plane."""

    subnet: Network = Field(description="Addresses for the hosts' IPoIB interfaces, one each, in plan order.")
    rail: int = Field(1, ge=1, le=16, description="The rail whose adapter carries the IPoIB interface.")
    mode: Literal["datagram", "connected"] = Field(
        "datagram", description="IPoIB mode: `datagram` (MTU 4092 on a 4096 fabric) or `connected` (up to 65520)."
    )
    netdev: InterfaceName = Field(
        "ib0",
        description="The IPoIB interface of that adapter on every host, as `ip link` shows it: the kernel's ib_ipoib "
        "names them ib0, ib1, ... unless udev renames them (e.g. ibp12s0). The partition's child is "
        "`<netdev>.<pkey>` (e.g. ib0.8101), which the Kubernetes IPoIB networks enslave.",
    )


class IbLinkLengths(Model):
    """How long an InfiniBand plane's cables run, in metres, by tier."""

    node_leaf: int = Field(ge=1, le=10_000, description="An adapter to its leaf port (in the rack or across the row).")
    leaf_spine: int = Field(ge=1, le=10_000, description="A leaf to a spine.")
    spine_core: int | None = Field(
        None, ge=1, le=10_000, description="A spine to a core switch (3 tiers). Default: as `leaf_spine`."
    )


class InfinibandPlane(Model):
    """An InfiniBand compute fabric, planned without IP or BGP (docs/infiniband.md).

    What it has instead: node names, ports, cables, partitions, service levels and the subnet manager.
    """

    transport: Literal["infiniband"] = Field(description="`infiniband`: this plane is an InfiniBand fabric.")
    topology: Literal["rail-optimized"] = Field(
        "rail-optimized",
        description="Adapter (rail) r of every node of a scalable unit lands on that unit's leaf r, node slot n on "
        "port n; leaves and spines form a non-blocking fat tree (NVIDIA's DGX SuperPOD layout).",
    )
    tiers: Annotated[Literal[2, 3] | None, BeforeValidator(whole_number)] = Field(
        None, description="2 (leaf-spine) or 3 (with a core tier). Default: the fewest that carry the design."
    )
    unit_nodes: int = Field(32, ge=1, le=128, description="Node slots per scalable unit (SU).")
    switch_model: Literal["QM9700", "QM8700"] = Field(
        "QM9700",
        description="`QM9700` (Quantum-2: 64 NDR ports, 128 as NDR200 split ports) or `QM8700` (Quantum: 40 HDR "
        "ports, 80 as HDR100). The adapters' rate follows the compute NICs' speed: 400G NDR, 200G NDR200 on a "
        "QM9700 and HDR on a QM8700, 100G HDR100.",
    )
    fabric_manager_ports: int = Field(
        0,
        ge=0,
        le=16,
        description="Ports of fabric-manager appliances (UFM, where the subnet manager runs), one per rail from "
        "rail 1 in the last node slot of the last SU (NVIDIA's DGX H100 SuperPOD uses 4). 0: the subnet manager "
        "runs on the first two compute hosts.",
    )
    fabric_manager_ports_per_host: int = Field(2, ge=1, le=16, description="Ports per fabric-manager appliance.")
    routing_engine: Literal["updn", "ftree", "minhop"] = Field(
        "updn",
        description="OpenSM's routing engine. `updn` (up/down with the top tier as roots) keeps a leaf's uplinks "
        "balanced on the SuperPOD layouts and after a cut; `ftree` does not there.",
    )
    partitions: list[IbPartition] = Field(default_factory=list, description="Tenants' partitions (PKeys).")
    sl2vl: list[int] | None = Field(
        None,
        min_length=16,
        max_length=16,
        description="Virtual lane per service level 0-15. Default: SL n on VL n mod 8.",
    )
    max_vls: int = Field(8, ge=1, le=15, description="Data virtual lanes in use.")
    mtu: Literal[4096] = Field(4096, description="InfiniBand MTU of every port and partition.")
    ipoib: IbIpoib | None = Field(None, description="IPoIB interfaces on the hosts; none unless given.")
    sharp: bool = Field(
        False,
        description="NVIDIA SHARP (reductions in the Quantum switches): `gpufabric ib configs` also writes the "
        "aggregation manager's sharp_am.cfg (trees rooted at the top tier, its port the subnet manager's) and "
        "opensm-sharp.conf, the option NVIDIA's OpenSM needs (`sharp_enabled 2`; the open-source OpenSM has no "
        "such option, so it stays out of opensm.conf).",
    )
    lengths: IbLinkLengths | None = Field(
        None,
        description="Cable lengths by tier. With them the bill of material and the cabling plan pick each cable "
        "by reach and rate (DAC, active copper, AOC, or multimode or single-mode fibre with a transceiver at each "
        "end, as for Ethernet at the same lane rate); without them cables are counted by rate only.",
    )


def _transport(value: Any) -> str:
    """Which kind of compute plane a mapping describes: Ethernet unless it says `transport: infiniband`."""
    raw = value.get("transport", "ethernet") if isinstance(value, dict) else getattr(value, "transport", "ethernet")
    return f"transport:{raw if isinstance(raw, str) else repr(raw)}"


# The union branch's tag is part of pydantic's error locations; intent/partial.py drops it.
ComputePlane = Annotated[
    Annotated[DataPlane, Tag("transport:ethernet")] | Annotated[InfinibandPlane, Tag("transport:infiniband")],
    Discriminator(_transport),
]


class Ztp(Model):
    """Zero-touch provisioning over the OOB plane (`gpufabric export ztp`, docs/ztp.md).

    An empty switch is known by the OOB switch port its management port is cabled to (DHCP option 82:
    the relay agent's circuit-id is that port's name, and its remote-id the OOB switch's name where the
    plane has more than one), or by a serial recorded here."""

    server: Address | None = Field(
        None,
        description="Address of the provisioning server on the OOB subnet: its HTTP server holds every switch's "
        "files, its DHCP server answers the relays. Default: the OOB gateway.",
    )
    port: int = Field(80, ge=1, le=65535, description="TCP port of the provisioning server's HTTP server.")
    interface: InterfaceName = Field(
        "eth0",
        description="The DHCP server's interface on the OOB plane (Kea's `interfaces-config`, dnsmasq's "
        "`interface=`): it answers there and nowhere else.",
    )
    serials: dict[SwitchName, Serial] = Field(
        default_factory=dict,
        description="Switch name -> the serial number it sends as its DHCP client identifier (option 61): a "
        "switch listed here is known by its serial as well as by its OOB port (needed for the OOB switches "
        "themselves, whose management ports no planned cable reaches).",
    )


class OobPlane(Model):
    """The out-of-band management plane: a flat switched network, no routing toward the data planes."""

    prefix: str = Field("oob", pattern=PREFIX_PATTERN, description="Switch name prefix.")
    switches: SwitchRoles = Field(
        description="`mgmt` switches, and `spine` when more than one mgmt switch is needed; `superspine` (the "
        "OOB core) when the mgmt switches are too many for one set of spines."
    )
    spine_group: int | None = Field(
        None,
        ge=1,
        le=64,
        description="With a `superspine` core: spines per aggregation group. Each mgmt switch spreads its uplinks "
        "over its group's spines only (its pod's pair, say), the groups are as many as the mgmt switches need, "
        "and every spine spreads its own `uplinks` over all core switches. Default: the mgmt switch's `uplinks`.",
    )
    subnet: Network = Field(description="The management subnet: every switch and server gets one address.")
    gateway: Address | None = Field(None, description="Management gateway. Default: the subnet's first address.")
    mtu: int = Field(1500, ge=1280, le=9216, description="MTU of the management network.")
    ztp: Ztp = Field(default_factory=Ztp, description="Zero-touch provisioning of the switches over this plane.")

    @property
    def gateway_address(self) -> IPv4Address:
        """The gateway as written, or the subnet's first address."""
        return self.gateway if self.gateway is not None else self.subnet.network_address + 1


class Planes(Model):
    """The four planes; a cluster may leave some out."""

    compute: ComputePlane | None = Field(
        None, description="The GPU-to-GPU fabric: RoCE (Ethernet), or InfiniBand with `transport: infiniband`."
    )
    storage: StoragePlane | None = Field(None, description="The storage fabric (NVMe-oF, parallel file systems).")
    business: DataPlane | None = Field(None, description="The frontend / in-band plane with the cluster's border.")
    oob: OobPlane | None = Field(None, description="Out-of-band management.")


class QosProfile(Model):
    """The lossless RoCEv2 contract that hosts and switches must agree on."""

    roce_dscp: int = Field(26, ge=0, le=63, description="DSCP of RoCE data.")
    roce_priority: int = Field(3, ge=0, le=7, description="Switch priority / traffic class of RoCE data.")
    lossless: bool = Field(True, description="PFC no-drop on `roce_priority`. Required on planes that carry RoCE.")
    cnp_dscp: int = Field(48, ge=0, le=63, description="DSCP of congestion notification packets.")
    cnp_priority: int = Field(6, ge=0, le=7, description="Priority of CNPs; scheduled strict on switches.")
    ecn_min_bytes: int = Field(150_000, ge=1, le=100_000_000, description="ECN marking starts at this queue depth.")
    ecn_max_bytes: int = Field(1_500_000, ge=1, le=100_000_000, description="ECN marking probability reaches max here.")
    ecn_probability: int = Field(100, ge=1, le=100, description="Maximum marking probability in percent.")
    pfc_watchdog: bool = Field(True, description="PFC watchdog for storm and deadlock protection.")
    roce_bandwidth_percent: int = Field(50, ge=1, le=99, description="ETS share guaranteed to the RoCE queue.")

    @property
    def host_tos(self) -> int:
        """ToS byte the host stamps: DSCP in the top six bits, ECT(0) in the bottom two."""
        return (self.roce_dscp << 2) | 0b10


class Credential(Model):
    """How automation logs in. Secrets are references only."""

    username: UserName = Field(description="Login name.")
    password: SecretRef | None = Field(None, description="`{env: NAME}` or `{vault: NAME}`.")
    ssh_key: SecretRef | None = Field(None, description="Private key, by reference: `{env: NAME}` or `{vault: NAME}`.")


class BmcLogin(Model):
    """How gpufabric logs in to the servers' BMCs (Redfish, HTTP basic authentication). By reference only."""

    username: UserName = Field(description="Login name (a read-only BMC account is enough).")
    password: SecretRef = Field(description="`{env: NAME}` or `{vault: NAME}`.")


class Credentials(Model):
    """Logins for switches and servers."""

    switches: Credential = Field(description="Switch logins.")
    hosts: Credential = Field(description="Server logins.")
    bmc: BmcLogin | None = Field(
        None, description="The servers' BMC login, for the groups with `bmc` (one account on every BMC)."
    )
    salt_key: SecretRef | None = Field(
        None,
        description="Key the password-hash salts are derived from (HMAC-SHA-256 of fabric and user), by "
        "reference: `{env: NAME}`. Keeps hashes stable across renders yet unpredictable; without it the "
        "salts follow from the fabric and user names, which anyone can read, and `plan` warns.",
    )


class Snmp(Model):
    """SNMPv2c read-only access."""

    community: SecretRef = Field(description="SNMPv2c read community, by reference.")
    location: Text = Field("", description="sysLocation (printable, one line).")


class Management(Model):
    """Services every switch is configured with."""

    ntp_servers: list[Address] = Field(default_factory=list, description="NTP servers (OOB reachable).")
    syslog_servers: list[Address] = Field(default_factory=list, description="Syslog collectors.")
    dns_servers: list[Address] = Field(default_factory=list, description="DNS resolvers.")
    domain: DomainName = Field("", description="DNS domain of the management network (RFC 1123).")
    timezone: TimeZone = Field(
        "Etc/UTC", description="Time zone of switches and servers: an IANA name such as `Etc/UTC` or `Europe/Paris`."
    )
    snmp: Snmp | None = Field(None, description="SNMP read access; omitted means off.")
    gnmi: bool = Field(False, description="Enable gNMI on platforms that have it.")


def _release_text(value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(
            f"write the release as quoted text, e.g. release: '{value}' (YAML reads 5.10 as the number 5.1)"
        )
    return value


class PlatformSettings(Model):
    """Settings of one network OS across the fabric."""

    release: Annotated[str, BeforeValidator(_release_text)] = Field(
        pattern=r"^[0-9]{1,3}(\.[0-9]{1,3}){1,2}$",
        description="OS release the rendered configuration follows, as quoted text (e.g. `'5.14'`); "
        "each platform supports the releases listed in docs/configs.md.",
    )


class Kubernetes(Model):
    """How pods reach the rails (`gpufabric export k8s-network`)."""

    rdma: Literal["host-device", "sriov", "shared"] = Field(
        "host-device",
        description="`host-device`: a pod takes a rail's NIC whole; `sriov`: a pod takes a virtual function of it; "
        "`shared`: pods share the rail NICs' RDMA devices (NVIDIA's RDMA shared device plugin) on the host's network, "
        "and on an InfiniBand plane every pod gets the node's HCAs besides its IPoIB interface.",
    )
    rdma_isolation: bool = Field(
        False,
        description="Chain the `rdma` CNI plugin after the rail network, which moves the NIC's RDMA device into the "
        "pod's network namespace (the hosts' RDMA subsystem must run in exclusive mode: `rdma system set netns "
        "exclusive`). For `host-device` and `sriov`; a shared device cannot be isolated.",
    )
    rdma_hca_max: int = Field(
        63,
        ge=1,
        le=1000,
        description="`shared`: how many pods on a node may hold one rail's (or the InfiniBand HCAs') RDMA "
        "resource at once (the shared device plugin's `rdmaHcaMax`).",
    )

    @model_validator(mode="after")
    def _isolation_needs_an_owned_device(self) -> Kubernetes:
        # The kernel's exclusive mode gives an RDMA device to one network namespace: a device the shared plugin
        # hands to many pods would be moved into the first and vanish from the others.
        if self.rdma_isolation and self.rdma == "shared":
            raise ValueError(
                "rdma_isolation moves a NIC's RDMA device into one pod's namespace, but `shared` gives it to many "
                "pods: use rdma: host-device or sriov with rdma_isolation, or leave rdma_isolation false"
            )
        return self


class SlurmAccess(Model):
    """How gpufabric reaches Slurm: its commands (`sinfo`, `squeue`, `scontrol`) on this machine.

    gpufabric runs them as any Slurm client of the cluster does."""

    conf: Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/-]{1,250}$")] | None = Field(
        None,
        description="Absolute path of the cluster's slurm.conf, given to the commands as `SLURM_CONF`; omitted: "
        "Slurm's own default (or configless lookup).",
    )


class KubernetesAccess(Model):
    """How gpufabric reaches a Kubernetes cluster: its API server, with a bearer token by reference."""

    api: Annotated[str, Field(pattern=r"^https://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?/?$")] = Field(
        description="The API server's address, `https://host[:port]` (plain HTTP is refused: the token would "
        "travel in clear)."
    )
    token: SecretRef | None = Field(
        None,
        description="Bearer token of a service account allowed to patch nodes, list pods and create "
        "pods/eviction, by reference: `{env: NAME}` only (read when a call is made; never shown or written).",
    )

    @field_validator("token")
    @classmethod
    def _token_from_env(cls, value: SecretRef | None) -> SecretRef | None:
        if value is not None and value.env is None:
            raise ValueError("the scheduler reads its token from an environment variable: write {env: NAME}")
        return value

    ca_file: Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/-]{1,250}$")] | None = Field(
        None,
        description="Absolute path of the CA bundle the API server's certificate is checked against; "
        "omitted: the system's.",
    )


class SchedulerSettings(Model):
    """The schedulers that drain a switch's servers before it changes (docs/scheduler.md).

    A server is drained when the switch is the only path of one of its NICs. Omitted: no scheduler is told."""

    slurm: SlurmAccess | None = Field(None, description="Drain the servers' nodes in Slurm (node name = server name).")
    kubernetes: KubernetesAccess | None = Field(
        None, description="Cordon the servers' nodes in Kubernetes and evict the pods holding the plan's RDMA rails."
    )
    job_wait: Annotated[int, Field(ge=0, le=604800)] = Field(
        3600,
        description="Seconds to wait for the jobs (and pods) on drained nodes to end before a change is refused "
        "(0: refuse at once if any runs); the command line's --job-wait overrides it.",
    )


class Rack(Model):
    """A rack of the hall: where it stands, for cable lengths."""

    name: RackName = Field(description="Rack name, as the source of truth and the labels write it.")
    row: int = Field(ge=1, le=1000, description="Row of racks it stands in (1-based).")
    column: int = Field(ge=1, le=1000, description="Its place along the row (1-based).")
    units: int = Field(42, ge=1, le=60, description="Its height in rack units.")


class Placement(Model):
    """Where a switch stands."""

    rack: RackName = Field(description="The rack: a name under `site.racks`.")
    position: int = Field(ge=1, le=60, description="Its lowest rack unit (1 is the bottom).")
    serial: Serial | None = Field(None, description="Its serial number, as the source of truth keeps it.")


class Distances(Model):
    """The distance model cable lengths are derived from (docs/source-of-truth.md), in millimetres.

    Within a rack a cable runs between the two units; between racks it rises from its unit to the
    overhead tray, runs along and across rows, and drops to the other unit. Every cable gets `slack`,
    and is rounded up to whole metres."""

    rack_width: int = Field(600, ge=100, le=5000, description="Distance between the centres of neighbouring racks.")
    row_pitch: int = Field(
        2400, ge=100, le=50_000, description="Distance between the centres of neighbouring rows (the aisle)."
    )
    tray: int = Field(500, ge=0, le=5000, description="Height of the overhead tray above the top of a rack.")
    slack: int = Field(2000, ge=0, le=50_000, description="Added to every cable: the service loops at both ends.")


class Site(Model):
    """Where the cluster stands: racks, switch positions, and the cable lengths that follow from them.
    Servers stand where their group's `hosts` say."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)] | None = Field(
        None, description="Site name in the source of truth. Default: the fabric's name."
    )
    racks: list[Rack] = Field(default_factory=list, max_length=100_000, description="The racks.")
    switches: dict[SwitchName, Placement] = Field(
        default_factory=dict, description="Switch name -> where it stands (and its serial)."
    )
    distances: Distances = Field(default_factory=Distances, description="The distance model.")
    cable_lengths: dict[
        Annotated[str, Field(pattern=r"^[a-z][a-z0-9]{0,7}-[0-9]{6}$")], Annotated[int, Field(ge=1, le=10_000)]
    ] = Field(
        default_factory=dict,
        description="Cable label -> its measured length in metres, where it differs from the positions' "
        "(what `gpufabric sot pull` found); a cable listed here keeps this length.",
    )


class Intent(Model):
    """The whole cluster: the single source of truth."""

    fabric: FabricInfo = Field(description="Identity of the cluster.")
    server_groups: list[ServerGroup] = Field(min_length=1, description="Servers, by group.")
    planes: Planes = Field(description="The networks.")
    qos_profiles: dict[Annotated[str, Field(pattern=NAME_PATTERN)], QosProfile] = Field(
        default_factory=dict, description="QoS contracts by name (lower-case letters, digits and '-')."
    )
    credentials: Credentials = Field(description="Logins, by reference.")
    management: Management = Field(default_factory=Management, description="Management services.")
    platforms: dict[Platform, PlatformSettings] = Field(
        default_factory=dict,
        description="Per network OS, the release its configuration follows; a platform not listed gets its "
        "default release (docs/configs.md).",
    )
    kubernetes: Kubernetes = Field(default_factory=Kubernetes, description="How Kubernetes pods reach the RDMA rails.")
    scheduler: SchedulerSettings | None = Field(
        None, description="The workload scheduler(s) to drain servers in before their only switch changes."
    )
    site: Site | None = Field(
        None,
        description="Racks and positions: cable lengths from positions, and what `gpufabric sot` writes and reads.",
    )

    def release(self, platform: str) -> str:
        """The pinned release of a platform, or its default."""
        from gpufabric.platforms import platform as spec

        pinned = self.platforms.get(platform)  # type: ignore[call-overload]
        return pinned.release if pinned is not None else spec(platform).facts.default_release

    def data_planes(self) -> list[tuple[PlaneName, DataPlane]]:
        """The routed Ethernet planes (an InfiniBand compute plane is not one)."""
        return [(n, p) for n in DATA_PLANES if isinstance(p := getattr(self.planes, n), DataPlane)]

    @property
    def infiniband(self) -> InfinibandPlane | None:
        """The compute plane when it is InfiniBand."""
        compute = self.planes.compute
        return compute if isinstance(compute, InfinibandPlane) else None

    def edge_routers(self) -> list[tuple[tuple[str | int, ...], EdgeRouter]]:
        """Every data plane's edge routers, plane by plane, each with its path in the intent (for messages)."""
        return [
            (("planes", name, "border", "edge_routers", i), edge)
            for name, plane in self.data_planes()
            for i, edge in enumerate(plane.border.edge_routers if plane.border else [])
        ]
