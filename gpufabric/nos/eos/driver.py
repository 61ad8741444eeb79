"""Arista EOS through eAPI: NAPALM's `eos` driver, with who-it-talks-to checked and its sessions named.

What changes from NAPALM's driver:
- eAPI over HTTPS only, with the switch's certificate verified (a CA bundle or a fingerprint recorded per
  switch, `gpufabric.drivers.tls_pins`) before the login is sent; plain HTTP and the other transports
  are refused (pyeapi left to itself trusts any certificate).
- Config sessions carry a recognizable name, `gpufabric-<push id>-<n>`. Before the first candidate of a
  connection is loaded, the sessions gpufabric left behind are looked at: one of another push with a
  commit timer pending (or loading right now) makes this push refuse, naming that push; a stale one (no
  timer, from a push that cannot still be running) is aborted, so a controller killed mid-push does not
  block every later push to the switch.
- `pending_push()` says which gpufabric push has a change pending on the switch.

Optional args: `push_id`, `tls_ca_file`, `tls_known_hosts`, `accept_new`, `stale_after` (seconds after
which a session without a timer cannot belong to a running push; default 3600, the longest confirm timeout).
"""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import pyeapi
from napalm.base.exceptions import CommitError, ConnectionException, ReplaceConfigException, SessionLockedException
from napalm.eos.utils.versions import EOSVersion
from pyeapi.eapilib import CommandError, EapiConnection
from pyeapi.eapilib import ConnectionError as EapiConnectionError

from gpufabric.drivers import maintenance
from gpufabric.drivers.answers import (
    DEFAULT_BOUNDS,
    PARSE_FAILURES,
    ReadBounds,
    ShapeError,
    SwitchAnswerError,
    as_dict,
    as_dicts,
    as_int,
    as_str,
    bounds_of,
    key,
    located,
    named_reads,
    shown,
    switch_json,
)
from gpufabric.drivers.https_args import https_args
from gpufabric.drivers.maintenance import DrainHeldError, DrainMark, DrainRefusedError
from gpufabric.drivers.push_id import PUSH_ID, STALE_AFTER, age_seconds, started
from gpufabric.drivers.tls_pins import TlsTrust, VerifiedHTTPSConnection, read_answer, renamed
from gpufabric.nos.eos import PLATFORM
from gpufabric.nos.eos.drain import quiesced
from gpufabric.nos.eos.upgrade import EosUpgrade
from gpufabric.platforms.spec import DrainSpec

SESSION_PREFIX = "gpufabric-"
TIMER_STATE = "pendingCommitTimer"


class VerifiedEapiConnection(EapiConnection):
    """pyeapi's eAPI connection over a VerifiedHTTPSConnection: the certificate is checked as the TLS session
    opens, before the request (and its Authorization header) is written."""

    def __init__(
        self,
        host: str,
        port: int,
        username: str,
        password: str,
        timeout: float,
        *,
        trust: TlsTrust,
        bounds: ReadBounds = DEFAULT_BOUNDS,
    ) -> None:
        super().__init__()
        self.transport = VerifiedHTTPSConnection(host, port, trust, timeout, path="/command-api", bounds=bounds)
        self.authentication(username, password)

    def send(self, data: str) -> dict[str, Any]:
        """pyeapi's request, with the answer read as a switch's answer: within the byte bound and the
        deadline (tls_pins.read_answer), as RFC 8259 JSON, and of eAPI's shape (an object with a `result`
        list of one object per command sent, or an `error` object); anything else is a named failure."""
        conn = self.transport
        asked = _asked(data)
        body = data.encode()
        try:
            conn.putrequest("POST", "/command-api")
            conn.putheader("Content-type", "application/json-rpc")
            conn.putheader("Content-length", str(len(body)))
            if self._auth:
                conn.putheader(*self._auth)
            conn.endheaders(message_body=body)
            response = conn.getresponse()
            content = read_answer(response, conn.host, conn.bounds).decode(errors="replace")
            if response.status == 401:
                raise EapiConnectionError(str(self), f"{shown(response.reason, 100)}. {shown(content, 200)}")
            return self._answer(content, asked)
        except SwitchAnswerError as exc:
            raise renamed(exc, "; ".join(asked)) from None
        except PARSE_FAILURES as exc:
            raise located(conn.host, "; ".join(asked), exc) from None
        except OSError as exc:
            raise EapiConnectionError(str(self), f"Socket error during eAPI connection: {exc}") from None
        finally:
            conn.close()

    def _answer(self, content: str, asked: list[str]) -> dict[str, Any]:
        named = f"`{'; '.join(asked)}`"  # the parser's findings name the commands: said once (answers.located)
        decoded = as_dict(switch_json(content, named), named)
        if "error" in decoded:
            error = as_dict(decoded["error"], "its error")
            as_dicts(error.get("data", []), "its error's data")
            code, message = as_int(key(error, "code", "its error"), "its code"), as_str(error.get("message"), "message")
            message = shown(message)  # EOS's words as text: an error shows them
            _, _, failed, output = self._parse_error_message(decoded)
            raise CommandError(code, message, command_error=failed, output=output)
        result = as_dicts(key(decoded, "result", named), f"{named} result")
        if len(result) != len(asked):
            raise ShapeError(f"{named} result holds {len(result)} answers for {len(asked)} commands")
        return decoded


def _asked(data: str) -> list[str]:
    """The commands of an eAPI request pyeapi built (the `enable` password, an `input`, never shown)."""
    cmds = json.loads(data)["params"]["cmds"]
    return [c if isinstance(c, str) else str(c.get("cmd", "")) for c in cmds]


@named_reads
class GpufabricEOSDriver(EosUpgrade):
    config_session: str | None  # NAPALM's (untyped there): the session this connection loaded, if any

    def __init__(
        self, hostname: str, username: str, password: str, timeout: int = 60, optional_args: dict | None = None
    ) -> None:
        args, self.trust, self.push_id, napalm_args = https_args(
            hostname,
            optional_args,
            api="eAPI",
            transport_keys=("transport", "eos_transport"),
            own=("stale_after", "port"),
        )
        self.stale_after = float(args.get("stale_after", STALE_AFTER))
        self.eapi_port = int(args.get("port", 443))
        self.read_bounds = bounds_of(args)
        self._sessions_checked = False
        self._loads = 0
        self._kept: set[str] = set()  # session names the switch still has (finished ones included)
        self._confirmed = False  # this push's change confirmed on the switch (rollback replaces it back)
        super().__init__(hostname, username, password, timeout, napalm_args)

    def open(self) -> None:
        connection = VerifiedEapiConnection(
            self.hostname,
            self.eapi_port,
            self.username,
            self.password,
            self.timeout,
            trust=self.trust,
            bounds=self.read_bounds,
        )
        self.device = pyeapi.client.Node(connection, enablepwd=self.enablepwd)
        try:
            shown_version = self._run_commands(["show version"])[0]
        except pyeapi.eapilib.ConnectionError as exc:  # unreachable, or the login refused (401)
            raise ConnectionException(f"{self.hostname}: cannot log in to eAPI ({exc.message})") from None
        version = self._read(
            "show version", lambda: as_str(key(shown_version, "version", "`show version`"), "`show version` version")
        )
        if not re.fullmatch(r"\d+\.\d+\.\d+[\w.-]*", version):
            raise located(
                self.hostname, "show version", ShapeError(f"version {shown(version, 40)!r} is no EOS release")
            )
        self._eos_version = EOSVersion(version)
        if self._eos_version < EOSVersion("4.23.0"):
            raise ConnectionException(f"{self.hostname}: EOS {version} is older than 4.23, which NAPALM needs")

    # -- config sessions -------------------------------------------------------------------
    def _load_config(self, filename: str | None = None, config: Any = None, replace: bool = True) -> None:
        if not self._sessions_checked:
            self.clear_stale_sessions()
            self._forget_old_startup_copies()
            self._sessions_checked = True
        if replace and config is not None and (marked := self._held()) is not None:
            # A drained switch keeps its maintenance block through the replace (Eos.keep_drain).
            try:
                config = PLATFORM.keep_drain(str(config), DrainSpec(PLATFORM.facts.default_release))
            except ValueError as exc:
                raise ReplaceConfigException(f"{self.hostname} is drained ({marked.by}): {exc}") from None
        if self.config_session is None:
            # A fresh name each load: EOS keeps committed sessions, and one cannot be entered again.
            self._loads += 1
            while f"{SESSION_PREFIX}{self.push_id}-{self._loads}" in self._kept:
                self._loads += 1
            self.config_session = f"{SESSION_PREFIX}{self.push_id}-{self._loads}"
        super()._load_config(filename, config, replace)

    def _sessions(self) -> tuple[dict[str, dict[str, Any]], str | None]:
        """Every config session (name -> its entry) and the one with the commit timer, if the switch names it."""
        command = "show configuration sessions detail"
        answer = self._run_commands([command])[0]

        def read() -> tuple[dict[str, dict[str, Any]], str | None]:
            sessions = as_dict(answer.get("sessions", {}), "its sessions")
            for name, entry in sessions.items():
                as_dict(entry, f"session {name!r}")
                as_str(entry.get("state", ""), f"session {name!r} state")
            timed = answer.get("commitTimerSessionName") or None
            return sessions, None if timed is None else as_str(timed, "commitTimerSessionName")

        return self._read(command, read)

    def _read(self, command: str, parse: Any) -> Any:
        """`parse()` of an answer to `command`, or the named failure of this switch's answer."""
        try:
            return parse()
        except PARSE_FAILURES as exc:
            raise located(self.hostname, command, exc) from None

    def clear_stale_sessions(self) -> list[str]:
        """Abort the sessions an earlier gpufabric push left behind; refuse (SessionLockedException) when
        another gpufabric push has its change pending or is loading one now. Returns the aborted names."""
        sessions, timed = self._sessions()
        aborted: list[str] = []
        for name, entry in sorted(sessions.items()):
            found = PUSH_ID.search(name)
            if not name.startswith(SESSION_PREFIX) or found is None:
                continue
            other = found.group(0)
            state = entry.get("state", "")
            if other == self.push_id:  # an earlier connection of this push left it (this one has loaded nothing)
                if state == "pending" and name != timed:
                    self._run_commands([f"configure session {name} abort"], encoding="text")
                    aborted.append(name)
                continue
            if state == TIMER_STATE or name == timed:
                raise SessionLockedException(
                    f"{self.hostname}: push {other} (started {started(other)}) has a change pending its confirm "
                    f"here (config session {name}); refusing to push until it is confirmed or its timer reverts it"
                )
            if state != "pending":
                continue  # completed or aborted: history, holding nothing
            age = age_seconds(other)
            if age is not None and age < self.stale_after:
                raise SessionLockedException(
                    f"{self.hostname}: push {other} (started {started(other)}) is loading a change here "
                    f"(config session {name}); refusing to push beside it"
                )
            self._run_commands([f"configure session {name} abort"], encoding="text")
            aborted.append(name)
        self._kept = set(sessions) - set(aborted)
        return aborted

    def pending_push(self) -> dict[str, str] | None:
        """The gpufabric push whose change waits for its confirm on this switch (its config session has the
        commit timer), else None."""
        sessions, timed = self._sessions()
        for name, entry in sorted(sessions.items()):
            found = PUSH_ID.search(name)
            if name.startswith(SESSION_PREFIX) and found and (entry.get("state") == TIMER_STATE or name == timed):
                return {"push_id": found.group(0), "started": started(found.group(0)), "controller": ""}
        return None

    # -- commit, confirm, roll back --------------------------------------------------------
    @property
    def startup_copy(self) -> str:
        """Where the startup configuration is kept while this push's change is pending (named after the push:
        NAPALM's one `flash:rollback-0` is shared by every push)."""
        return f"flash:{SESSION_PREFIX}{self.push_id}-startup.cfg"

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if message:
            raise NotImplementedError("commit messages are not kept on EOS")
        if revert_in is None:
            raise CommitError(f"{self.hostname}: EOS changes go in only with the switch's commit timer armed")
        pending = self.pending_push()
        if pending is not None or self.has_pending_commit():
            who = f" (push {pending['push_id']})" if pending else ""
            raise CommitError(f"{self.hostname}: a commit already waits for its confirm here{who}")
        timer = time.strftime("%H:%M:%S", time.gmtime(revert_in))
        self._run_commands(
            [
                f"copy startup-config {self.startup_copy}",
                f"configure session {self.config_session} commit timer {timer}",
            ],
            encoding="text",
        )

    def confirm_commit(self) -> None:
        # NAPALM's test reads the seconds left as a truth value: a confirm in the timer's last second fails there.
        if self.config_session not in self._get_pending_commits():
            raise CommitError(
                f"{self.hostname}: no commit of this push waits for its confirm (its timer may have run out)"
            )
        self._run_commands([f"configure session {self.config_session} commit", "write memory"], encoding="text")
        self.config_session = None
        self._confirmed = True  # the startup copy stays: a batch that fails later rolls this switch back to it

    def rollback(self) -> None:
        """This push's change undone: its pending session aborted, or, once confirmed, the configuration from
        before it replaced back and saved. Any failure raises; another push's pending commit is not touched."""
        pending = self._get_pending_commits()
        session = self.config_session
        if session is not None and session in pending:
            commands = [f"configure session {session} abort"]  # running returns to what it was before
        elif pending:
            raise CommitError(f"{self.hostname}: the pending commit is not this push's; not touching it")
        elif self._confirmed:
            commands = [f"configure replace {self.startup_copy}", "write memory"]
        else:
            return  # nothing of this push's went in (its commit was refused before it changed anything)
        self._run_commands(commands, encoding="text")
        self.config_session = None
        self._confirmed = False

    def _forget_old_startup_copies(self) -> None:
        """Delete the startup copies of pushes older than `stale_after`: none of them can still roll back."""
        if self._get_pending_commits():
            return  # whoever's it is, its startup copy may still be needed
        answer = self._run_commands(["dir flash:"], encoding="text")[0]
        listing = self._read("dir flash:", lambda: as_str(answer.get("output", ""), "its output"))
        for found in sorted(set(re.findall(rf"{SESSION_PREFIX}({PUSH_ID.pattern})-startup\.cfg", listing))):
            push = found[0]
            age = age_seconds(push)
            if push != self.push_id and age is not None and age > self.stale_after:
                self._run_commands([f"delete flash:{SESSION_PREFIX}{push}-startup.cfg"], encoding="text")

    # -- drain and maintenance ----------------------------------------------------------
    # Maintenance mode (`maintenance` / `unit System` / `quiesce`, Eos.drain_steps) as configuration; the marker
    # naming who drained the switch is a file on flash, written through EOS's `bash timeout` command. Not
    # shown on an EOS switch (docs/not-shown.md).

    DRAINED = "/mnt/flash/gpufabric-drained.json"

    def _quiesce(self, text: str) -> None:
        if self.pending_push() is not None:
            raise DrainRefusedError(f"{self.hostname}: a commit is pending confirmation on this switch")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        try:
            self._run_commands(["configure", *lines, "end", "write memory"])
        except CommandError as exc:
            raise DrainRefusedError(f"{self.hostname}: {exc}") from None

    def _bash(self, script: str) -> str:
        answer = self._run_commands([f"bash timeout 10 {script}"], encoding="text")
        return str(answer[0].get("output") or "")

    def _held(self) -> DrainMark | None:
        return DrainMark.parse(self._bash(f"cat {self.DRAINED} 2>/dev/null"))

    def drain(self, push_id: str, reason: str, by: str | None = None) -> None:
        steps = PLATFORM.drain_steps(DrainSpec(PLATFORM.facts.default_release))
        if self._held() is None:
            text = DrainMark.new(push_id, reason, steps.mechanism, by).text()
            encoded = base64.b64encode(text.encode()).decode()  # only [A-Za-z0-9+/=]: nothing a shell reads
            self._bash(f"echo {encoded} | base64 -d > {self.DRAINED}")
        self._quiesce(steps.drain)

    def undrain(self, push_id: str, force: bool = False) -> None:
        held = self._held()
        if held is not None and held.push_id != push_id and not force:
            raise DrainHeldError(f"{self.hostname} was drained by {held.by} ({held.push_id}): left drained")
        self._quiesce(PLATFORM.drain_steps(DrainSpec(PLATFORM.facts.default_release)).undrain)
        self._bash(f"rm -f {self.DRAINED}")

    def maintenance_status(self) -> dict[str, Any]:
        """The marker on flash, and the running configuration's maintenance section (unit System quiesced)."""
        section = self._run_commands(["show running-config section maintenance"], encoding="text")
        applied = quiesced(str(section[0].get("output") or ""))
        mechanism = PLATFORM.drain_steps(DrainSpec(PLATFORM.facts.default_release)).mechanism
        return maintenance.status(self._held(), applied, mechanism)
