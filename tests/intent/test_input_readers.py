"""Outside input is read one way: through gpufabric.inputs (a regular file only, bounded, UTF-8 located,
links refused where unexpected). Files are written one way: through gpufabric.files.write_atomic
(a temporary file renamed into place, which replaces a planted link instead of writing through it).

This test reads every module of the package (and of its Nornir tasks, NAPALM drivers and Ansible
plugins) with `ast` and lists every place that opens, reads or writes a file by name: builtin and
`io`/`os` open, Path.open/read_text/read_bytes/write_text/write_bytes, json.load, a YAML or pickle load
from an open file, shutil copies, sys.stdin. Each must be in gpufabric/inputs.py or on the short list
below, with the reason it is not outside input (or is a lock or an append-only log, opened without
following a link). Subprocess outputs are not files and are out of scope. The list is keyed by module
and function, so moving code within a function does not disturb it; an entry that no longer names a
reader fails too, so the list only ever shrinks with the code."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from conftest import ROOT

THE_READER = "gpufabric/inputs.py"
SCANNED = ("gpufabric", "nornir_tasks", "napalm_*", "plugins")

OPENERS = {"open", "read_text", "read_bytes", "write_text", "write_bytes"}  # Path's, io's, tarfile's, ...
STREAM_LOADERS = {
    ("json", "load"),
    ("pickle", "load"),
    ("marshal", "load"),
    *(("yaml", f) for f in ("load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all")),
}
ALWAYS_A_FILE = {("json", "load"), ("pickle", "load"), ("marshal", "load")}  # no text form: a stream only
COPIES = {("shutil", f) for f in ("copy", "copy2", "copyfile", "copyfileobj")}
INPUTS_MODULE = {"inputs", "gpufabric.inputs"}  # `inputs.read_text(...)` is the reader itself

ALLOWED: dict[tuple[str, str], str] = {
    ("gpufabric/cli/docs_cmd.py", "figures_cmd"): "reads back a drawing it wrote into the checkout, to compare",
    # Not outside input: what gpufabric ships, or what the kernel says of a process gpufabric started.
    ("gpufabric/intent/loader.py", "default_fabric_text"): "the fabric shipped in the package (importlib.resources)",
    ("gpufabric/nos/sonic/__init__.py", "_frr_template"): "a template shipped in the package",
    ("gpufabric/pids.py", "alive"): "/proc/PID/status of a daemon the lab started",
    ("gpufabric/lab/daemons.py", "_is_syslog"): "/proc/PID/cmdline of the syslog process the lab started",
    (
        "gpufabric/fleet/lab/registry.py",
        "locked",
    ): "the labs' registry folder, opened to hold a lock on it: nothing read",
    ("gpufabric/lab/syslog.py", "switch_of"): "/proc/PID/cmdline of a syslog sender, the kernel's, sliced to a bound",
    ("gpufabric/lab/syslog.py", "own_queue"): "a sysctl of the network namespace the syslog process made for itself",
    ("gpufabric/files.py", "current_umask"): "/proc/self/status, this process's own umask",
    ("gpufabric/lab/hosts/container.py", "leader"): "/proc of the systemd-nspawn the lab started",
    ("gpufabric/lab/hosts/container.py", "_is_container_init"): "/proc/PID/comm of the container's init",
    ("gpufabric/lab/hosts/rootfs.py", "_prune"): "/proc/self/mountinfo, this process's own mounts",
    ("gpufabric/lab/hosts/fleet.py", "_remove_root"): "/proc/mounts, the kernel's list of mounts",
    ("gpufabric/telemetry/probe_agent.py", "_line"): "its stdin: the `go` line of the triage process that "
    "started it (a pipe, not a file)",
    # Not files: a NAPALM driver's or connection's open() logs in to a switch.
    ("gpufabric/fleet/access.py", "RevealingNapalm.open"): "a NAPALM connection's open, not a file",
    ("gpufabric/fleet/connect.py", "switch_connector.connect"): "a NAPALM driver's open, not a file",
    ("gpufabric/nos/frr/driver.py", "FrrDriver.open"): "the parent driver's open (an SSH session)",
    # Writes that are not whole files: a new file in a folder no one sees yet, locks, append-only logs.
    ("gpufabric/files.py", "write_new"): "O_CREAT|O_EXCL (never through a link) in a folder only this "
    "run can see until it is renamed into place",
    ("gpufabric/owned_files.py", "open_owned"): "locks and append-only logs: O_NOFOLLOW, a plain file of this account "
    "with one name, in a folder checked by owned_dir",
    ("gpufabric/remediate/trail.py", "_sync_folder"): "the trail's folder opened O_DIRECTORY to fsync a new file's "
    "name; nothing is read",
    ("gpufabric/files.py", "append_line"): "append-only files (SSH and TLS known hosts): O_NOFOLLOW, "
    "never blocking on a FIFO, plain file only",
    ("gpufabric/ib/lab.py", "_start_time"): "/proc/PID/stat of a simulator or subnet manager the lab started",
    # The InfiniBand lab's own logs, written by the simulator and OpenSM it started, in its state folder.
    ("gpufabric/ib/sim.py", "_wait_for"): "a log of a process the lab started, polled for a line",
    ("gpufabric/ib/sim.py", "Simulator.start"): "the simulator's log, opened for it to write",
    ("gpufabric/ib/sim.py", "Simulator.console"): "the simulator's console FIFO, made by the lab",
    ("gpufabric/ib/sim.py", "OpenSm.start"): "OpenSM's log, opened for it to write",
    ("gpufabric/ib/sim.py", "OpenSm.sweeps"): "OpenSM's log, counted for its sweeps",
    # Standard input handed to gpufabric.inputs.read_stream (bounded, UTF-8 located).
    ("gpufabric/cli/ib_cmd.py", "_live_or_file"): "ibnetdiscover output on stdin, read by inputs.read_stream",
}


@dataclass(frozen=True)
class Read:
    module: str
    function: str  # qualified within the module; "<module>" at its top level
    how: str
    line: int

    def __str__(self) -> str:
        return f"{self.module}:{self.line} in {self.function}: {self.how}"


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.scope: list[str] = []
        self.streams: list[set[str]] = [set()]  # per function: names bound by `with ... as NAME`
        self.found: list[Read] = []

    def _add(self, node: ast.AST, how: str) -> None:
        self.found.append(Read(self.module, ".".join(self.scope) or "<module>", how, getattr(node, "lineno", 0)))

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.streams.append(set())
        self.generic_visit(node)
        self.streams.pop()
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node)

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            if isinstance(item.optional_vars, ast.Name):
                self.streams[-1].add(item.optional_vars.id)
        self.generic_visit(node)

    def visit_With(self, node: ast.With) -> None:
        self._with(node)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self._with(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "open" and isinstance(node.ctx, ast.Load):
            self._add(node, "open")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        base = _dotted(node.value)
        if isinstance(node.value, ast.Call):  # Path(p).read_text()
            base = f"{_dotted(node.value.func) or ''}(...)"
        elif base is None:  # (folder / name).write_text()
            base = "(...)"
        if node.attr in OPENERS and base not in INPUTS_MODULE:
            self._add(node, f"{base}.{node.attr}")
        elif base == "sys" and node.attr == "stdin":
            self._add(node, "sys.stdin")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            pair = (func.value.id, func.attr)
            if pair in COPIES:
                self._add(node, ".".join(pair))
            elif pair in STREAM_LOADERS and (pair in ALWAYS_A_FILE or self._a_stream(node.args[:1])):
                self._add(node, f"{'.'.join(pair)} of a file")
        self.generic_visit(node)

    def _a_stream(self, args: list[ast.expr]) -> bool:
        """The argument is an open file: a name bound by `with ... as`, an opening call, or stdin."""
        if not args:
            return False
        arg = args[0]
        if isinstance(arg, ast.Name):
            return arg.id in self.streams[-1]
        if isinstance(arg, ast.Call):
            name = _dotted(arg.func) or ""
            return name.rsplit(".", 1)[-1] in {"open", "open_input", "fdopen"}
        return _dotted(arg) == "sys.stdin"


def reads_in(source: str, module: str) -> list[Read]:
    finder = _Finder(module)
    finder.visit(ast.parse(source))
    return finder.found


def _modules() -> list[Path]:
    return sorted(p for pattern in SCANNED for folder in ROOT.glob(pattern) for p in folder.rglob("*.py"))


@cache
def all_reads() -> list[Read]:
    found: list[Read] = []
    for path in _modules():
        found += reads_in(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    return found


def test_every_file_read_or_written_goes_through_the_one_reader_or_writer():
    bypasses = [r for r in all_reads() if r.module != THE_READER and (r.module, r.function) not in ALLOWED]
    assert not bypasses, (
        "read outside input through gpufabric.inputs (read_text, read_bytes, read_json, read_yaml, "
        "read_lines, open_input) and write files through gpufabric.files.write_atomic; a read that "
        "is not outside input goes on ALLOWED with its reason:\n" + "\n".join(map(str, bypasses))
    )


def test_every_allowed_entry_still_names_a_reader():
    named = {(r.module, r.function) for r in all_reads()}
    stale = sorted(set(ALLOWED) - named)
    assert not stale, f"these no longer open a file: remove them from ALLOWED: {stale}"


def test_the_scan_covers_the_package_and_its_plugins():
    modules = {p.relative_to(ROOT).as_posix() for p in _modules()}
    assert {THE_READER, "nornir_tasks/push.py", "napalm_frr/__init__.py", "plugins/inventory/gpufabric.py"} <= modules
    assert len([m for m in modules if m.startswith("gpufabric/")]) > 150


PLANTED = """
import json, os, shutil, sys, yaml
from pathlib import Path
from gpufabric import inputs
from gpufabric.inputs import open_input, read_text

def sneaky(path):
    text = Path(path).read_text()
    with open(path, "rb") as fh:
        fh.read()
    return text

class Snapshot:
    def load(self, path):
        with open_input(path, what="x") as fh:
            return yaml.safe_load(fh), json.load(fh)

def piped():
    return yaml.safe_load(sys.stdin)

def writes(path, data):
    path.write_text(data)
    os.open(path, os.O_WRONLY)
    shutil.copyfile(path, "/tmp/x")
    return list(map(Path.read_bytes, [path]))

def fine(path, text):
    inputs.read_text(path, what="x", max_bytes=1)
    return read_text(path, what="x", max_bytes=1), yaml.safe_load(text), json.loads(text), os.path.exists(path)
"""


def test_the_checker_catches_a_planted_bypass():
    found = [(r.function, r.how) for r in reads_in(PLANTED, "gpufabric/planted.py")]
    assert found == [
        ("sneaky", "Path(...).read_text"),
        ("sneaky", "open"),
        ("Snapshot.load", "yaml.safe_load of a file"),
        ("Snapshot.load", "json.load of a file"),
        ("piped", "yaml.safe_load of a file"),
        ("piped", "sys.stdin"),
        ("writes", "path.write_text"),
        ("writes", "os.open"),
        ("writes", "shutil.copyfile"),
        ("writes", "Path.read_bytes"),
    ]
    assert all(r.module == "gpufabric/planted.py" and r.line > 0 for r in reads_in(PLANTED, "gpufabric/planted.py"))
