"""Golden files: the default fabric and multi-vendor.yml rendered into tests/golden/<name>/, and their
structured config (`gpufabric export structured`) into tests/golden/<name>/structured/.

Regenerate after an intended change, then review the diff before committing:
    python tests/golden.py
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
SOURCES = {
    "default": ROOT / "inventory" / "fabric.yml",
    "multi-vendor": ROOT / "inventory" / "examples" / "multi-vendor.yml",
}
# Not a secret: a fixed password so the committed hashes never change by themselves.
GOLDEN_ENV = {
    "GPUFABRIC_SWITCH_PASSWORD": "golden-password-not-a-secret",
    "GPUFABRIC_SALT_KEY": "golden-salt-key-not-a-secret",
    "GPUFABRIC_SNMP_COMMUNITY": "unused",
}


def render(name: str) -> dict[str, str]:
    from render_helpers import render_all

    from gpufabric.export import structured
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    plan = build_plan(load_intent(str(SOURCES[name])))
    files = render_all(plan, GOLDEN_ENV)
    return files | {f"structured/{n}": text for n, text in structured.documents(plan).items()}


def main() -> int:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    for name in SOURCES:
        folder = GOLDEN / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        files = render(name)
        for file, text in files.items():
            (folder / file).parent.mkdir(exist_ok=True)
            (folder / file).write_text(text)
        print(f"wrote {len(files)} files into {folder.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
