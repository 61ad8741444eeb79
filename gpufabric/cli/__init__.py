"""The command line. `gpufabric` and `nornir` are the same program.

Exit codes: 0 success; 1 an internal error (a bug: please report it); 2 the intent
or the command line is wrong (the message says where and what would be right);
3 `--strict` and the plan has warnings; 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import traceback

import click

from gpufabric import __version__
from gpufabric.cli.demo_cmd import demo_cmd
from gpufabric.cli.docs_cmd import docs_cmd, schema_cmd
from gpufabric.cli.export_cmd import export_cmd
from gpufabric.cli.lab_cmd import lab_cmd
from gpufabric.cli.output import err
from gpufabric.cli.plan_cmd import check_cmd, plan_cmd
from gpufabric.cli.push_cmd import push_cmd
from gpufabric.cli.render_cmd import render_cmd
from gpufabric.cli.validate_cmd import validate_cmd
from gpufabric.cli.verify_cmd import verify_cmd
from gpufabric.config.secrets import SecretUnavailableError
from gpufabric.intent.errors import IntentError

EXIT_INTERNAL, EXIT_INPUT, EXIT_INTERRUPTED = 1, 2, 130


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="gpufabric")
def cli() -> None:
    """Bring up the networks of a GPU cluster from one intent file.

    FILE defaults to ./inventory/fabric.yml, else the default fabric shipped with gpufabric.

    \b
    Typical flow:
      gpufabric check                 validate the intent
      gpufabric plan                  summary per plane (--json for scripts)
      gpufabric export cabling -o build/cabling.csv
      gpufabric export plan -o build/plan.json
      gpufabric render                one config per switch into build/configs

    Exit codes: 0 ok, 1 internal error, 2 bad intent or usage, 3 warnings with --strict.
    """


cli.add_command(check_cmd)
cli.add_command(plan_cmd)
cli.add_command(export_cmd)
cli.add_command(render_cmd)
cli.add_command(verify_cmd)
cli.add_command(lab_cmd)
cli.add_command(demo_cmd)
cli.add_command(push_cmd)
cli.add_command(validate_cmd)
cli.add_command(docs_cmd)
cli.add_command(schema_cmd)


def main(argv: list[str] | None = None) -> None:
    prog = os.path.basename(sys.argv[0]) if sys.argv else "gpufabric"
    try:
        rv = cli.main(args=argv, prog_name=prog, standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_INPUT)
    except (click.Abort, KeyboardInterrupt):
        err.print("interrupted; nothing was written")
        sys.exit(EXIT_INTERRUPTED)
    except IntentError as exc:
        err.print(exc.render(), markup=False)
        sys.exit(EXIT_INPUT)
    except SecretUnavailableError as exc:
        err.print(f"error: {exc}", markup=False)
        sys.exit(EXIT_INPUT)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # the last line of defence: a bug must not look like a crash dump
        if os.environ.get("GPUFABRIC_DEBUG"):
            traceback.print_exc()
        err.print(f"internal error: {type(exc).__name__}: {exc}", markup=False)
        err.print(
            "this is a bug in gpufabric; please report it with the intent file "
            "(set GPUFABRIC_DEBUG=1 to see the traceback)"
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(rv if isinstance(rv, int) else 0)
