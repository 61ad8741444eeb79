"""Zero-touch provisioning of a Linux + FRR switch: a POSIX shell script named by DHCP option 67.

A Linux switch has no vendor ZTP agent of its own; gpufabric's form is the one Cumulus Linux and SONiC
use (DHCP points at a script, the switch runs it once as root). The script carries the switch's whole
candidate (FRR's configuration, nftables, host settings and interfaces: what `push` loads) and applies
it with the FRR driver's own apply step, recording what a push records, so the next `push` finds nothing
to change. It runs on a switch whose FRR is the machine's (no pathspace) or, in the lab, in the switch's
pathspace named by FRR_NS, which must be the switch's own name.
"""

from __future__ import annotations

from collections.abc import Mapping

import gpufabric.nos.frr.system as frr_system
from gpufabric.nos.frr.files import DeviceFiles, assemble_candidate, candidate_parts
from gpufabric.platforms.spec import ZtpForm
from gpufabric.platforms.ztp_text import BOOTFILE_NAME, file_url, heredoc

WORKDIR = "/run/gpufabric-ztp.{device}"  # one per switch: the lab runs many on one machine


def shown(system: str | None, interfaces: str | None) -> str:
    """The host settings as the FRR driver records and diffs them (its `_shown`): secrets masked."""
    return frr_system.masked(system or "") + (interfaces or "")


def _apply(workdir: str, pathspace: str | None, parts_nft: bool, parts_system: bool) -> str:
    files = DeviceFiles(pathspace, workdir=workdir)
    conf = files.candidate("conf")
    nft = files.candidate("nft") if parts_nft else None
    system = files.candidate("system.sh") if parts_system else None
    return files.apply_script(conf, nft, system=system, save=True)


def script(device: str, files: Mapping[str, str]) -> str:
    """The provisioning script of one switch, from its rendered files (secrets resolved)."""
    parts = candidate_parts(assemble_candidate(device, files))
    work = WORKDIR.format(device=device)
    out = [
        "#!/bin/sh",
        f"# gpufabric zero-touch provisioning: {device} (Linux + FRR). Run once, as root, on the switch.",
        "set -eu",
        f'case "${{FRR_NS:-}}" in ""|{device}) ;; *) echo "FRR_NS=$FRR_NS: not {device}" >&2; exit 2;; esac',
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
        heredoc(f"{work}/apply-pathspace.sh", _apply(work, device, nft, system)).rstrip("\n"),
        # The lab's switches run FRR in a pathspace named after them; a switch of its own runs the default one.
        f'if [ -n "${{FRR_NS:-}}" ]; then sh {work}/apply-pathspace.sh; else sh {work}/apply-default.sh; fi',
        f"rm -rf {work}",
        "exit 0",
    ]
    return "\n".join(out) + "\n"


def ztp_form(device: str, files: Mapping[str, str], base_url: str) -> ZtpForm:
    name = f"{device}.ztp.sh"
    return ZtpForm({name: script(device, files)}, ((BOOTFILE_NAME, file_url(base_url, name)),))
