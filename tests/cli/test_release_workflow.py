"""The release workflow (.github/workflows/release.yml): a workflow GitHub takes (check-jsonschema's copy of
its schema), which checks the tag against the tree, builds and checks the sdist and wheel, and publishes
only from a tag, by trusted publishing, to the publish action's default index: no token, no host named."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml
from conftest import BIN, ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def _workflow() -> dict:
    return yaml.load(WORKFLOW.read_text(), Loader=yaml.BaseLoader)  # `on:` stays a key, not True


@pytest.mark.skipif(shutil.which("check-jsonschema", path=str(BIN)) is None, reason="check-jsonschema (test extra)")
def test_the_release_workflow_is_one_github_takes():
    done = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_it_checks_the_tag_builds_checks_and_publishes_only_from_a_tag():
    flow = _workflow()
    assert flow["on"]["push"]["tags"] == ["v*"]
    assert flow["permissions"] == {"contents": "read"}
    build, publish = flow["jobs"]["build"], flow["jobs"]["publish"]
    runs = [step.get("run", "") for step in build["steps"]]
    order = [
        next(i for i, r in enumerate(runs) if word in r) for word in ("release_check.py", "-m build", "twine check")
    ]
    assert order == sorted(order), runs  # the tag is checked before anything is built
    assert "--strict" in runs[order[2]]
    assert publish["needs"] == "build" and publish["if"].startswith("startsWith(github.ref, 'refs/tags/v")
    assert publish["permissions"] == {"id-token": "write"}  # only the publishing job may ask for an identity
    (action,) = [s["uses"] for s in publish["steps"] if s.get("uses", "").startswith("pypa/")]
    assert action.startswith("pypa/gh-action-pypi-publish@")
    assert not [s for s in publish["steps"] if "with" in s and s.get("uses") == action]  # its default index


def test_it_names_no_host_and_holds_no_token():
    text = WORKFLOW.read_text()
    assert not re.search(r"https?://|\b[\w-]+\.(org|io|com|net)\b", text), "a host is named"
    assert "secrets." not in text and "password" not in text
