"""Kubernetes RDMA networks from the plan: NVIDIA Network Operator objects, one network per rail.

Every plane that carries RoCE gets, per rail:
- an nv-ipam CIDRPool. The plan's host ports are routed /31s (leaf even, host odd), so each node
  has its own gateway on each rail: that is nv-ipam's CIDRPool (per-node prefix and gateway),
  not its IPPool (one flat subnet, one gateway). The pool pins every node to the /31 the plan
  gave its rail NIC (`staticAllocations`), so a pod on that NIC has the address the leaf routes.
- a network: HostDeviceNetwork (`kubernetes.rdma: host-device`, the default: the pod takes the
  rail's NIC whole) or SriovNetworkNodePolicy + SriovNetwork (`sriov`: one virtual function per
  rail NIC, because the plan gives each rail port exactly one host address).
- the NetworkAttachmentDefinition the operator derives from that network (exported too, for
  clusters that run Multus without the operator's network controllers).
- with `kubernetes.rdma_isolation`, the `rdma` CNI plugin chained after the rail's plugin (the networks'
  `metaPlugins`, the attachment's plugin list): it moves the NIC's RDMA device into the pod's namespace.
With `shared` a rail gets none of these: the RDMA shared device plugin (NicClusterPolicy
`rdmaSharedDevicePlugin`) offers each rail's RDMA device to many pods at once (`rdma/<plane>_rail<r>`),
which run on the host's network, as the rail's one planned address is the host's.
An InfiniBand compute plane gets, per partition that gives pods a subnet (`pod_subnet`), an IPoIBNetwork
whose `master` is the hosts' IPoIB child in that partition (`<netdev>.<pkey>`, the interface the ib_host
role makes, so pods' interfaces carry the partition's PKey), an nv-ipam IPPool of the pod subnet on the
partition's hosts, and the ipoib CNI's NetworkAttachmentDefinition. With `shared`, the pods on an InfiniBand
plane also get the node's HCAs, as one shared device plugin resource (`rdma/<plane>_hca`).
Plus one NicClusterPolicy and the kubelet settings that keep a pod's GPUs and rail NICs on one
NUMA node. docs/kubernetes.md explains each object and what was proven.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.export.header import comment_text
from gpufabric.export.host_facts import Reading
from gpufabric.export.yaml_out import dump_yaml
from gpufabric.intent.errors import Problem
from gpufabric.intent.model import DataPlane
from gpufabric.outputs import json_dumps
from gpufabric.plan.model import HostNic, Plan, PlanePlan, ip
from gpufabric.plan.multiplane import nic_multiplane, pool_share

OPERATOR_NS = "nvidia-network-operator"
WORKLOAD_NS = "default"
RESOURCE_PREFIX = "nvidia.com"
MELLANOX_VENDOR = "15b3"
LABELS = "gpufabric.io"  # the k8s-labels export's domain: cluster, group, rails

# Images the NicClusterPolicy names. Pin them to the Network Operator release you install (its
# release notes list the matching tags); the role's gpu_operator_network_operator_version is that release.
IMAGES: dict[str, tuple[str, str, str]] = {
    "ofedDriver": ("doca-driver", "nvcr.io/nvidia/mellanox", "25.04-0.6.1.0-2"),
    "nvIpam": ("nvidia-k8s-ipam", "ghcr.io/mellanox", "v0.3.7"),
    "multus": ("multus-cni", "ghcr.io/k8snetworkplumbingwg", "v4.1.0"),
    "cniPlugins": ("plugins", "ghcr.io/k8snetworkplumbingwg", "v1.5.0"),
    "sriovDevicePlugin": ("sriov-network-device-plugin", "ghcr.io/k8snetworkplumbingwg", "v3.9.0"),
    "ipoib": ("ipoib-cni", "ghcr.io/mellanox", "v1.2.0"),
    "rdmaSharedDevicePlugin": ("k8s-rdma-shared-dev-plugin", "ghcr.io/mellanox", "v1.5.3"),
    "nicConfigurationOperator": ("nic-configuration-operator", "nvcr.io/nvidia/mellanox", "network-operator-v26.7.0"),
    "nicConfigurationDaemon": (
        "nic-configuration-operator-daemon",
        "nvcr.io/nvidia/mellanox",
        "network-operator-v26.7.0",
    ),
}

# The NIC Configuration Operator selects NICs by PCI device ID (`nicSelector.nicType`): NVIDIA's Network Operator
# documentation, "NVIDIA Spectrum-X NIC Configuration" (ConnectX-7 1021, ConnectX-8 1023, BlueField-3 SuperNIC
# a2dc) and the operator's README (ConnectX-9 1025).
NIC_TYPES = {"ConnectX-7": "1021", "ConnectX-8": "1023", "ConnectX-9": "1025", "BlueField-3": "a2dc"}
NIC_CONFIGURATION_API = "configuration.net.nvidia.com/v1alpha1"

# The RDMA shared device plugin's resources are `rdma/<resourceName>`: it has no prefix setting (Mellanox
# k8s-rdma-shared-dev-plugin README, "RDMA Shared Device Plugin Configurations").
SHARED_PREFIX = "rdma"
# The link type the shared plugin's `linkTypes` selector matches on an InfiniBand port's netdev (the
# plugin's README, "Devices Selectors"; the kernel's ARPHRD_INFINIBAND link, `link/infiniband` in `ip link`).
IB_LINK_TYPE = "infiniband"
# The rdma CNI plugin, chained after a rail's plugin: it moves the RDMA device of the pod's interface into
# the pod's network namespace (k8snetworkplumbingwg/rdma-cni README: a chained plugin, `"type": "rdma"`;
# the hosts' RDMA subsystem must be in exclusive netns mode).
RDMA_CNI: dict[str, Any] = {"type": "rdma"}

FILES = (
    "nic-cluster-policy.yaml",
    "nic-configuration.yaml",
    "ip-pools.yaml",
    "networks.yaml",
    "network-attachment-definitions.yaml",
    "kubelet-topology.yaml",
)


class K8sNetworkError(ValueError, GpufabricError):
    """The plan cannot be given Kubernetes RDMA networks (the message says why and what to change).

    `problems`, when given, locate the cause in the intent (the CLI prints them as intent errors)."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


@dataclass
class Rail:
    """One rail of a RoCE plane: every server NIC on it."""

    plane: PlanePlan
    number: int
    nics: list[tuple[str, HostNic]] = field(default_factory=list)  # (node, NIC)
    groups: dict[str, str] = field(default_factory=dict)  # node -> its server group
    # A multi-plane compute plane: the plane this rail is on (a resource per rail per plane, as the
    # Network Operator's software multiplane mode makes them); None on a single plane.
    fabric_plane: int | None = None

    @property
    def part(self) -> str:
        """The plane as the acceptance jobs and exports name it: `compute`, or `compute-p1` on plane 1."""
        return f"{self.plane.name}-p{self.fabric_plane}" if self.fabric_plane is not None else self.plane.name

    @property
    def name(self) -> str:
        return f"{self.part}-rail{self.number}"

    @property
    def resource(self) -> str:
        """The device plugin's resource name, without its prefix (DNS label characters, no dash)."""
        part = f"_p{self.fabric_plane}" if self.fabric_plane is not None else ""
        return f"{self.plane.name}{part}_rail{self.number}"

    @property
    def interfaces(self) -> list[str]:
        return sorted({nic.interface for _, nic in self.nics})

    def group_interfaces(self) -> dict[str, list[str]]:
        """Server group -> the interface names that serve this rail on its servers (intent order of groups)."""
        out: dict[str, set[str]] = {}
        for node, nic in self.nics:
            out.setdefault(self.groups[node], set()).add(nic.interface)
        return {group: sorted(names) for group, names in out.items()}


def rails(plan: Plan) -> list[Rail]:
    """The rails of every plane that carries RoCE, in plane then rail order."""
    out: list[Rail] = []
    for plane in plan.planes.values():
        # A bonded plane (host_links: lacp) has no rail a pod could take alone: its RDMA stays the host's.
        if not plane.carries_roce or _host_links(plan, plane.name) != "routed":
            continue
        # A converged plane's NIC carries the host's tagged planes too: a pod taking it whole would cut the host
        # off them. Its carried planes stay the host's (docs/kubernetes.md).
        if plane.carried:
            continue
        by_number: dict[tuple[int, int], Rail] = {}
        for server in plan.servers:
            for nic in server.nics:
                if nic.plane == plane.name:
                    index = plane.plane_of.get(nic.leaf)
                    key = (index or 0, nic.rail)
                    rail = by_number.setdefault(key, Rail(plane, nic.rail, fabric_plane=index))
                    rail.nics.append((server.name, nic))
                    rail.groups[server.name] = server.group
        out.extend(by_number[n] for n in sorted(by_number))
    return out


def _host_links(plan: Plan, plane: str) -> str:
    return str(getattr(plan.intent.planes, plane).host_links)


@dataclass(frozen=True)
class IpoibNet:
    """One InfiniBand partition's IPoIB network for pods: on the hosts whose IPoIB interface is in it, the pods'
    interfaces are children of that interface (`master`, the host's child in the partition, e.g. ib0.8101), so
    they carry its PKey; addresses from the partition's pod subnet."""

    name: str
    partition: str
    pkey: int  # with the full-membership bit, as the child's name has it
    master: str
    subnet: IPv4Network
    nodes: tuple[str, ...]


def ipoib_networks(plan: Plan) -> list[IpoibNet]:
    """The IPoIB networks of the InfiniBand plane's partitions that give a pod subnet, in partition order."""
    ib, plane = plan.infiniband, plan.intent.infiniband
    if ib is None or plane is None or plane.ipoib is None:
        return []
    out = []
    for p in plane.partitions:
        if p.pod_subnet is None or not p.ipoib:
            continue
        full = p.pkey | 0x8000
        nodes = tuple(host for host, a in ib.ipoib.items() if a.pkey == full)
        if nodes:
            out.append(IpoibNet(f"ib-{p.name}", p.name, full, f"{plane.ipoib.netdev}.{full:04x}", p.pod_subnet, nodes))
    return out


def _check_ipoib(plan: Plan) -> None:
    """An InfiniBand plane: its IPoIB networks need the hosts' IPoIB interface and a partition's pod subnet."""
    plane = plan.intent.infiniband
    if plane is None:
        return
    if plane.ipoib is None:
        raise K8sNetworkError(
            "the InfiniBand plane gives the hosts no IPoIB interface, which pods' IPoIB networks enslave",
            [
                Problem(
                    ("planes", "compute"),
                    "no `ipoib`: pods' IPoIB networks need the hosts' IPoIB interface (its netdev and partition)",
                    "add planes.compute.ipoib: {subnet, rail, netdev}",
                )
            ],
        )
    raise K8sNetworkError(
        "no InfiniBand partition gives pods a subnet",
        [
            Problem(
                ("planes", "compute", "partitions"),
                "no partition with IPoIB has a `pod_subnet`: there is no IPoIB network a pod could join",
                "give a partition with IPoIB a pod_subnet",
            )
        ],
    )


def ip_pool(plan: Plan, net: IpoibNet) -> dict[str, Any]:
    """nv-ipam's IPPool: the partition's pod subnet shared out in equal blocks among its nodes (no gateway:
    a partition's IPoIB is one flat link)."""
    usable = net.subnet.num_addresses - 2
    block = usable // len(net.nodes)
    if block < 1:
        raise K8sNetworkError(
            f"{net.subnet} cannot give each of {len(net.nodes)} nodes an address",
            [
                Problem(
                    ("planes", "compute", "partitions", _partition_index(plan, net.partition), "pod_subnet"),
                    f"{net.subnet} has {usable} addresses for {len(net.nodes)} nodes",
                    "use a larger subnet",
                )
            ],
        )
    return {
        "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
        "kind": "IPPool",
        "metadata": _meta(net.name, OPERATOR_NS, plan),
        "spec": {
            "subnet": str(net.subnet),
            "perNodeBlockSize": block,
            "nodeSelector": {"nodeSelectorTerms": [_by_name(node) for node in net.nodes]},
        },
    }


def _partition_index(plan: Plan, name: str) -> int:
    plane = plan.intent.infiniband
    assert plane is not None
    return next(i for i, p in enumerate(plane.partitions) if p.name == name)


def _ipoib_ipam(net: IpoibNet) -> str:
    return json_dumps({"type": "nv-ipam", "poolName": net.name, "poolType": "ippool"}, separators=(",", ":"))


def ipoib_network(plan: Plan, net: IpoibNet) -> dict[str, Any]:
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "IPoIBNetwork",
        "metadata": _meta(net.name, None, plan),
        "spec": {"networkNamespace": WORKLOAD_NS, "master": net.master, "ipam": _ipoib_ipam(net)},
    }


def ipoib_attachment(plan: Plan, net: IpoibNet) -> dict[str, Any]:
    config = {
        "cniVersion": "0.3.1",
        "name": net.name,
        "type": "ipoib",
        "master": net.master,
        "ipam": json.loads(_ipoib_ipam(net)),
    }
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": _meta(net.name, WORKLOAD_NS, plan),
        "spec": {"config": json_dumps(config, separators=(",", ":"))},
    }


def _refuse_isolation(found: list[Rail]) -> None:
    """rdma_isolation with no rail network to chain the rdma CNI after: an InfiniBand plane's pods join IPoIB
    children, which share the parent's HCA and cannot own it, so the setting would do nothing."""
    raise K8sNetworkError(
        "rdma_isolation: no rail network for the rdma CNI to isolate a device on",
        [
            Problem(
                ("kubernetes", "rdma_isolation"),
                "there is no RoCE rail network (an IPoIB interface shares its HCA with the host and cannot take "
                "the RDMA device into a pod), so no pod's RDMA device would be isolated",
                "leave rdma_isolation false",
            )
        ],
    )


def _check(found: list[Rail]) -> None:
    if not found:
        raise K8sNetworkError(
            "no plane has both `carries_roce: true` and `host_links: routed`: there is no RDMA rail a pod "
            "could take (a bonded plane's NICs stay the host's)"
        )


def shared_names(found: list[Rail]) -> dict[str, list[Rail]]:
    """Interface name -> the rails it serves, where it serves more than one: two server groups name one
    rail's NIC as another rail's. A selector by name (pfNames) on every node would then give each of those
    rails' resources both NICs, and a pod could take a NIC of one rail with the address of the other."""
    serving: dict[str, list[Rail]] = {}
    for rail in found:
        for name in rail.interfaces:
            serving.setdefault(name, []).append(rail)
    return {name: rails for name, rails in serving.items() if len(rails) > 1}


def _refuse_shared_names(plan: Plan, shared: dict[str, list[Rail]]) -> None:
    """host-device and shared: the device plugin's one cluster-wide configuration selects NICs by name on every
    node, so a name that serves two rails cannot be told apart. Refused, located at the groups that name it."""
    group_index = {g.name: gi for gi, g in enumerate(plan.intent.server_groups)}
    problems: list[Problem] = []
    for name, rails in shared.items():
        uses = [(group, rail) for rail in rails for group, names in rail.group_interfaces().items() if name in names]
        said = "; ".join(f"group '{g}' on {r.name}" for g, r in uses)
        group, rail = uses[-1]
        problems.append(
            Problem(
                ("server_groups", group_index[group], "nics", rail.plane.name, "interfaces"),
                f"'{name}' serves different rails in different groups ({said}): the device plugin selects a rail's "
                "NICs by name on every node, so each of these rails' resources would take both NICs and a pod "
                "could get a NIC on one rail with the address planned for the other",
                "give each rail's NIC one name in every group (order `interfaces`, or `rails:` to say which rail "
                "each serves), or set kubernetes.rdma: sriov (its node policies select each group's NIC)",
            )
        )
    raise K8sNetworkError(problems[0].message, problems)


def _ipam(rail: Rail) -> str:
    return json_dumps({"type": "nv-ipam", "poolName": rail.name, "poolType": "cidrpool"}, separators=(",", ":"))


def _meta(name: str, namespace: str | None, plan: Plan, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = {"app.kubernetes.io/managed-by": "gpufabric", "gpufabric.io/cluster": plan.intent.fabric.name}
    meta.update(extra)
    return meta


def _image(key: str) -> dict[str, str]:
    image, repository, version = IMAGES[key]
    return {"image": image, "repository": repository, "version": version}


def _device_plugin_config(found: list[Rail]) -> str:
    """sriov-network-device-plugin's resource list: one resource per rail, selected by PF name."""
    resources = [
        {
            "resourceName": rail.resource,
            "resourcePrefix": RESOURCE_PREFIX,
            "selectors": {"vendors": [MELLANOX_VENDOR], "pfNames": rail.interfaces, "isRdma": True},
        }
        for rail in found
    ]
    return json_dumps({"resourceList": resources}, separators=(",", ":"))


def _device_ids(plan: Plan, plane: str, groups: set[str]) -> list[str]:
    """The PCI device IDs of the groups' NICs on the plane, when every group names a model the table knows;
    else none (the selector is left out rather than guessed)."""
    ids: set[str] = set()
    for group in plan.intent.server_groups:
        if group.name not in groups:
            continue
        nics = group.nics.get(plane)  # type: ignore[call-overload]  # a plane name the plan carries
        model = getattr(nics, "model", None)
        if model not in NIC_TYPES:
            return []
        ids.add(NIC_TYPES[model])
    return sorted(ids)


def ib_hca_resource(plan: Plan) -> str | None:
    """The shared device plugin's resource for an InfiniBand plane's HCAs (`<plane>_hca`), when pods get them."""
    ib = plan.infiniband
    if ib is None or plan.intent.kubernetes.rdma != "shared":
        return None
    return f"{ib.plane}_hca"


def _shared_plugin_config(plan: Plan, found: list[Rail]) -> str:
    """The RDMA shared device plugin's `configList`: a resource per RoCE rail (its NICs by name, as the SR-IOV
    device plugin selects them in host-device mode) and one for an InfiniBand plane's HCAs (by link type: the
    node's Ethernet NICs are other planes'); each at most `rdma_hca_max` pods at once."""
    most = plan.intent.kubernetes.rdma_hca_max
    configs: list[dict[str, Any]] = []
    for rail in found:
        selectors: dict[str, list[str]] = {"vendors": [MELLANOX_VENDOR]}
        ids = _device_ids(plan, rail.plane.name, set(rail.groups.values()))
        if ids:
            selectors["deviceIDs"] = ids
        selectors["ifNames"] = rail.interfaces
        configs.append({"resourceName": rail.resource, "rdmaHcaMax": most, "selectors": selectors})
    resource, ib = ib_hca_resource(plan), plan.infiniband
    if resource is not None and ib is not None:
        selectors = {"vendors": [MELLANOX_VENDOR]}
        groups = {s.group for s in plan.servers if s.name in set(ib.fabric.hosts)}
        ids = _device_ids(plan, ib.plane, groups)
        if ids:
            selectors["deviceIDs"] = ids
        selectors["linkTypes"] = [IB_LINK_TYPE]
        configs.append({"resourceName": resource, "rdmaHcaMax": most, "selectors": selectors})
    return json_dumps({"configList": configs}, separators=(",", ":"))


def multiplane_mode(plane: DataPlane) -> dict[str, Any]:
    """`spectrumXOptimized`'s planes: `swplb` with the plane count on a compute plane built as several
    (gpufabric/plan/multiplane.py, NIC_MULTIPLANE_MODE), `none` and 1 on one plane."""
    return dict(nic_multiplane(plane.multiplane))


def supernic_templates(plan: Plan) -> list[dict[str, Any]]:
    """The SuperNICs' side of a Spectrum-X plane's adaptive routing: per server group on it, a NicConfigurationTemplate
    that has the NIC Configuration Operator apply NVIDIA's Spectrum-X profile (`spectrumXOptimized`) to the group's
    nodes' NICs of its model; the CNP's DSCP and priority set to the plane's QoS contract on top (`rawNvConfig`, which
    the operator merges over the profile's values), so the NICs' congestion notifications are classified as the
    switches expect."""
    out: list[dict[str, Any]] = []
    for name in ("compute", "storage", "business"):
        plane = getattr(plan.intent.planes, name, None)
        spectrum_x = getattr(plane, "spectrum_x", None)
        if plane is None or spectrum_x is None:
            continue
        profile = plan.intent.qos_profiles[plane.qos] if plane.qos is not None else None
        raw = (
            [
                {"name": f"{param}_P{port}", "value": str(value)}
                for port in (1, 2)  # a single-port NIC ignores the _P2 parameters (the operator's README)
                for param, value in (("CNP_DSCP", profile.cnp_dscp), ("CNP_802P_PRIO", profile.cnp_priority))
            ]
            if profile is not None
            else []
        )
        for group in plan.intent.server_groups:
            nics = group.nics.get(name)
            if nics is None or nics.model is None:
                continue
            template: dict[str, Any] = {
                "numVfs": 1,  # what spectrumXOptimized requires (the CRD's rule); a rail port has one host address
                "linkType": "Ethernet",
                "spectrumXOptimized": {
                    "enabled": True,
                    "version": spectrum_x.profile,
                    "platformType": spectrum_x.platform,
                    "overlay": "none",  # the plane is routed to the hosts: no EVPN overlay
                    **multiplane_mode(plane),
                },
            }
            if raw:
                template["rawNvConfig"] = raw
            out.append(
                {
                    "apiVersion": NIC_CONFIGURATION_API,
                    "kind": "NicConfigurationTemplate",
                    "metadata": _meta(f"{name}-{group.name}-spectrum-x", OPERATOR_NS, plan),
                    "spec": {
                        "nodeSelector": {f"{LABELS}/cluster": plan.intent.fabric.name, f"{LABELS}/group": group.name},
                        "nicSelector": {"nicType": NIC_TYPES[nics.model]},
                        "template": template,
                    },
                }
            )
    return out


def nic_cluster_policy(
    plan: Plan, found: list[Rail], mode: str, ipoib: bool = False, pools: bool = True
) -> dict[str, Any]:
    """`pools`: some network takes its addresses from nv-ipam (not so where every pod is on the host's network)."""
    spec: dict[str, Any] = {
        "ofedDriver": {**_image("ofedDriver"), "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1}},
        "nvIpam": {**_image("nvIpam"), "enableWebhook": False},
        "secondaryNetwork": {"multus": _image("multus"), "cniPlugins": _image("cniPlugins")},
    }
    if not pools:
        del spec["nvIpam"]
    if ipoib:
        spec["secondaryNetwork"]["ipoib"] = _image("ipoib")
    if mode == "host-device" and found:
        # With SR-IOV the SR-IOV Network Operator runs its own device plugin; two would fight.
        spec["sriovDevicePlugin"] = {**_image("sriovDevicePlugin"), "config": _device_plugin_config(found)}
    if mode == "shared" and (found or ib_hca_resource(plan) is not None):
        spec["rdmaSharedDevicePlugin"] = {
            **_image("rdmaSharedDevicePlugin"),
            "config": _shared_plugin_config(plan, found),
        }
    if supernic_templates(plan):
        # The NIC Configuration Operator applies the SuperNICs' Spectrum-X settings (nic-configuration.yaml).
        spec["nicConfigurationOperator"] = {
            "operator": _image("nicConfigurationOperator"),
            "configurationDaemon": _image("nicConfigurationDaemon"),
        }
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": _meta("nic-cluster-policy", None, plan),
        "spec": spec,
    }


def cidr_pool(plan: Plan, rail: Rail) -> dict[str, Any]:
    cidr = _hosts(plan, rail)
    pinned = sorted(rail.nics, key=lambda pair: pair[1].address)
    allocations = [
        {"nodeName": node, "prefix": f"{ip(nic.address - 1)}/31", "gateway": ip(nic.gateway)} for node, nic in pinned
    ]
    return {
        "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
        "kind": "CIDRPool",
        "metadata": _meta(rail.name, OPERATOR_NS, plan),
        "spec": {
            "cidr": cidr,
            "perNodeNetworkPrefix": 31,
            # Index 0 of each /31 is the leaf (the plan gives the upper tier the even address); it is
            # also excluded, so a pod can only ever get index 1, the host's address in the plan.
            "gatewayIndex": 0,
            "perNodeExclusions": [{"startIndex": 0, "endIndex": 0}],
            "routes": [{"dst": cidr}],
            "staticAllocations": allocations,
            # Exactly the nodes given a static allocation, by name (terms are ORed; a field requirement takes
            # one value): nv-ipam allocates any other matching node a /31 of `cidr`, which every rail's
            # pool shares, so a dynamic allocation could be another rail's (or leaf's) address.
            "nodeSelector": {"nodeSelectorTerms": [_by_name(node) for node, _ in pinned]},
        },
    }


def _by_name(node: str) -> dict[str, Any]:
    return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}


def _hosts(plan: Plan, rail: Rail) -> str:
    """The host pool the rail's addresses come from: the plane's, or on plane k of a multi-plane compute
    plane that plane's share (the other planes' addresses are not reachable over this NIC)."""
    plane = getattr(plan.intent.planes, rail.plane.name)
    mp = plane.multiplane
    if mp is not None and rail.fabric_plane is not None:
        return str(pool_share(plane.addressing.hosts, mp.planes, rail.fabric_plane))
    return str(plane.addressing.hosts)


def _meta_plugins(plan: Plan) -> dict[str, str]:
    """The network's `metaPlugins` (both CRDs: CNI objects, comma-separated, no brackets): the rdma CNI when
    the intent isolates RDMA devices."""
    return {"metaPlugins": json_dumps(RDMA_CNI, separators=(",", ":"))} if plan.intent.kubernetes.rdma_isolation else {}


def networks(plan: Plan, found: list[Rail], mode: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if mode == "shared":
        return out  # pods share the rail's RDMA device on the host's network: no network of their own
    shared = {rail.name for rails in shared_names(found).values() for rail in rails}
    for rail in found:
        if mode == "host-device":
            out.append(
                {
                    "apiVersion": "mellanox.com/v1alpha1",
                    "kind": "HostDeviceNetwork",
                    "metadata": _meta(rail.name, None, plan),
                    "spec": {
                        "networkNamespace": WORKLOAD_NS,
                        "resourceName": rail.resource,
                        "ipam": _ipam(rail),
                        **_meta_plugins(plan),
                    },
                }
            )
            continue
        if rail.name in shared:
            # A name this rail shares with another rail elsewhere: one policy per group, on its nodes only.
            for group, names in rail.group_interfaces().items():
                out.append(_node_policy(plan, rail, f"{rail.name}-{group}", names, {f"{LABELS}/group": group}))
        else:
            out.append(_node_policy(plan, rail, rail.name, rail.interfaces, {}))
        out.append(
            {
                "apiVersion": "sriovnetwork.openshift.io/v1",
                "kind": "SriovNetwork",
                "metadata": _meta(rail.name, OPERATOR_NS, plan),
                "spec": {
                    "resourceName": rail.resource,
                    "networkNamespace": WORKLOAD_NS,
                    "ipam": _ipam(rail),
                    **_meta_plugins(plan),
                },
            }
        )
    return out


def _node_policy(plan: Plan, rail: Rail, name: str, interfaces: list[str], nodes: dict[str, str]) -> dict[str, Any]:
    """The SR-IOV operator's policy for the rail's NICs named `interfaces` on the nodes labelled `nodes`
    (k8s-labels writes the labels); policies of one resource name on disjoint nodes make one resource."""
    return {
        "apiVersion": "sriovnetwork.openshift.io/v1",
        "kind": "SriovNetworkNodePolicy",
        "metadata": _meta(name, OPERATOR_NS, plan),
        "spec": {
            "resourceName": rail.resource,
            "nodeSelector": {f"{LABELS}/cluster": plan.intent.fabric.name, **nodes},
            "nicSelector": {"vendor": MELLANOX_VENDOR, "pfNames": interfaces},
            # One VF: the plan gives each rail port one host address (its /31).
            "numVfs": 1,
            "deviceType": "netdevice",
            "isRdma": True,
            "linkType": "eth",
            "mtu": rail.plane.host_mtu,
        },
    }


def attachment(plan: Plan, rail: Rail, mode: str) -> dict[str, Any]:
    cni = "host-device" if mode == "host-device" else "sriov"
    plugin = {"type": cni, "ipam": json.loads(_ipam(rail))}
    config: dict[str, Any] = {"cniVersion": "0.3.1", "name": rail.name, **plugin}
    if plan.intent.kubernetes.rdma_isolation:
        # A chain is a plugin list (CNI spec: a network configuration list); the rdma plugin runs second.
        config = {"cniVersion": "0.3.1", "name": rail.name, "plugins": [plugin, RDMA_CNI]}
    annotations = {"k8s.v1.cni.cncf.io/resourceName": f"{RESOURCE_PREFIX}/{rail.resource}"}
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": _meta(rail.name, WORKLOAD_NS, plan, annotations=annotations),
        "spec": {"config": json_dumps(config, separators=(",", ":"))},
    }


def kubelet_settings() -> dict[str, Any]:
    """The KubeletConfiguration fields that make the topology manager align GPUs and rail NICs."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cpuManagerPolicy": "static",
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "pod",
        "reservedSystemCPUs": "0-1",
    }


def rail_nics(found: list[Rail]) -> dict[str, set[str]]:
    """GPU node -> the names of its rail NICs (what a host reading may name)."""
    out: dict[str, set[str]] = {}
    for rail in found:
        for node, nic in rail.nics:
            out.setdefault(node, set()).add(nic.interface)
    return out


def pairing(
    plan: Plan, found: list[Rail], readings: Mapping[str, Reading] | None = None
) -> dict[str, tuple[str, dict[str, str]]]:
    """Per GPU node: how its pairing is known (`read` from the host, or `assumed`) and rail NIC -> the
    GPUs it serves. Read: what host_baseline found in the host's PCI tree. Assumed, only for a node with
    no reading: rail r pairs with GPU r-1 when rails and GPUs match, else each NIC an equal run."""
    nics: dict[str, list[HostNic]] = {}
    for rail in found:
        for node, nic in rail.nics:
            nics.setdefault(node, []).append(nic)
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for server in plan.servers:
        mine = nics.get(server.name, [])
        if not mine or not server.gpus:
            continue
        reading = (readings or {}).get(server.name)
        if reading is not None:
            out[server.name] = ("read", {
                nic.interface: ",".join(map(str, reading.pairs[nic.interface]))
                for nic in mine if reading.pairs.get(nic.interface)
            })  # fmt: skip
            continue
        per_nic = max(1, server.gpus // len(mine))
        out[server.name] = ("assumed", {
            nic.interface: ",".join(str(g) for g in range((nic.rail - 1) * per_nic, nic.rail * per_nic))
            for nic in mine
            if (nic.rail - 1) * per_nic < server.gpus
        })  # fmt: skip
    return out


def documents(plan: Plan, readings: Mapping[str, Reading] | None = None) -> dict[str, str]:
    """File name -> YAML text (several documents where a file holds several objects). `readings`: what
    host_baseline read per node (`host_facts.load`); the GPU-to-NIC pairing of a node without one is assumed."""
    found = rails(plan)
    ib_nets = ipoib_networks(plan)
    mode = plan.intent.kubernetes.rdma
    if not found and not ib_nets and ib_hca_resource(plan) is None:
        _check_ipoib(plan)
        _check(found)
    shared = shared_names(found)
    if shared and mode in ("host-device", "shared"):
        _refuse_shared_names(plan, shared)
    if plan.intent.kubernetes.rdma_isolation and not found:
        _refuse_isolation(found)
    # A shared rail has no pod network: its pods are on the host's, whose address is the rail's one.
    networked = [] if mode == "shared" else found
    source = comment_text(plan.source)
    said = f"kubernetes.rdma: {mode}" + (", rdma_isolation" if plan.intent.kubernetes.rdma_isolation else "")
    head = f"# Generated by gpufabric from {source} ({said}). Do not edit: regenerate.\n"
    files = {
        "nic-cluster-policy.yaml": [nic_cluster_policy(plan, found, mode, bool(ib_nets), bool(networked or ib_nets))],
        "nic-configuration.yaml": supernic_templates(plan),
        "ip-pools.yaml": [cidr_pool(plan, rail) for rail in networked] + [ip_pool(plan, n) for n in ib_nets],
        "networks.yaml": networks(plan, found, mode) + [ipoib_network(plan, n) for n in ib_nets],
        "network-attachment-definitions.yaml": [attachment(plan, rail, mode) for rail in networked]
        + [ipoib_attachment(plan, n) for n in ib_nets],
    }
    if not files["nic-configuration.yaml"]:
        del files["nic-configuration.yaml"]  # only a Spectrum-X plane's SuperNICs get one
    out = {name: head + "---\n".join(dump_yaml(obj) for obj in objs) for name, objs in files.items()}
    lines = [
        head.rstrip("\n"),
        "# Merge into each GPU node's kubelet configuration: the topology manager then admits a pod only",
        "# when its GPUs and rail NICs sit on one NUMA node. Rail NIC -> GPU pairing (GPU indexes in PCI",
        "# order), read from the host's PCI tree (playbooks/validate.yml, --host-facts) where given, else",
        "# assumed by rail (rail r serves GPU r-1):",
    ]
    for node, (how, pairs) in pairing(plan, found, readings).items():
        lines.append(f"#   {node} ({how}): " + ", ".join(f"{nic}->GPU{gpus}" for nic, gpus in pairs.items()))
    out["kubelet-topology.yaml"] = "\n".join(lines) + "\n" + dump_yaml(kubelet_settings())
    return out


def render(plan: Plan, readings: Mapping[str, Reading] | None = None) -> str:
    """Every file's objects in one YAML stream (kubectl apply -f reads it)."""
    docs = documents(plan, readings)
    return "---\n".join(docs[name] for name in FILES if name in docs)
