"""Text that comes from outside (a switch's answer, a tool's output, a file, a path the user gave)
is printed as text: Rich markup in it is shown, not read (markup that does not parse crashed the
commands), and its control characters are written as escapes, never sent to the terminal. Our own
colours stay. The push's report has its tests in tests/push/test_push_audit.py."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from gpufabric.validate import report
from gpufabric.verify.running.results import CheckResult
from tests.conftest import run_in_process

# Markup that does not parse, markup that would, a screen clear (CSI) and a title change (OSC).
HOSTILE = "Idle [/] [bold red]loud[/bold red] \x1b[2J\x1b]0;pwned\x07"
SHOWN = r"Idle [/] [bold red]loud[/bold red] \x1b[2J\x1b]0;pwned\x07"


def _terminal() -> tuple[Console, io.StringIO]:
    screen = io.StringIO()
    return Console(file=screen, force_terminal=True, color_system="standard", width=400), screen


def _only_our_colours(text: str) -> None:
    assert "\x1b]" not in text and "\x1b[2J" not in text and "\x07" not in text
    assert all(re.fullmatch(r"\x1b\[[0-9;]*m", seq) for seq in re.findall(r"\x1b\[[^a-zA-Z]*[a-zA-Z]", text))


def test_validate_shows_what_a_switch_answered_as_text():
    console, screen = _terminal()
    results = [
        CheckResult("bgp-session", "leaf1", "10.0.0.1", "Established", HOSTILE, False),
        CheckResult("interface", "leaf1", "swp1 [x]", "up", "up", True),
    ]
    report.print_table(console, results, show_all=True)
    shown = screen.getvalue()
    assert SHOWN in shown and "swp1 [x]" in shown
    _only_our_colours(shown)
    assert "\x1b[31mfail" in shown and "\x1b[32mpass" in shown  # the verdicts keep their colours


RECORDED = Path(__file__).parents[1] / "recorded" / "ib" / "mini.ibnetdiscover"
MINI = """\
infiniband:
  name: mini
  su_count: 2
  nodes_per_su: 4
  rails: 2
  fabric_manager_ports: 2
  fabric_manager_ports_per_host: 1
  routing_engine: updn
"""


def test_ib_diff_shows_a_fabrics_node_description_escaped(tmp_path):
    """A node whose description (as ibnetdiscover gives it) holds escapes: refused at its line, and the
    refusal names the character escaped; nothing reaches the terminal raw."""
    intent = tmp_path / "mini.yml"
    intent.write_text(MINI)
    live = tmp_path / "live.topo"
    live.write_text(RECORDED.read_text().replace('"dgx005 mlx5_1"', '"dgx005\x1b[2J\x1b]0;pwned\x07 [/]mlx5_1"'))
    done = run_in_process("gpufabric", "ib", "diff", str(intent), "--from", str(live))
    assert done.returncode == 2, done.stderr
    assert "live.topo:11: holds the control character '\\x1b'" in done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout + done.stderr


def test_a_path_the_user_gave_is_named_as_given(tmp_path):
    """`wrote PATH`: brackets in the path are the path's, not markup."""
    target = tmp_path / "[bold]rules.yml"
    done = run_in_process("gpufabric", "telemetry", "rules", "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert target.is_file() and f"wrote {target}" in " ".join(done.stderr.split())


def test_a_log_line_shows_a_switchs_words_escaped(monkeypatch):
    """-v logs carry switches' words (why a read failed): a newline cannot forge a second record and an
    escape sequence never reaches the terminal."""
    import logging
    import sys

    from gpufabric.cli import logs

    screen = io.StringIO()
    monkeypatch.setattr(sys, "stderr", screen)
    logs.configure(logging.INFO)
    try:
        logging.getLogger("gpufabric.test").info("leaf1 answered %s", "bad\nINFO gpufabric: forged\x1b[2J")
    finally:
        logs.configure(logging.WARNING)
    written = screen.getvalue()
    assert written.count("\n") == 1, written
    assert "\x1b" not in written and r"bad\nINFO gpufabric: forged\x1b[2J" in written


def test_check_names_a_hostile_file_name_as_text(tmp_path):
    """`check`'s verdict names the file as given: brackets are the name's, an ESC is shown escaped."""
    name = tmp_path / "[bold]x\x1b[2J.yml"
    name.write_text((Path(__file__).parents[2] / "inventory/fabric.yml").read_text())
    done = run_in_process("gpufabric", "check", str(name))
    assert done.returncode == 0, done.stderr
    assert r"[bold]x\x1b[2J.yml: valid;" in done.stderr and "\x1b" not in done.stderr


def test_no_emoji_code_is_turned_into_an_emoji(tmp_path):
    """Rich turns `:name:` into an emoji even with markup off: an error on line 100 printed as `FILE💯`.
    A located error on line 100, a file and a field named like emoji codes print as written."""
    lines = (Path(__file__).parents[2] / "inventory/fabric.yml").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("border: {"))
    # The border line moved to line 100: comment lines padded before it, or header comments taken away.
    header = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    assert at - 99 <= header, "the default fabric's header is too short to bring its border line to line 100"
    lines = ["#"] * (99 - at) + lines if at <= 99 else lines[at - 99 :]
    assert lines[99].lstrip().startswith("border: {") and lines[99].endswith("}"), lines[99]
    lines[99] = lines[99][:-1] + ', ":fire:": 1}'  # an unknown field on line 100
    bad = tmp_path / ":smile:.yml"
    bad.write_text("\n".join(lines) + "\n")
    done = run_in_process("gpufabric", "check", str(bad))
    assert done.returncode == 2, done.stderr
    assert f"{bad}:100: planes.business.switches.border.:fire:: unknown field ':fire:'" in done.stderr
    assert done.stderr.isascii(), done.stderr  # no 💯, 😄 or 🔥

    good = tmp_path / ":100:.yml"
    good.write_text((Path(__file__).parents[2] / "inventory/fabric.yml").read_text())
    done = run_in_process("gpufabric", "check", str(good))
    assert done.returncode == 0, done.stderr
    assert f"{good}: valid;" in done.stderr and done.stderr.isascii(), done.stderr
