"""`gpufabric sot`: the plan into a source of truth (Nautobot), and the physical facts back (Nautobot or NetBox)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
import yaml

from gpufabric.cli.options import FiniteFloat, file_arg
from gpufabric.cli.output import err, out, shown
from gpufabric.files import write_atomic
from gpufabric.intent import load_intent
from gpufabric.intent.loader import default_fabric_text, read_intent_file
from gpufabric.outputs import json_dumps
from gpufabric.plan import build_plan
from gpufabric.sot.client import DEADLINE, KINDS, Nautobot, SotError, Source, token_from_env
from gpufabric.sot.service import pull, push

url_option = click.option(
    "--url",
    envvar="GPUFABRIC_SOT_URL",
    required=True,
    metavar="URL",
    help="The source of truth's base URL: https://HOST[:PORT] (plain http only to a loopback address). "
    "Default: $GPUFABRIC_SOT_URL.",
)
kind_option = click.option(
    "--kind",
    type=click.Choice(sorted(KINDS)),
    default="nautobot",
    show_default=True,
    help="Which source of truth answers at --url (through its own client library: pynautobot, pynetbox). "
    "NetBox is read only: `pull`.",
)
ca_option = click.option(
    "--ca-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="CA bundle the server's certificate is checked against (default: the system's).",
)
token_option = click.option(
    "--token-env",
    default="GPUFABRIC_SOT_TOKEN",
    show_default=True,
    metavar="NAME",
    help="The environment variable holding the API token (the token is never an argument, nor printed).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
timeout_option = click.option(
    "--timeout",
    type=FiniteFloat(1, 3600),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="How long one request may take, whole (connect, send, the answer to its last byte), before the command "
    "stops with exit 2 (a busy server can take long over a write).",
)
deadline_option = click.option(
    "--deadline",
    type=FiniteFloat(1, 86400),
    default=DEADLINE,
    show_default=True,
    metavar="SECONDS",
    help="How long all of the command's requests may take together before it stops with exit 2.",
)


@click.group("sot")
def sot_cmd() -> None:
    """Keep the plan in a source of truth (Nautobot), and read the physical facts back.

    `push` writes sites, racks, devices with roles and platforms, interfaces, cables with lengths and
    labels, prefixes, IP addresses, ASNs and VLANs; `pull` writes an intent with the servers, racks, positions,
    serials and measured cable lengths the source of truth holds (docs/source-of-truth.md)."""


@sot_cmd.command("push")
@file_arg
@url_option
@token_option
@click.option("--dry-run", is_flag=True, help="Count what would change; change nothing.")
@timeout_option
@deadline_option
@kind_option
@ca_option
@json_option
def push_cmd(
    *, file: str | None, url: str, token_env: str, dry_run: bool, timeout: float, deadline: float, as_json: bool,
    kind: str, ca_file: Path | None,
) -> None:  # fmt: skip
    """Write the plan of FILE into the source of truth: create what is missing, update what differs, and
    remove what the fabric's tag marks and the plan no longer has. A second push changes nothing."""
    if kind != "nautobot":
        raise SotError(f"`sot push` writes to Nautobot only; {kind} is read with `sot pull` (use --kind nautobot)")
    plan = build_plan(load_intent(file))
    api = _source(kind, url, token_env, timeout=timeout, deadline=deadline, ca_file=ca_file)
    assert isinstance(api, Nautobot)  # the kind was checked above
    result = push(plan, api, dry_run=dry_run)
    total = result.total
    if as_json:
        doc: dict[str, Any] = {
            "site": result.site,
            "dry_run": dry_run,
            "created": total.created,
            "updated": total.updated,
            "deleted": total.deleted,
            "kinds": {k: asdict(v) for k, v in result.kinds.items() if v.total},
            "untagged": result.untagged,
        }
        out.print(json_dumps(doc), markup=False, highlight=False, soft_wrap=True)
        _warn_untagged(result.untagged)
        return
    _warn_untagged(result.untagged)
    for what, c in result.kinds.items():
        if c.total:
            err.print(shown(f"{what}: {c.created} created, {c.updated} updated, {c.deleted} deleted"))
    verb = "would change" if dry_run else "changed"
    out.print(
        shown(
            f"site {result.site}: {verb} {total.total} ({total.created} created, {total.updated} updated, "
            f"{total.deleted} deleted)"
        )
    )


def _source(kind: str, url: str, token_env: str, *, timeout: float, deadline: float, ca_file: Path | None) -> Source:
    """The client of `kind` at `url`, the token read from `token_env`."""
    token = token_from_env(token_env)
    return KINDS[kind](url, token, timeout=timeout, deadline=deadline, ca_file=str(ca_file) if ca_file else None)


def _warn_untagged(untagged: list[str], verb: str = "changed or removed") -> None:
    """Objects the listing gave as the fabric's that do not carry its tag: said, never touched."""
    for item in untagged:
        err.print(shown(f"warning: {item} was listed as the fabric's but does not carry its tag: left alone"))
    if untagged:
        err.print(shown(f"warning: {len(untagged)} objects without the fabric's tag in the listings (a proxy or server "
                        f"that drops the tags= filter?); none of them was {verb}"))  # fmt: skip


@sot_cmd.command("pull")
@file_arg
@url_option
@token_option
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the intent here (default: stdout)."
)
@timeout_option
@deadline_option
@kind_option
@ca_option
@json_option
def pull_cmd(
    *, file: str | None, url: str, token_env: str, output: Path | None, timeout: float, deadline: float,
    as_json: bool, kind: str, ca_file: Path | None,
) -> None:  # fmt: skip
    """The intent FILE with the physical facts the source of truth holds: each group's servers (names,
    racks, positions, serials), the racks, where each switch stands, and cable lengths measured otherwise
    than the positions give. Comments of FILE are not kept."""
    text = read_intent_file(file) if file is not None else default_fabric_text()[0]
    api = _source(kind, url, token_env, timeout=timeout, deadline=deadline, ca_file=ca_file)
    result = pull(load_intent(file), text, api)
    document = yaml.safe_dump(result.intent, sort_keys=False, allow_unicode=True)
    if output is not None:
        write_atomic(output, document)
    elif not as_json:
        click.echo(document, nl=False)
    summary = {
        "servers": result.servers,
        "groups": result.groups,
        "switches": result.switches,
        "racks": result.racks,
        "measured_cables": result.measured,
        "untagged": result.untagged,
    }
    _warn_untagged(result.untagged, "read")
    if as_json:
        out.print(json_dumps(summary | ({} if output else {"intent": result.intent})), markup=False, highlight=False)
    else:
        err.print(
            shown(
                f"pulled {result.servers} servers, {result.switches} switches, {result.racks} racks, "
                f"{result.measured} measured cable lengths"
            )
        )
