"""Golden files: what every example renders, so a change to the code shows as a reviewable diff.

- tests/golden/<name>/: the smaller examples rendered in full (every switch's files), with their structured
  config (`gpufabric export structured`) in tests/golden/<name>/structured/.
- tests/golden/digests/<example>.sha256: every example, the largest included, as one SHA-256 per rendered
  file and per export (`sha256sum` format): a byte changed anywhere in a 64 MB fabric shows, without
  committing the files.

Regenerate after an intended change, then review the diff before committing:
    python tests/golden.py
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

from conftest import HUGE_DESIGNS

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
DIGESTS = GOLDEN / "digests"
EXAMPLES = ROOT / "inventory" / "examples"
# Rendered in full: every platform appears in at least one of these (SONiC only in sonic.yml).
SOURCES = {
    "default": ROOT / "inventory" / "fabric.yml",
    "multi-vendor": EXAMPLES / "multi-vendor.yml",
    "sonic": EXAMPLES / "sonic.yml",
    "lab-infiniband": EXAMPLES / "lab-infiniband.yml",
    "superpod-1su": EXAMPLES / "superpod-1su.yml",
    "superpod-ib": EXAMPLES / "superpod-ib.yml",
}
# Every example, as digests; the huge designs aside (conftest.HUGE_DESIGNS: the 131,072-GPU fabric's
# renders and exports take most of a minute and its digests would be megabytes).
DIGEST_SOURCES = {"default": ROOT / "inventory" / "fabric.yml"} | {
    p.stem: p for p in sorted(EXAMPLES.glob("*.yml")) if p.stem not in HUGE_DESIGNS
}
# Not a secret: a fixed password so the committed hashes never change by themselves.
GOLDEN_ENV = {
    "GPUFABRIC_SWITCH_PASSWORD": "golden-password-not-a-secret",
    "GPUFABRIC_SALT_KEY": "golden-salt-key-not-a-secret",
    "GPUFABRIC_SNMP_COMMUNITY": "unused",
}


def render_source(source: Path) -> dict[str, str]:
    from render_helpers import render_all

    from gpufabric.export import structured
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    plan = build_plan(load_intent(str(source)))
    files = render_all(plan, GOLDEN_ENV)
    return files | {f"structured/{n}": text for n, text in structured.documents(plan).items()}


def render_exports(source: Path) -> dict[str, str]:
    """Every export kind of the example, or the reason it refuses (`export/<kind>.refused`)."""
    from gpufabric.export.registry import EXPORTERS
    from gpufabric.intent import load_intent
    from gpufabric.intent.errors import IntentError
    from gpufabric.plan import build_plan

    plan = build_plan(load_intent(str(source)))
    files: dict[str, str] = {}
    for kind, exporter in sorted(EXPORTERS.items()):
        try:
            files[f"export/{kind}{exporter.suffix}"] = without_checkout(exporter.render(plan))
        except (IntentError, ValueError) as refused:  # an export that does not apply to the example
            files[f"export/{kind}.refused"] = without_checkout(str(refused))
    return files


def without_checkout(text: str) -> str:
    """An export's header names the intent by its full path: the checkout's folder is left out (the
    path reads `inventory/fabric.yml`), so a clone anywhere gives the same digest."""
    return text.replace(f"{ROOT}/", "")


def render(name: str) -> dict[str, str]:
    return render_source(SOURCES[name])


def digest_lines(files: dict[str, str]) -> str:
    """`sha256sum`'s format, one line per file, sorted by name."""
    return "".join(f"{hashlib.sha256(files[n].encode()).hexdigest()}  {n}\n" for n in sorted(files))


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
    DIGESTS.mkdir(exist_ok=True)
    for name, source in DIGEST_SOURCES.items():
        files = render_source(source) | render_exports(source)
        (DIGESTS / f"{name}.sha256").write_text(digest_lines(files))
        print(f"wrote {len(files)} digests into {(DIGESTS / name).relative_to(ROOT)}.sha256")
    return 0


if __name__ == "__main__":
    sys.exit(main())
