"""Rules of the storage plane's file systems: their servers are groups of the plan, on the plane, one class each."""

from __future__ import annotations

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import Intent

# Lustre Operations Manual, mkfs.lustre --fsname: a file system name is at most 8 characters.
LUSTRE_FSNAME = 8


def storage_rules(intent: Intent) -> list[Problem]:
    plane = intent.planes.storage
    if plane is None:
        return []
    groups = {g.name: g for g in intent.server_groups}
    problems: list[Problem] = []
    names: set[str] = set()
    mounts: set[str] = set()
    classes: dict[str, str] = {}  # group -> the class it serves (data or metadata)
    beegfs = [fi for fi, fs in enumerate(plane.file_systems) if fs.type == "beegfs"]
    if len(beegfs) > 1:
        # The client's keys go to the one beegfs-client.conf; a second instance needs its own file and ports.
        at_second = ("planes", "storage", "file_systems", beegfs[1])
        why = "a second BeeGFS file system: the client configuration written here holds one"
        problems.append(Problem(at_second, why, "keep one BeeGFS file system"))
    problems += _demand_has_both_ends(intent)
    for fi, fs in enumerate(plane.file_systems):
        at: Path = ("planes", "storage", "file_systems", fi)
        if fs.type == "lustre" and len(fs.name) > LUSTRE_FSNAME:
            problems.append(Problem((*at, "name"), f"Lustre file system names are {LUSTRE_FSNAME} characters at "
                                    f"most; {fs.name!r} has {len(fs.name)}", "use the fsname the servers were "
                                    "formatted with (mkfs.lustre --fsname)"))  # fmt: skip
        if fs.mount == "/":
            problems.append(Problem((*at, "mount"), "the root is no mount point for a file system",
                                    "mount it below, e.g. /mnt/" + fs.name))  # fmt: skip
        if fs.name in names:
            problems.append(Problem((*at, "name"), f"file system {fs.name!r} is named twice", "give each its own name"))
        if fs.mount in mounts:
            problems.append(Problem((*at, "mount"), f"{fs.mount} is the mount point of another file system",
                                    "give each file system its own mount point"))  # fmt: skip
        names.add(fs.name)
        mounts.add(fs.mount)
        for role in ("data", "metadata"):
            for i, name in enumerate(getattr(fs, role)):
                problems += _server_group(intent, groups, name, (*at, role, i))
                if classes.setdefault(name, role) != role:
                    problems.append(Problem((*at, role, i), f"group {name!r} serves {classes[name]} in another "
                                            "file system", "a group serves one class: data or metadata"))  # fmt: skip
    return problems


def _server_group(intent: Intent, groups: dict, name: str, at: Path) -> list[Problem]:
    group = groups.get(name)
    if group is None:
        known = ", ".join(g.name for g in intent.server_groups if g.kind == "storage") or "none"
        return [Problem(at, f"no server group {name!r}", f"name a group of `kind: storage` ({known})")]
    if group.kind != "storage":
        return [Problem(at, f"group {name!r} is of kind {group.kind}, not storage",
                        "name the group of storage servers, or give it `kind: storage`")]  # fmt: skip
    nics = group.nics.get("storage")
    if nics is None or not nics.native:
        return [Problem(at, f"group {name!r} has no address on the storage plane",
                        "give the group `nics.storage` (native), or name another group")]  # fmt: skip
    return []


def _demand_has_both_ends(intent: Intent) -> list[Problem]:
    """A demand is held against the path from the GPU servers to the data servers: with either end missing
    there is no path, and the demand would be taken without a word."""
    plane = intent.planes.storage
    if plane is None or plane.demand is None:
        return []
    on_plane = [g for g in intent.server_groups if "storage" in g.nics and g.nics["storage"].native]
    named = {n for fs in plane.file_systems for n in (*fs.data, *fs.metadata)}
    data = {n for fs in plane.file_systems for n in fs.data} or {g.name for g in on_plane if g.kind == "storage"}
    at: Path = ("planes", "storage", "demand")
    if not any(g.gpus > 0 and g.name not in named for g in on_plane):
        return [Problem(at, "no GPU server group has a NIC on the storage plane: nothing reads or writes the demand",
                        "give the GPU servers nics.storage, or remove demand")]  # fmt: skip
    if not any(g.name in data for g in on_plane):
        return [Problem(at, "no data server is on the storage plane: the demand has nowhere to go",
                        "add a group of kind: storage with nics.storage, or remove demand")]  # fmt: skip
    return []
