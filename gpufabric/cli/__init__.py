"""The command line. `gpufabric` and `nornir` are the same program.

Exit codes (gpufabric/cli/errors.py): 0 success; 1 an internal error (a bug: please report it); 2 the
intent or the command line is wrong (the message says where and what would be right); 3 `--strict`
and the plan has warnings; 4 findings (failed checks, failed or rolled-back switches, a refused
drain, a non-empty diff); 5 `diff`: a disruptive change; 130 interrupted.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console

from gpufabric.cli import settings  # light: click and the input readers (TOML only when a file is there)
from gpufabric.cli.errors import EXIT_INPUT, EXIT_INTERRUPTED  # light: click and the error classes
from gpufabric.stopping import sigterm_interrupts

# name -> "module:attribute", imported only when that command runs (or `--help` lists them all):
# `check` and `plan` never load NAPALM, Nornir or paramiko, and `--version` loads no command.
COMMANDS = {
    "check": "gpufabric.cli.plan_cmd:check_cmd",
    "plan": "gpufabric.cli.plan_cmd:plan_cmd",
    "export": "gpufabric.cli.export_cmd:export_cmd",
    "ib": "gpufabric.cli.ib_cmd:ib_cmd",
    "render": "gpufabric.cli.render_cmd:render_cmd",
    "diff": "gpufabric.cli.diff_cmd:diff_cmd",
    "verify": "gpufabric.cli.verify_cmd:verify_cmd",
    "lab": "gpufabric.cli.lab_cmd:lab_cmd",
    "demo": "gpufabric.cli.demo_cmd:demo_cmd",
    "push": "gpufabric.cli.push_cmd:push_cmd",
    "restart": "gpufabric.cli.restart_cmd:restart_cmd",
    "upgrade": "gpufabric.cli.upgrade_cmd:upgrade_cmd",
    "validate": "gpufabric.cli.validate_cmd:validate_cmd",
    "acceptance": "gpufabric.cli.acceptance_cmd:acceptance_cmd",
    "telemetry": "gpufabric.cli.telemetry_cmd:telemetry_cmd",
    "docs": "gpufabric.cli.docs_cmd:docs_cmd",
    "schema": "gpufabric.cli.docs_cmd:schema_cmd",
    "audit": "gpufabric.cli.audit_cmd:audit_cmd",
    "maintenance": "gpufabric.cli.maintenance_cmd:maintenance_cmd",
    "scheduler": "gpufabric.cli.scheduler_cmd:scheduler_cmd",
    "remediate": "gpufabric.cli.remediate_cmd:remediate_cmd",
    "sot": "gpufabric.cli.sot_cmd:sot_cmd",
    "job": "gpufabric.cli.job_cmd:job_cmd",
    "triage": "gpufabric.cli.triage_cmd:triage_cmd",
    "config": "gpufabric.cli.config_cmd:config_cmd",
    "probe": "gpufabric.cli.probe_cmd:probe_cmd",
}


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from gpufabric import version  # importlib.metadata: only when asked

        click.echo(f"gpufabric, version {version()}")
        ctx.exit()


VERBOSE, LOG_LEVEL = "gpufabric.verbose", "gpufabric.log_level"  # the root context's meta keys


def _more_verbose(ctx: click.Context, _param: click.Parameter, value: int) -> None:
    """`-v` given after a subcommand counts with any given before it; `--log-level` still wins."""
    if not value:
        return
    root = ctx.find_root()
    root.meta[VERBOSE] = root.meta.get(VERBOSE, 0) + value
    if not root.meta.get(LOG_LEVEL):
        from gpufabric.cli import logs

        logs.configure(logs.level_for(None, root.meta[VERBOSE]))


def with_verbose(command: click.Command) -> click.Command:
    """`command`, and every subcommand it resolves, taking `-v` after its name too (hidden in its help:
    the top level's help says so once), and checking its settings when its context is made."""
    if getattr(command, "_gpufabric_verbose", False):
        return command
    settings.adopt(command)
    hidden = click.Option(
        ["-v", "--verbose"],
        count=True,
        hidden=True,
        expose_value=False,
        is_eager=True,
        callback=_more_verbose,
        allow_from_autoenv=False,  # not a setting: only the top-level -v has a variable
    )
    command.params.append(hidden)
    if isinstance(command, click.Group):
        resolve = command.get_command

        def get_command(ctx: click.Context, cmd_name: str) -> click.Command | None:
            found = resolve(ctx, cmd_name)
            return None if found is None else with_verbose(found)

        command.get_command = get_command  # type: ignore[method-assign]
    command._gpufabric_verbose = True  # type: ignore[attr-defined]
    return command


class LazyGroup(click.Group):
    """A group whose subcommands are imported when used, so every command does not pay for all. Its
    context reads the settings (gpufabric.toml or pyproject's [tool.gpufabric], GPUFABRIC_* variables:
    gpufabric/cli/settings.py) and hands each command its table as click's default_map."""

    context_class = settings.SettingsContext

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        if parent is None:
            extra.setdefault("auto_envvar_prefix", settings.PREFIX)
            if "default_map" not in extra:
                extra["default_map"] = settings.load()
        return super().make_context(info_name, args, parent, **extra)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attribute = target.split(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return with_verbose(command)


# Commands that build a plan, work through it and exit. Python's cycle collector would walk the
# plan's millions of objects again and again as they are made (a third of `plan --json` at 32k);
# these commands make no garbage cycles worth collecting before they exit, so it is switched off.
BATCH = frozenset({"check", "plan", "export", "render", "diff", "verify", "docs", "schema", "job", "triage"})


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              allow_from_autoenv=False, help="Show the version and exit.")  # fmt: skip
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    envvar="GPUFABRIC_LOG_LEVEL",
    help="Log gpufabric's steps (connect, preview, commit, confirm, rollback, lock) on stderr at this level. "
    "Never a secret or a diff: diffs appear as their SHA-256. [env: GPUFABRIC_LOG_LEVEL; default: quiet]",
)
@click.option("-v", "--verbose", count=True,
              help="Shorthand: -v logs at info, -vv at debug (also after the subcommand: `push -v`).")  # fmt: skip
@click.pass_context
def cli(ctx: click.Context, log_level: str | None, verbose: int) -> None:
    """Bring up the networks of a GPU cluster from one intent file.

    FILE defaults to ./inventory/fabric.yml, else the default fabric shipped with gpufabric; the
    commands that reach switches or schedulers never use that example (exit 2: name FILE).

    \b
    Typical flow:
      gpufabric check                 validate the intent
      gpufabric plan                  summary per plane (--json for scripts)
      gpufabric export cabling -o build/cabling.csv
      gpufabric export plan -o build/plan.json
      gpufabric render                one config per switch into build/configs

    Every option's default can be set in ./gpufabric.toml or a GPUFABRIC_<COMMAND>_<OPTION> variable
    (the command line wins, then the variable, then the file): `gpufabric config show` says which.

    Exit codes: 0 ok, 1 internal error, 2 bad intent or usage, 3 warnings with --strict, 4 findings
    (failed checks, failed or rolled-back switches, a refused drain, a non-empty diff; `diff`: 5 when
    disruptive). Each command's help says what its codes mean.
    """
    ctx.meta[LOG_LEVEL] = log_level
    ctx.meta[VERBOSE] = ctx.meta.get(VERBOSE, 0) + verbose
    if log_level or verbose:
        from gpufabric.cli import logs

        logs.configure(logs.level_for(log_level, verbose))


def main(argv: list[str] | None = None) -> None:
    prog = os.path.basename(sys.argv[0]) if sys.argv else "gpufabric"
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in BATCH:
        gc.disable()
    # SIGTERM ends a command as Ctrl-C does: its cleanups run. A command that serves until stopped installs its
    # own handler.
    sigterm_interrupts()
    try:
        rv = cli.main(args=argv, prog_name=prog, standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        settings.locate(exc)  # a value from a variable or the settings file: say which
        exc.show()
        sys.exit(EXIT_INPUT)
    except (click.Abort, KeyboardInterrupt):
        _err().print(INTERRUPTED)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # the last line of defence: a bug must not look like a crash dump
        sys.exit(_report(exc))
    sys.exit(rv if isinstance(rv, int) else 0)


INTERRUPTED = (
    "interrupted: a file is written whole or not at all; what a push, restart or upgrade had done to switches is "
    "in its audit trail (gpufabric audit)"
)


def _err() -> Console:
    from gpufabric.cli.output import err

    return err


def _report(exc: Exception) -> int:
    """The exit code for an error, after saying what it was: gpufabric/cli/errors.py maps them all."""
    from gpufabric.cli.errors import report

    return report(exc)
