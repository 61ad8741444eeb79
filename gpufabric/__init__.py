"""gpufabric: one description of a GPU cluster's networks, expanded into everything needed to bring them up."""

from __future__ import annotations

# The release this tree is, written in this one place: pyproject.toml reads it for the wheel's metadata,
# and tests hold the Ansible collection (collection/galaxy.yml, collection/requirements.txt) and
# CHANGELOG.md's newest release to it. A clone carries no tags, so the version cannot come from git; a
# release is tagged v<this version>, and the release workflow refuses a tag that differs.
__version__ = "0.1.0"


def version() -> str:
    """This tree's release, the same installed, editable or run from a checkout on PYTHONPATH."""
    return __version__
