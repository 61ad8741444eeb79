"""Read an intent file: YAML, then schema, then cross-field rules."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path as FsPath

from pydantic import ValidationError

from gpufabric.intent.errors import IntentError, Path, Problem, printable
from gpufabric.intent.model import Intent
from gpufabric.intent.partial import rule_problems_despite
from gpufabric.intent.rules import check_rules
from gpufabric.intent.schema_errors import problems_from
from gpufabric.yaml_lines import MAX_BYTES, load_yaml

DEFAULT_FABRIC = "inventory/fabric.yml"
EMBEDDED = "<embedded default fabric>"


@dataclass(frozen=True)
class LoadedIntent:
    intent: Intent
    file: str
    lines: dict[Path, int]

    def error(self, problems: list[Problem]) -> IntentError:
        """An error for problems found later (by the planner), located in this file."""
        return IntentError(self.file, problems, self.lines)

    def located(self, problems: list[Problem]) -> list[str]:
        """Warnings as one line each: file:line, field, what is dubious, and the risk."""
        error = self.error(problems)
        out = []
        for p in problems:
            line = error.line_of(p.path)
            where = f"{printable(self.file)}:{line}" if line else printable(self.file)
            out.append(f"{where}: {printable(p.field)}: {printable(p.message)}; risk: {printable(p.hint)}")
        return out


def default_fabric_text() -> tuple[str, str]:
    """The fabric to use when no file is named: ./inventory/fabric.yml, else the one shipped in the package."""
    local = FsPath(DEFAULT_FABRIC)
    if local.is_file():
        return read_intent_file(DEFAULT_FABRIC), DEFAULT_FABRIC
    text = resources.files("gpufabric.data").joinpath("fabric.yml").read_text(encoding="utf-8")
    return text, EMBEDDED


def load_intent(file: str | None = None, *, embedded: bool = True) -> LoadedIntent:
    """The intent in `file`; without one ./inventory/fabric.yml, else (when `embedded`) the example fabric
    shipped in the package. What reaches devices passes embedded=False: an example is never the target."""
    if file is None:
        if not embedded and not FsPath(DEFAULT_FABRIC).is_file():
            raise IntentError(DEFAULT_FABRIC, [Problem((), "no intent file named, and none here", NO_INTENT_HINT)])
        text, name = default_fabric_text()
        return load_intent_text(text, name)
    return load_intent_text(read_intent_file(file), file)


NO_INTENT_HINT = (
    "name the fabric's intent file after the command (e.g. `nornir push inventory/fabric.yml`), or run it "
    "from the folder that holds inventory/fabric.yml; the fabric shipped with gpufabric is an example for the "
    "offline commands and is never used to reach switches or schedulers"
)


def read_intent_file(file: str) -> str:
    """The text of `file`: a regular file of at most MAX_BYTES, UTF-8, read the one way outside input
    is read (gpufabric.inputs: no FIFO, device or directory, never more than the bound)."""
    from gpufabric.inputs import read_text  # gpufabric.inputs imports this package's errors

    return read_text(file, what="an intent file, e.g. inventory/fabric.yml", max_bytes=MAX_BYTES)


def load_intent_text(text: str, file: str = "<intent>") -> LoadedIntent:
    data, lines = load_yaml(text, file, core_schema=True)
    if not isinstance(data, dict):
        raise IntentError(
            file,
            [Problem((), "the intent must be a mapping with fabric, server_groups, planes and credentials")],
            lines,
        )
    try:
        intent = Intent.model_validate(data)
    except ValidationError as exc:
        # Every problem at once: the cross-field rules run on what passed the schema.
        problems = problems_from(exc, Intent) + rule_problems_despite(data, exc, check_rules)
        raise IntentError(file, problems, lines) from None
    except RecursionError:
        raise IntentError(
            file, [Problem((), "the document nests too deeply (self-referencing alias?)")], lines
        ) from None
    problems = check_rules(intent)
    if problems:
        raise IntentError(file, problems, lines)
    return LoadedIntent(intent, file, lines)
