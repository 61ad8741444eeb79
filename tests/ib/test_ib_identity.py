"""A discovery names each node once, by GUIDs no other node has, of the fabric the plan describes; a LID is one a
port can have. Each hostile file is the real `ibnetdiscover`'s output on ibsim (tests/recorded/ib/mini.ibnetdiscover,
the plan of `MINI_DESIGN`) or gpufabric's discovery of it, changed at the lines named.

ibsim itself refuses a fabric with one GUID on two nodes ("new_node: node Ca guid 7777 already exists", ibsim
0.10): such a file is no one fabric's output, but two appended or one edited, and must not reach OpenSM's files.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from gpufabric.ib import discovery, opensm, topology
from gpufabric.ib.errors import IbError
from gpufabric.ib.planner import plan_fabric
from tests.ib.test_hostile_ib import MINI, MINI_DESIGN, RECORDED, TENANT, Capture, _found, _main

TEXT = RECORDED.read_text()
LINES = TEXT.splitlines()


def _line(prefix: str) -> int:
    """The 1-based number of the recorded file's one line starting with `prefix`."""
    [number] = [n for n, line in enumerate(LINES, 1) if line.startswith(prefix)]
    return number


def _changed(number: int, old: str, new: str) -> str:
    lines = list(LINES)
    assert old in lines[number - 1], lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new)
    return "\n".join(lines) + "\n"


def _refused(text: str) -> str:
    with pytest.raises(IbError) as caught:
        topology.parse(text, "seen.topo")
    return str(caught.value)


# --- one GUID, two nodes ------------------------------------------------------------------------------


def test_a_port_guid_of_another_tenant_s_host_is_refused_naming_both_lines():
    """dgx002 (tenant-a) given dgx007's port GUID: partitions.conf would make dgx007 a full member of tenant-a."""
    own = _line("[1](100005) ")  # dgx002 mlx5_0's own port, and its GUID
    other = _line("[1](100019) ")  # dgx007 mlx5_0's
    said = _refused(_changed(own, "[1](100005)", "[1](100019)"))
    assert f"seen.topo:{other}: GUID 0x0000000000100019 of 'dgx007 mlx5_0' (line {other})" in said
    assert f"is also that of 'dgx002 mlx5_0' (line {own})" in said


def test_what_the_shared_guid_would_have_done():
    """The harm, on the renderer: with dgx007's port GUID recorded for dgx002, tenant-a's line in partitions.conf
    listed `0x0000000000100019=full`, dgx007's port. The discovery is built past the readers here, as the API
    allows: `render` refuses it too."""
    found = _found()
    nodes = {**found.nodes, "dgx002 mlx5_0": discovery.Guids(0x100004, found.nodes["dgx007 mlx5_0"].port)}
    with pytest.raises(IbError, match=r"GUID 0x0000000000100019 of 'dgx007 mlx5_0' is also that of 'dgx002 mlx5_0'"):
        opensm.render(
            plan_fabric(MINI_DESIGN),
            discovery.Discovery("mini", nodes),
            opensm.SmSettings(partitions=(TENANT,)),
            Path("/srv/sm"),
        )


def test_a_node_guid_on_two_records_is_refused_naming_both_lines():
    first = _line("caguid=0x100004")  # dgx002 mlx5_0
    second = _line("caguid=0x100018")  # dgx007 mlx5_0
    said = _refused(_changed(second, "caguid=0x100018", "caguid=0x100004"))
    assert f"seen.topo:{second}: GUID 0x0000000000100004 of 'dgx007 mlx5_0' (line {second})" in said
    assert f"is also that of 'dgx002 mlx5_0' (line {first})" in said


def test_a_node_id_on_two_records_is_refused_naming_both_lines():
    first = _line('Ca\t1 "H-0000000000100004"')
    second = _line('Ca\t1 "H-0000000000100018"')
    said = _refused(_changed(second, "H-0000000000100018", "H-0000000000100004"))
    assert f"node id 'H-0000000000100004' of 'dgx007 mlx5_0' (line {second})" in said
    assert f"is also that of 'dgx002 mlx5_0' (line {first})" in said


def test_the_recorded_output_has_no_shared_guid():
    """A switch's port 0 is its node GUID, and each adapter's port GUID is its own: one node never clashes."""
    seen = topology.parse(TEXT, "mini")
    assert len(seen.nodes) == 21 and discovery.discover(plan_fabric(MINI_DESIGN), seen).fabric == "mini"


def test_ib_discover_exits_2_on_a_shared_guid(tmp_path: Path, capsys: Capture):
    (tmp_path / "ib.yml").write_text(MINI)
    seen = tmp_path / "seen.topo"
    own, other = _line("[1](100005) "), _line("[1](100019) ")
    seen.write_text(_changed(own, "[1](100005)", "[1](100019)"))
    out = tmp_path / "discovery.json"
    code, err = _main(capsys, ["ib", "discover", str(tmp_path / "ib.yml"), "--from", str(seen), "-o", str(out)])
    assert code == 2 and f"(line {own})" in err and f"(line {other})" in err and "a GUID names one node" in err, err
    assert not out.exists()


# --- discovery files: one GUID, two nodes; one node, twice --------------------------------------------


def _discovery_text() -> str:
    return _found().dumps()


def _line_of(text: str, needle: str) -> int:
    [number] = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    return number


def test_a_discovery_file_with_a_guid_of_two_nodes_is_refused_naming_both_lines():
    text = _discovery_text().replace('"port_guid": "0x0000000000100005"', '"port_guid": "0x0000000000100019"')
    with pytest.raises(IbError) as caught:
        discovery.loads(text, "d.json")
    said = str(caught.value)
    first, second = _line_of(text, '"dgx002 mlx5_0"'), _line_of(text, '"dgx007 mlx5_0"')
    assert (
        f"GUID 0x0000000000100019 of 'dgx007 mlx5_0' (line {second}) is also that of 'dgx002 mlx5_0' (line {first})"
        in said
    )


def test_a_discovery_file_naming_a_node_twice_is_refused_naming_both_lines():
    text = _discovery_text()
    entry = (
        '    "dgx002 mlx5_0": {\n      "node_guid": "0x0000000000100004",\n'
        '      "port_guid": "0x0000000000100019"\n    },\n'
    )
    at = text.index('    "dgx001 mlx5_0"')
    hostile = text[:at] + entry + text[at:]
    lines = [n for n, line in enumerate(hostile.splitlines(), 1) if '"dgx002 mlx5_0"' in line]
    with pytest.raises(IbError, match=rf"'dgx002 mlx5_0' is given twice \(line {lines[0]} and line {lines[1]}\)"):
        discovery.loads(hostile, "d.json")


# --- a discovery of another fabric --------------------------------------------------------------------


def _configs(tmp_path: Path, capsys: Capture, text: str) -> tuple[int, str, Path]:
    (tmp_path / "ib.yml").write_text(MINI)
    disc = tmp_path / "discovery.json"
    disc.write_text(text)
    out = tmp_path / "sm"
    code, err = _main(capsys, ["ib", "configs", str(tmp_path / "ib.yml"), "--discovery", str(disc), "-o", str(out)])
    return code, err, out


def test_the_own_discovery_renders(tmp_path: Path, capsys: Capture):
    code, err, out = _configs(tmp_path, capsys, _discovery_text())
    assert code == 0, err
    assert "0x0000000000100005=full" in (out / "partitions.conf").read_text()


def test_a_discovery_of_another_fabric_is_refused(tmp_path: Path, capsys: Capture):
    """Same shape, same node descriptions, another fabric's name: its GUIDs must not reach this one's files."""
    body = json.loads(_discovery_text())
    body["fabric"] = "prod-b"
    code, err, out = _configs(tmp_path, capsys, json.dumps(body, indent=2))
    assert code == 2 and "a discovery of the fabric 'prod-b', not of 'mini'" in err and "gpufabric ib discover" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda nodes: nodes.pop("spine01"), "no GUID for the planned node 'spine01'"),
        (lambda nodes: nodes.update({"spine09": nodes["spine01"] | {}}), "node 'spine09' is not in the plan of 'mini'"),
    ],
)
def test_a_discovery_of_other_nodes_is_refused(tmp_path: Path, capsys: Capture, change, says: str):
    body = json.loads(_discovery_text())
    change(body["nodes"])
    if "spine09" in body["nodes"]:
        body["nodes"]["spine09"] = {"node_guid": "0x0000000000999999", "port_guid": "0x0000000000999999"}
    code, err, out = _configs(tmp_path, capsys, json.dumps(body, indent=2))
    assert code == 2 and says in err, err
    assert not out.exists()


def test_export_topology_refuses_another_fabric_s_discovery(tmp_path: Path, capsys: Capture):
    (tmp_path / "ib.yml").write_text(MINI)
    body = json.loads(_discovery_text())
    body["fabric"] = "prod-b"
    disc = tmp_path / "discovery.json"
    disc.write_text(json.dumps(body))
    code, err = _main(capsys, ["ib", "export-topology", str(tmp_path / "ib.yml"), "--discovery", str(disc)])
    assert code == 2 and "a discovery of the fabric 'prod-b', not of 'mini'" in err, err


# --- LIDs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lid", "says"),
    [
        ("9" * 5000, "a LID of 5,000 digits"),
        ("49152", "a LID '49152'"),  # 0xC000: the first multicast LID
        ("65535", "a LID '65535'"),  # the permissive LID
        ("123456", "a LID '123456'"),
        ("0x10", "a LID '0x10'"),
    ],
)
@pytest.mark.parametrize("where", ["header", "own", "peer"])
def test_a_lid_no_port_can_have_is_refused_at_its_line(lid: str, says: str, where: str):
    if where == "header":  # su2-leaf2's own LID
        number, old, new = _line('Switch\t64 "S-0000000000200003"'), "port 0 lid 7 lmc", f"port 0 lid {lid} lmc"
    elif where == "own":  # ufm2 mlx5_0's port LID
        number, old, new = _line("[1](10001f) "), "# lid 21 lmc", f"# lid {lid} lmc"
    else:  # the LID of the switch at the far end of that cable
        number, old, new = _line("[1](10001f) "), '"su2-leaf2" lid 7 4x', f'"su2-leaf2" lid {lid} 4x'
    said = _refused(_changed(number, old, new))
    assert said.startswith(f"seen.topo:{number}: {says}: a port's LID is 1-49151 (0x0001-0xbfff)"), said[:300]


@pytest.mark.parametrize("lid", ["0", "1", "49151"])
def test_a_lid_a_port_can_have_is_read(lid: str):
    number = _line("[1](10001f) ")
    seen = topology.parse(_changed(number, "# lid 21 lmc", f"# lid {lid} lmc"), "seen.topo")
    assert seen.by_name()["ufm2 mlx5_0"].lid == int(lid)


def test_a_description_that_holds_the_word_lid_is_no_lid():
    """Node descriptions are between double quotes: what they hold is a name, never a LID to check or read."""
    text = re.sub(r'"ufm2 mlx5_0"', '"ufm2 lid 99999999"', TEXT)
    with pytest.raises(IbError, match="unplanned node 'ufm2 lid 99999999'"):
        discovery.discover(plan_fabric(MINI_DESIGN), topology.parse(text, "seen.topo"))


# --- the live tool ------------------------------------------------------------------------------------


def test_a_live_ibnetdiscover_that_never_answers_is_stopped_and_exits_2(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
):
    """A STAND-IN `ibnetdiscover` first on PATH that never answers (a hung subnet): the command ends at its
    deadline with a message, where a TimeoutExpired escaped as an internal error (exit 1)."""
    from gpufabric.cli import ib_cmd

    folder = tmp_path / "bin"
    folder.mkdir()
    tool = folder / "ibnetdiscover"
    tool.write_text(f"#!/bin/sh\necho $$ > '{tmp_path}/pid'\nexec sleep 600\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    monkeypatch.setattr(ib_cmd, "TOOL_SECONDS", 1.0)
    (tmp_path / "ib.yml").write_text(MINI)
    code, err = _main(capsys, ["ib", "discover", str(tmp_path / "ib.yml"), "--from", "live"])
    assert code == 2 and "ibnetdiscover did not answer within 1 s: stopped" in err, err
    assert not Path(f"/proc/{(tmp_path / 'pid').read_text().strip()}").exists()
