"""Every platform fact lives in its OS folder (gpufabric/nos/<os>/) and its Platform subclass, nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

from gpufabric.intent.model import Intent
from gpufabric.platforms import names

ROOT = Path(__file__).resolve().parents[2]


def test_the_schema_names_exactly_the_registered_platforms():
    schema = Intent.model_json_schema()
    role = schema["$defs"]["SwitchRole"]["properties"]["platform"]
    assert role["enum"] == list(names())


def test_no_module_outside_the_platform_modules_keeps_a_table_of_platforms():
    """A dict keyed by platform names (`{"cumulus": ..., "eos": ...}`) anywhere else is a fact out of place."""
    table = re.compile(r"\"(cumulus|eos|nxos)\"\s*:")  # `frr` is also a daemon name
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("gpufabric", "nornir_tasks")
        for path in (ROOT / folder).rglob("*.py")
        if "platforms" not in path.parts and table.search(path.read_text())
    ]
    assert offenders == []
