"""Where the FRR driver keeps its files on the device, and the shell it runs there.

The candidate is FRR's integrated configuration, optionally followed by sections after marker
lines: nftables (QoS classification, management ACL) after NFT_MARKER, the host settings
(`NAME.system.yaml`) after SYSTEM_MARKER and the interfaces file after INTERFACES_MARKER. On a
Linux switch all of it is the switch's configuration, and one commit applies all or none.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

import gpufabric.nos.frr.system as frr_system
from gpufabric.drivers.switch_paths import PATHSPACE
from gpufabric.nos.frr.system import INTERFACES_MARKER, SYSTEM_MARKER

NFT_MARKER = "! gpufabric: nftables"
# Only in a running configuration `get_config` returns: the kernel settings the system file sets, as the
# switch runs them (`name = value` lines), so `validate` sees a setting changed behind gpufabric's back.
SYSCTL_MARKER = "! gpufabric: sysctl"
NFT_TABLE = "inet gpufabric"
REMOVE_TABLE = f"table {NFT_TABLE}\ndelete table {NFT_TABLE}\n"
RELOAD = "/usr/lib/frr/frr-reload.py"
# FRR's load of its saved file after a start (watchfrr's `vtysh -b -d <daemon>` per daemon, or a whole
# `vtysh -b`) holds the daemons' configuration lock while it runs, and frr-reload.py finds the lock taken
# ("VTY configuration is locked by other VTY") and applies nothing. A commit right after a restart waits for
# it, bounded: on a loaded machine the loads have run for over a minute.
BOOT_LOAD_WAIT_SECONDS = 120


def boot_loading(pathspace: str | None) -> str:
    """A pgrep pattern (shell-quoted) for FRR's boot load of this pathspace's daemons. Anchored at the
    command's first word, so that a shell whose command line holds the same words is not taken for one."""
    where = f" -N {pathspace}" if pathspace else ""
    return shlex.quote(f"^[^ ]*vtysh{where} -b( |$)")


def boot_load_wait(pathspace: str | None, seconds: int = BOOT_LOAD_WAIT_SECONDS) -> str:
    """Shell that returns once no boot load of the daemons runs, or after `seconds`."""
    return (
        f"n=0; while pgrep -f -- {boot_loading(pathspace)} >/dev/null && [ $n -lt {seconds} ]; do "
        "sleep 1; n=$((n+1)); done"
    )


_SECTION = re.compile(
    f"^({re.escape(NFT_MARKER)}|{re.escape(SYSTEM_MARKER)}|{re.escape(INTERFACES_MARKER)}|{re.escape(SYSCTL_MARKER)})$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class CandidateParts:
    frr: str
    nft: str | None = None
    system: str | None = None
    interfaces: str | None = None
    sysctl: str | None = None


def candidate_parts(text: str) -> CandidateParts:
    pieces = _SECTION.split(text)
    found = {marker: body.lstrip("\n") for marker, body in zip(pieces[1::2], pieces[2::2], strict=True)}
    return CandidateParts(
        pieces[0],
        found.get(NFT_MARKER),
        found.get(SYSTEM_MARKER),
        found.get(INTERFACES_MARKER),
        found.get(SYSCTL_MARKER),
    )


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
    # This session's own folder for candidates (made with mktemp -d, 0700): two sessions on one switch
    # (a push and a validate, say) never read or remove each other's candidate.
    workdir: str | None = None

    def __post_init__(self) -> None:
        # It names files in the commands run on the switch: a name no shell reads, or nothing is run.
        if self.pathspace and not PATHSPACE.fullmatch(self.pathspace):
            raise ValueError(f"an FRR pathspace is 1 to 64 letters, digits, '-' and '_', not {self.pathspace[:80]!r}")

    def candidate(self, name: str) -> str:
        return f"{self.workdir}/{name}" if self.workdir else self.path(f"candidate.{name}")

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

    def apply_script(
        self, conf: str, nft: str | None, merge: bool = False, system: str | None = None, save: bool = True
    ) -> str:
        """Shell that makes `conf` (and `nft`, and the host settings script `system`) the running
        configuration, and the saved one with `save` (a change awaiting confirmation is not saved: a
        reboot before the confirm comes back to the configuration before it); stops at the first error."""
        frr = f"{self.vtysh} -f {conf}" if merge else f"{self.reload} --reload {conf}"
        lines = [
            "set -e",
            boot_load_wait(self.pathspace),
            f'out=$({frr} 2>&1) || {{ echo "$out" | tail -20 >&2; exit 3; }}',
            *([self.save_command] if save else []),
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
                f"cp {self.candidate('system.shown')} {self.path('applied.system')}",
                f"(umask 077; cp {self.candidate('system.secrets')} {self.path('applied.system.secrets')})",
            ]
        return "\n".join(lines) + "\n"

    @property
    def save_command(self) -> str:
        return f"{self.vtysh} -c 'write memory' >/dev/null"

    def commit_script(self, revert_in: int | None = None, push: str = "") -> str:
        """One remote step: save the rollback target, arm the revert timer, then apply. The timer runs
        before anything changes, in its own session, so a session cut at any moment after this step
        starts leaves the switch reverting by itself. An apply that fails is reverted at once.

        The snapshot, the apply and the revert are files (uploaded first, see `commit_files`) run by
        their own `sh`: `set -e` is ignored inside a subshell that an `if` or `||` tests.
        """
        arm = self.arm_timer_script(revert_in, push) if revert_in else ""
        return (
            # One change at a time on a switch, whoever makes it: the lock is held while this runs, and
            # a pending commit (armed timer) refuses the next one until it is confirmed or reverted.
            f"exec 9>{self.path('lock')}\n"
            "flock -n 9 || { echo 'another gpufabric change is being made on this switch' >&2; exit 5; }\n"
            f"if {self.pending_check}; then echo 'a commit is pending confirmation on this switch' >&2; exit 5; fi\n"
            f"sh {self.candidate('snapshot.sh')} || {{ echo 'could not save the rollback target' >&2; exit 4; }}\n"
            f"{arm}"
            f"if ! sh {self.candidate('apply.sh')}; then\n"
            f"  {self.disarm_body(required=False)}\n"
            f"  sh {self.path('revert.sh')} >{self.path('revert.log')} 2>&1 || true\n"
            "  echo 'the candidate did not apply and was reverted' >&2; exit 3\n"
            "fi\n"
        )

    def commit_files(
        self, conf: str, nft: str | None, merge: bool = False, system: str | None = None, revert_in: int | None = None
    ) -> dict[str, str]:
        """The scripts a commit runs, by device path: uploaded before anything changes."""
        return {
            self.candidate("snapshot.sh"): self.snapshot_script(),
            self.candidate("apply.sh"): self.apply_script(conf, nft, merge=merge, system=system, save=not revert_in),
            # Where the timer finds it, whatever happens to this session's folder.
            self.path("revert.sh"): self.revert_script(),
        }

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

    # The revert timer. `pending` holds "boot-id pid start-time" of the timer process: a marker left by
    # an earlier boot, or by a process that has since died and whose PID was reused, is not a pending
    # commit. Its second line names the push ("push-id start controller"), for another controller to
    # read (`pending_push`); `read` takes the first line only, so the checks below never see it.
    # Whoever renames `pending` first owns it: the timer (to revert) or a confirm (to disarm),
    # so a confirm never kills a revert halfway and a revert never runs after a confirm.
    _BOOT = "$(cat /proc/sys/kernel/random/boot_id)"

    @staticmethod
    def _start_time(pid: str) -> str:
        return f"$(awk '{{print $22}}' /proc/{pid}/stat 2>/dev/null)"

    def arm_timer_script(self, seconds: int, push: str = "") -> str:
        """Start the revert timer: it rolls back unless a confirm disarms it first. It runs in its own
        session so closing the SSH connection does not stop it, and so a disarm can end its group.
        `push` ("push-id start controller", no quote or newline in it) becomes the marker's second line."""
        pending, revert = self.path("pending"), self.path("revert.sh")
        reverting = self.path("reverting")
        body = (
            f"sleep {int(seconds)}; mv {pending} {reverting} 2>/dev/null || exit 0; "
            f"sh {revert} >{self.path('revert.log')} 2>&1; rm -f {reverting}"
        )
        return (
            f"setsid sh -c {shlex.quote(body)} </dev/null >/dev/null 2>&1 &\n"
            f'p=$!; printf "%s\\n%s\\n" "{self._BOOT} $p {self._start_time("$p")}" {shlex.quote(push)} '
            f"> {pending}.new && mv {pending}.new {pending}\n"
        )

    @property
    def pending_push_check(self) -> str:
        """Prints the pending commit's push line (maybe empty: a marker from before push ids), or
        `none` when no commit is pending."""
        return f"if {self.pending_check}; then sed -n 2p {self.path('pending')}; else echo none; fi"

    @property
    def pending_check(self) -> str:
        pending = self.path("pending")
        return (
            f'test -f {pending} && read b p s < {pending} && [ "$b" = "{self._BOOT}" ] '
            f'&& [ -n "$s" ] && [ "{self._start_time("$p")}" = "$s" ]'
        )

    def disarm_body(self, required: bool) -> str:
        pending, taken = self.path("pending"), self.path("disarming")
        missing = (
            "echo 'no commit is pending (its revert timer has fired, or there was none)' >&2; exit 1"
            if required
            else ":"
        )
        # procps kill, not the shell's: dash's builtin rejects `--` and a process group.
        return (
            f"if mv {pending} {taken} 2>/dev/null; then read b p s < {taken} || true; "
            f'if [ "$b" = "{self._BOOT}" ] && [ -n "$s" ] && [ "{self._start_time("$p")}" = "$s" ]; then '
            f"/bin/kill -s TERM -- -$p 2>/dev/null || true; fi; rm -f {taken}; else {missing}; fi"
        )

    @property
    def disarm_script(self) -> str:
        """Take the pending commit from its timer (which then never reverts) and end the timer."""
        return self.disarm_body(required=False) + "\n"

    # -- drain and maintenance ----------------------------------------------------------
    # A drained switch keeps `gpufabric.drained` (who drained it: gpufabric.drivers.maintenance.DrainMark) and
    # `gpufabric.drain.conf` (the drain's FRR lines). A push's candidate gets those lines too while the marker
    # is there, so a change made during a drain keeps the switch drained (and shows no diff for the drain).

    def keep_drain(self, conf: str) -> str:
        """Shell that appends the drain's lines to the candidate `conf` when the switch is drained: its
        neighbours' `route-map ... out` lines only for neighbours the candidate still declares (a push that
        removes a neighbour must not name it again: FRR refuses a route map on a peer it does not know)."""
        drained, lines = self.path("drained"), self.path("drain.conf")
        declared = (
            'NR==FNR { if ($1 == "neighbor" && ($3 == "remote-as" || $3 == "interface" || $3 == "peer-group"))'
            " known[$2] = 1; next }"
        )
        keep = '!($1 == "neighbor" && $3 == "route-map" && !($2 in known))'
        return (
            f"if [ -f {drained} ] && [ -f {lines} ]; then sed -i '/^end$/d' {conf}; "
            f"awk '{declared} {keep}' {conf} {lines} > {conf}.drain && "
            f"cat {conf}.drain >> {conf} && rm -f {conf}.drain; fi"
        )

    def drain_script(self, apply: str | None, *, marker: str | None, remove: bool) -> str:
        """Under the switch's lock, refused while a commit awaits confirmation: move the new marker in place
        (before the change: a session cut halfway leaves the switch saying it is drained), apply the FRR
        lines `apply` (None: nothing to apply) and save; with `remove`, the marker and the drain's lines go
        after the change."""
        drained = self.path("drained")
        lines = [
            "set -e",
            f"exec 9>{self.path('lock')}",
            "flock -w 60 9 || { echo 'another gpufabric change is being made on this switch' >&2; exit 5; }",
            f"if {self.pending_check}; then echo 'a commit is pending confirmation on this switch' >&2; exit 5; fi",
            *([f"mv -f {marker} {drained}"] if marker else []),
            *(
                [f'out=$({self.vtysh} -f {apply} 2>&1) || {{ echo "$out" | tail -20 >&2; exit 3; }}', self.save_command]
                if apply
                else []
            ),
            *([f"rm -f {drained} {self.path('drain.conf')}"] if remove else []),
        ]
        return "\n".join(lines) + "\n"

    @property
    def confirm_script(self) -> str:
        """Keep the change: disarm the timer, then save the configuration (only now: see apply_script)."""
        return f"set -e\n{self.disarm_body(required=True)}\n{self.save_command}\n"


def assemble_candidate(name: str, files: Mapping[str, str]) -> str:
    """The driver loads FRR's configuration with the nftables, system and interfaces files joined to it."""
    return join_candidate(
        files[f"{name}.frr.conf"],
        files.get(f"{name}.nft"),
        files.get(f"{name}.system.yaml"),
        files.get(f"{name}.interfaces"),
    )
