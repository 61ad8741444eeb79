"""What the host side of a lab made, recorded before each step, so `down` undoes exactly that after a crash."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpufabric.files import write_atomic
from gpufabric.fleet.lab.state import read_record
from gpufabric.outputs import json_dumps

# The interpreter inside every host container (Debian's), which Ansible is pointed at.
PYTHON = "/usr/bin/python3"


@dataclass
class HostRecord:
    netns: str
    root: str
    address: str  # management IP, where Ansible reaches it
    pid: int = 0  # systemd-nspawn
    leader: int = 0  # the container's systemd: killing it ends every process of the container


@dataclass
class HostsState:
    bridge: str
    made_bridge: bool = False
    namespaces: list[str] = field(default_factory=list)  # stand-in routers the host side made
    hosts: dict[str, HostRecord] = field(default_factory=dict)
    forwarder_pid: int = 0
    user: str = "root"
    key_file: str = ""
    known_hosts: str = ""
    # The image's interpreter (Debian's python3): Ansible starts there instead of discovering one, which
    # through Mitogen costs an SSH connection per candidate tried, about 3.5 s of a run on six hosts.
    python: str = PYTHON

    @staticmethod
    def path(state_dir: Path) -> Path:
        return state_dir / "hosts.json"

    def save(self, state_dir: Path) -> None:
        write_atomic(self.path(state_dir), json_dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, state_dir: Path) -> HostsState | None:
        return read_record(cls.path(state_dir), "the host lab's state record (hosts.json)", cls._build)

    @classmethod
    def _build(cls, data: dict[str, Any]) -> HostsState:
        hosts = {str(k): HostRecord(**v) for k, v in data["hosts"].items()}
        return cls(**{**data, "hosts": hosts})
