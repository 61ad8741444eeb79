"""The offline lane's order (`--long-first`, tests/long_first.py): modules by their longest test, each kept
whole and in its own order, and the file of seconds it reads naming only tests that exist, none of the lab lane's."""

from __future__ import annotations

import subprocess
import sys

from long_first import SECONDS_FILE, long_first, read_seconds

from tests.conftest import ROOT

NODES = [
    "tests/a/test_a.py::one",
    "tests/a/test_a.py::two",
    "tests/b/test_b.py::one",
    "tests/c/test_c.py::one",
    "tests/c/test_c.py::two[x]",
    "tests/c/test_c.py::two[y]",
    "tests/d/test_d.py::one",
]


def test_the_module_with_the_longest_test_goes_first_whole_and_in_its_order():
    seconds = {"tests/c/test_c.py::two[y]": 90.0, "tests/b/test_b.py::one": 30.0, "tests/a/test_a.py::two": 2.0}
    order = [NODES[i] for i in long_first(NODES, seconds)]
    assert order == [
        "tests/c/test_c.py::one",
        "tests/c/test_c.py::two[x]",
        "tests/c/test_c.py::two[y]",
        "tests/b/test_b.py::one",
        "tests/a/test_a.py::one",
        "tests/a/test_a.py::two",
        "tests/d/test_d.py::one",
    ]


def test_without_seconds_the_order_is_the_collections():
    assert long_first(NODES, {}) == list(range(len(NODES)))


def test_the_suite_collects_the_same_tests_in_either_order():
    """The option reorders and never drops or repeats: what xdist's workers each collect must be one list."""

    def collected(*extra: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", "tests/simulators",
             "tests/docs", *extra],
            cwd=ROOT, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return [line for line in done.stdout.splitlines() if "::" in line]

    plain, ordered = collected(), collected("--long-first")
    assert sorted(plain) == sorted(ordered) and len(set(ordered)) == len(ordered)
    assert plain != ordered  # the seconds file names long tests here: they moved ahead


def test_the_seconds_file_names_only_offline_tests_that_exist():
    seconds = read_seconds(SECONDS_FILE)
    assert len(seconds) >= 20
    missing = [node for node in seconds if not (ROOT / node.split("::", 1)[0]).is_file()]
    assert not missing, f"tests/offline_seconds.txt names modules that are gone: {missing[:5]}"
    assert not [node for node in seconds if node.startswith("tests/lab/")]  # the lab lane orders itself
