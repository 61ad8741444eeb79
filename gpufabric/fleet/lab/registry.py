"""The labs up on this machine, each with its state folder and what it holds in the root namespace.

`lab up` records its lab here before it makes anything (and `lab down` removes the record last), so a second
lab can be checked against every other before it touches the machine: the same name, the same short tag, or
an OOB subnet overlapping another lab's (both would put their gateway on a bridge in the root namespace and
route their switches' management addresses there) is refused, naming the other lab. A record whose state
folder no longer holds that lab's state is stale (a machine rebooted, a folder removed by hand) and ignored.
The records live under /run: they go with a reboot, as the lab's namespaces and processes do.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpufabric.errors import GpufabricError
from gpufabric.files import write_atomic
from gpufabric.fleet.lab.names import DEFAULT_LAB, LabNames, check_name
from gpufabric.fleet.lab.state import LabState, read_record
from gpufabric.outputs import json_dumps

REGISTRY_DIR = Path("/run/gpufabric-lab/labs")


def _folder(registry: Path | None) -> Path:
    return REGISTRY_DIR if registry is None else registry  # read when called: tests stand a folder of their own in


def folder(registry: Path | None = None) -> Path:
    """The registry's folder (REGISTRY_DIR unless a test gives its own)."""
    return _folder(registry)


@contextlib.contextmanager
def locked(registry: Path | None = None) -> Iterator[Path]:
    """The registry held by this process alone (a lock on its folder) while the block runs: what a lab decides
    from the labs up (may it come up, is it the last one) holds until it has acted on it."""
    registry = _folder(registry)
    for _attempt in range(3):  # the folder removed by the last lab's `down` between the two calls: made again
        registry.mkdir(parents=True, exist_ok=True, mode=0o755)
        with contextlib.suppress(FileNotFoundError):
            fd = os.open(registry, os.O_RDONLY | os.O_DIRECTORY)
            break
    else:
        fd = os.open(registry, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield registry
    finally:
        os.close(fd)  # the lock goes with it


class LabClashError(GpufabricError):
    """A lab that would share a name, a tag or root-namespace addresses with another lab that is up."""


@dataclass(frozen=True)
class LabRecord:
    name: str
    state_dir: str
    fabric: str
    oob: str | None = None  # the OOB subnet, whose gateway is on the lab's bridge in the root namespace
    loopbacks: list[str] = field(default_factory=list)  # prefixes made unreachable in the root namespace

    @property
    def tag(self) -> str:
        return LabNames(self.name).tag


def _path(name: str, registry: Path) -> Path:
    return registry / f"{check_name(name)}.json"


def record(entry: LabRecord, registry: Path | None = None) -> None:
    registry = _folder(registry)
    registry.mkdir(parents=True, exist_ok=True, mode=0o755)
    write_atomic(_path(entry.name, registry), json_dumps(asdict(entry), indent=2) + "\n")


def forget(name: str, state_dir: Path, registry: Path | None = None) -> None:
    """The lab's record, when it names this state folder (another folder's lab of that name is not this one)."""
    registry = _folder(registry)
    found = find(name, registry, alive_only=False)
    if found is not None and Path(found.state_dir) == state_dir.absolute():
        _path(name, registry).unlink(missing_ok=True)
    tidy(registry)


def tidy(registry: Path | None = None) -> None:
    """The registry's folder removed when it holds no lab (`locked` makes it again when a lab needs it)."""
    registry = _folder(registry)
    if registry.is_dir() and not any(registry.iterdir()):
        with contextlib.suppress(OSError):  # another lab recorded itself meanwhile: the folder stays
            registry.rmdir()


def _alive(entry: LabRecord) -> bool:
    try:
        state = LabState.load(Path(entry.state_dir))
    except GpufabricError:
        return True  # a state the lab cannot read is still someone's: never overlooked
    return state is not None and state.name == entry.name


def find(name: str, registry: Path | None = None, *, alive_only: bool = True) -> LabRecord | None:
    registry = _folder(registry)
    found = read_record(_path(name, registry), "a lab's record (/run/gpufabric-lab/labs)", lambda d: LabRecord(**d))
    return found if found is not None and (not alive_only or _alive(found)) else None


def labs(registry: Path | None = None) -> list[LabRecord]:
    """Every lab up on this machine, by name."""
    registry = _folder(registry)
    if not registry.is_dir():
        return []
    found = (find(p.stem, registry) for p in sorted(registry.glob("*.json")) if _valid(p.stem))
    return [entry for entry in found if entry is not None]


def _valid(stem: str) -> bool:
    try:
        check_name(stem)
    except GpufabricError:
        return False
    return True


def clash(entry: LabRecord, others: list[LabRecord]) -> str | None:
    """Why `entry` cannot come up beside `others` (the labs up now), or None when it can."""
    mine = ipaddress.ip_network(entry.oob) if entry.oob else None
    for other in others:
        if Path(other.state_dir) == Path(entry.state_dir):
            if other.name != entry.name:
                return f"state folder {entry.state_dir} holds lab {other.name} (`lab down --name {other.name}`)"
            continue  # the same lab, brought up again
        if other.name == entry.name:
            return f"a lab named {other.name} is up with its state in {other.state_dir}; choose another --name"
        if other.tag == entry.tag:
            return f"lab {other.name}'s links carry the same tag ({entry.tag}) as {entry.name}'s; choose another --name"
        theirs = ipaddress.ip_network(other.oob) if other.oob else None
        if mine is not None and theirs is not None and mine.overlaps(theirs):
            return (
                f"lab {other.name} (fabric {other.fabric}) is up with OOB subnet {other.oob}, which overlaps "
                f"{entry.oob}: both would hold it in the root namespace. Bring {other.name} down first "
                f"(`gpufabric lab down --name {other.name}`), or give this intent another planes.oob subnet"
            )
    return None


def claim(entry: LabRecord, registry: Path | None = None) -> None:
    """Record `entry` as up, or refuse it (LabClashError) when it cannot run beside the labs up now."""
    # Two `lab up` at once: one checks and records while the other waits, so both cannot pass the check.
    with locked(registry) as held:
        problem = clash(entry, labs(held))
        if problem is not None:
            raise LabClashError(f"lab {entry.name}: {problem}")
        record(entry, held)


def held_elsewhere(name: str, registry: Path | None = None) -> set[str]:
    """The loopback prefixes other labs made unreachable: a lab going down leaves those routes in place."""
    registry = _folder(registry)
    return {prefix for entry in labs(registry) if entry.name != name for prefix in entry.loopbacks}


def resolve_state_dir(name: str, state_dir: Path | None, registry: Path | None = None) -> Path:
    """The state folder of lab `name`: the one given, else the one it was brought up with, else its default."""
    registry = _folder(registry)
    if state_dir is not None:
        return state_dir
    found = find(name, registry) if os.path.isdir(registry) else None
    return Path(found.state_dir) if found is not None else LabNames(name).state_dir


def resolve(name: str | None, state_dir: Path | None, registry: Path | None = None) -> tuple[str, Path]:
    """The lab a command means, and its state folder: `--name` (default: the default lab), `--state-dir`, or both.
    A state folder named alone means the lab recorded there (the default lab when none is)."""
    registry = _folder(registry)
    if name is None and state_dir is not None:
        state = LabState.load(state_dir)
        return (state.name if state is not None else DEFAULT_LAB), state_dir
    name = check_name(name or DEFAULT_LAB)
    return name, resolve_state_dir(name, state_dir, registry)
