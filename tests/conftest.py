from __future__ import annotations

import contextlib
import copy
import fcntl
import functools
import gc
import io
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufabric.intent import load_intent, load_intent_text
from gpufabric.plan import Plan, build_plan

# Test modules import this file as `conftest` or as `tests.conftest`: one module either way, so the
# caches below are made once per process, not once per name.
sys.modules.setdefault("tests.conftest", sys.modules[__name__])

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = ROOT / "inventory"
# Designs too large for a test that sweeps every example: the 131,072-GPU fabric (12,702 switches) takes
# seconds to plan and most of a minute to render with its exports, so a sweep over it would cost minutes
# per test. Its own tests (tests/plan/test_multiplane_131k.py: the plan, and a sample of its rendered
# switches judged by the vendor model) and the benches (docs/benchmarks.md) prove it instead.
HUGE_DESIGNS = frozenset({"multiplane-131k"})
SHIPPED_EXAMPLES = sorted((INVENTORY / "examples").glob("*.yml"))
EXAMPLES = [p for p in SHIPPED_EXAMPLES if p.stem not in HUGE_DESIGNS]  # what the sweeps go over
ALL_INTENTS = [INVENTORY / "fabric.yml", *EXAMPLES]
BIN = Path(sys.executable).parent
# containerlab's schema sits in ../shared beside a clone (CI has it; GPUFABRIC_SHARED names another folder); tests
# that need it say so when it is absent.
CLAB_SCHEMA = (
    Path(os.environ.get("GPUFABRIC_SHARED", ROOT.parent / "shared")) / "schemas" / "containerlab-topology.schema.json"
)
# The Network Operator's, nv-ipam's and SR-IOV's CRDs, also in ../shared (GPUFABRIC_SHARED names another folder).
K8S_CRDS = Path(os.environ.get("GPUFABRIC_SHARED", ROOT.parent / "shared")) / "schemas" / "k8s-network"
# SONiC's YANG models for CONFIG_DB (sonic-yang-models), in the same folder.
SONIC_YANG = Path(os.environ.get("GPUFABRIC_SHARED", ROOT.parent / "shared")) / "schemas" / "sonic-yang"


def default_doc() -> dict[str, Any]:
    return yaml.safe_load((INVENTORY / "fabric.yml").read_text())


def plan_doc(doc: dict[str, Any], name: str = "<test>") -> Plan:
    return build_plan(load_intent_text(yaml.safe_dump(doc, sort_keys=False), name))


def plan_text(text: str, name: str = "<test>") -> Plan:
    return build_plan(load_intent_text(text, name))


def set_path(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy of doc with `path` set to `value` (or removed when value is DELETE)."""
    out = copy.deepcopy(doc)
    node = out
    for part in path[:-1]:
        node = node[part]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


DELETE = object()

# Tiers. A folder sets the tier of every test in it: tests/lab/ brings up namespaces, host containers,
# ibsim or the demo, as root; tests/molecule/ boots Molecule's own hosts. Anywhere else a test says it is
# `slow` itself (seconds each: the 32k fabric, fuzzing, several CLI or Ansible runs): `@pytest.mark.slow`,
# `pytestmark` for a whole file, or `sized(...)`/`pytest.param(..., marks=pytest.mark.slow)` for the slow
# cases of a parametrized test. `scripts/test.sh --fast` runs neither lab nor slow; CI runs all.
HERE = Path(__file__).resolve().parent
FOLDER_MARKS = {"lab": ("lab", "root"), "molecule": ("lab", "root", "molecule")}
# The largest shipped designs: a plan or a rendering of one takes seconds, so a case over one is `slow`
# and the fast tier keeps the smaller ones (the default fabric, multi-vendor, sonic, superpod-1su,
# lab-infiniband).
LARGE_DESIGNS = frozenset(
    {"three-tier-32k", "rail-28k", "superpod-4su", "superpod-ib", "superpod-b200-ib", *HUGE_DESIGNS}
)


def sized(cases: Any) -> list[Any]:
    """A parametrized test's cases over shipped intents, each over one of the largest designs marked `slow`.
    A case is an intent (a path or a name such as "examples/rail-28k.yml" or "rail-28k"), or a tuple of
    arguments whose first is one."""
    out: list[Any] = []
    for case in cases:
        values = case if isinstance(case, tuple) else (case,)
        large = Path(str(values[0])).stem in LARGE_DESIGNS
        out.append(pytest.param(*values, marks=pytest.mark.slow) if large else case)
    return out


pytest_plugins = ["stop_on_sigterm"]  # SIGTERM (CI, `timeout`) stops a run as Ctrl-C does: teardowns run


# Tests slow by measure (scripts/slow_by_measure.py): `slow` as if they said so themselves.
SLOW_BY_MEASURE = frozenset(
    line for line in (HERE / "slow_by_measure.txt").read_text().splitlines() if line and not line.startswith("#")
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long-first",
        action="store_true",
        help="run the modules holding the longest tests first (tests/long_first.py): the offline lane's order",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("long_first"):
        from long_first import long_first, read_seconds

        items[:] = [items[i] for i in long_first([item.nodeid for item in items], read_seconds())]
    for item in items:
        if item.nodeid in SLOW_BY_MEASURE:
            item.add_marker(pytest.mark.slow)
        try:
            folder = item.path.resolve().relative_to(HERE).parts[0]
        except ValueError:  # a test file outside tests/
            continue
        for mark in FOLDER_MARKS.get(folder, ()):
            item.add_marker(mark)


DEFAULT_LAB_GROUP = "default-lab"


@functools.cache
def _has_a_lab_of_its_own(module: str) -> bool:
    """The lab module `module` (a path from the checkout) is marked `own_lab` or `beside_lab` in its pytestmark:
    read from its text, since the scheduler sees node ids, not items."""
    text = (ROOT / module).read_text()
    return "pytest.mark.own_lab" in text or "pytest.mark.beside_lab" in text


def lab_scope(nodeid: str) -> str:
    """The work unit a test of the lab lane goes with: every module on the default lab (any lab module not
    marked `own_lab` or `beside_lab`, under tests/lab/ or elsewhere) one unit, which one worker runs a module
    after another; each module with a lab of its own, or none, a unit of its own, which any worker takes as it
    comes free."""
    module = nodeid.split("::", 1)[0]
    return module if _has_a_lab_of_its_own(module) else DEFAULT_LAB_GROUP


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` on the lab lane (scripts/test.sh) schedules by lab_scope. pytest-xdist's own loadgroup
    renames each grouped test's node id, which pytest 9.2 no longer lets it do: every test went its own way, a
    module's tests to both workers, and two workers brought up one module's lab at once."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LabScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return lab_scope(nodeid)

    return LabScheduling(config, log)


@pytest.fixture(scope="module", autouse=True)
def _default_lab_to_itself(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The lab tests side by side (CI runs them on three xdist workers): a module marked `own_lab` brings up a lab
    of its worker's own (tests/lab_slot.py); any other lab module brings up the default lab, and holds the
    default lab's lock while it runs, so no two such modules run at once, whichever worker has them. Under
    `--dist loadgroup` they all go to one worker anyway (DEFAULT_LAB_GROUP): the lock is for other ways of
    spreading them (`--dist loadfile`), where a worker would wait on it."""
    module = request.node
    on_a_lab = Path(str(module.path)).parent == HERE / "lab" or bool(module.get_closest_marker("lab"))
    # Molecule's hosts have names of their own.
    if not on_a_lab or any(module.get_closest_marker(m) for m in ("own_lab", "beside_lab", "molecule")):
        yield
        return
    # The workers' temporary folders are siblings under the run's: the lock beside them is the run's one.
    base = tmp_path_factory.getbasetemp()
    folder = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    fd = os.open(folder / "default-lab.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits while another worker's module has the default lab
        yield
    finally:
        os.close(fd)


# Every test renders with these planted secrets; the secret tests grep every output for them.
SWITCH_PASSWORD_CANARY = "canary-Switch-Pw-7e41"
SNMP_CANARY = "canary-Snmp-Community-0b9c"
SALT_KEY_CANARY = "canary-Salt-Key-5d02"
os.environ.setdefault("GPUFABRIC_SALT_KEY", SALT_KEY_CANARY)
os.environ.setdefault("GPUFABRIC_SWITCH_PASSWORD", SWITCH_PASSWORD_CANARY)
os.environ.setdefault("GPUFABRIC_SNMP_COMMUNITY", SNMP_CANARY)
# The tests' own vtysh commands (FRR's parser, the lab's running configs) keep no history in ~/.history_frr.
os.environ["VTYSH_HISTFILE"] = "/dev/null"


@pytest.fixture(autouse=True, scope="session")
def audit_log_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Pushes the tests run (in process or as commands) keep their audit trail in a temporary folder,
    never in the account's own (~/.local/state/gpufabric, or /var/log/gpufabric for root)."""
    before = os.environ.get("GPUFABRIC_AUDIT_LOG")
    os.environ["GPUFABRIC_AUDIT_LOG"] = str(tmp_path_factory.mktemp("audit") / "audit.jsonl")
    yield
    if before is None:
        os.environ.pop("GPUFABRIC_AUDIT_LOG", None)
    else:
        os.environ["GPUFABRIC_AUDIT_LOG"] = before


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("GPUFABRIC_DEBUG", None)
    env.update(extra)
    return env


def run(
    *args: str, cwd: Path = ROOT, check: bool = False, text: bool = True, **env: str
) -> subprocess.CompletedProcess:
    """Run one of the project's commands as a user would, with this venv's tools first on PATH. Interrupted
    (Ctrl-C, or SIGTERM taken as one), the command is stopped as a user's Ctrl-C or a service manager would
    stop it, with SIGTERM and time to undo what it had started (a lab half up, a simulator and its subnet
    managers), where subprocess.run's SIGKILL left those running."""
    with subprocess.Popen(
        list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text, cwd=cwd, env=cli_env(**env)
    ) as proc:
        try:
            out, err = proc.communicate()
        except BaseException:
            stop_command(proc)
            raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


STOP_SECONDS = 300  # a command's own undoing on a loaded machine (a lab's teardown), before SIGKILL


def stop_command(proc: subprocess.Popen, *, group: bool = False, grace: float = STOP_SECONDS) -> None:
    """Stop what a test started as a user's Ctrl-C or a service manager would: SIGTERM, then `grace` seconds
    for it to undo its work, its pipes read meanwhile (a full one would hold it), then SIGKILL. `group`: the
    process leads a group of its own (start_new_session), which gets both signals; SIGKILL goes to the group
    even once its leader has ended, for a worker the leader left behind (an Ansible fork)."""

    def send(sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):  # already gone
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)

    send(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=grace)
    if group or proc.poll() is None:
        send(signal.SIGKILL)
        proc.wait()


def run_in_process(
    prog: str, *args: str | os.PathLike[str], cwd: Path = ROOT, check: bool = False, **env: str
) -> subprocess.CompletedProcess[str]:
    """`prog ARGS` (`gpufabric` or `nornir`) as `run` runs it, but in this process: the function the
    console script calls (`gpufabric.cli:main`, with its exit codes and its last line of defence), with
    sys.argv, the environment, the working folder, stdin (empty), stdout and stderr (not terminals, as
    `run`'s pipes are not) its own for the call and put back after it, and what a command may change for
    its process (the cycle collector, gpufabric's loggers, signal handlers) put back too. A test whose
    point is the process itself (start-up cost, the console scripts, a bound on time or memory, a signal)
    uses `run`; a test of what a command prints and exits with uses this, without a Python start per call."""
    from gpufabric.cli import main
    from gpufabric.cli.logs import PACKAGES

    assert prog in ("gpufabric", "nornir"), prog
    streams = sys.stdin, sys.stdout, sys.stderr
    argv, environ, folder, collecting = sys.argv, dict(os.environ), os.getcwd(), gc.isenabled()
    loggers = [(lg, lg.level, list(lg.handlers), lg.propagate) for lg in map(logging.getLogger, PACKAGES)]
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    out, err = io.BytesIO(), io.BytesIO()
    # Python's own streams on pipes: UTF-8, stderr with backslash escapes for what UTF-8 cannot carry.
    stdin, stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.TextIOWrapper(out, encoding="utf-8")
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace")
    code: Any = 0
    try:
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        sys.argv = [str(BIN / prog), *map(str, args)]
        wanted = cli_env(**env)
        os.environ.clear()
        os.environ.update(wanted)
        os.chdir(cwd)
        try:
            main()
        except SystemExit as exc:
            code = exc.code
        if not isinstance(code, int):  # sys.exit(text): Python prints it and exits 1
            if code is not None:
                print(code, file=sys.stderr)
            code = 0 if code is None else 1
    finally:
        stdout.flush()
        stderr.flush()
        sys.stdin, sys.stdout, sys.stderr = streams
        sys.argv = argv
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(folder)
        (gc.enable if collecting else gc.disable)()
        for logger, level, kept, propagate in loggers:
            logger.setLevel(level)
            logger.handlers[:] = kept
            logger.propagate = propagate
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    done = subprocess.CompletedProcess([prog, *map(str, args)], code, out.getvalue().decode(), err.getvalue().decode())
    if check:
        done.check_returncode()
    return done


@pytest.fixture(scope="session")
def default_plan() -> Plan:
    return plan_doc(default_doc(), "inventory/fabric.yml")


# -- what many tests read of the same shipped intent, made once ------------------------------------------
# The per-example tests of a dozen files plan the same intents (the 32k fabric: seconds each time), and
# two of them run `nornir render` on each. A plan is made once per test process (an xdist worker is one)
# and shared: the tests read it and never change it. A rendering through the CLI is made once per run, by
# the first worker that asks; the others wait on its lock and read its folder and output. It lives under
# the run's temporary folder, so every run renders anew from the code under test.


@functools.cache
def _plan_of(resolved: str) -> Plan:
    return build_plan(load_intent(resolved))


def example_plan(path: Path | str) -> Plan:
    """The plan of a shipped intent (inventory/...), made once per test process. Shared: never change it."""
    return _plan_of(str(Path(path).resolve()))


@dataclass(frozen=True)
class Rendering:
    """What `nornir render INTENT -o FOLDER` wrote and printed, run as a user runs it (with the planted
    switch password and SNMP community). The folder is shared: read it, never write into it."""

    folder: Path
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def cli_rendering(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Rendering]:
    base = tmp_path_factory.getbasetemp()
    # An xdist worker's folder is one of the run's (<run>/popen-gwN): the run's own is shared by all.
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "cli-renderings"
    shared.mkdir(exist_ok=True)

    def rendering(path: Path) -> Rendering:
        key = str(Path(path).resolve().relative_to(ROOT)).replace("/", "--")
        record = shared / f"{key}.json"
        with open(shared / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the lock file closes
            if not record.exists():
                folder = shared / key
                done = run(
                    "nornir", "render", str(path), "-o", str(folder),
                    GPUFABRIC_SWITCH_PASSWORD=SWITCH_PASSWORD_CANARY, GPUFABRIC_SNMP_COMMUNITY=SNMP_CANARY,
                )  # fmt: skip
                made = {"folder": str(folder), "returncode": done.returncode, "stdout": done.stdout}
                record.with_suffix(".new").write_text(json.dumps(made | {"stderr": done.stderr}))
                record.with_suffix(".new").replace(record)
        found = json.loads(record.read_text())
        return Rendering(Path(found["folder"]), found["returncode"], found["stdout"], found["stderr"])

    return rendering
