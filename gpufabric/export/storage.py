"""The storage clients of the GPU servers, from the plan (`gpufabric export storage -o DIR`).

One folder per GPU server on the storage plane, holding what its file systems (`planes.storage.file_systems`)
need over its storage NICs and addresses, and a `manifest.json` saying where each file goes on the host (the
`storage_client` role installs exactly what the manifest lists):

- NFS over RDMA: a systemd mount unit per file system, `Type=nfs` with `proto=rdma,port=20049,nconnect=N`
  (Linux nfs(5): `proto=rdma` selects the RDMA transport, 20049 is NFS/RDMA's port (RFC 8267 section 6.3),
  `nconnect` the connections per server, at most 16). Clients are spread over the data servers and their
  ports in turn, so no one server takes every client.
- Lustre: `/etc/lnet.conf` in lnetctl's YAML import format, one `o2ib<k>` network per storage port k
  (Lustre Operations Manual, "Configuring Lustre Networking (LNet)", "Configuring LNet via lnetctl": the
  `net:` list of `net type` with `local NI(s)` and their `interfaces`), which Lustre's lnet.service imports
  at boot; and a mount unit per file system naming the metadata servers' MGS NIDs on the client's networks.
- BeeGFS: the interfaces files the client's `connInterfacesFile` and `connRDMAInterfacesFile` name (one
  interface a line, in order of preference), the beegfs-client.conf keys (`sysMgmtdHost`, the two files,
  `connUseRDMA`) and the beegfs-mounts.conf line (BeeGFS documentation: "Network Configuration", "RDMA
  Support", "Client configuration").
- GPUDirect Storage: `/etc/cufile.json` whose `properties.rdma_dev_addr_list` lists the server's storage NIC
  addresses (NVIDIA GDS Configuration Guide, "GPUDirect Storage Parameters"): cuFile sends each GPU's I/O
  through the listed NIC nearest it by PCIe distance (NVIDIA GDS Troubleshooting Guide, "User-Space RDMA
  Counters": the rows are in order of a GPU's affinity with each NIC). The role checks on the host that every
  GPU has a listed NIC on its NUMA node. NVIDIA ships the file as JSON with comments; this one is plain JSON
  with only the keys gpufabric decides.

A storage port is a storage NIC with its address, or a bond (`host_links: lacp`) of them with its one address:
the files name the bond, and list its address once.

Every value here comes from the intent's patterns (names, interface names, absolute paths of plain
characters) or from the plan's addresses: no outside text reaches a file.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.errors import GpufabricError
from gpufabric.export.header import comment_text
from gpufabric.intent.errors import IntentError, Problem
from gpufabric.intent.storage import FileSystem
from gpufabric.outputs import json_dumps
from gpufabric.plan.model import HostNic, Plan, Server, ip
from gpufabric.plan.storage import client_groups

NFS_RDMA_PORT = 20049  # RFC 8267 section 6.3: NFS/RDMA's well-known port
DEFAULT_NCONNECT = 8
MANIFEST = "manifest.json"
LNET_CONF = "/etc/lnet.conf"
CUFILE = "/etc/cufile.json"
BEEGFS_DIR = "/etc/beegfs"
BEEGFS_CLIENT_CONF = "/etc/beegfs/beegfs-client.conf"
BEEGFS_MOUNTS = "/etc/beegfs/beegfs-mounts.conf"
HEADER = "Written by gpufabric export storage from {source}; changes are overwritten."


class NoStorageClientsError(ValueError, GpufabricError):
    """The plan has no storage clients to write: no file system, or no GPU server on the storage plane."""


@dataclass(frozen=True, slots=True)
class HostFile:
    name: str  # in the host's folder
    dest: str  # on the host
    kind: str  # file | mount | keys | line
    text: str


def unit_name(path: str) -> str:
    """The systemd mount unit of a mount point, as `systemd-escape --path --suffix=mount` writes it: the
    paths here hold letters, digits, '.', '_' and '-' only (the intent's pattern), of which '-' and a leading
    '.' of a component are escaped (systemd.unit(5), "String Escaping for Inclusion in Unit Names")."""
    parts = []
    for part in path.strip("/").split("/"):
        escaped = part.replace("-", "\\x2d")
        parts.append("\\x2e" + escaped[1:] if escaped.startswith(".") else escaped)
    return "-".join(parts) + ".mount"


def _storage_nics(server: Server) -> list[HostNic]:
    return [n for n in server.nics if n.plane == "storage" and n.native]


@dataclass(frozen=True, slots=True)
class _Port:
    interface: str  # the interface that holds the address: a bond's name, for its members
    address: int


def _ports(server: Server) -> list[_Port]:
    """A server's storage addresses as its IP stack has them: the NICs of a bond (`host_links: lacp`) are one
    port, the bond, with one address, which LNet, NFS, BeeGFS and cuFile see once."""
    ports: dict[str, _Port] = {}
    for nic in _storage_nics(server):
        name = nic.bond or nic.interface
        ports.setdefault(name, _Port(name, nic.address))
    return list(ports.values())


def _servers_of(plan: Plan, groups: list[str]) -> list[Server]:
    wanted = set(groups)
    return [s for s in plan.servers if s.group in wanted and _storage_nics(s)]


def _mount_unit(
    header: str, *, description: str, what: str, where: str, fstype: str, options: str, after: str = ""
) -> str:
    requires = f"Requires={after}\nAfter={after} network-online.target\n" if after else "After=network-online.target\n"
    return (
        f"# {header}\n"
        "[Unit]\n"
        f"Description={description}\n"
        "Wants=network-online.target\n"
        f"{requires}"
        "\n[Mount]\n"
        f"What={what}\n"
        f"Where={where}\n"
        f"Type={fstype}\n"
        f"Options={options}\n"
        "\n[Install]\n"
        "WantedBy=remote-fs.target\n"
    )


def _nfs(plan: Plan, fs: FileSystem, index: int, header: str) -> list[HostFile]:
    """Client `index` mounts from data server index mod n, through that server's port (index div n) mod ports."""
    servers = _servers_of(plan, fs.data)
    server = servers[index % len(servers)]
    ports = _ports(server)
    address = ip(ports[(index // len(servers)) % len(ports)].address)
    export = fs.export or "/"
    # nfs(5): proto=rdma (the RDMA transport), port=20049 (NFS/RDMA's port), nconnect=n (1-16 connections).
    options = f"proto=rdma,port={NFS_RDMA_PORT},nconnect={fs.nconnect or DEFAULT_NCONNECT},hard"
    unit = unit_name(fs.mount)
    text = _mount_unit(
        header,
        description=f"gpufabric: NFS over RDMA {fs.name} from {server.name}",
        what=f"{address}:{export}",
        where=fs.mount,
        fstype="nfs",
        options=options,
    )
    return [HostFile(unit, f"/etc/systemd/system/{unit}", "mount", text)]


def lnet_yaml(client: Server) -> str:
    """lnetctl's import format: one o2ib network per storage port, in NIC order (o2ib0 on the first)."""
    lines = ["net:"]
    for k, port in enumerate(_ports(client)):
        lines += [f"    - net type: o2ib{k}", "      local NI(s):", "        - interfaces:"]
        lines.append(f"              0: {port.interface}")
    return "\n".join(lines) + "\n"


def mgs_nids(plan: Plan, fs: FileSystem, networks: int) -> str:
    """The MGS's NIDs as a client mounts with them: each metadata server's NIDs (its NIC k on o2ib<k>, for the
    networks the client has) joined by ',', the servers (failover MGS nodes) by ':' (mount.lustre(8))."""
    nodes = []
    for server in _servers_of(plan, fs.metadata):
        nids = [f"{ip(p.address)}@o2ib{k}" for k, p in enumerate(_ports(server)) if k < networks]
        if nids:
            nodes.append(",".join(nids))
    return ":".join(nodes)


def _lustre(plan: Plan, fs: FileSystem, client: Server, header: str) -> list[HostFile]:
    unit = unit_name(fs.mount)
    what = f"{mgs_nids(plan, fs, len(_ports(client)))}:/{fs.name}"
    text = _mount_unit(
        header,
        description=f"gpufabric: Lustre {fs.name}",
        what=what,
        where=fs.mount,
        fstype="lustre",
        options="flock",
        after="lnet.service",
    )
    return [HostFile(unit, f"/etc/systemd/system/{unit}", "mount", text)]


def _beegfs(plan: Plan, fs: FileSystem, client: Server, header: str) -> list[HostFile]:
    names = [p.interface for p in _ports(client)]
    interfaces = f"{BEEGFS_DIR}/gpufabric-{fs.name}-interfaces"
    rdma = f"{BEEGFS_DIR}/gpufabric-{fs.name}-rdma-interfaces"
    mgmtd = _servers_of(plan, fs.metadata)[0]
    keys = (
        f"sysMgmtdHost = {ip(_ports(mgmtd)[0].address)}\n"
        f"connInterfacesFile = {interfaces}\n"
        f"connRDMAInterfacesFile = {rdma}\n"
        "connUseRDMA = true\n"
    )
    listed = "".join(f"{n}\n" for n in names)
    return [
        HostFile(f"beegfs-{fs.name}-interfaces", interfaces, "file", listed),
        HostFile(f"beegfs-{fs.name}-rdma-interfaces", rdma, "file", listed),
        HostFile("beegfs-client.conf.keys", BEEGFS_CLIENT_CONF, "keys", f"# {header}\n{keys}"),
        HostFile("beegfs-mounts.conf.line", BEEGFS_MOUNTS, "line", f"{fs.mount} {BEEGFS_CLIENT_CONF}\n"),
    ]


def cufile_json(client: Server) -> str:
    addresses = [ip(p.address) for p in _ports(client)]
    return json_dumps({"properties": {"rdma_dev_addr_list": addresses}}, indent=2) + "\n"


def host_files(plan: Plan, client: Server, index: int) -> list[HostFile]:
    """Every file of one client, the manifest last."""
    storage = plan.intent.planes.storage
    assert storage is not None
    header = HEADER.format(source=comment_text(plan.source))
    files: list[HostFile] = []
    if any(fs.type == "lustre" for fs in storage.file_systems):
        files.append(HostFile("lnet.conf", LNET_CONF, "file", f"# {header}\n{lnet_yaml(client)}"))
    for fs in storage.file_systems:
        if fs.type == "nfs":
            files += _nfs(plan, fs, index, header)
        elif fs.type == "lustre":
            files += _lustre(plan, fs, client, header)
        else:
            files += _beegfs(plan, fs, client, header)
    if any(fs.gds for fs in storage.file_systems):
        files.append(HostFile("cufile.json", CUFILE, "file", cufile_json(client)))
    manifest: dict[str, object] = {"files": [{"file": f.name, "dest": f.dest, "kind": f.kind} for f in files]}
    if any(fs.gds for fs in storage.file_systems):
        # What the role checks on the host: each GPU has one of these NICs on its NUMA node.
        # A bond's members, not the bond: each has a PCIe device, so a NUMA node.
        manifest["gds_interfaces"] = [n.interface for n in _storage_nics(client)]
    files.append(HostFile(MANIFEST, "", "manifest", json_dumps(manifest, indent=2) + "\n"))
    return files


def clients(plan: Plan) -> list[Server]:
    storage = plan.intent.planes.storage
    if storage is None or not storage.file_systems:
        raise NoStorageClientsError(
            "the intent names no file system on the storage plane: add planes.storage.file_systems (docs/storage.md)"
        )
    groups = {g.name for g in client_groups(plan.intent, storage)}
    found = [s for s in plan.servers if s.group in groups and _storage_nics(s)]
    if not found:
        problem = Problem(
            ("planes", "storage"), "no GPU server has a NIC on the storage plane", "give the GPU groups nics.storage"
        )
        raise IntentError(plan.source, [problem])
    return found


def documents(plan: Plan) -> dict[str, str]:
    """`<host>/<file>` -> text, for every client of the plan."""
    out: dict[str, str] = {}
    for index, client in enumerate(clients(plan)):
        for f in host_files(plan, client, index):
            out[f"{client.name}/{f.name}"] = f.text
    return out


def render(plan: Plan) -> str:
    """Every client's files as one JSON object (`<host>/<file>` -> text), for stdout; -o writes the folders."""
    return json_dumps(documents(plan), indent=1, sort_keys=True) + "\n"
