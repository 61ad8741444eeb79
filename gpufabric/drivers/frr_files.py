"""Where the FRR driver keeps its files on the device, and the shell it runs there.

The candidate is FRR's integrated configuration, optionally followed by an nftables section
(QoS classification, management ACL) after the NFT_MARKER line: on a Linux switch both are
the switch's configuration, and one commit applies both or neither.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

NFT_MARKER = "! gpufabric: nftables"
NFT_TABLE = "inet gpufabric"
REMOVE_TABLE = f"table {NFT_TABLE}\ndelete table {NFT_TABLE}\n"
RELOAD = "/usr/lib/frr/frr-reload.py"


def split_candidate(text: str) -> tuple[str, str | None]:
    if NFT_MARKER not in text:
        return text, None
    frr, nft = text.split(NFT_MARKER, 1)
    return frr, nft.lstrip("\n")


def join_candidate(frr: str, nft: str | None) -> str:
    return frr if nft is None else f"{frr.rstrip()}\n{NFT_MARKER}\n{nft}"


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

    def apply_script(self, conf: str, nft: str | None, merge: bool = False) -> str:
        """Shell that makes `conf` (and `nft`) the running and saved configuration; stops at the first error."""
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

    def revert_script(self) -> str:
        """Re-apply what ran before the last commit; the revert timer and `rollback()` both run this."""
        return self.apply_script(self.path("rollback.conf"), self.path("rollback.nft"))

    def snapshot_script(self) -> str:
        """Save the running configuration as the rollback target, before a commit changes it."""
        return "\n".join(
            [
                "set -e",
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
