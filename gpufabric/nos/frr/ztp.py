"""Zero-touch provisioning of a Linux + FRR switch: a POSIX shell script named by DHCP option 67.

A Linux switch has no vendor ZTP agent of its own; gpufabric's form is the one Cumulus Linux and SONiC
use (DHCP points at a script, the switch runs it once as root). The script carries the switch's whole
candidate (FRR's configuration, nftables, host settings and interfaces: what `push` loads) and applies
it with the FRR driver's own apply step, recording what a push records, so the next `push` finds nothing
to change. It runs on a switch whose FRR is the machine's (no pathspace) or, in the lab, in the switch's
pathspace named by FRR_NS: the switch's own name (the default lab) or a named lab's `<lab>_<switch>`; any
other FRR_NS is another switch's, and the script refuses it before it writes anything.
"""

from __future__ import annotations

from collections.abc import Mapping

import gpufabric.nos.frr.system as frr_system
from gpufabric.nos.frr.files import DeviceFiles, assemble_candidate, candidate_parts
from gpufabric.platforms.spec import ZtpForm
from gpufabric.platforms.ztp_text import BOOTFILE_NAME, file_url, heredoc

WORKDIR = "/run/gpufabric-ztp.{device}"  # one per switch: the lab runs many on one machine
# Where the pathspace goes in the apply step written for a lab's switch: replaced on the switch by FRR_NS, once
# FRR_NS is checked to be the switch's (letters, digits and '-' around one '_', nothing a shell or sed reads).
# The '_' keeps it from being a switch name, so it stands nowhere else in that step (`_pathspace_template`).
PATHSPACE_MARK = "gpufabric_ztp_pathspace"
# A lab's name for a switch: `<lab>_<switch>`, the lab's name lowercase letters, digits and '-'
# (gpufabric/fleet/lab/names.py, which this floor does not import).
LAB_SEPARATOR = "_"


def shown(system: str | None, interfaces: str | None) -> str:
    """The host settings as the FRR driver records and diffs them (its `_shown`): secrets masked."""
    return frr_system.masked(system or "") + (interfaces or "")


def _apply(workdir: str, pathspace: str | None, parts_nft: bool, parts_system: bool) -> str:
    files = DeviceFiles(pathspace, workdir=workdir)
    conf = files.candidate("conf")
    nft = files.candidate("nft") if parts_nft else None
    system = files.candidate("system.sh") if parts_system else None
    return files.apply_script(conf, nft, system=system, save=True)


def _pathspace_template(workdir: str, device: str, parts_nft: bool, parts_system: bool) -> str:
    """The apply step in a pathspace, that pathspace written as PATHSPACE_MARK: the step `DeviceFiles` writes for
    the pathspace FRR_NS names once the mark is replaced by it. Checked here with the switch's own name, so a
    mark standing anywhere a pathspace does not (or a pathspace written without the mark) fails the export."""
    template = _apply(workdir, PATHSPACE_MARK, parts_nft, parts_system)
    if template.replace(PATHSPACE_MARK, device) != _apply(workdir, device, parts_nft, parts_system):
        raise AssertionError(f"{device}: the pathspace apply step does not take FRR_NS by replacing its mark")
    return template


def _pathspace_guard(device: str) -> list[str]:
    """Shell that refuses an FRR_NS that is not this switch's pathspace: empty (the machine's FRR), the switch's
    own name, or `<lab>_<switch>` with a lab's name (lowercase letters, digits, '-'); exit 2 before any write."""
    refuse = f'echo "FRR_NS=$FRR_NS: not {device}\'s pathspace" >&2; exit 2'
    suffix = f"{LAB_SEPARATOR}{device}"
    return [
        f'case "${{FRR_NS:-}}" in ""|{device}) ;; *{suffix}) lab="${{FRR_NS%{suffix}}}"',
        f'    case "$lab" in ""|[!a-z]*|*[!a-z0-9-]*) {refuse};; esac',
        f'    [ "${{#lab}}" -le 16 ] || {{ {refuse}; }} ;;',
        f"*) {refuse};; esac",
    ]


def script(device: str, files: Mapping[str, str]) -> str:
    """The provisioning script of one switch, from its rendered files (secrets resolved)."""
    parts = candidate_parts(assemble_candidate(device, files))
    work = WORKDIR.format(device=device)
    out = [
        "#!/bin/sh",
        f"# gpufabric zero-touch provisioning: {device} (Linux + FRR). Run once, as root, on the switch.",
        "set -eu",
        *_pathspace_guard(device),
        "umask 077",
        f"rm -rf {work}",
        f"mkdir -m 700 {work}",
        heredoc(f"{work}/conf", parts.frr).rstrip("\n"),
    ]
    if parts.nft is not None:
        out.append(heredoc(f"{work}/nft", parts.nft).rstrip("\n"))
    if parts.system is not None:
        settings = frr_system.parse(parts.system, parts.interfaces or "")
        out += [
            heredoc(f"{work}/system.sh", frr_system.apply_script(settings)).rstrip("\n"),
            heredoc(f"{work}/system.shown", shown(parts.system, parts.interfaces)).rstrip("\n"),
            heredoc(f"{work}/system.secrets", frr_system.secret_values(parts.system)).rstrip("\n"),
        ]
    nft, system = parts.nft is not None, parts.system is not None
    out += [
        heredoc(f"{work}/apply-default.sh", _apply(work, None, nft, system)).rstrip("\n"),
        heredoc(f"{work}/apply-pathspace.sh", _pathspace_template(work, device, nft, system)).rstrip("\n"),
        # The lab's switches run FRR in a pathspace named after them (FRR_NS, checked above); a switch of its own
        # runs the default one.
        f'if [ -n "${{FRR_NS:-}}" ]; then sed "s/{PATHSPACE_MARK}/$FRR_NS/g" {work}/apply-pathspace.sh '
        f"> {work}/apply.sh; sh {work}/apply.sh; else sh {work}/apply-default.sh; fi",
        f"rm -rf {work}",
        "exit 0",
    ]
    return "\n".join(out) + "\n"


def ztp_form(device: str, files: Mapping[str, str], base_url: str) -> ZtpForm:
    name = f"{device}.ztp.sh"
    return ZtpForm({name: script(device, files)}, ((BOOTFILE_NAME, file_url(base_url, name)),))
