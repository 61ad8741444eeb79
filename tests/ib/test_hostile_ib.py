"""Hostile InfiniBand inputs: the design file, discovery files, ibnetdiscover's output and the lab's
record. Each is refused with a located error (file, line, field, fix; exit 2 from the CLI), in
bounded time and memory, and nothing outside a pattern reaches a line of OpenSM's files."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpufabric.cli import main
from gpufabric.cli.ib_cmd import ib_cmd
from gpufabric.ib import discovery, lab, opensm, topology, validate
from gpufabric.ib.design import IbDesign
from gpufabric.ib.design_file import load
from gpufabric.ib.errors import IbError
from gpufabric.ib.planner import plan_fabric
from gpufabric.ib.results import Result as Check
from gpufabric.intent.errors import IntentError
from tests.conftest import ROOT, run_in_process

RECORDED = Path(__file__).parents[1] / "recorded" / "ib" / "mini.ibnetdiscover"
MINI = """\
infiniband:
  name: mini
  su_count: 2
  nodes_per_su: 4
  rails: 2
  fabric_manager_ports: 2
  fabric_manager_ports_per_host: 1
  partitions:
    - {name: tenant-a, pkey: 0x0101, hosts: [dgx001, dgx002], sl: 1}
"""
MINI_DESIGN = IbDesign(
    "mini", su_count=2, nodes_per_su=4, rails=2, fabric_manager_ports=2, fabric_manager_ports_per_host=1
)
TENANT = opensm.Partition("tenant-a", 0x0101, ("dgx001", "dgx002"), sl=1)
Capture = pytest.CaptureFixture[str]
DISCOVERY_MAX = 16 << 20
TOPOLOGY_MAX = 64 << 20


def _refused(text: str) -> IntentError:
    with pytest.raises(IntentError) as caught:
        load(text, "ib.yml")
    return caught.value


def _says(error: IntentError, line: int, field: str, message: str, fix: str) -> None:
    """The rendered error has `file:line: field...: ...message...` and a fix line with `fix`."""
    text = error.render()
    lines = text.splitlines()
    at = [i for i, row in enumerate(lines) if row.startswith(f"error: ib.yml:{line}: {field}") and message in row]
    assert at, text
    assert lines[at[0] + 1].startswith("  fix: ") and fix in lines[at[0] + 1], text


def _main(capsys: Capture, args: list[str]) -> tuple[int, str]:
    """The command line as a user runs it (exit code, stderr), in this process; a read that would block
    fails the test instead of hanging it."""
    with _deadline(20), pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0), capsys.readouterr().err


def _mini_with_partition(entry: str) -> str:
    return MINI.replace("    - {name: tenant-a, pkey: 0x0101, hosts: [dgx001, dgx002], sl: 1}", f"    - {entry}")


def _found() -> discovery.Discovery:
    return discovery.discover(plan_fabric(MINI_DESIGN), topology.parse(RECORDED.read_text()))


# --- 1. names that reach opensm.conf and partitions.conf ----------------------------------------

PARTITION_SYNTAX = [
    '"evil=0x0101, ipoib, defmember=full : ALL ;\\nx"',
    '"a=b"',
    '"a,b"',
    '"a:b"',
    '"a;b"',
    "ALL",
    '"a\\nALL=full"',
    "default",
    "all",
]


@pytest.mark.parametrize("name", PARTITION_SYNTAX)
def test_a_partition_name_holding_partitions_conf_syntax_is_refused_at_its_line(name: str) -> None:
    error = _refused(_mini_with_partition(f"{{name: {name}, pkey: 0x0101, hosts: [dgx001, dgx002]}}"))
    _says(error, 9, "infiniband.partitions[0].name", "", "")
    assert "fix: " in error.render()


def test_the_tenant_isolation_attack_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported case end to end: before, exit 0 and every adapter a full member of a tenant."""
    design = tmp_path / "ib.yml"
    design.write_text(
        _mini_with_partition(r'{name: "t=0x0102, defmember=full : ALL ;\nx", pkey: 0x0101, hosts: [dgx001]}')
    )
    disc = tmp_path / "discovery.json"
    disc.write_text(_found().dumps())
    out = tmp_path / "sm"
    code, err = _main(capsys, ["ib", "configs", str(design), "--discovery", str(disc), "-o", str(out)])
    assert code == 2, err
    assert f"{design}:9: infiniband.partitions[0].name:" in err and "fix:" in err
    assert "Traceback" not in err and not out.exists()


def test_newlines_in_the_design_name_are_refused_at_its_line() -> None:
    error = _refused(MINI.replace("name: mini", r'name: "mini\nignore_other_sm TRUE\nconsole_port 10000"'))
    _says(error, 2, "infiniband.name", "is not allowed here", "lower-case letters, digits and '-'")


# --- 2. YAML 1.2 core, strict types, PKeys as written -------------------------------------------


@pytest.mark.parametrize("written", ["0x0101", '"0x0101"', "'0X101'", "257"])
def test_pkeys_are_taken_as_written_in_hex_text_or_decimal(written: str) -> None:
    intent = load(_mini_with_partition(f"{{name: tenant-a, pkey: {written}, hosts: [dgx001]}}"), "ib.yml")
    assert intent.settings.partitions[0].pkey == 0x0101


@pytest.mark.parametrize("written", ["0101", '"0101"'])
def test_a_pkey_with_a_leading_zero_is_refused_saying_what_to_write(written: str) -> None:
    """YAML 1.1 made 0101 the PKey 0x0041; neither octal nor decimal is guessed."""
    error = _refused(_mini_with_partition(f"{{name: tenant-a, pkey: {written}, hosts: [dgx001]}}"))
    _says(error, 9, "infiniband.partitions[0].pkey", "leading zero", "write 0x0101 for hexadecimal or 101 for decimal")


@pytest.mark.parametrize(
    ("written", "message", "fix"),
    [
        ("0x8101", "full-membership bit", "write 0x0101"),
        ("0x7fff", "out of range", "0x0001-0x7ffe (0x7fff is the default partition)"),
        ("0", "out of range", "0x0001-0x7ffe"),
        ("0x10000", "is not a PKey", "hexadecimal like 0x0101"),
        ("0o101", "is not a PKey", "hexadecimal like 0x0101"),
        ("true", "is not a PKey", "hexadecimal like 0x0101"),
        ("257.0", "is not a PKey", "decimal like 257"),
    ],
)
def test_pkeys_of_other_forms_are_refused_with_the_form_to_write(written: str, message: str, fix: str) -> None:
    error = _refused(_mini_with_partition(f"{{name: tenant-a, pkey: {written}, hosts: [dgx001]}}"))
    _says(error, 9, "infiniband.partitions[0].pkey", message, fix)


@pytest.mark.parametrize(
    ("entry", "field", "message", "fix"),
    [
        ('ipoib: "false"', "ipoib", "is not true or false", "write true or false"),
        ("ipoib: 0", "ipoib", "is not true or false", "write false"),
        ("sl: 1.9", "sl", "is not an integer", "write a whole number"),
        ("sl: 2.0", "sl", "is not an integer", "write 2"),
        ('sl: "2"', "sl", "is not an integer", "unquoted"),
    ],
)
def test_booleans_and_integers_in_a_partition_are_strict(entry: str, field: str, message: str, fix: str) -> None:
    error = _refused(_mini_with_partition(f"{{name: tenant-a, pkey: 0x0101, hosts: [dgx001], {entry}}}"))
    _says(error, 9, f"infiniband.partitions[0].{field}", message, fix)


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "fix"),
    [
        ("su_count: 2", "su_count: 2.0", 3, "infiniband.su_count", "write 2, without the decimal point"),
        ("rails: 2", "rails: true", 5, "infiniband.rails", "write a whole number"),
        ("nodes_per_su: 4", "nodes_per_su: 04", 4, "infiniband.nodes_per_su", "write 4"),
        ("  partitions:", "  tiers: 2.0\n  partitions:", 8, "infiniband.tiers", "write 2"),
    ],
)
def test_design_numbers_are_not_coerced(old: str, new: str, line: int, field: str, fix: str) -> None:
    _says(_refused(MINI.replace(old, new)), line, field, "", fix)


def test_the_cli_exits_2_on_coerced_values_with_file_line_field_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ib.yml"
    path.write_text(_mini_with_partition('{name: tenant-a, pkey: 0101, hosts: [dgx001], ipoib: "false"}'))
    code, err = _main(capsys, ["ib", "plan", str(path)])
    assert code == 2
    assert f"{path}:9: infiniband.partitions[0].pkey:" in err
    assert f"{path}:9: infiniband.partitions[0].ipoib:" in err
    assert "fix: write 0x0101" in err and "Traceback" not in err


# --- 3. limits checked before anything is built -------------------------------------------------


def test_millions_of_scalable_units_are_refused_before_anything_is_built() -> None:
    """Before, su_count: 2000000 built every adapter first: over 30 s and 1.9 GB."""
    text = "infiniband:\n  name: huge\n  superpod: dgx-b200\n  su_count: 2000000\n"
    tracemalloc.start()
    started = time.monotonic()
    try:
        error = _refused(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 20  # generous: it is refused from the numbers alone
    assert peak < 50 << 20, peak
    _says(error, 4, "infiniband.su_count", "one InfiniBand subnet has 49,151", "plan at most 186 SUs")


def test_a_design_one_subnet_cannot_hold_is_refused_in_any_shape() -> None:
    """Many tiny SUs, or hosts listed by name: the LIDs bound them too."""
    error = _refused("infiniband:\n  su_count: 30000\n  nodes_per_su: 1\n  rails: 1\n")
    _says(error, 2, "infiniband.su_count", "need at least 60,000 LIDs", "plan at most")


# --- 4. the intent's patterns for names -----------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "written", "says"),
    [
        ("node_name", "'x{index.__class__}'", "has the field {index.__class__}"),
        ("node_name", "'x{index:>99999}'", "has the field {index:>99999}"),
        ("node_name", "'x{0}'", "has the field {0}"),
        ("node_name", "'gpu'", "one name for several nodes"),
        ("node_name", "'Gpu {index}'", "around its fields"),
        ("hosts", '[dgx001, "dgx\\"2"]', "is not allowed here"),
        ("hosts", "[dgx001, dgx001]", "listed twice"),
        ("hca_names", '[mlx5_0, "mlx5_1 \\"x"]', "is not allowed here"),
        ("hca_names", "[mlx5_0, mlx5_0]", "listed twice"),
    ],
)
def test_names_that_reach_node_descriptions_and_files_have_patterns(field: str, written: str, says: str) -> None:
    error = _refused(MINI.replace("  partitions:", f"  {field}: {written}\n  partitions:"))
    _says(error, 8, f"infiniband.{field}", says, "")


def test_a_host_named_like_a_fabric_manager_port_is_refused() -> None:
    """ufm1's adapter would be one node twice: refused, not merged."""
    hosts = "[ufm1, dgx002, dgx003, dgx004, dgx005, dgx006, dgx007]"
    error = _refused(MINI.replace("  partitions:", f"  hosts: {hosts}\n  hca_names: [mlx5_0, mlx5_1]\n  partitions:"))
    _says(error, 8, "infiniband.hosts", "two nodes are named 'ufm1 mlx5_0'", "distinct names")


# --- 5. the renderers refuse what would break a line --------------------------------------------


def _render(**change: object) -> dict[str, str]:
    fabric = plan_fabric(MINI_DESIGN)
    found = _found()
    settings = opensm.SmSettings(partitions=(TENANT,))
    args: dict[str, object] = {"fabric": fabric, "found": found, "settings": settings, "directory": Path("/srv/sm")}
    args.update(change)
    return opensm.render(**args)  # type: ignore[arg-type]


def _renamed(old: str, new: str) -> tuple[object, discovery.Discovery]:
    fabric = plan_fabric(MINI_DESIGN)
    nodes = tuple(dataclasses.replace(n, name=new) if n.name == old else n for n in fabric.nodes)
    found = _found()
    guids = {new if k == old else k: v for k, v in found.nodes.items()}
    return dataclasses.replace(fabric, nodes=nodes), discovery.Discovery(found.fabric, guids)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"settings": opensm.SmSettings(partitions=(dataclasses.replace(TENANT, name="t=0x2 : ALL ;"),))}, "partition"),
        ({"settings": opensm.SmSettings(partitions=(dataclasses.replace(TENANT, name="ALL"),))}, "partition"),
        ({"settings": opensm.SmSettings(extra={"log_flags": "0x03\nignore_other_sm TRUE"})}, "option"),
        ({"settings": opensm.SmSettings(routing_engine="updn\nqos FALSE")}, "routing engine"),  # type: ignore[arg-type]
        ({"directory": Path("/srv/sm dir\nignore_other_sm TRUE")}, "path"),
        (
            {
                "fabric": dataclasses.replace(
                    plan_fabric(MINI_DESIGN), design=dataclasses.replace(MINI_DESIGN, name="a\nb")
                )
            },
            "fabric name",
        ),
    ],
)
def test_the_renderer_refuses_a_value_that_would_break_a_line(change: dict[str, object], says: str) -> None:
    """Defence in depth: the API takes these without the design file's checks."""
    with pytest.raises(IbError) as caught:
        _render(**change)
    assert any(says in p.message and p.fix for p in caught.value.problems), caught.value


def test_the_node_name_map_refuses_a_name_with_a_quote() -> None:
    fabric, found = _renamed("su1-leaf1", 'su1-leaf1" 0x1 "x')
    with pytest.raises(IbError, match="node description"):
        _render(fabric=fabric, found=found)


@pytest.mark.parametrize("bad", [-1, 0, 1 << 64, 1 << 80])
def test_guid_files_refuse_a_guid_that_is_no_eui64(bad: int) -> None:
    found = _found()
    nodes = {**found.nodes, "spine01": discovery.Guids(bad, bad)}
    with pytest.raises(IbError, match="GUID"):
        _render(found=discovery.Discovery(found.fabric, nodes))


# --- 6. discovery files, ibnetdiscover's output, the lab's record -------------------------------


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """A read that blocks (a FIFO with no writer) fails the test instead of hanging it."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _hostile_file(tmp_path: Path, kind: str, max_bytes: int) -> Path:
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
        return path
    if kind == "device":
        return Path("/dev/zero")
    if kind == "huge":
        path = tmp_path / "huge"
        with path.open("wb") as fh:
            fh.truncate(max_bytes + 1)  # sparse: costs no disk
        return path
    path = tmp_path / "latin1"
    path.write_bytes('{"fabric": "mini", "nodes": {"dgx001 mlx5_0": "caf\xe9"}}\n'.encode("latin-1"))
    return path


KINDS = {"fifo": "is a FIFO", "device": "is a device", "huge": "larger than 16 MiB", "latin1": "not UTF-8"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_discovery_file_that_is_no_regular_text_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = _hostile_file(tmp_path, kind, DISCOVERY_MAX)
    with _deadline(20), pytest.raises(IntentError) as caught:
        discovery.load(path)
    said = caught.value.render()
    assert KINDS[kind] in said and "fix:" in said, said


def test_a_discovery_fifo_exits_2_from_the_cli(tmp_path: Path, capsys: Capture) -> None:
    design = tmp_path / "ib.yml"
    design.write_text(MINI)
    fifo = _hostile_file(tmp_path, "fifo", 0)
    code, err = _main(capsys, ["ib", "configs", str(design), "--discovery", str(fifo), "-o", str(tmp_path / "sm")])
    assert code == 2 and "is a FIFO, not a regular file" in err, err
    assert not (tmp_path / "sm").exists()


@pytest.mark.parametrize(
    ("guids", "says"),
    [
        ({"node_guid": "0x1000000000000100000", "port_guid": "0x100001"}, "1-16 hex digits"),
        ({"node_guid": "-0x1", "port_guid": "0x100001"}, "1-16 hex digits"),
        ({"node_guid": "0x1_0", "port_guid": "0x100001"}, "1-16 hex digits"),
        ({"node_guid": "0x0", "port_guid": "0x100001"}, "1-16 hex digits"),
    ],
)
def test_a_discovery_guid_that_would_break_the_node_name_map_is_refused(guids: dict[str, str], says: str) -> None:
    body = json.loads(_found().dumps())
    body["nodes"]["su1-leaf1"] = guids
    with pytest.raises(IbError, match=says):
        discovery.loads(json.dumps(body), "discovery.json")


def test_a_discovery_name_that_is_no_node_description_is_refused() -> None:
    body = json.loads(_found().dumps())
    body["nodes"]['a" 0x1 "b\n'] = body["nodes"]["su1-leaf1"]
    with pytest.raises(IbError, match="no planned node description"):
        discovery.loads(json.dumps(body), "discovery.json")


def _invoke(args: list[str], stdin: object = None) -> Result:
    return CliRunner().invoke(ib_cmd, args, input=stdin)  # type: ignore[arg-type]


def _input_error(result: Result) -> str:
    assert isinstance(result.exception, IntentError), (result.exit_code, result.output, result.exception)
    return result.exception.render()


@pytest.mark.parametrize("kind", ["fifo", "device", "huge", "latin1"])
def test_ibnetdiscover_output_that_is_no_regular_text_file_is_refused(tmp_path: Path, kind: str) -> None:
    design = tmp_path / "ib.yml"
    design.write_text(MINI)
    source = _hostile_file(tmp_path, kind, TOPOLOGY_MAX)
    with _deadline(20):
        said = _input_error(_invoke(["discover", str(design), "--from", str(source)]))
    assert {"fifo": "is a FIFO", "device": "is a device", "huge": "larger than 64 MiB", "latin1": "not UTF-8"}[
        kind
    ] in said


def test_ibnetdiscover_output_on_stdin_is_bounded(tmp_path: Path) -> None:
    design = tmp_path / "ib.yml"
    design.write_text(MINI)
    with open("/dev/zero", "rb") as zero, _deadline(20):
        said = _input_error(_invoke(["discover", str(design), "--from", "-"], stdin=zero))
    assert "holds more than 64 MiB" in said


def _topology_with(old: str, new: str) -> str:
    text = RECORDED.read_text()
    assert old in text
    return text.replace(old, new)


ROGUE = (
    "\ncaguid=0x300000\n"
    'Ca\t1 "H-0000000000300000"\t\t# "rogue\x1b[2K\x1b[1A  all cables as planned"\n'
    '[1](300001) \t"S-0000000000200003"[9]\t\t# lid 30 lmc 0 "su2-leaf2" lid 7 4xSDR\n'
)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # An unplanned node whose description is a terminal escape: it would be printed on a diff line.
        (RECORDED.read_text() + ROGUE, "control character '\\x1b'"),
        # A GUID of 19 hex digits for a planned node: it would reach the node-name map and GUID files.
        (_topology_with("caguid=0x100000\n", "caguid=0x1000000000000100000\n"), "more than 16 hex digits"),
        (_topology_with("[1](100001) ", "[1](1000000000000100001) "), "unreadable line"),
        # Thousands of digits: int() refuses them with a ValueError (before: an internal error).
        (_topology_with('[1]\t"H-0000000000100000"', "[" + "9" * 5000 + ']\t"H-0000000000100000"'), "unreadable"),
        (_topology_with('# "dgx001 mlx5_0"\n', '# "' + "x" * 65 + '"\n'), "holds 64"),
    ],
)
def test_ibnetdiscover_output_with_injected_names_or_numbers_is_refused_at_its_line(
    tmp_path: Path, text: str, says: str
) -> None:
    design = tmp_path / "ib.yml"
    design.write_text(MINI)
    live = tmp_path / "live.topo"
    live.write_text(text)
    for command in ("discover", "diff"):
        said = _input_error(_invoke([command, str(design), "--from", str(live)]))
        assert says in said and f"{live}:" in said and "fix:" in said, said


def test_the_validate_table_writes_control_characters_as_escapes() -> None:
    rows = [Check("route", "rail 1: \x1b[2Kdgx001", "a", "spine\x1b[1A\x1b[2K ok\r", False)]
    table = validate.render_table(rows)
    assert "\x1b" not in table and "\r" not in table and "\\x1b[2Kdgx001" in table
    assert table.count("\n") == 3


def test_a_route_through_an_unplanned_switch_is_a_failed_check() -> None:
    fabric = plan_fabric(MINI_DESIGN)
    seen = topology.parse(RECORDED.read_text())

    def run(args: object) -> str:
        hops = ["su1-leaf1", "rogue\x1b[2K", "su2-leaf1"]
        return "".join(f'-> switch port {{0x1}}[1] lid 2-2 "{hop}"\n' for hop in hops)

    results = validate._routes(fabric, seen, run)
    assert results and not any(r.ok for r in results)


def _record(tmp_path: Path, body: object) -> Path:
    state = tmp_path / "lab"
    state.mkdir()
    (state / lab.STATE).write_text(json.dumps(body))
    return state


def _init_start() -> int:
    return int(Path("/proc/1/stat").read_text().rsplit(")", 1)[1].split()[19])


@pytest.mark.parametrize(
    "body",
    [
        {"processes": {"ibsim": {"pid": "1; reboot", "start": 0}}, "sockname": "s", "sm_host": "H-x"},
        {"processes": {"ibsim": {"pid": 1, "start": "init"}}, "sockname": "s", "sm_host": "H-x"},
        {"processes": [1, 2], "sockname": "s", "sm_host": "H-x"},
        {"processes": {}, "sockname": "s\nLD_PRELOAD=/tmp/x.so", "sm_host": "H-x"},
        {"processes": {}, "sockname": "s", "sm_host": 'H-x"\n'},
        ["not", "a", "record"],
    ],
)
def test_a_lab_record_not_of_the_shape_up_writes_is_refused(tmp_path: Path, body: object) -> None:
    with pytest.raises(IntentError, match="is not the InfiniBand lab's record"):
        lab.status(_record(tmp_path, body))


def test_a_lab_record_naming_init_is_refused_not_signalled(tmp_path: Path) -> None:
    """A forged record with PID 1 and its real start time: `status` would call it running, `down` stop it."""
    body = {"processes": {"ibsim": {"pid": 1, "start": _init_start()}}, "sockname": "s", "sm_host": "H-x"}
    with pytest.raises(IntentError, match="is not the InfiniBand lab's record"):
        lab.status(_record(tmp_path, body))


@pytest.mark.parametrize("kind", ["fifo", "link", "latin1", "huge"])
def test_a_lab_record_that_is_no_regular_text_file_is_refused(tmp_path: Path, kind: str) -> None:
    state = tmp_path / "lab"
    state.mkdir()
    path = state / lab.STATE
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        target = tmp_path / "elsewhere.json"
        target.write_text(json.dumps({"processes": {}, "sockname": "s", "sm_host": "H-x"}))
        path.symlink_to(target)
    elif kind == "latin1":
        path.write_bytes(b'{"processes": {}, "sockname": "caf\xe9", "sm_host": "H-x"}')
    else:
        path.write_text(json.dumps({"processes": {}, "sockname": "s", "sm_host": "H-x", "pad": " " * (64 << 10)}))
    with _deadline(20), pytest.raises(IntentError) as caught:
        lab.status(state)
    said = caught.value.render()
    assert {"fifo": "is a FIFO", "link": "symbolic link", "latin1": "not UTF-8", "huge": "larger than"}[kind] in said


def test_lab_status_on_a_fifo_record_exits_2_from_the_cli(tmp_path: Path, capsys: Capture) -> None:
    state = tmp_path / "lab"
    state.mkdir()
    os.mkfifo(state / lab.STATE)
    code, err = _main(capsys, ["ib", "lab", "status", "--state-dir", str(state)])
    assert code == 2 and "is a FIFO, not a regular file" in err, err


def test_perfquery_numbers_longer_than_a_counter_are_refused_not_a_crash():
    """Python refuses to convert 4,300 digits or more (a ValueError); a 64-bit counter has 20 at most."""
    from gpufabric.ib.counters import parse
    from gpufabric.ib.errors import IbError

    good = parse("# Port counters: Lid 3 port 1\nSymbolErrorCounter:.......5\n", "s1")
    assert list(good.values()) == [{"SymbolErrorCounter": 5}]
    for text in (
        "# Port counters: Lid 3 port 1\nSymbolErrorCounter:......." + "9" * 5000 + "\n",
        "# Port counters: Lid 3 port " + "1" * 5000 + "\nSymbolErrorCounter:.......5\n",
    ):
        with pytest.raises(IbError, match="more digits than a counter"):
            parse(text, "s1")


def test_the_intents_pkey_with_a_leading_zero_asks_for_hex_or_decimal(tmp_path):
    """`pkey: 0101` in the cluster intent: neither read as 65 (YAML 1.1's octal) nor quietly as 101."""
    text = (ROOT / "inventory/examples/lab-infiniband.yml").read_text()
    assert "pkey: 0x0101" in text
    bad = tmp_path / "pk.yml"
    bad.write_text(text.replace("pkey: 0x0101", "pkey: 0101"))
    done = run_in_process("gpufabric", "check", str(bad))
    assert done.returncode == 2, done.stderr
    assert "pk.yml:78: planes.compute.partitions[0].pkey: '0101' is ambiguous" in done.stderr
    assert "fix: write 0x0101 for hexadecimal or 101 for decimal" in done.stderr
