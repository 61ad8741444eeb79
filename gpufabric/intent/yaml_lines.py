"""The intent's YAML reader, which remembers every field's line: it lives on the ground floor
(gpufabric.yaml_lines) beside the other readers of outside input; named here for the intent's callers."""

from __future__ import annotations

from gpufabric.yaml_lines import MAX_BYTES, load_yaml

__all__ = ["MAX_BYTES", "load_yaml"]
