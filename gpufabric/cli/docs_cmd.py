"""`gpufabric docs` (the intent reference) and `gpufabric schema` (JSON Schema for editors)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gpufabric.cli.output import err, write_stdout
from gpufabric.export.atomic import write_atomic
from gpufabric.intent import docs
from gpufabric.intent.model import Intent


@click.command("docs")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write here instead of stdout.")
@click.option("--check", is_flag=True, help="Exit 1 if the file at -o differs from the schema (for CI).")
def docs_cmd(output: Path | None, check: bool) -> int:
    """Print the intent reference (docs/intent.md), generated from the schema."""
    text = docs.render()
    if output is None:
        write_stdout(text)
        return 0
    if check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != text:
            err.print(f"{output} is out of date: run `gpufabric docs -o {output}`")
            return 1
        return 0
    write_atomic(output, text)
    err.print(f"wrote {output}")
    return 0


@click.command("schema")
def schema_cmd() -> int:
    """Print the intent's JSON Schema (point your editor's YAML language server at it)."""
    write_stdout(json.dumps(Intent.model_json_schema(), indent=2) + "\n")
    return 0
