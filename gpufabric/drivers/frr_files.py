"""Where the FRR driver keeps its files on the device, and the shell it runs there.

The candidate is FRR's integrated configuration, optionally followed by sections after marker
lines: nftables (QoS classification, management ACL) after NFT_MARKER, the host settings
(`NAME.system.yaml`) after SYSTEM_MARKER and the interfaces file after INTERFACES_MARKER. On a
Linux switch all of it is the switch's configuration, and one commit applies all or none.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from gpufabric.drivers import frr_system
from gpufabric.drivers.frr_system import INTERFACES_MARKER, SYSTEM_MARKER

NFT_MARKER = "! gpufabric: nftables"
NFT_TABLE = "inet gpufabric"
REMOVE_TABLE = f"table {NFT_TABLE}\ndelete table {NFT_TABLE}\n"
RELOAD = "/usr/lib/frr/frr-reload.py"


_SECTION = re.compile(
    f"^({re.escape(NFT_MARKER)}|{re.escape(SYSTEM_MARKER)}|{re.escape(INTERFACES_MARKER)})$", re.MULTILINE
)


@dataclass(frozen=True)
class CandidateParts:
    frr: str
    nft: str | None = None
    system: str | None = None
    interfaces: str | None = None


def candidate_parts(text: str) -> CandidateParts:
    pieces = _SECTION.split(text)
    found = {marker: body.lstrip("\n") for marker, body in zip(pieces[1::2], pieces[2::2], strict=True)}
    return CandidateParts(pieces[0], found.get(NFT_MARKER), found.get(SYSTEM_MARKER), found.get(INTERFACES_MARKER))


def split_candidate(text: str) -> tuple[str, str | None]:
    parts = candidate_parts(text)
    return parts.frr, parts.nft


def join_candidate(frr: str, nft: str | None, system: str | None = None, interfaces: str | None = None) -> str:
    text = frr.rstrip() + "\n" if (nft or system or interfaces) else frr
    for marker, body in ((NFT_MARKER, nft), (SYSTEM_MARKER, system), (INTERFACES_MARKER, interfaces)):
        if body is not None:
            text += f"{marker}\n{body.rstrip()}\n"
    return text


# What the last applied host settings were (shown form, and the root-only secrets), kept with a rollback.
_KEPT = ("system", "system.secrets")


def _copy_or_remove(src: str, dst: str) -> str:
    return f"if [ -f {src} ]; then cp {src} {dst}; else rm -f {dst}; fi\n"


@dataclass(frozen=True)
class DeviceFiles:
    pathspace: str | None

    @property
    def confdir(self) -> str:
        return f"/etc/frr/{self.pathspace}" if self.pathspace else "/etc/frr"

    def path(self, name: str) -> str:
        return f"{self.confdir}/gpufabric.{name}"

    @property
    def vtysh(self) -> str:
        return f"vtysh -N {shlex.quote(self.pathspace)}" if self.pathspace else "vtysh"

    @property
    def reload(self) -> str:
        return (
            f"{RELOAD} --stdout --pathspace {shlex.quote(self.pathspace)}" if self.pathspace else f"{RELOAD} --stdout"
        )

    def apply_script(self, conf: str, nft: str | None, merge: bool = False, system: str | None = None) -> str:
        """Shell that makes `conf` (and `nft`, and the host settings script `system`) the running and saved
        configuration; stops at the first error."""
        frr = f"{self.vtysh} -f {conf}" if merge else f"{self.reload} --reload {conf}"
        lines = [
            "set -e",
            f'out=$({frr} 2>&1) || {{ echo "$out" | tail -20 >&2; exit 3; }}',
            f"{self.vtysh} -c 'write memory' >/dev/null",
            # What was applied, and a fingerprint of what FRR made of it: compare_config's fast path.
            f"cp {conf} {self.path('applied.conf')}",
            f"{self.running_fingerprint} > {self.path('applied.running')}",
        ]
        if nft is not None:
            lines += [
                f"nft -f {nft}",
                f"if cmp -s {nft} {self.path('remove.nft')}; then rm -f {self.path('applied.nft')} "
                f"{self.path('applied.listing')};",
                f"else cp {nft} {self.path('applied.nft')}; nft -s list table {NFT_TABLE} > "
                f"{self.path('applied.listing')}; fi",
            ]
        if system is not None:
            lines += [
                f"sh {system}",
                f"cp {self.path('candidate.system.shown')} {self.path('applied.system')}",
                f"(umask 077; cp {self.path('candidate.system.secrets')} {self.path('applied.system.secrets')})",
            ]
        return "\n".join(lines) + "\n"

    @property
    def running_fingerprint(self) -> str:
        return f"{self.vtysh} -c 'show running-config' | sed '1,/^Current configuration:/d' | sha256sum"

    def unchanged_check(self, conf: str) -> str:
        """Exit 0 when `conf` is what was last applied and FRR still runs exactly what it made of it."""
        return (
            f"cmp -s {conf} {self.path('applied.conf')} && "
            f'[ "$({self.running_fingerprint})" = "$(cat {self.path("applied.running")} 2>/dev/null)" ]'
        )

    @property
    def _system_rollback(self) -> tuple[str, str, str]:
        return (
            self.path("rollback.system.tar"),
            self.path("rollback.system.absent"),
            self.path("rollback.system.hostname"),
        )

    def revert_script(self) -> str:
        """Re-apply what ran before the last commit; the revert timer and `rollback()` both run this."""
        host = frr_system.restore_script(*self._system_rollback)
        host += "".join(_copy_or_remove(self.path(f"rollback.{f}.shown"), self.path(f"applied.{f}")) for f in _KEPT)
        return self.apply_script(self.path("rollback.conf"), self.path("rollback.nft")) + host

    def snapshot_script(self) -> str:
        """Save the running configuration (and the host settings' files) as the rollback target, before a
        commit changes it. Files only root may read: the saved shadow holds password hashes."""
        keep = [_copy_or_remove(self.path(f"applied.{f}"), self.path(f"rollback.{f}.shown")) for f in _KEPT]
        return "\n".join(
            [
                "set -e",
                "umask 077",
                frr_system.snapshot_script(*self._system_rollback),
                *keep,
                f"{self.vtysh} -c 'show running-config' | sed '1,/^Current configuration:/d' "
                f"> {self.path('rollback.conf')}",
                f"printf '{REMOVE_TABLE}' > {self.path('remove.nft')}",
                f"if [ -f {self.path('applied.nft')} ]; then "
                f"cp {self.path('applied.nft')} {self.path('rollback.nft')};",
                f"else cp {self.path('remove.nft')} {self.path('rollback.nft')}; fi",
                "",
            ]
        )

    def arm_timer_script(self, seconds: int) -> str:
        """Start the revert timer on the device: it rolls back unless `confirm_commit` kills it first.

        It runs in its own session so closing the SSH connection does not stop it, and so
        confirm can kill its whole process group.
        """
        pending, revert = self.path("pending"), self.path("revert.sh")
        body = f"sleep {int(seconds)}; sh {revert} >{self.path('revert.log')} 2>&1; rm -f {pending}"
        return f"setsid sh -c {shlex.quote(body)} </dev/null >/dev/null 2>&1 &\necho $! > {pending}\n"

    @property
    def pending_check(self) -> str:
        pending = self.path("pending")
        return f"test -f {pending} && kill -0 $(cat {pending}) 2>/dev/null"

    @property
    def disarm_script(self) -> str:
        pending = self.path("pending")
        # procps kill, not the shell's: dash's builtin rejects `--` and a process group, and the timer lives on.
        return (
            f"if [ -f {pending} ]; then p=$(cat {pending}); /bin/kill -s TERM -- -$p 2>/dev/null || true; "
            # Gone, or a zombie waiting for a reaper: either way it will never revert.
            f"sleep 0.1; s=$(awk '/^State:/{{print $2}}' /proc/$p/status 2>/dev/null); "
            f'if [ -n "$s" ] && [ "$s" != Z ]; then echo \'revert timer still running\' >&2; exit 1; fi; '
            f"rm -f {pending}; fi\n"
        )
