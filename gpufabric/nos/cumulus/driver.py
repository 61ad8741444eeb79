"""NAPALM driver for NVIDIA Spectrum switches running Cumulus Linux 5.x, configured through NVUE.

Configuration goes through NVUE's transactions: the candidate (an NVUE YAML file, the format of
`/etc/nvue.d/startup.yaml`) is uploaded and staged with `nv config replace` (or `patch` for a
merge); `compare_config` is `nv config diff`; `commit_config(revert_in=N)` is
`nv config apply --confirm Ns -y`, so the switch itself reverts unless `confirm_commit`
(`--confirm-yes`) arrives in time; `rollback` is `--confirm-no` while a commit is pending, and
otherwise re-applies the configuration saved before the last commit (so a batch can still be
rolled back after this switch was confirmed). Whether a commit is pending is what NVUE says
(`nv config apply --confirm-status`), not a deadline on the switch's clock; a marker beside it
names the push (`pending_push`).

Operational getters read FRR, iproute2 and lldpd, which Cumulus runs (see LinuxSwitchDriver):
the same readers the lab proves against real daemons. vtysh needs root on Cumulus: the login's
password is given to `sudo -S` on stdin (never on a command line).

Optional args: `sudo` (default True), `key_file`, `private_key` (the key's text, as a
`gpufabric.hidden.Hidden`), `known_hosts`, `port`, `push_id` and `push_controller`.
"""

from __future__ import annotations

import shlex
import threading
from typing import Any

import yaml
from napalm.base.exceptions import CommitError, MergeConfigException, ReplaceConfigException

from gpufabric.drivers import frr_getters, maintenance
from gpufabric.drivers.linux_switch import PushMark, one_line, parse_push_line
from gpufabric.drivers.maintenance import DrainHeldError, DrainMark, DrainRefusedError
from gpufabric.drivers.transport import CommandFailedError, Output, put_files, read_each, read_many
from gpufabric.nos.cumulus import PLATFORM as CUMULUS
from gpufabric.nos.cumulus import drain as nvue_drain
from gpufabric.nos.cumulus import nvue
from gpufabric.nos.cumulus.drain import maintenance_units
from gpufabric.nos.cumulus.upgrade import CumulusUpgrade
from gpufabric.platforms.spec import DrainSpec

VENDOR = "NVIDIA"
RELEASE_FILE = "cat /etc/lsb-release"


class CumulusDriver(CumulusUpgrade):
    platform = "cumulus"

    def _setup(self) -> None:
        self.sudo = bool(self.optional_args.get("sudo", True))
        self.staged = False
        # What `prepare_commit` found (a commit pending: True), until the commit or a discard uses it up.
        self.prepared: bool | None = None
        self.push = PushMark.from_args(self.optional_args)
        self._release_read: tuple[object, str] | None = None  # (the session it was read on, the release)

    def _vtysh_command(self, command: str) -> tuple[str, str | None]:
        if not self.sudo:
            return f"vtysh -c {shlex.quote(command)}", None
        return f"sudo -S -p '' vtysh -c {shlex.quote(command)}", f"{self.password}\n"

    def _lldpcli(self, args: str) -> str:
        if not self.sudo:
            return super()._lldpcli(args)
        return self._run(f"sudo -S -p '' lldpcli {args}", f"{self.password}\n")

    # -- configuration ---------------------------------------------------------------------
    def load_replace_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        super().load_replace_candidate(filename, config)
        self._check_candidate(ReplaceConfigException, keep_login=True)

    def load_merge_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        super().load_merge_candidate(filename, config)
        self._check_candidate(MergeConfigException, keep_login=False)

    def _check_candidate(self, error: type[Exception], keep_login: bool) -> None:
        assert self.candidate is not None
        try:
            found = nvue.candidate_users(self.candidate)
        except (ValueError, yaml.YAMLError) as exc:
            self.candidate = None
            raise error(f"{self.hostname}: the candidate is not an NVUE configuration file: {exc}") from None
        # `nv config replace` with a file that lacks a user deletes that account: never the one we log in as.
        if keep_login and self.username not in found:
            self.candidate = None
            raise error(
                f"{self.hostname}: the candidate has no system aaa user '{self.username}': "
                "replacing the configuration with it would delete the account this session logs in with"
            )
        self.staged = False

    def _stage(self) -> None:
        if self.candidate is None:
            raise CommitError("no candidate loaded")
        if not self.staged:
            # A drained switch's candidate keeps its maintenance unit, or the replace would put the switch back
            # into service: its marker is read first, then the candidate uploaded and staged in one round trip.
            marked = DrainMark.parse(self._run(nvue.READ_DRAINED))
            candidate = self.candidate
            if marked is not None:
                try:
                    candidate = CUMULUS.keep_drain(candidate, DrainSpec(self._release()))
                except ValueError as exc:
                    raise CommitError(f"{self.hostname} is drained ({marked.by}): {exc}") from None
            self._run(nvue.upload_and_stage(self.merge), candidate)
            self.staged = True

    def compare_config(self) -> str:
        if self.candidate is None:
            return ""
        self._stage()
        return nvue.diff_text(self._run(nvue.DIFF))

    def compare_running(self, candidate: str, running: str | None = None) -> str:
        """The difference between the applied configuration and `candidate`, computed here: nothing is
        uploaded or staged, so a read-only check (validate) never touches NVUE's pending revision, which
        may be someone else's. `running`: the applied configuration as `get_config` just read it (one
        read of the switch, not two)."""
        applied = self._run(nvue.SHOW_APPLIED) if running is None else running
        return nvue.tree_diff(self._parsed(nvue.SHOW_APPLIED, nvue.set_tree, applied), nvue.set_tree(candidate))

    def prepare_commit(self) -> None:
        """Read the rollback point and NVUE's confirm status ahead of `commit_config`, while the candidate is
        staged and diffed (the push runs this beside `compare_config`, on its own exec channels): the commit
        then keeps the point, names the push and applies in one round trip. Only the applied revision is
        read, which staging does not touch. The point is as old as the diff it goes with: an apply someone
        makes in between is missing from both, as it would be from a diff read just before the commit."""
        self.prepared = None
        self.prepared = self._pending_while_saving()

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        pending = self.prepared if self.prepared is not None else self._pending_while_saving()
        self.prepared = None
        if pending:
            raise CommitError("a commit is pending confirmation: confirm or roll it back first")
        self._stage()
        keep = nvue.KEEP_ROLLBACK + (f" && {nvue.write_mark(self.push.line)}" if revert_in else "")
        try:  # the rollback point kept and the push named before the apply, in the apply's round trip
            self._run(f"{keep} && {nvue.apply(revert_in)}")
        except CommandFailedError as exc:
            self._try(f"{nvue.DETACH}; {nvue.CLEAR_PENDING}")
            raise CommitError(f"{self.hostname}: NVUE did not apply the candidate: {exc}") from None
        self.candidate, self.staged = None, False

    def _pending_while_saving(self) -> bool:
        """Whether a commit awaits confirmation; meanwhile the applied configuration is read as the next
        rollback point (kept by the commit; dropped when one is pending). Side by side where the session
        takes commands at once (two reads of NVUE), else one after the other, the status first."""
        if not self.concurrent_reads:
            if self.has_pending_commit():
                return True
            self._run(nvue.SAVE_NEW_ROLLBACK)
            return False
        failed: list[BaseException] = []

        def save() -> None:
            try:
                self._run(nvue.SAVE_NEW_ROLLBACK)
            except BaseException as exc:  # raised below, once the status is read too
                failed.append(exc)

        saving = threading.Thread(target=save, name="gpufabric-read", daemon=True)
        saving.start()
        try:
            pending = self.has_pending_commit()
        finally:
            saving.join()
        if pending:
            self._try(nvue.DROP_NEW_ROLLBACK)
            return True
        if failed:
            raise failed[0]
        return False

    def has_pending_commit(self) -> bool:
        """Whether NVUE has an apply awaiting confirmation, by NVUE's own timer (never the clock)."""
        if self.transport is None:
            return False
        status = self._try(nvue.CONFIRM_STATUS)
        return _awaits_confirm(status)

    def pending_push(self) -> dict[str, str] | None:
        """The push whose apply awaits confirmation here, by the marker beside it; None when NVUE has no
        apply awaiting confirmation. One NVUE has but no marker names (someone's `nv config apply
        --confirm`) reads as push `unknown`: still a change in progress."""
        if not self.has_pending_commit():
            return None
        return parse_push_line(self._run(nvue.READ_MARK).strip())

    def confirm_commit(self) -> None:
        if not self.has_pending_commit():
            raise CommitError("no commit is pending confirmation (NVUE reports no confirm timer)")
        self._run(f"{nvue.CONFIRM} && {nvue.CLEAR_PENDING}")

    def discard_config(self) -> None:
        self.candidate, self.staged = None, False
        saved = f" {nvue.ROLLBACK}.new" if self.prepared is False else ""  # a rollback point no commit took
        self.prepared = None
        if self.transport is not None:
            self._run(f"{nvue.DETACH}; rm -f {nvue.CANDIDATE}{saved}")

    def rollback(self) -> None:
        """Back to the configuration applied before the last commit."""
        if self.has_pending_commit():
            self._run(nvue.ABORT)  # NVUE returns to the revision applied before the trial
            self._run(nvue.CLEAR_PENDING)
            return
        if self._try(f"test -s {nvue.ROLLBACK}").rc != 0:
            raise CommitError(f"{self.hostname}: nothing to roll back to (no commit was made by gpufabric)")
        self._run(nvue.RESTORE)

    # -- getters -------------------------------------------------------------------------------
    def get_config(
        self, retrieve: str = "all", full: bool = False, sanitized: bool = False, format: str = "text"
    ) -> dict[str, str]:
        result = {"running": "", "startup": "", "candidate": ""}
        if retrieve in ("all", "running"):
            result["running"] = self._run(nvue.SHOW_APPLIED)
        if retrieve in ("all", "startup"):
            result["startup"] = self._run(f"cat {nvue.STARTUP}")
        if retrieve in ("all", "candidate"):
            result["candidate"] = self.candidate or ""
        return result

    def get_running_and_port_states(self) -> tuple[str, dict[str, dict[str, Any]]]:
        """get_config's running configuration and get_port_states' ports in one round trip: what a push's
        health poll reads every half second while a change settles (one exec channel for the two)."""
        assert self.transport is not None, "call open() first"
        found = read_each(self.transport, {"running": nvue.SHOW_APPLIED, "links": frr_getters.LINKS})
        for command, out in ((nvue.SHOW_APPLIED, found["running"]), (frr_getters.LINKS, found["links"])):
            if out.rc != 0:
                raise CommandFailedError(command, out)
        links = found["links"].stdout
        return found["running"].stdout, self._parsed(frr_getters.LINKS, frr_getters.port_states, links)

    def get_facts(self) -> dict[str, Any]:
        facts = super().get_facts()
        model = self._try("platform-detect").stdout.strip() or "Spectrum"
        return {**facts, "vendor": VENDOR, "model": model, "os_version": self.get_os_version()}

    def get_os_version(self) -> str:
        """ "Cumulus Linux 5.14.0", from /etc/lsb-release's DISTRIB_RELEASE."""
        release = self._run("cat /etc/lsb-release 2>/dev/null || true")
        version = next(
            (ln.split("=", 1)[1].strip('"') for ln in release.splitlines() if ln.startswith("DISTRIB_RELEASE=")), ""
        )
        return f"Cumulus Linux {version}".strip()

    def cli(self, commands: list[str], encoding: str = "text") -> dict[str, str]:
        """`nv ...` commands run as the NVUE CLI, each word quoted (never through a shell's own
        reading: `nv show x; reboot` is `nv` with the argument `x;`, ...); anything else goes to vtysh."""
        return {
            c: self._run(shlex.join(shlex.split(one_line(c)))) if c.startswith("nv ") else self._vtysh(c)
            for c in commands
        }

    # -- drain and maintenance ----------------------------------------------------------
    # NVUE's maintenance unit (5.13 on) or the maintenance action (before): Cumulus.drain_steps. A marker in
    # the login's .gpufabric/ names who drained the switch. Not shown on a Cumulus switch (docs/not-shown.md).

    DRAINED = nvue.DRAINED

    def _release(self) -> str:
        """The release ("5.14"): `optional_args["release"]`, else /etc/lsb-release, read once a session (a
        drain, the stage of a drained switch's candidate, the undrain and each status ask it; a switch changes
        release only by rebooting, which ends its session)."""
        known = self._release_known()
        return known if known is not None else self._keep_release(self._run(RELEASE_FILE))

    def _release_known(self) -> str | None:
        given = self.optional_args.get("release")
        if given:
            return str(given)
        if self._release_read is not None and self._release_read[0] is self.transport:
            return self._release_read[1]
        return None

    def _keep_release(self, text: str) -> str:
        found = CUMULUS.facts.default_release
        for line in text.splitlines():
            if line.startswith("DISTRIB_RELEASE="):
                found = ".".join(line.split("=", 1)[1].strip().strip('"').split(".")[:2])
                break
        self._release_read = (self.transport, found)
        return found

    def _drain_state(self) -> tuple[str, DrainMark | None, bool]:
        """The release, who holds the drain (the marker) and whether a commit awaits confirmation (NVUE's own
        timer), in one round trip: what a drain or an undrain decides on before it changes anything."""
        assert self.transport is not None, "call open() first"
        known = self._release_known()
        reads = {"held": f"cat {self.DRAINED}", "status": nvue.CONFIRM_STATUS}
        if known is None:
            reads["release"] = RELEASE_FILE
        found = read_each(self.transport, reads)
        if known is None and found["release"].rc != 0:
            raise CommandFailedError(RELEASE_FILE, found["release"])
        release = known if known is not None else self._keep_release(found["release"].stdout)
        held = DrainMark.parse(found["held"].stdout if found["held"].rc == 0 else "")  # none there: not drained
        status = found["status"]
        return release, held, _awaits_confirm(status)

    def _nv_change(self, text: str, *, pending: bool, mark: DrainMark | None, remove: bool) -> None:
        """The unit's change as one script, in one round trip: the working folder, the new marker (written
        whole, then moved in place before the change), the steps, and with `remove` the marker removed."""
        if pending:
            raise DrainRefusedError(f"{self.hostname}: a commit is pending confirmation on this switch")
        new = f"{self.DRAINED}.new" if mark is not None else None
        files = {new: (mark.text(), 0o600)} if mark is not None and new is not None else {}
        # A unit is configuration: its own transactions (the steps apply them), from a clean pending revision.
        steps = text if text.startswith("nv action") else f"{nvue.DETACH}\n{text}"
        script = maintenance.change_script(steps, marker_new=new, marker=self.DRAINED, remove=remove)
        try:
            put_files(self.transport, files, setup=nvue.PREPARE, then=script)  # type: ignore[arg-type]
        except CommandFailedError as exc:
            raise DrainRefusedError(f"{self.hostname}: {exc}") from None

    def drain(self, push_id: str, reason: str, by: str | None = None) -> None:
        release, held, pending = self._drain_state()
        steps = CUMULUS.drain_steps(DrainSpec(release))
        mark = held or DrainMark.new(push_id, reason, steps.mechanism, by)
        self._nv_change(steps.drain, pending=pending, mark=mark, remove=False)

    def undrain(self, push_id: str, force: bool = False) -> None:
        release, held, pending = self._drain_state()
        if held is not None and held.push_id != push_id and not force:
            raise DrainHeldError(f"{self.hostname} was drained by {held.by} ({held.push_id}): left drained")
        self._nv_change(CUMULUS.drain_steps(DrainSpec(release)).undrain, pending=pending, mark=None, remove=True)

    def maintenance_status(self) -> dict[str, Any]:
        """The marker, and NVUE's own account (`nv show maintenance`, 5.13 on; `nv show system maintenance`
        before): a row of the all-protocols unit saying `maintenance`."""
        release = self._release()
        show = nvue_drain.SHOW if maintenance_units(release) else nvue_drain.SHOW_BEFORE_UNITS
        assert self.transport is not None, "call open() first"
        found = read_many(self.transport, {"mark": f"cat {self.DRAINED}", "show": show})
        applied = _unit_in_maintenance(found["show"]) if found["show"].strip() else None
        mechanism = CUMULUS.drain_steps(DrainSpec(release)).mechanism
        return maintenance.status(DrainMark.parse(found["mark"]), applied, mechanism)


def _awaits_confirm(status: Output) -> bool:
    """Whether `nv config apply --confirm-status` (CONFIRM_STATUS) says an apply awaits confirmation."""
    return status.rc == 0 and nvue.confirm_left(status.stdout) is not None


def _unit_in_maintenance(text: str) -> bool:
    """`nv show maintenance`: the all-protocols row's state is `maintenance` (NVUE command reference);
    before 5.13, a `maintenance` state anywhere in `nv show system maintenance`."""
    state = nvue_drain.STATE_IN_MAINTENANCE
    for line in text.splitlines():
        words = line.split()
        if words and words[0] == nvue_drain.UNIT:
            return state in words[1:]
    return any(w == state for line in text.splitlines() for w in line.split()[1:2])


__all__ = ["CumulusDriver"]
