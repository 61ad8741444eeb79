"""gpufabric: one description of a GPU cluster's networks, expanded into everything needed to bring them up."""

from __future__ import annotations

UNKNOWN_VERSION = "0.0.0+unknown"  # not installed (a checkout on PYTHONPATH): no metadata to read


def version() -> str:
    """The installed distribution's version, which setuptools-scm took from the git tag at build time."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gpufabric")
    except PackageNotFoundError:
        return UNKNOWN_VERSION


def __getattr__(name: str) -> str:
    if name == "__version__":  # read when asked for: importlib.metadata is not paid by every command
        return version()
    raise AttributeError(f"module 'gpufabric' has no attribute {name!r}")
