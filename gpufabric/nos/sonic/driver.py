"""NAPALM driver for SONiC switches: CONFIG_DB through SONiC's generic config updater, BGP through FRR.

What `config replace` gets is never the candidate's config_db.json alone (the updater would delete every
table, row and field it lacks: FEATURE, FLEX_COUNTER_TABLE, DEVICE_METADATA's `mac`...): the driver reads the
running CONFIG_DB and replaces only the parts gpufabric owns (gpufabric.nos.sonic.owned), so the updater's
patch names those parts only. A commit, in one remote step under the switch's lock: a check that the running
CONFIG_DB is still the one merged with, `config checkpoint <push id>` and a copy of FRR's running
configuration (the rollback target), then the revert timer armed *on the switch*, then `config replace` of
the merged file and frr-reload of the candidate's frr.conf in the bgp container.
Unconfirmed, the timer runs `config rollback <push id>` and reloads the saved FRR configuration, so a
change that cuts the management session off still undoes itself. `confirm_commit` disarms the timer,
saves (`config save -y`, FRR's `write memory`) and deletes the checkpoint; `rollback` is the timer's
revert, run at once. The timer and its pending marker are the FRR driver's (a process in its own
session; the marker holds boot id, PID, start time and the push), kept under /etc/sonic/.

Optional args: `sudo` (default true: the SONiC login is an admin that runs `sudo -n`), `key_file`,
`private_key`, `known_hosts`, `push_id` and `push_controller`.
"""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass
from typing import Any

from napalm.base.exceptions import CommitError

from gpufabric.drivers import maintenance
from gpufabric.drivers.linux_switch import PushMark, parse_push_line
from gpufabric.drivers.maintenance import DrainHeldError, DrainMark, DrainRefusedError
from gpufabric.drivers.transport import CommandFailedError, Output, Transport, put_files
from gpufabric.nos.frr.files import DeviceFiles
from gpufabric.nos.sonic import PLATFORM as SONIC
from gpufabric.nos.sonic.candidate import FRR_MARKER, split
from gpufabric.nos.sonic.drain import STATUS, in_maintenance
from gpufabric.nos.sonic.owned import NotOwnedError, RunningConfigDbError, merge, read_tables
from gpufabric.nos.sonic.upgrade import SonicUpgrade
from gpufabric.outputs import json_dumps
from gpufabric.platforms.spec import DrainSpec

CONFIG_DB = "/etc/sonic/config_db.json"
SONIC_VERSION = "/etc/sonic/sonic_version.yml"
# The bgp container sees /etc/sonic/frr/ as /etc/frr/: FRR's files go there and are named from inside.
FRR_HOST_DIR = "/etc/sonic/frr"
FRR_CONTAINER_DIR = "/etc/frr"
BGP = "docker exec -i bgp"
FRR_RELOAD = f"{BGP} /usr/lib/frr/frr-reload.py --reload"
FRR_RUNNING = f"{BGP} vtysh -c 'show running-config' | sed '1,/^Current configuration:/d'"
# CONFIG_DB as the generic config updater reads it for `config replace` (sonic-utilities generic_config_updater/
# gu_common.py, get_config_db_as_text). `show runningconfiguration all` adds FRR's configuration as `bgpraw`.
RUNNING_DB = "sonic-cfggen -d --print-data"
# Exit 0 when the JSON on stdin equals the JSON file named (SONiC's host has python3: sonic-utilities is Python).
SAME_JSON = "import json, sys; sys.exit(json.load(sys.stdin) != json.load(open(sys.argv[1])))"


@dataclass(frozen=True)
class SonicFiles(DeviceFiles):
    """The FRR driver's marker, timer and disarm, with the switch's files under /etc/sonic/."""

    @property
    def confdir(self) -> str:
        return "/etc/sonic"

    def frr(self, name: str) -> str:
        return f"{FRR_HOST_DIR}/gpufabric.{name}.frr.conf"

    @staticmethod
    def frr_inside(name: str) -> str:
        return f"{FRR_CONTAINER_DIR}/gpufabric.{name}.frr.conf"


class SonicDriver(SonicUpgrade):
    platform = "sonic"

    def _setup(self) -> None:
        self.files = SonicFiles(None)
        self.push = PushMark.from_args(self.optional_args)
        self.root = "sudo -n " if self.optional_args.get("sudo", True) else ""

    def _vtysh_command(self, command: str) -> tuple[str, str | None]:
        return f"{self.root}{BGP} vtysh -c {shlex.quote(command)}", None

    def _as_root(self, script: str) -> str:
        return self._run(f"{self.root}sh -s", script)

    # -- configuration ---------------------------------------------------------------------
    def _upload(self) -> None:
        """The file `config replace` takes: the running CONFIG_DB with gpufabric's parts replaced by the plan's
        (gpufabric.nos.sonic.owned), never the planned file alone, which would delete everything else; and
        the running CONFIG_DB it was merged with, which the commit checks is still the running one."""
        if self.candidate is None:
            raise CommitError("no candidate loaded")
        planned, frr = split(self.candidate)
        marked = self._held()
        if marked is not None:
            # TSA's state is FRR's as well as CONFIG_DB's: frr-reload replaces FRR's configuration whole, so a
            # drained switch's frr.conf carries TSA's sequences (Sonic.keep_drain). CONFIG_DB's half
            # (BGP_DEVICE_GLOBAL) is not gpufabric's: the merge leaves it as TSA wrote it.
            try:
                _, frr = split(SONIC.keep_drain(self.candidate, DrainSpec(SONIC.facts.default_release)))
            except ValueError as exc:
                raise CommitError(f"{self.hostname} is drained ({marked.by}): {exc}") from None
        running_text = self._as_root(f"{RUNNING_DB}\n")
        try:
            running = read_tables(running_text, f"{self.hostname}'s running CONFIG_DB ({RUNNING_DB})")
            merged = merge(running, read_tables(planned, f"the candidate's CONFIG_DB for {self.hostname}"))
        except (RunningConfigDbError, NotOwnedError) as exc:
            raise CommitError(f"{self.hostname}: {exc}") from None
        files: dict[str, tuple[str, int | None]] = {
            self.files.path("candidate.json"): (json_dumps(merged, indent=4, sort_keys=True) + "\n", 0o600),
            self.files.path("running.json"): (json_dumps(running, indent=4, sort_keys=True) + "\n", 0o600),
        }
        files[self.files.frr("candidate")] = (frr or "", 0o600)
        assert self.transport is not None
        # Written as root (the folders are root's): put_files' shell under sudo.
        put_files(_RootShell(self.transport, self.root), files)

    @property
    def _checkpoint(self) -> str:
        """The checkpoint's name: the push's id, so an operator finds it in `config list-checkpoints`."""
        return self.push.push_id or f"gpufabric-{secrets.token_hex(4)}"

    def commit_script(self, revert_in: int | None) -> str:
        f = self.files
        checkpoint = shlex.quote(self._checkpoint)
        keep = "" if revert_in else self.save_script(checkpoint)
        # The revert is armed before anything changes: a session lost from here on still reverts. The
        # timer does not inherit the lock's descriptor (it would hold the lock until it fires).
        arm = f"{{ {f.arm_timer_script(revert_in, self.push.line)}}} 9>&-\n" if revert_in else ""
        return (
            f"exec 9>{f.path('lock')}\n"
            "flock -n 9 || { echo 'another gpufabric change is being made on this switch' >&2; exit 5; }\n"
            f"if {f.pending_check}; then echo 'a commit is pending confirmation on this switch' >&2; exit 5; fi\n"
            # The merge is only as good as the CONFIG_DB it was made from: changed since, it is not applied.
            f"{RUNNING_DB} | python3 -c {shlex.quote(SAME_JSON)} {f.path('running.json')} || "
            "{ echo 'the running CONFIG_DB changed since this push read it: nothing was applied; push again' >&2; "
            "exit 5; }\n"
            f"config checkpoint {checkpoint} >/dev/null 2>&1 || "
            "{ echo 'could not save the rollback target (config checkpoint)' >&2; exit 4; }\n"
            f"echo {checkpoint} > {f.path('checkpoint')}\n"
            f"{FRR_RUNNING} > {f.frr('rollback')} || "
            "{ echo 'could not save the rollback target (FRR running configuration)' >&2; exit 4; }\n"
            f"printf '%s\\n' {shlex.quote(self.revert_script())} > {f.path('revert.sh')}\n"
            f"{arm}"
            f"if ! {{ config replace {f.path('candidate.json')} && "
            f"{FRR_RELOAD} {f.frr_inside('candidate')}; }} >{f.path('apply.log')} 2>&1; then\n"
            f"  {f.disarm_body(required=False)}\n"
            f"  sh {f.path('revert.sh')} >{f.path('revert.log')} 2>&1 || true\n"
            f"  tail -20 {f.path('apply.log')} >&2\n"
            "  echo 'the candidate did not apply and was reverted' >&2; exit 3\n"
            "fi\n"
            f"{keep}"
        )

    def revert_script(self) -> str:
        """Back to the checkpoint and the saved FRR configuration; the timer and `rollback()` run it."""
        f = self.files
        return (
            f"cp=$(cat {f.path('checkpoint')})\n"
            'config rollback "$cp"\n'
            f"{FRR_RELOAD} {f.frr_inside('rollback')}\n"
            'config delete-checkpoint "$cp" >/dev/null 2>&1 || true\n'
        )

    @staticmethod
    def save_script(checkpoint: str) -> str:
        """Keep the change: CONFIG_DB to config_db.json, FRR's running configuration to its file."""
        return (
            "config save -y >/dev/null\n"
            f"{BGP} vtysh -c 'write memory' >/dev/null\n"
            f"config delete-checkpoint {checkpoint} >/dev/null 2>&1 || true\n"
        )

    def compare_config(self) -> str:
        """`config replace --dry-run` (the JSON patch the updater would apply), then FRR's reload diff."""
        if self.candidate is None:
            return ""
        self._upload()
        f = self.files
        patch = self._as_root(f"config replace --dry-run {f.path('candidate.json')}\n")
        frr = self._as_root(f"{BGP} /usr/lib/frr/frr-reload.py --test {f.frr_inside('candidate')}\n")
        return "\n".join(p for p in (_patch(patch), _frr_diff(frr)) if p)

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        self._upload()
        try:
            self._as_root(self.commit_script(revert_in))
        except CommandFailedError as exc:
            raise CommitError(f"{self.hostname}: the candidate was not applied: {exc}") from None
        self.candidate = None

    def has_pending_commit(self) -> bool:
        return self.transport is not None and self.transport.run(f"{self.root}sh -s", self.files.pending_check).rc == 0

    def pending_push(self) -> dict[str, str] | None:
        found = self._as_root(self.files.pending_push_check + "\n").strip()
        return None if found == "none" else parse_push_line(found)

    def confirm_commit(self) -> None:
        f = self.files
        script = f"set -e\n{f.disarm_body(required=True)}\n" + self.save_script(f'"$(cat {f.path("checkpoint")})"')
        try:
            self._as_root(script)
        except CommandFailedError as exc:
            if "no commit is pending" in exc.output.stderr:
                raise CommitError("no commit is pending confirmation") from None
            raise

    def rollback(self) -> None:
        """Back to the configuration before the last commit (and stop its revert timer)."""
        self._as_root(self.files.disarm_script + f"sh {self.files.path('revert.sh')}\n")

    def discard_config(self) -> None:
        self.candidate = None

    # -- getters -------------------------------------------------------------------------------
    def get_config(
        self, retrieve: str = "all", full: bool = False, sanitized: bool = False, format: str = "text"
    ) -> dict[str, str]:
        """Running and startup as the candidate is written: CONFIG_DB JSON, the marker, FRR's configuration."""
        result = {"running": "", "startup": "", "candidate": ""}
        if retrieve in ("all", "running"):
            db = self._as_root("show runningconfiguration all\n")
            frr = self._as_root(f"{FRR_RUNNING}\n")
            result["running"] = f"{db.rstrip()}\n{FRR_MARKER}\n{frr}"
        if retrieve in ("all", "startup"):
            db = self._as_root(f"cat {CONFIG_DB}\n")
            frr = self._as_root(f"cat {FRR_HOST_DIR}/frr.conf\n")
            result["startup"] = f"{db.rstrip()}\n{FRR_MARKER}\n{frr}"
        if retrieve in ("all", "candidate"):
            result["candidate"] = self.candidate or ""
        return result

    # -- getters -------------------------------------------------------------------------------
    def get_os_version(self) -> str:
        """SONiC's build_version from /etc/sonic/sonic_version.yml (FRR's `show version` names the bgp
        container's FRR, not the switch's release)."""
        return sonic_build_version(self._run(f"cat {SONIC_VERSION}"))

    def get_facts(self) -> dict[str, Any]:
        return {**super().get_facts(), "vendor": "SONiC", "os_version": self.get_os_version()}

    # -- drain and maintenance ----------------------------------------------------------
    # SONiC's TSA/TSB (Sonic.drain_steps), saved with `config save -y`; a marker in /etc/sonic/ names who
    # drained the switch. Not shown on a SONiC switch (docs/not-shown.md).

    def _tsa(self, text: str, *, mark: DrainMark | None, remove: bool) -> None:
        f = self.files
        new = f.path("drained.new") if mark is not None else None
        if mark is not None and new is not None:
            assert self.transport is not None
            put_files(_RootShell(self.transport, self.root), {new: (mark.text(), 0o644)})
        guard = (
            f"exec 9>{f.path('lock')}\n"
            "flock -w 60 9 || { echo 'another gpufabric change is being made on this switch' >&2; exit 5; }\n"
            f"if {f.pending_check}; then echo 'a commit is pending confirmation on this switch' >&2; exit 5; fi"
        )
        script = maintenance.change_script(text, marker_new=new, marker=f.path("drained"), remove=remove, guard=guard)
        try:
            self._as_root(script)
        except CommandFailedError as exc:
            raise DrainRefusedError(f"{self.hostname}: {exc}") from None

    def _held(self) -> DrainMark | None:
        return DrainMark.parse(self._run(f"cat {self.files.path('drained')} 2>/dev/null || true"))

    def drain(self, push_id: str, reason: str, by: str | None = None) -> None:
        steps = SONIC.drain_steps(DrainSpec(SONIC.facts.default_release))
        mark = self._held() or DrainMark.new(push_id, reason, steps.mechanism, by)
        self._tsa(steps.drain, mark=mark, remove=False)

    def undrain(self, push_id: str, force: bool = False) -> None:
        held = self._held()
        if held is not None and held.push_id != push_id and not force:
            raise DrainHeldError(f"{self.hostname} was drained by {held.by} ({held.push_id}): left drained")
        self._tsa(SONIC.drain_steps(DrainSpec(SONIC.facts.default_release)).undrain, mark=None, remove=True)

    def maintenance_status(self) -> dict[str, Any]:
        """The marker, and TSC's verdict (`System Mode: Maintenance` or `Normal`)."""
        mark = self._held()
        tsc = self._try(f"{self.root}{STATUS}")
        applied = in_maintenance(tsc.stdout) if tsc.rc == 0 else None
        mechanism = SONIC.drain_steps(DrainSpec(SONIC.facts.default_release)).mechanism
        return maintenance.status(mark, applied, mechanism)

    # -- telemetry (gpufabric/nos/sonic/telemetry.py) --------------------------------------------
    def cli(self, commands: list[str], encoding: str = "text") -> dict[str, str]:
        """SONiC's own watermark commands, exactly as telemetry.COMMANDS writes them (no other text reaches
        the shell), run in the switch's shell, the clears as root; anything else goes to vtysh."""
        from gpufabric.nos.sonic.telemetry import COMMANDS

        def one(command: str) -> str:
            if command not in COMMANDS:
                return self._vtysh(command)
            return self._as_root(f"{command}\n") if command.startswith("sonic-clear ") else self._run(command)

        return {command: one(command) for command in commands}


def sonic_build_version(text: str) -> str:
    """`build_version: 'SONiC.202411.123'` out of sonic_version.yml, quotes removed ("" when absent)."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "build_version":
            return value.strip().strip("'\"")
    return ""


class _RootShell:
    """A transport whose `sh -s` runs as root (files under /etc/sonic/ are root's)."""

    def __init__(self, transport: Transport, root: str) -> None:
        self.transport, self.root = transport, root

    def run(self, command: str, stdin: str | None = None) -> Output:
        return self.transport.run(f"{self.root}{command}", stdin)

    def close(self) -> None:
        pass


def _patch(text: str) -> str:
    """The updater's dry run prints the JSON patch; an empty patch (`[]`) is no change."""
    body = text.strip()
    return "" if body in ("", "[]") or body.endswith("[]") else body


def _frr_diff(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith(("+", "-", "Lines To"))]
    return "\n".join(lines) if any(line.startswith(("+", "-")) for line in lines) else ""
