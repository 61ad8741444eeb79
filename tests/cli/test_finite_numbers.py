"""No number a command takes may be NaN or infinite. click's FLOAT and FloatRange parse `nan`, `inf` and
`-inf` (NaN compares false with every bound, so a range lets it through): `scheduler drain --job-wait
nan` polled slurmctld without end and left the nodes drained, `acceptance screen-report --factor nan`
passed every slow node. Every float option of every command, found by walking the command tree, is
given each of them through the real CLI and must exit 2 naming itself."""

from __future__ import annotations

import click
import pytest

from gpufabric.cli import cli
from gpufabric.cli.options import FiniteFloat
from tests.conftest import run_in_process

Found = list[tuple[tuple[str, ...], click.Command]]


def _commands(group: click.Group, ctx: click.Context, path: tuple[str, ...]) -> Found:
    found: Found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found += _commands(command, click.Context(command, parent=ctx, info_name=name), (*path, name))
        else:
            found.append(((*path, name), command))
    return found


def _float_options() -> list[tuple[tuple[str, ...], click.Option]]:
    """(command path, option) for every option whose value click parses as a float (a FloatRange is a
    FloatParamType too; an option with a float default and no type is given FLOAT by click)."""
    every = _commands(cli, click.Context(cli, info_name="gpufabric"), ())
    return [
        (path, param)
        for path, command in every
        for param in command.params
        if isinstance(param, click.Option) and isinstance(param.type, click.types.FloatParamType)
    ]


FLOAT_OPTIONS = _float_options()


def test_the_walk_finds_the_float_options_of_every_kind_of_command():
    """The walk reaches nested groups and the options shared through decorators: a walk that found
    nothing would pass every check below."""
    named = {(" ".join(path), param.opts[0]) for path, param in FLOAT_OPTIONS}
    assert {
        ("scheduler drain", "--job-wait"),
        ("acceptance screen report", "--factor"),
        ("remediate serve", "--max-share"),
        ("validate", "--counter-window"),
        ("push", "--check-timeout"),
    } <= named, sorted(named)
    assert len(named) >= 20, sorted(named)


def test_every_float_option_uses_the_one_finite_type():
    plain = [(" ".join(path), param.opts[0], param.type) for path, param in FLOAT_OPTIONS
             if not isinstance(param.type, FiniteFloat)]  # fmt: skip
    assert plain == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "Infinity"])
@pytest.mark.parametrize(("path", "param"), FLOAT_OPTIONS, ids=[f"{' '.join(p)} {o.opts[0]}" for p, o in FLOAT_OPTIONS])
def test_nan_and_infinity_are_refused_with_exit_2(path, param, value):
    option = param.opts[0]
    done = run_in_process("gpufabric", *path, f"{option}={value}")
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert f"Invalid value for '{option}'" in said and f"'{value}' is not a finite number" in said, said
