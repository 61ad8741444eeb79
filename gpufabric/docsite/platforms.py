"""One page per network OS, and an index table, generated from the platform registry.

Only the registry's public functions and the platforms' facts and methods are read, so a platform added to the
registry gets its page (and its nav entry) with no change here.
"""

from __future__ import annotations

from gpufabric.docsite.pages import Generated
from gpufabric.platforms import all_platforms
from gpufabric.platforms.spec import Platform

MARKER = "Generated from the platform registry by `gpufabric docs platforms`"
FOLDER = "platforms"
# Cages of a split port shown on each page, to show the platform's breakout spelling.
_SPLITS = (1, 2, 4)


def _code(values: object) -> str:
    if isinstance(values, tuple | list):
        return ", ".join(f"`{v}`" for v in values)
    return f"`{values}`"


def _ports(spec: Platform) -> str:
    shown = []
    for split in _SPLITS:
        names = ", ".join(f"`{spec.port_name(1, lane, split)}`" for lane in range(split))
        shown.append(f"{'whole' if split == 1 else f'split {split} ways'}: {names}")
    return "; ".join(shown)


def _yes(flag: bool, yes: str, no: str) -> str:
    return yes if flag else no


def _rows(spec: Platform) -> list[tuple[str, str]]:
    f = spec.facts
    low, high = f.confirm_timeout_range
    # A platform with no templates builds its document in Python; the others render a Jinja2 template.
    made = "built as a document tree" if spec.template_loader() is None else "Jinja2 template `{}`"
    files = "<br>".join(f"`NAME{suffix}` ({made.format(source)})" for suffix, source in f.outputs)
    judge = (
        "none: `verify` checks the files against the plan (the test suite's oracles: "
        "[Switch configurations](../configs.md))"
        if spec.judge is None
        else f"{spec.judge.title} (install `{spec.judge.requirement}`)"
    )
    return [
        ("intent value", f"`platform: {spec.name}`"),
        ("releases rendered for", f"{_code(f.releases)} (default `{f.default_release}`)"),
        ("files per switch", files),
        ("management port", f"`{f.mgmt_port}`"),
        ("management VRF", "none (the default table)" if f.mgmt_vrf is None else f"`{f.mgmt_vrf}`"),
        ("largest MTU", f"{f.max_mtu} bytes"),
        ("local password hash", f"{f.hash_algorithm} (crypt(3) `{f.hash_prefix}`)"),
        ("BGP between switches", _yes(f.numbered_only, "numbered /31s only", "unnumbered (RFC 5549) or /31s")),
        ("MLAG toward LACP hosts", _yes(f.mlag, "yes", "no")),
        ("port names (cage 1)", _ports(spec)),
        ("push: NAPALM driver", f"`{f.napalm_driver}`"),
        (
            "revert of an unconfirmed change",
            _yes(f.confirm_timer, "armed on the switch itself", "kept by the controller"),
        ),
        ("`--confirm-timeout` accepted", f"{low} to {high} s"),
        ("`nornir restart`: reboot modes", _code(spec.reboot_modes()) + " (the first unless `--mode` says)"),
        (
            "`nornir upgrade`: a switch not back on its new image",
            spec.image_fallback() if spec.installs_images() else f"no upgrade: {spec.image_fallback()}",
        ),
        ("vendor model in `verify`", judge),
        ("containerlab kind", f"`{f.containerlab_kind}`"),
        ("the configuration follows", f.docs),
    ]


def _page(spec: Platform) -> str:
    lines = [
        f"# {spec.title}",
        "",
        f"{MARKER} (the `{spec.name}` platform's spec); do not edit by hand.",
        "",
        "| fact | value |",
        "| --- | --- |",
        *(f"| {key} | {value} |" for key, value in _rows(spec)),
        "",
        "The intent pins the release the configuration follows (quoted: YAML reads `5.10` as the number 5.1):",
        "",
        "```yaml",
        "platforms:",
        f"  {spec.name}: {{release: '{spec.facts.default_release}'}}",
        "```",
        "",
        "How the files are rendered, judged and pushed: [Switch configurations](../configs.md),",
        "[Push safety](../push.md); all platforms side by side: [Platforms](index.md).",
        "",
    ]
    return "\n".join(lines)


def _index(specs: list[Platform]) -> str:
    lines = [
        "# Platforms",
        "",
        f"{MARKER}; do not edit by hand.",
        "",
        "Every network OS gpufabric configures, as its spec describes it. A plane's switch roles name one",
        "(`platform:` in the intent); the intent's `platforms:` section pins each one's release.",
        "",
        "| platform | releases (default) | largest MTU | BGP | MLAG | vendor model in `verify` |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for spec in specs:
        releases = ", ".join(spec.facts.releases)
        bgp = _yes(spec.facts.numbered_only, "/31 only", "unnumbered or /31")
        judge = "—" if spec.judge is None else spec.judge.title
        f = spec.facts
        lines.append(
            f"| [{spec.title}]({spec.name}.md) (`{spec.name}`) | {releases} ({f.default_release}) | {f.max_mtu} "
            f"| {bgp} | {_yes(spec.facts.mlag, 'yes', 'no')} | {judge} |"
        )
    lines.append("")
    return "\n".join(lines)


def generate() -> Generated:
    specs = all_platforms()
    pages = {"index.md": _index(specs)} | {f"{spec.name}.md": _page(spec) for spec in specs}
    nav = [("Overview", "index.md")] + [(spec.title, f"{spec.name}.md") for spec in specs]
    return Generated(MARKER, "gpufabric docs platforms", pages, nav)
