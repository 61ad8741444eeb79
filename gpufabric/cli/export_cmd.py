"""`gpufabric export KIND [FILE] [-o PATH]`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from gpufabric.cli.drawings import write_drawings
from gpufabric.cli.options import print_warnings, strict_option, warnings_exit
from gpufabric.cli.output import emit, err, shown, write_files
from gpufabric.export import anta, containerlab, drawing, ib_topology, k8s_network, storage, structured, ztp
from gpufabric.export import host_facts as host_facts_reader
from gpufabric.export.registry import EXPORTERS
from gpufabric.files import PRIVATE, write_atomic
from gpufabric.intent import load_intent
from gpufabric.intent.errors import IntentError, Problem, printable
from gpufabric.plan import Plan, build_plan

_KINDS_HELP = "\n".join(f"  {e.name:18} {e.summary}" for e in EXPORTERS.values())


@click.command(
    "export",
    help=f"""Export the plan as KIND, to stdout or to -o PATH (written whole or not at all).

\b
Kinds:
{_KINDS_HELP}
""",
)
@click.argument("kind", type=click.Choice(list(EXPORTERS)))
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="File to write (a directory for drawing, structured, k8s-network, ztp, anta and storage).",
)
@click.option(
    "--image",
    "images",
    multiple=True,
    metavar="PLATFORM=IMAGE",
    help="containerlab only: image per platform (a registered platform's name, host or edge).",
)
@click.option(
    "--vault-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="ztp only: Ansible Vault file holding the secrets the intent names as {vault: NAME} (as push reads it).",
)
@click.option(
    "--vault-password-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="ztp only: file holding the vault's password. [default: $ANSIBLE_VAULT_PASSWORD_FILE]",
)
@click.option(
    "--host-facts",
    type=click.Path(exists=True, path_type=Path),
    help="k8s-network only: what playbooks/validate.yml read on the GPU hosts (build/host-facts, or one "
    "<host>.json): each node's GPU-to-NIC pairing as read. Without it the pairing is assumed by rail.",
)
@strict_option
def export_cmd(
    kind: str,
    file: str | None,
    *,
    output: Path | None,
    images: tuple[str, ...],
    vault_file: Path | None,
    vault_password_file: Path | None,
    host_facts: Path | None,
    strict: bool,
) -> int:
    if host_facts is not None and kind != "k8s-network":
        raise click.BadParameter("only k8s-network takes host readings", param_hint="--host-facts")
    loaded = load_intent(file)
    plan = build_plan(loaded)
    print_warnings(plan)
    vault = (vault_file, vault_password_file)
    try:
        if kind == "k8s-network":
            return warnings_exit(plan, strict, _k8s_network(plan, output, host_facts))
        code = _export(plan, kind, output, images, vault)
    except (k8s_network.K8sNetworkError, ztp.ZtpError) as exc:
        if exc.problems:  # located in the intent: file, line, field
            raise loaded.error(exc.problems) from None
        raise click.ClickException(f"{printable(plan.source)}: {exc}") from None
    except anta.NoAntaSwitchError as exc:
        raise click.UsageError(f"{printable(plan.source)}: {exc}") from None
    except storage.NoStorageClientsError as exc:
        raise IntentError(plan.source, [Problem(("planes", "storage", "file_systems"), str(exc),
                                                "name the file systems the GPU servers mount")]) from None  # fmt: skip
    except ib_topology.NotInfinibandError as exc:
        fix = "give planes.compute transport: infiniband (docs/infiniband.md)"
        raise IntentError(plan.source, [Problem(("planes", "compute"), str(exc), fix)]) from None
    return warnings_exit(plan, strict, code)


def _export(
    plan: Plan, kind: str, output: Path | None, images: tuple[str, ...], vault: tuple[Path | None, Path | None]
) -> int:
    if kind == "drawing" and output is not None:
        return _drawing_dir(plan, output)
    if kind == "structured" and output is not None:
        return _structured_dir(plan, output)
    if kind == "ztp" and output is not None:
        return _ztp_dir(plan, output, vault)
    if kind == "storage" and output is not None:
        _into_dir(output, "storage writes one folder per GPU server")
        written = write_files(output, storage.documents(plan))
        err.print(f"wrote {written} storage client file(s) to {output} (roles/storage_client installs them)")
        return 0
    if kind == "anta" and output is not None:
        _into_dir(output, "anta writes one catalog per EOS switch")
        err.print(f"wrote {write_files(output, anta.documents(plan))} ANTA catalog(s) to {output}")
        return 0
    text = containerlab.render(plan, _images(images)) if kind == "containerlab" else EXPORTERS[kind].render(plan)
    emit(text, output)
    return 0


def _images(pairs: tuple[str, ...]) -> dict[str, str]:
    images = {}
    for pair in pairs:
        platform, sep, image = pair.partition("=")
        if not sep or platform not in containerlab.DEFAULT_IMAGES or not image:
            raise click.BadParameter(
                f"'{pair}': write PLATFORM=IMAGE with PLATFORM one of {', '.join(containerlab.DEFAULT_IMAGES)}",
                param_hint="--image",
            )
        images[platform] = image
    return images


def _structured_dir(plan: Plan, directory: Path) -> int:
    _into_dir(directory, "structured writes one JSON file per switch")
    err.print(f"wrote {write_files(directory, structured.documents(plan))} structured config file(s) to {directory}")
    return 0


def _k8s_network(plan: Plan, output: Path | None, host_facts: Path | None) -> int:
    """The Network Operator objects, to a folder (-o) or stdout; the GPU-to-NIC pairing read where given."""
    if output is not None:
        _into_dir(output, "k8s-network writes one file per object kind")
    readings = None
    if host_facts is not None:
        readings = host_facts_reader.load(host_facts, plan, k8s_network.rail_nics(k8s_network.rails(plan)))
    docs = k8s_network.documents(plan, readings)
    if output is None:
        emit("---\n".join(docs[name] for name in k8s_network.FILES if name in docs), None)
    else:
        err.print(f"wrote {write_files(output, docs)} Kubernetes network file(s) to {output}")
    pairs = k8s_network.pairing(plan, k8s_network.rails(plan), readings)
    assumed = sorted(node for node, (how, _) in pairs.items() if how == "assumed")
    if assumed:
        said = ", ".join(assumed[:5]) + (f" and {len(assumed) - 5} more" if len(assumed) > 5 else "")
        why = "no reading given (--host-facts)" if readings is None else "no reading of theirs in --host-facts"
        err.print(f"GPU-to-NIC pairing assumed by rail (rail r serves GPU r-1) for {said}: {why}", markup=False)
    if readings:
        err.print(f"GPU-to-NIC pairing read from the hosts for {len(readings)} node(s)", markup=False)
    return 0


def _ztp_dir(plan: Plan, directory: Path, vault: tuple[Path | None, Path | None]) -> int:
    """The DHCP servers' configurations and every switch's provisioning files. Passwords are hashed and the
    secrets a switch keeps in clear are filled in from the environment (and the vault), as `push` does:
    files that hold one are written owner-only."""
    _into_dir(directory, "ztp writes the DHCP configurations and a folder of provisioning files")
    secrets: dict[str, str] = dict(os.environ)
    if vault[0] is not None:
        from gpufabric.config.vault import open_vault

        secrets.update(open_vault(vault[0], vault[1]))
    done = ztp.export(plan, secrets=secrets)
    for name, text in done.files.items():
        write_atomic(directory / name, text, PRIVATE if name in done.secret_files else None)
    for device, why in done.skipped.items():
        err.print(shown(f"note: {device} is not provisioned: {why}"))
    err.print(
        f"wrote {len(done.files)} file(s) to {directory}: {ztp.summary(done)}; serve {directory / ztp.HTTP} at "
        f"{ztp.base_url(plan)}"
    )
    return 0


def _into_dir(directory: Path, why: str) -> None:
    """Refuse (-o) a directory output that names an existing file, before anything is rendered."""
    if directory.exists() and not directory.is_dir():
        raise click.BadParameter(f"{directory} is a file; {why}", param_hint="-o")


def _drawing_dir(plan: Plan, directory: Path) -> int:
    write_drawings(drawing.render_files(plan), directory, "-o")
    return 0
