"""YAML output through libyaml when present: the pure-Python dumper takes ~10 s on a 32k-GPU plan."""

from __future__ import annotations

from typing import Any

import yaml

_Dumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(data: Any, **kw: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, **kw)
