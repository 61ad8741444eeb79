"""One root for the library's errors, and the one table that turns them into exit codes.

Every exception class defined in gpufabric (and its Nornir tasks and NAPALM name shims) derives
from gpufabric.errors.GpufabricError, so the command line can tell a refusal the library meant
(exit 2, its message) from a bug (exit 1, a request to report it)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from gpufabric.cli.errors import EXIT_INPUT, EXIT_INTERNAL, FAMILIES, family_of, report
from gpufabric.errors import GpufabricError, IntentError, LocatedError, Problem
from gpufabric.fleet.errors import NoLabError
from gpufabric.ib.errors import fail
from gpufabric.inputs import InputError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gpufabric", "nornir_tasks", "napalm_frr", "napalm_cumulus")


def _modules() -> list[tuple[str, ast.Module]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__main__":
                continue  # runs the command line when imported
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found.append((name, ast.parse(path.read_text(encoding="utf-8"))))
    return found


def _class_defs(tree: ast.Module) -> tuple[list[str], list[str]]:
    """The names of the module's top-level classes, and of classes defined inside a function or
    another class (these cannot be imported to check them)."""
    top = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    nested = [
        node.name
        for outer in ast.walk(tree)
        if isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for node in ast.walk(outer)
        if isinstance(node, ast.ClassDef) and node is not outer
    ]
    return top, nested


def _exception_classes() -> tuple[list[type[BaseException]], list[str]]:
    classes: list[type[BaseException]] = []
    nested_exceptions: list[str] = []
    for name, tree in _modules():
        module = importlib.import_module(name)
        top, nested = _class_defs(tree)
        for cls_name in top:
            obj = getattr(module, cls_name)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                classes.append(obj)
        nested_exceptions += [f"{name}.{n}" for n in nested if n.endswith(("Error", "Exception"))]
    return classes, nested_exceptions


def test_every_exception_class_of_gpufabric_derives_from_the_root():
    classes, nested = _exception_classes()
    assert len(classes) > 40  # the scan found the families (push, ib, lab, drivers, telemetry, ...)
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, GpufabricError))
    assert not outside, f"derive these from gpufabric.errors.GpufabricError (keep their other bases): {outside}"
    assert not nested, f"define these at module level, where this test can check their base: {nested}"


def test_the_families_keep_the_bases_their_callers_catch():
    from gpufabric.drivers.answers import SwitchAnswerError
    from gpufabric.export.ib_topology import NotInfinibandError
    from gpufabric.platforms import UnknownPlatformError

    assert issubclass(NotInfinibandError, ValueError) and issubclass(UnknownPlatformError, KeyError)
    assert issubclass(SwitchAnswerError, GpufabricError)
    assert issubclass(InputError, IntentError) and issubclass(IntentError, LocatedError)


def test_the_inputs_do_not_need_the_intent_to_raise_their_error():
    tree = ast.parse((ROOT / "gpufabric" / "inputs.py").read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module is not None}
    assert not {m for m in imported if m.startswith("gpufabric.intent")}


@pytest.mark.parametrize(
    ("error", "code", "first_line"),
    [
        (
            IntentError("fabric.yml", [Problem(("planes",), "is empty", "name a plane")], {("planes",): 4}),
            2,
            "error: fabric.yml:4: planes: is empty",
        ),
        (InputError("design.json", [Problem((), "is not JSON")]), 2, "error: design.json: (top level): is not JSON"),
        (NoLabError("no lab is up"), 2, "error: no lab is up"),
        (fail("design.su_count", "is 0", "give 1 or more"), 2, "error: design.su_count: is 0 (give 1 or more)"),
        (RuntimeError("boom\x1b[2J"), 1, "internal error: RuntimeError: boom\\x1b[2J"),
    ],
)
def test_the_one_table_maps_each_family_to_its_exit_code_and_message(error, code, first_line, capsys):
    assert report(error) == code
    shown = capsys.readouterr().err.splitlines()
    assert shown[0] == first_line
    assert ("this is a bug in gpufabric" in shown[-1]) == (code == EXIT_INTERNAL)


def test_the_first_family_that_matches_decides_and_the_table_ends_in_bugs():
    assert family_of(InputError("x", [])).error is LocatedError
    assert family_of(NoLabError("x")).exit_code == EXIT_INPUT
    assert FAMILIES[-1].error is BaseException and FAMILIES[-1].exit_code == EXIT_INTERNAL
