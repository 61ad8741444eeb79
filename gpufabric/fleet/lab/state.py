"""What a lab run made, recorded as it is made, so `lab down` removes exactly that, even after a crash."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gpufabric.files import write_atomic
from gpufabric.fleet.lab.names import DEFAULT_LAB, DEFAULT_STATE_DIR, LABS_DIR
from gpufabric.inputs import InputError, MiB, read_json
from gpufabric.intent.errors import Problem
from gpufabric.outputs import json_dumps

T = TypeVar("T")
MAX_RECORD = 16 * MiB  # a lab of a thousand switches records a few hundred KiB

DEFAULT_DIR = DEFAULT_STATE_DIR
# The audit trail of pushes to this lab: kept with the lab, gone with it (a lab that is down leaves nothing).
AUDIT_FILE = "audit.jsonl"


@dataclass
class LabState:
    fabric: str
    namespaces: list[str] = field(default_factory=list)
    root_links: list[str] = field(default_factory=list)  # bridge and root-side veth ends
    routes: list[str] = field(default_factory=list)  # unreachable routes added in the root namespace
    pids: dict[str, int] = field(default_factory=dict)  # "node/daemon" -> PID of a process the lab started
    paths: list[str] = field(default_factory=list)  # directories the lab made (FRR pathspaces, per-node state)
    name: str = DEFAULT_LAB  # the lab's name (gpufabric/fleet/lab/names.py); a record from before names: the default
    intent: str | None = None  # the intent file `lab up` was given (absolute): a command naming the lab and no file

    @staticmethod
    def path(state_dir: Path) -> Path:
        return state_dir / "state.json"

    def save(self, state_dir: Path) -> None:
        write_atomic(self.path(state_dir), json_dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, state_dir: Path) -> LabState | None:
        return read_record(cls.path(state_dir), "the lab's state record (state.json)", lambda data: cls(**data))


def read_record(path: Path, what: str, build: Callable[[dict[str, Any]], T], max_bytes: int = MAX_RECORD) -> T | None:
    """A record the lab wrote (JSON, an object), built by `build`; None when there is none. Read the one
    way outside input is read (gpufabric.inputs), without following a link (the lab writes each by
    renaming a file into place: a link there was planted), and refused, located, when it is not what
    the lab writes."""
    if not os.path.lexists(path):
        return None
    data = read_json(path, what=what, max_bytes=max_bytes, follow_links=False)
    try:
        if not isinstance(data, dict):
            raise TypeError(f"a JSON object, not {type(data).__name__}")
        return build(data)
    except (TypeError, KeyError, AttributeError) as exc:
        raise InputError(
            str(path), [Problem((), f"is not {what} as the lab writes it ({exc})", "remove it, or run `lab down`")]
        ) from None


def remove_state_dir(state_dir: Path) -> None:
    """The state dir once it is empty, and gpufabric's folder above the default ones (/var/lib/gpufabric)
    if that left it empty too: `up` made both, and a lab that is down leaves nothing behind."""
    if any(state_dir.iterdir()):
        return
    state_dir.rmdir()
    parents = {DEFAULT_DIR.parent: (DEFAULT_DIR.parent,), LABS_DIR: (LABS_DIR, LABS_DIR.parent)}
    for folder in parents.get(state_dir.parent, ()):
        # Not empty: another lab's or Molecule's state is there (or it is gone already).
        with contextlib.suppress(OSError):
            folder.rmdir()


def remove_leftovers(state_dir: Path, files: tuple[str, ...], folders: tuple[str, ...]) -> None:
    """Files a lab part made in the state dir, then those folders if that left them empty."""
    for name in files:
        (state_dir / name).unlink(missing_ok=True)
    for name in folders:
        if (state_dir / name).is_dir() and not any((state_dir / name).iterdir()):
            (state_dir / name).rmdir()
