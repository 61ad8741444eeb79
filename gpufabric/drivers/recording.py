"""Record what a switch answers to a driver's commands, and replay it without the switch.

A recording is a YAML list of exchanges (command, rc, stdout, stderr, source). What a command
read on stdin (a sudo password, a file's content) is never recorded. `ReplayTransport` answers a
driver from a recording, so getters and parsers are tested on real output from devices that
cannot run here; an injected per-call latency makes it a stand-in for a slow device in benchmarks.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from gpufabric.drivers.transport import Output, Transport
from gpufabric.errors import GpufabricError
from gpufabric.files import write_atomic
from gpufabric.inputs import MiB, read_text

MAX_RECORDING = 64 * MiB  # a switch's answers to a driver's getters: a few hundred KiB

# Options that name this machine's lab plumbing (FRR pathspace, lldpd socket) or sudo, not the command.
_INCIDENTAL = [re.compile(r"^sudo -S -p '' "), re.compile(r" -N \S+"), re.compile(r" -u \S+")]


def canonical(command: str) -> str:
    for pattern in _INCIDENTAL:
        command = pattern.sub("", command)
    return command


@dataclass(frozen=True)
class Exchange:
    command: str
    rc: int
    stdout: str
    stderr: str = ""
    source: str = ""  # where the output came from: a switch model and release, or a document


class RecordingTransport:
    def __init__(self, inner: Transport, source: str) -> None:
        self.inner = inner
        self.source = source
        self.exchanges: list[Exchange] = []

    def run(self, command: str, stdin: str | None = None) -> Output:
        out = self.inner.run(command, stdin)
        self.exchanges.append(Exchange(canonical(command), out.rc, out.stdout, out.stderr, self.source))
        return out

    def close(self) -> None:
        self.inner.close()


def save(exchanges: Iterable[Exchange], path: Path) -> None:
    text = yaml.safe_dump([asdict(e) for e in exchanges], sort_keys=False, width=1000, allow_unicode=True)
    write_atomic(path, text, mode=0o644)  # a recording is checked in: readable like any source file


def load(path: Path) -> list[Exchange]:
    text = read_text(path, what="a recording of a switch's answers (YAML)", max_bytes=MAX_RECORDING)
    return [Exchange(**item) for item in yaml.safe_load(text) or []]


class UnrecordedCommandError(AssertionError, GpufabricError):
    pass


class ReplayTransport:
    """Answers each command with its recorded output (the last recording of it wins).

    `sent` keeps every command and whether stdin was given, so tests can assert on what the driver did.
    """

    def __init__(self, exchanges: Iterable[Exchange], latency: float = 0.0) -> None:
        self.answers = {e.command: e for e in exchanges}
        self.latency = latency
        self.sent: list[tuple[str, str | None]] = []

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append((command, stdin))
        if self.latency:
            time.sleep(self.latency)
        found = self.answers.get(canonical(command))
        if found is None:
            raise UnrecordedCommandError(f"no recorded answer for `{canonical(command)}`")
        return Output(found.rc, found.stdout, found.stderr)

    def close(self) -> None:
        pass
