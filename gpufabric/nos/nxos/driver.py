"""Cisco NX-OS through NX-API: NAPALM's `nxos` driver, verified, with a revert armed on the switch.

What changes from NAPALM's driver:
- NX-API over HTTPS only, the switch's certificate verified before the login is sent
  (`gpufabric.drivers.tls_pins`); the candidate travels by SCP over an SSH session whose host key must be
  in the same known_hosts every other SSH login uses (NAPALM's netmiko path accepts any key), straight
  from memory: no candidate file (it holds resolved secrets) is ever written on the controller.
- The change goes in with Cisco's configuration replace with a commit timeout:
  `configure replace bootflash:<candidate> commit-timeout <seconds>` arms the switch's own timer before
  anything changes; unless `configure replace commit` follows in time, the switch rolls the replace back
  by itself, whatever happened to the controller or the session. The startup configuration is saved only
  at the confirm. A failed or cut-off rollback is reported as a failure, never as success.
- Whether a command failed, and whether a replace waits for its commit, are read from structure, never
  from words in the switch's text: a command NX-API refuses comes back as its JSON-RPC error; the state
  of the replace from `show config-replace status` as JSON (`parse_replace_status`, which refuses any
  shape or value it does not know: an unknown state is never taken as committed, confirmed or rolled
  back); a rollback is checked by comparing the running configuration with its checkpoint afterwards.
- The files it leaves on bootflash (candidate, pre-change checkpoint, the diff's snapshot) carry the push
  id, so two pushes never overwrite each other's.
- The switch must run a release gpufabric renders for (`gpufabric.nos.nxos`), all of which have the
  commit timeout; an older one is refused at login.

Optional args: `push_id`, `tls_ca_file`, `tls_known_hosts`, `known_hosts`, `accept_new`, `private_key`
(a `gpufabric.hidden.Hidden`), `port` (NX-API, 443), `ssh_port` (SCP, 22), `controller`.
"""

from __future__ import annotations

import hashlib
import io
import re
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from napalm.base.exceptions import CommitError, ConnectionException, ReplaceConfigException
from napalm.nxapi_plumbing import Device as NXOSDevice
from napalm.nxapi_plumbing.api_client import RPCClient
from napalm.nxapi_plumbing.errors import NXAPIAuthError, NXAPICommandError, NXAPIConnectionError

from gpufabric.drivers import maintenance
from gpufabric.drivers.answers import (
    DEFAULT_BOUNDS,
    PARSE_FAILURES,
    ReadBounds,
    ShapeError,
    SwitchAnswerError,
    as_dict,
    as_list,
    bounds_of,
    located,
    named_reads,
    switch_json,
)
from gpufabric.drivers.https_args import https_args
from gpufabric.drivers.maintenance import DrainHeldError, DrainMark, DrainRefusedError
from gpufabric.drivers.push_id import PUSH_ID, STALE_AFTER, age_seconds, controller_name, started
from gpufabric.drivers.tls_pins import TlsTrust, TlsTrustError, VerifiedHTTPSConnection, post, renamed
from gpufabric.errors import GpufabricError
from gpufabric.hidden import reveal
from gpufabric.intent.errors import printable
from gpufabric.nos.nxos import COMMIT_TIMEOUT_RANGE, PLATFORM
from gpufabric.nos.nxos.drain import STATUS as GIR_STATUS
from gpufabric.nos.nxos.drain import in_maintenance
from gpufabric.nos.nxos.upgrade import NxosUpgrade
from gpufabric.platforms.spec import DrainSpec

FILE_PREFIX = "gpufabric-"
MARK = "!gpufabric push"  # the candidate's first line: which push wrote it, from which controller
SETTLE = 60.0  # seconds a replace the switch reports in progress gets to finish before it counts as failed
POLL = 1.0

# `show config-replace status` over NX-API (the `cli` method: its JSON body). NOT ESTABLISHED FROM A
# SWITCH: no capture of this command's JSON is in the repository, so the keys and values below are
# gpufabric's assumption, to be checked on a real Nexus (docs/push-trust.md). The parser demands them;
# any other shape or value is refused (ReplaceStatusError), and the driver then acts as for an unknown
# state: nothing is committed, confirmed or called rolled back on its strength.
STATUS_COMMAND = "show config-replace status"
STATUS_KEY = "operation_status"  # required (when the body is not empty): one of STATUS_VALUES
OPERATION_KEY = "last_operation"  # optional text; names the file of the replace (whose push it is)


class Phase(StrEnum):
    """Where the switch's last configuration replace stands."""

    NONE = "no replace recorded"
    DONE = "completed"
    PENDING = "waiting for its commit"
    RUNNING = "in progress"
    FAILED = "failed"


STATUS_VALUES = {
    "success": Phase.DONE,
    "completed": Phase.DONE,
    "waiting for commit": Phase.PENDING,
    "commit pending": Phase.PENDING,
    "in progress": Phase.RUNNING,
    "failed": Phase.FAILED,
    "failure": Phase.FAILED,
}


class ReplaceStatusError(ReplaceConfigException, GpufabricError):
    """`show config-replace status` did not answer in the structure gpufabric knows: its state is unknown."""


@dataclass(frozen=True)
class ReplaceStatus:
    phase: Phase
    said: str = ""  # the switch's own words for it, escaped
    operation: str = ""  # OPERATION_KEY's text, as given

    def __str__(self) -> str:
        return f"{self.phase} ('{self.said}')" if self.said else str(self.phase)


def parse_replace_status(body: Any, host: str = "") -> ReplaceStatus:
    """The replace's state from the JSON body of `show config-replace status`. An empty body (NX-API's
    answer for a command with no output) is NONE; an object must hold STATUS_KEY with one of
    STATUS_VALUES (case and spacing aside), and OPERATION_KEY, when there, must be text. Anything else
    raises ReplaceStatusError, naming what was wrong."""
    where = f"{host}: `{STATUS_COMMAND}`" if host else f"`{STATUS_COMMAND}`"
    if body is None or body == {}:
        return ReplaceStatus(Phase.NONE)
    if not isinstance(body, dict):
        raise ReplaceStatusError(
            f"{where}: answered {type(body).__name__}, not a JSON object; the replace's state is unknown"
        )
    said = body.get(STATUS_KEY)
    if not isinstance(said, str):
        keys = ", ".join(printable(str(k))[:40] for k in list(body)[:8])
        raise ReplaceStatusError(
            f"{where}: no text {STATUS_KEY!r} in its answer (keys: {keys}); the replace's state is unknown"
        )
    operation = body.get(OPERATION_KEY, "")
    if not isinstance(operation, str):
        raise ReplaceStatusError(f"{where}: {OPERATION_KEY!r} is {type(operation).__name__}, not text")
    phase = STATUS_VALUES.get(" ".join(said.lower().split()).rstrip("."))
    shown = printable(said[:120])
    if phase is None:
        raise ReplaceStatusError(
            f"{where}: unknown {STATUS_KEY} '{shown}' (known: {', '.join(sorted(STATUS_VALUES))}); "
            "the replace's state is unknown"
        )
    return ReplaceStatus(phase, shown, operation)


def _release(text: str) -> tuple[int, int] | None:
    found = re.match(r"\s*(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


class VerifiedRPCClient(RPCClient):
    """NAPALM's NX-API JSON-RPC client, posting over a VerifiedHTTPSConnection instead of `requests`
    (whose `verify=False` NAPALM sets by default)."""

    def __init__(
        self,
        host: str,
        username: str,
        password: str,
        port: int,
        timeout: int,
        *,
        trust: TlsTrust,
        bounds: ReadBounds = DEFAULT_BOUNDS,
    ) -> None:
        super().__init__(host, username, password, transport="https", port=port, timeout=timeout, verify=True)
        self.host, self.port, self.trust, self.bounds = host, port, trust, bounds

    def _send_request(self, commands: list[str], method: str) -> Any:
        payload = self._build_payload(commands, method)
        conn = VerifiedHTTPSConnection(self.host, self.port, self.trust, self.timeout, path="/ins", bounds=self.bounds)
        try:
            reply = post(conn, "/ins", payload, self.headers, (self.username, self.password))
        except TlsTrustError:
            raise
        except SwitchAnswerError as exc:
            raise renamed(exc, "; ".join(commands)) from None
        except OSError as exc:
            raise NXAPIConnectionError(f"{self.host}: {exc}") from None
        if reply.status_code == 401:
            raise NXAPIAuthError(f"{self.host}: NX-API refused the login for {self.username}")
        return reply

    def _process_api_response(self, response: Any, commands: list[str], raw_text: bool = False) -> list[Any]:
        """NAPALM's reading of a JSON-RPC answer, once the answer is known to be RFC 8259 JSON of NX-API's
        shape: one object (or a list of one object per command), each with a `result` object (or null)
        or an `error` object. Anything else is the named failure of this switch and these commands."""
        asked = "; ".join(commands)
        named = f"`{asked}`"  # the parser's findings name the commands: said once (answers.located)
        try:
            answer = switch_json(response.text, named)
            items = [answer] if isinstance(answer, dict) else as_list(answer, named)
            if len(items) != len(commands):
                raise ShapeError(f"{named} holds {len(items)} answers for {len(commands)} commands")
            for i, item in enumerate(items):
                as_dict(item, f"{named} [{i}]")
                for part in ("result", "error"):
                    if item.get(part) is not None:
                        as_dict(item[part], f"{named} [{i}] {part}")
                if isinstance(item.get("error"), dict) and "data" in item["error"]:
                    as_dict(item["error"]["data"], f"{named} [{i}] error data")
            return super()._process_api_response(response, commands, raw_text)  # type: ignore[no-any-return]
        except PARSE_FAILURES as exc:
            raise located(self.host, asked, exc) from None


@named_reads
class GpufabricNXOSDriver(NxosUpgrade):
    def __init__(
        self, hostname: str, username: str, password: str, timeout: int = 60, optional_args: dict | None = None
    ) -> None:
        args, self.trust, self.push_id, napalm_args = https_args(
            hostname, optional_args, api="NX-API", transport_keys=("transport", "nxos_protocol"), own=("ssh_port",)
        )
        self.controller = controller_name(args)
        self.known_hosts = args.get("known_hosts")
        self.accept_new = bool(args.get("accept_new", False))
        self.private_key = args.get("private_key")
        self.ssh_port = int(args.get("ssh_port", 22))
        self.read_bounds = bounds_of(args)
        super().__init__(hostname, username, password, timeout, napalm_args)
        # Named after the push: a second push's files never replace this one's.
        self.candidate_cfg = f"{FILE_PREFIX}{self.push_id}.cfg"
        self.rollback_cfg = f"{FILE_PREFIX}{self.push_id}-before.cfg"
        self.snapshot_cfg = f"{FILE_PREFIX}{self.push_id}-running.cfg"
        self._armed = False  # a replace of this driver's may be in effect on the switch
        self._confirmed = False  # this push's change confirmed and saved (rollback restores and saves back)
        self._tidied = False

    # -- session ---------------------------------------------------------------------------
    def open(self) -> None:
        self.device = NXOSDevice(self.hostname, self.username, self.password, transport="https",
                                 port=self.port, timeout=self.timeout, verify=True, api_format="jsonrpc")  # fmt: skip
        self.device.api = VerifiedRPCClient(
            self.hostname,
            self.username,
            self.password,
            self.port,
            self.timeout,
            trust=self.trust,
            bounds=self.read_bounds,
        )
        try:
            self._send_command("show hostname")
            version = self._send_command("show version") or {}
        except (NXAPIConnectionError, NXAPIAuthError) as exc:
            raise ConnectionException(f"{self.hostname}: cannot log in to NX-API ({exc})") from None
        self._check_release(version)

    def _check_release(self, version: Any) -> None:
        try:
            shown = as_dict(version, "`show version`")
        except ShapeError as exc:
            raise located(self.hostname, "show version", exc) from None
        text = str(shown.get("nxos_ver_str") or shown.get("sys_ver_str") or shown.get("kickstart_ver_str") or "")
        running = _release(text)
        releases = PLATFORM.facts.releases
        oldest = _release(releases[0])
        if running is None or oldest is None or running < oldest:
            raise ConnectionException(
                f"{self.hostname}: runs NX-OS {text or '(unknown release)'}; gpufabric pushes to "
                f"{', '.join(releases)}, whose configuration replace with a commit timeout arms the revert"
            )

    def _upload(self, name: str, text: str) -> None:
        """The file onto bootflash by SCP, from memory, over an SSH session whose host key is verified."""
        import scp  # paramiko's SCP client; netmiko's file_transfer would need the text in a local file

        from gpufabric.drivers.transport import SSHTransport

        data = text.encode()
        ssh = SSHTransport(
            self.hostname, self.username, self.password, port=self.ssh_port, timeout=float(self.timeout),
            private_key=reveal(self.private_key) if self.private_key is not None else None,
            known_hosts=self.known_hosts, accept_new=self.accept_new, bounds=self.read_bounds,
        )  # fmt: skip
        try:
            transport = ssh.client.get_transport()
            assert transport is not None
            with scp.SCPClient(transport, socket_timeout=float(self.timeout)) as client:
                client.putfo(io.BytesIO(data), f"bootflash:{name}", mode="0600")
        finally:
            ssh.close()
        shown = str(self._send_command(f"show file bootflash:{name} md5sum", raw_text=True) or "").strip()
        if shown.lower() != hashlib.md5(data).hexdigest():
            raise ReplaceConfigException(f"{self.hostname}: bootflash:{name} does not match what was sent")

    def _exec(self, command: str) -> str:
        """One exec command with confirmations off; its text. A command NX-API reports as failed (its
        JSON-RPC error) raises ReplaceConfigException. Whether the command did what it is for is read
        afterwards, from the switch's state (the replace's status, the running configuration), not from
        the words of this answer."""
        assert self.device is not None, "open() first"
        # One request: NX-API runs its commands in one session, so `terminal dont-ask` holds for the command.
        try:
            results = self.device.show_list(["terminal dont-ask", command, "no terminal dont-ask"], raw_text=True)
        except NXAPICommandError as exc:
            said = printable(str(exc.message).strip()[:300])
            raise ReplaceConfigException(f"{self.hostname}: `{command}` failed: {said}") from None
        return str(results[1].get("result") or "") if len(results) > 1 else ""

    def replace_status(self) -> ReplaceStatus:
        """The state of the switch's configuration replace, read as JSON (ReplaceStatusError: unknown)."""
        try:
            body = self._send_command(STATUS_COMMAND)
        except NXAPICommandError as exc:
            said = printable(str(exc.message).strip()[:200])
            raise ReplaceStatusError(f"{self.hostname}: `{STATUS_COMMAND}` failed: {said}") from None
        return parse_replace_status(body, self.hostname)

    def _settled_status(self) -> ReplaceStatus:
        """The replace's state once it is no longer in progress (at most SETTLE seconds)."""
        deadline = time.monotonic() + SETTLE
        status = self.replace_status()
        while status.phase is Phase.RUNNING and time.monotonic() < deadline:
            time.sleep(POLL)
            status = self.replace_status()
        return status

    def _delete(self, name: str) -> None:
        assert self.device is not None, "open() first"
        self.device.show_list(["terminal dont-ask", f"delete bootflash:{name}", "no terminal dont-ask"], raw_text=True)

    def _delete_quietly(self, *names: str) -> None:
        for name in names:
            try:
                self._delete(name)
            except Exception:
                continue

    # -- candidate and diff ----------------------------------------------------------------
    def load_replace_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        if config is None:
            if filename is None:
                raise ReplaceConfigException("filename or config must be given")
            from gpufabric.verify.facts import read_rendered  # only for a caller that names a file

            config = read_rendered(filename)
        if not self._tidied:
            self._forget_old_checkpoints()
            self._tidied = True
        if self._held() is not None:  # a drained switch keeps BGP isolated through the replace (Nxos.keep_drain)
            config = PLATFORM.keep_drain(config, DrainSpec(PLATFORM.facts.default_release))
        self._upload(self.candidate_cfg, f"{MARK} {self.push_id} controller {self.controller}\n{config}")
        self.replace, self.loaded = True, True

    def load_merge_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        raise NotImplementedError("gpufabric replaces the whole configuration, with a revert armed on the switch")

    def _get_diff(self) -> str:
        return self._from_running(self.candidate_cfg)

    def _from_running(self, target: str) -> str:
        """The patch that takes the running configuration (a checkpoint of it, removed after) to `target`."""
        self._delete_quietly(self.snapshot_cfg)
        self._exec(f"checkpoint file bootflash:{self.snapshot_cfg}")
        try:
            shown = self._send_command(
                f"show diff rollback-patch file bootflash:{self.snapshot_cfg} file bootflash:{target}", raw_text=True
            )
        finally:
            self._delete_quietly(self.snapshot_cfg)
        text = str(shown or "")
        if "Generating Rollback Patch" not in text:
            raise ReplaceConfigException(f"{self.hostname}: NX-OS gave no rollback patch for bootflash:{target}")
        patch = text.split("Generating Rollback Patch", 1)[1].replace("Rollback Patch is Empty", "")
        return "\n".join(line.rstrip() for line in patch.strip().splitlines() if line.strip()[:1] not in ("", "!", "."))

    def discard_config(self) -> None:
        if self.loaded:
            self._delete(self.candidate_cfg)
        self.loaded = False

    # -- commit, confirm, roll back --------------------------------------------------------
    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if message:
            raise NotImplementedError("commit messages are not kept on NX-OS")
        low, high = COMMIT_TIMEOUT_RANGE
        if revert_in is None or not low <= revert_in <= high:
            raise CommitError(
                f"{self.hostname}: NX-OS changes go in only with the switch's revert armed: a commit timeout of "
                f"{low}-{high} s (asked: {revert_in})"
            )
        if not self.loaded:
            raise ReplaceConfigException("no candidate loaded")
        if self.has_pending_commit():
            other = self.pending_push()
            raise CommitError(
                f"{self.hostname}: a configuration replace already waits for its commit here"
                + (f" (push {other['push_id']} from {other['controller']})" if other else "")
            )
        self._delete_quietly(self.rollback_cfg)
        self._exec(f"checkpoint file bootflash:{self.rollback_cfg}")  # what rollback() returns to early
        self.loaded = False
        self._armed = True  # from here the switch may change: rollback() has something to undo
        self._exec(f"configure replace bootflash:{self.candidate_cfg} commit-timeout {revert_in}")
        status = self._settled_status()
        if status.phase is not Phase.PENDING:  # failed, or no timer armed: the change must not stand
            raise ReplaceConfigException(
                f"{self.hostname}: after `configure replace ... commit-timeout {revert_in}` the switch reports the "
                f"replace {status}, not waiting for its commit"
            )

    def has_pending_commit(self) -> bool:
        """A replace waits for its commit, or is still being applied (ReplaceStatusError: unknown)."""
        return self.replace_status().phase in (Phase.PENDING, Phase.RUNNING)

    def confirm_commit(self) -> None:
        status = self.replace_status()
        if status.phase is not Phase.PENDING:
            raise CommitError(
                f"{self.hostname}: no configuration replace waits for its commit (the switch reports it {status}; "
                "its timer may have reverted it)"
            )
        self._exec("configure replace commit")
        status = self.replace_status()
        if status.phase is not Phase.DONE:
            raise CommitError(
                f"{self.hostname}: after `configure replace commit` the switch reports the replace {status}"
            )
        self._armed, self._confirmed = False, True
        self._copy_run_start()  # the change is kept across a reload only now that it is confirmed
        # The pre-change checkpoint stays: a batch that fails after this confirm rolls this switch back to it.
        self._delete_quietly(self.candidate_cfg)

    def rollback(self) -> None:
        """Back to the checkpoint taken just before the commit. Any failure, a lost session included, raises:
        while the replace is pending, the switch's own timer then reverts the change."""
        if not (self._armed or self._confirmed):
            return  # the commit was refused before it changed anything: nothing to undo
        self._exec(f"rollback running-config file bootflash:{self.rollback_cfg}")
        left = self._from_running(self.rollback_cfg)  # rolled back is what the running configuration shows
        if left:
            raise ReplaceConfigException(
                f"{self.hostname}: after `rollback running-config` the running configuration still differs from "
                f"bootflash:{self.rollback_cfg} ({len(left.splitlines())} lines): not rolled back"
            )
        if self._confirmed:
            self._copy_run_start()  # the confirm saved the change: the startup configuration goes back too
        else:
            self._close_replace()
        self._armed = self._confirmed = False
        self._delete_quietly(self.candidate_cfg, self.rollback_cfg)

    def _close_replace(self) -> None:
        """After a rollback, a replace still waiting for its commit is closed: running is the pre-change
        configuration again, and closing keeps it and frees the switch for the next push instead of leaving
        a timer that would only restore the same state."""
        status = self.replace_status()
        if status.phase is Phase.PENDING:
            self._exec("configure replace commit")
            status = self.replace_status()
        if status.phase in (Phase.PENDING, Phase.RUNNING):
            raise ReplaceConfigException(
                f"{self.hostname}: rolled back to bootflash:{self.rollback_cfg}, but the replace is still {status} "
                "(its timer ends it)"
            )

    def _forget_old_checkpoints(self) -> None:
        """Delete the pre-change checkpoints of pushes older than STALE_AFTER: none of them can still roll back."""
        if self.has_pending_commit():
            return  # whoever's it is, its checkpoint may still be needed
        listing = str(self._send_command("dir bootflash:", raw_text=True) or "")
        for found in sorted(set(re.findall(rf"{FILE_PREFIX}({PUSH_ID.pattern})-before\.cfg", listing))):
            age = age_seconds(found[0])
            if found[0] != self.push_id and age is not None and age > STALE_AFTER:
                self._delete_quietly(f"{FILE_PREFIX}{found[0]}-before.cfg")

    def pending_push(self) -> dict[str, str] | None:
        """The gpufabric push whose replace waits for its commit on this switch, else None."""
        status = self.replace_status()
        if status.phase not in (Phase.PENDING, Phase.RUNNING):
            return None
        named = re.search(rf"{FILE_PREFIX}({PUSH_ID.pattern})\.cfg", status.operation)
        if named is None:
            listing = str(self._send_command("dir bootflash:", raw_text=True) or "")
            ours = sorted(re.findall(rf"{FILE_PREFIX}({PUSH_ID.pattern})\.cfg\b", listing))
            if not ours:
                return None
            push = ours[-1][0] if isinstance(ours[-1], tuple) else ours[-1]
        else:
            push = named.group(1)
        head = str(self._send_command(f"show file bootflash:{FILE_PREFIX}{push}.cfg", raw_text=True) or "")
        mark = re.match(rf"{re.escape(MARK)} (\S+) controller (\S+)", head.lstrip())
        return {"push_id": push, "started": started(push), "controller": mark.group(2) if mark else ""}

    # -- drain and maintenance ----------------------------------------------------------
    # GIR (`system mode maintenance`, Nxos.drain_steps), sent as cisco.nxos's nxos_gir module sends it; the
    # marker naming who drained the switch is a file on bootflash. Not shown on a Nexus (docs/not-shown.md).

    DRAINED = "gpufabric-drained.json"

    def _gir(self, text: str) -> None:
        assert self.device is not None, "open() first"
        if self.has_pending_commit():
            raise DrainRefusedError(f"{self.hostname}: a commit is pending confirmation on this switch")
        try:
            self.device.config_list([line for line in text.splitlines() if line.strip()])
        except NXAPICommandError as exc:
            raise DrainRefusedError(f"{self.hostname}: {printable(str(exc.message).strip()[:300])}") from None

    def _held(self) -> DrainMark | None:
        try:
            text = str(self._send_command(f"show file bootflash:{self.DRAINED}", raw_text=True) or "")
        except Exception:  # no such file: not drained by gpufabric
            return None
        return DrainMark.parse(text)

    def drain(self, push_id: str, reason: str, by: str | None = None) -> None:
        steps = PLATFORM.drain_steps(DrainSpec(PLATFORM.facts.default_release))
        held = self._held()
        if held is None:
            self._upload(self.DRAINED, DrainMark.new(push_id, reason, steps.mechanism, by).text())
        if not self._in_maintenance():
            self._gir(steps.drain)

    def undrain(self, push_id: str, force: bool = False) -> None:
        held = self._held()
        if held is not None and held.push_id != push_id and not force:
            raise DrainHeldError(f"{self.hostname} was drained by {held.by} ({held.push_id}): left drained")
        if self._in_maintenance():
            self._gir(PLATFORM.drain_steps(DrainSpec(PLATFORM.facts.default_release)).undrain)
        self._delete_quietly(self.DRAINED)

    def _in_maintenance(self) -> bool:
        return in_maintenance(str(self._send_command(GIR_STATUS, raw_text=True) or ""))

    def maintenance_status(self) -> dict[str, Any]:
        """The marker on bootflash, and `show system mode`."""
        mechanism = PLATFORM.drain_steps(DrainSpec(PLATFORM.facts.default_release)).mechanism
        return maintenance.status(self._held(), self._in_maintenance(), mechanism)
