"""NAPALM driver for FRR on Linux (the lab's switches, or any FRR box reached over SSH).

Configuration: the candidate is FRR's integrated config (plus an optional nftables section,
see frr_files). `compare_config` is `frr-reload.py --test`; `commit_config(revert_in=N)` saves
the running config as the rollback target, applies the candidate with `frr-reload.py --reload`
and arms a timer *on the device* that reverts unless `confirm_commit` disarms it, so a change
that cuts the management session off still undoes itself.

Optional args: `pathspace` (FRR pathspace; default: $FRR_NS of the login session),
`lldp_socket` (lldpd's control socket; default: $GF_LLDP_SOCKET), `key_file`,
`private_key` (the key's text, as a `gpufabric.hidden.Hidden`), `known_hosts`, `push_id` and
`push_controller` (written into the pending marker, read back by `pending_push`).
"""

from __future__ import annotations

import difflib
import secrets
import shlex
from dataclasses import replace
from typing import Any

from napalm.base.exceptions import CommitError

import gpufabric.nos.frr.system as frr_system
from gpufabric.drivers import frr_getters, maintenance
from gpufabric.drivers.answers import AnswerShapeError, as_dict, as_int, switch_json
from gpufabric.drivers.linux_switch import PushMark, parse_push_line
from gpufabric.drivers.maintenance import DrainHeldError, DrainMark, DrainRefusedError
from gpufabric.drivers.switch_paths import candidate_folder
from gpufabric.drivers.transport import CommandFailedError, put_files, read_many
from gpufabric.nos.frr import PLATFORM as FRR
from gpufabric.nos.frr.files import (
    NFT_MARKER,
    NFT_TABLE,
    SYSCTL_MARKER,
    CandidateParts,
    DeviceFiles,
    candidate_parts,
    join_candidate,
)
from gpufabric.nos.frr.restart import FrrRestart
from gpufabric.platforms.spec import DRAIN_POLICY, DrainSpec


class FrrDriver(FrrRestart):
    platform = "frr"

    def _setup(self) -> None:
        self.files = DeviceFiles(self.optional_args.get("pathspace"))
        self.push = PushMark.from_args(self.optional_args)
        self._uploaded: str | None = None  # the candidate whose files are in this session's folder

    def open(self) -> None:
        super().open()
        if "pathspace" not in self.optional_args or self.lldp_socket is None:
            asked = 'printf "%s\\n%s\\n" "${FRR_NS:-}" "${GF_LLDP_SOCKET:-}"'
            ns, sock = ([*self._run(asked).split("\n"), "", ""])[:2]
            if "pathspace" not in self.optional_args:
                try:
                    self.files = DeviceFiles(ns or None)
                except ValueError as exc:  # its answer names files in the commands run on it
                    raise AnswerShapeError(self.hostname, asked, f"its FRR_NS is not a pathspace: {exc}") from None
            self.lldp_socket = self.lldp_socket or sock or None

    def _vtysh_command(self, command: str) -> tuple[str, str | None]:
        return f"{self.files.vtysh} -c {shlex.quote(command)}", None

    # -- configuration ---------------------------------------------------------------------
    def _upload(self) -> tuple[str, str | None, str | None]:
        """Place the candidate's parts on the switch: (FRR config, nftables, host settings script) paths.
        One round trip, and none when this candidate is already there (compare, then commit)."""
        if self.candidate is None:
            raise CommitError("no candidate loaded")
        parts = candidate_parts(self.candidate)
        setup = self._new_workdir()
        conf = self.files.candidate("conf")
        nft = self.files.candidate("nft") if parts.nft is not None else None
        system = self.files.candidate("system.sh") if parts.system is not None else None
        if self._uploaded == self.candidate:
            return conf, nft, system
        files: dict[str, tuple[str, int | None]] = {conf: (parts.frr, None)}
        if nft is not None:
            files[nft] = (parts.nft or "", None)
        if system is not None:
            settings = frr_system.parse(parts.system or "", parts.interfaces or "")
            files[system] = (frr_system.apply_script(settings), 0o600)
            files[self.files.candidate("system.shown")] = (_shown(parts), None)
            files[self.files.candidate("system.secrets")] = (frr_system.secret_values(parts.system or ""), 0o600)
        try:
            # A drained switch's candidate keeps its drain (gpufabric.nos.frr.files.DeviceFiles.keep_drain).
            put_files(self.transport, files, setup, then=self.files.keep_drain(conf))  # type: ignore[arg-type]
        except CommandFailedError:
            if setup:  # the folder may not exist: the next upload makes one again
                self.files = replace(self.files, workdir=None)
            raise
        self._uploaded = self.candidate
        return conf, nft, system

    def _new_workdir(self) -> str:
        """Name this session's candidate folder, and the command making it (with the first upload). mkdir
        fails on a name that exists, so nothing planted in /tmp beforehand is ever written through."""
        if self.files.workdir is not None:
            return ""
        workdir = candidate_folder(self.files.pathspace, secrets.token_hex(8))
        self.files = replace(self.files, workdir=workdir)
        return f"mkdir -m 700 {shlex.quote(workdir)}"

    def _drop_workdir(self) -> None:
        if self.files.workdir is not None and self.transport is not None:
            self.transport.run(f"rm -rf {shlex.quote(self.files.workdir)}")
        self.files = replace(self.files, workdir=None)
        self._uploaded = None

    def compare_config(self) -> str:
        """What a commit would change: FRR lines to delete/add, then the nftables diff. Empty: nothing."""
        if self.candidate is None:
            return ""
        conf, nft, system = self._upload()
        candidate = candidate_parts(self.candidate)
        if self.merge:
            return "\n".join(f"+ {line}" for line in candidate.frr.splitlines() if line.strip())
        assert self.transport is not None
        # Everything the diff needs from the switch in one round trip; frr-reload (about a second of CPU on
        # the switch) only when the fast check cannot tell the FRR part is unchanged.
        reads = {"unchanged": f"{self.files.unchanged_check(conf)} && echo same"}
        if nft is not None:
            reads |= {
                "nft applied": f"cat {self.files.path('applied.nft')}",
                "nft recorded": f"cat {self.files.path('applied.listing')}",
                "nft live": f"nft -s list table {NFT_TABLE}",
            }
        if system is not None:
            reads |= {
                "system applied": f"cat {self.files.path('applied.system')}",
                "secrets": f"cmp -s {self.files.candidate('system.secrets')} "
                f"{self.files.path('applied.system.secrets')} && echo same || echo changed",
            }
        state = read_many(self.transport, reads)
        if state["unchanged"].strip() == "same":
            parts = [""]
        else:
            parts = [frr_getters.reload_diff(self._run(f"{self.files.reload} --test {conf}"))]
        if nft is not None:
            parts.append(_nft_diff(candidate.nft or "", state["nft applied"], state["nft recorded"], state["nft live"]))
        if system is not None:
            parts.append(_system_diff(_shown(candidate), state["system applied"], state["secrets"].strip() == "same"))
        return "\n".join(p for p in parts if p)

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        conf, nft, system = self._upload()
        scripts = self.files.commit_files(conf, nft, self.merge, system, revert_in)
        put_files(self.transport, {path: (body, 0o700) for path, body in scripts.items()})  # type: ignore[arg-type]
        try:
            # The script refuses, under the switch's lock, when a commit is pending confirmation.
            self._run("sh -s", self.files.commit_script(revert_in, self.push.line))
        except CommandFailedError as exc:
            raise CommitError(f"{self.hostname}: the candidate was not applied: {exc}") from None
        finally:
            self._drop_workdir()
        self.candidate = None

    def has_pending_commit(self) -> bool:
        return self.transport is not None and self.transport.run(self.files.pending_check).rc == 0

    def pending_push(self) -> dict[str, str] | None:
        """The push whose commit awaits confirmation here ({"push_id", "started", "controller"}), from the
        pending marker; None when no commit is pending (a marker whose timer is gone does not count)."""
        found = self._run(self.files.pending_push_check).strip()
        return None if found == "none" else parse_push_line(found)

    def confirm_commit(self) -> None:
        try:
            self._run("sh -s", self.files.confirm_script)
        except CommandFailedError as exc:
            if "no commit is pending" in exc.output.stderr:
                raise CommitError("no commit is pending confirmation") from None
            raise

    def discard_config(self) -> None:
        self.candidate = None
        self._drop_workdir()

    def close(self) -> None:
        try:
            self._drop_workdir()
        finally:
            super().close()

    def rollback(self) -> None:
        """Back to the configuration before the last commit (and stop its revert timer)."""
        self._run("sh -s", self.files.disarm_script)
        self._run(f"sh {self.files.path('revert.sh')}")

    # -- getters -------------------------------------------------------------------------------
    def _running_sysctl(self) -> str:
        """The kernel settings the system file manages, as the switch runs them (one round trip)."""
        assert self.transport is not None, "call open() first"
        commands = {k: f"cat /proc/sys/{k.replace('.', '/')}" for k in sorted(frr_system.SYSCTLS)}
        return _sysctl_section({k: v.strip() for k, v in read_many(self.transport, commands).items()})

    def get_config(
        self, retrieve: str = "all", full: bool = False, sanitized: bool = False, format: str = "text"
    ) -> dict[str, str]:
        result = {"running": "", "startup": "", "candidate": ""}
        if retrieve in ("all", "running"):
            running = frr_getters.strip_header(self._vtysh("show running-config"))
            nft = self._run(f"nft -s list table {NFT_TABLE} 2>/dev/null || true")
            result["running"] = join_candidate(running, nft) if nft.strip() else running
            if sysctl := self._running_sysctl():
                result["running"] = result["running"].rstrip("\n") + "\n" + sysctl
        if retrieve in ("all", "startup"):
            saved = self._run(f"cat {self.files.confdir}/frr.conf")
            nft = self._run(f"cat {self.files.path('applied.nft')} 2>/dev/null || true")
            result["startup"] = join_candidate(saved, nft) if nft.strip() else saved
        if retrieve in ("all", "candidate"):
            result["candidate"] = self.candidate or ""
        return result

    # -- drain and maintenance ----------------------------------------------------------
    # The drain is FRR configuration (graceful shutdown and an outbound prepend: Platform.drain_steps), saved,
    # with a marker beside the configuration naming who drained the switch; a push meanwhile keeps it.

    def _drain_spec(self) -> DrainSpec:
        """The switch's ASN and BGP neighbours, in its default instance and each VRF's, as its BGP daemon
        has them now."""
        command = "show ip bgp vrf all summary json"
        return self._parsed(command, _summary_spec, self._vtysh(command))

    def _change(self, text: str | None, *, marker: str | None, remove: bool) -> None:
        apply = self.files.path("drain.apply") if text else None
        files: dict[str, tuple[str, int | None]] = {apply: (text or "", 0o600)} if apply else {}
        if marker is not None:
            files[self.files.path("drained.new")] = (marker, 0o644)
            files[self.files.path("drain.conf")] = (text or "", 0o644)
        if files:
            put_files(self.transport, files)  # type: ignore[arg-type]
        script = self.files.drain_script(apply, marker=self.files.path("drained.new") if marker else None,
                                         remove=remove)  # fmt: skip
        try:
            self._run("sh -s", script)
        except CommandFailedError as exc:
            raise DrainRefusedError(f"{self.hostname}: {exc.output.stderr.strip() or exc}") from None

    def _mark(self) -> DrainMark | None:
        return DrainMark.parse(self._run(f"cat {self.files.path('drained')} 2>/dev/null || true"))

    def drain(self, push_id: str, reason: str, by: str | None = None) -> None:
        """Take the switch out of service: FRR's drain lines applied and saved, the marker written first. A
        switch already drained keeps its marker (whoever drained it first still holds the drain); its drain
        lines are applied again, for neighbours added since."""
        steps = FRR.drain_steps(self._drain_spec())
        held = self._mark()
        mark = held or DrainMark.new(push_id, reason, steps.mechanism, by)
        self._change(steps.drain, marker=mark.text(), remove=False)

    def undrain(self, push_id: str, force: bool = False) -> None:
        """Put the switch back into service: the drain lines removed and saved, then the marker. Refused
        (DrainHeldError, nothing changed) when another push or person holds the drain, unless `force`."""
        held = self._mark()
        if held is not None and held.push_id != push_id and not force:
            raise DrainHeldError(
                f"{self.hostname} was drained by {held.by} ({held.push_id}, since {held.since}): left drained"
            )
        steps = FRR.drain_steps(self._drain_spec())
        # Only what the switch runs is taken back: a drain whose lines never applied (its controller died
        # between the marker and the change) undrains by losing its marker; FRR refuses `no route-map X`
        # for a route map it does not have.
        running = frr_getters.strip_header(self._vtysh("show running-config"))
        self._change(present_only(steps.undrain, running), marker=None, remove=True)

    def maintenance_status(self) -> dict[str, Any]:
        """drained, since, by, push_id, reason, mechanism, and `applied`: FRR runs the drain's lines."""
        assert self.transport is not None, "call open() first"
        found = read_many(
            self.transport,
            {
                "mark": f"cat {self.files.path('drained')}",
                "running": f"{self.files.vtysh} -c 'show running-config'",
            },
        )
        running = found["running"]
        applied = "bgp graceful-shutdown" in running and f"route-map {DRAIN_POLICY} permit" in running
        return maintenance.status(DrainMark.parse(found["mark"]), applied, MECHANISM)


MECHANISM = "bgp graceful-shutdown + as-path prepend"


def present_only(undrain: str, running: str) -> str | None:
    """The undrain's `no ...` lines whose positive form the running configuration holds, in their contexts;
    None when it holds none of them (nothing to take back)."""
    shown = {line.strip() for line in running.splitlines()}
    kept, removing = [], False
    for line in undrain.splitlines():
        words = line.strip()
        if words.startswith("no "):
            positive = words[3:]
            if any(s == positive or s.startswith(positive + " ") for s in shown):
                kept.append(line)
                removing = True
        else:
            kept.append(line)
    return "\n".join(kept) + "\n" if removing else None


def _summary_spec(text: str) -> DrainSpec:
    """`show ip bgp vrf all summary json` ({VRF name: {"ipv4Unicast": {as, peers}}}, "default" the default
    instance) -> the ASN and the neighbours (by address, or by interface when unnumbered), per VRF."""
    what = "`show ip bgp vrf all summary json`"
    found = as_dict(switch_json(text, what), what)
    if "default" not in found:
        raise ValueError("BGP is not configured on this switch: there is nothing to drain")
    asn, peers = _instance_summary(found["default"], "default")
    vrfs = []
    for vrf, summary in sorted(found.items()):
        if vrf == "default":
            continue
        vrf_asn, vrf_peers = _instance_summary(summary, vrf)
        if vrf_asn != asn:
            raise ValueError(f"VRF {vrf[:40]!r} runs BGP as {vrf_asn}, not the switch's {asn}: not a planned instance")
        vrfs.append((vrf, vrf_peers))
    return DrainSpec("", asn, peers, tuple(vrfs))


def _instance_summary(summary: object, vrf: str) -> tuple[int, tuple[str, ...]]:
    instance = as_dict(as_dict(summary, vrf).get("ipv4Unicast", {}), f"{vrf} ipv4Unicast")
    if "as" not in instance:
        raise ValueError(f"BGP instance {vrf[:40]!r} has no ASN: there is nothing to drain")
    return as_int(instance["as"], "as"), tuple(sorted(as_dict(instance.get("peers", {}), "peers")))


def _sysctl_section(values: dict[str, str]) -> str:
    """The kernel settings a running configuration shows, after SYSCTL_MARKER; nothing if none was read."""
    shown = [f"{k} = {v}" for k, v in sorted(values.items()) if v]
    return "".join(f"{row}\n" for row in [SYSCTL_MARKER, *shown]) if shown else ""


def _system_diff(candidate: str, applied: str, same_secrets: bool) -> str:
    """The host settings as last applied against the candidate's, secrets hidden on both sides; a changed
    secret is found by comparing the two root-only files on the switch and said, never shown."""
    diff = list(
        difflib.unified_diff(
            applied.splitlines(), candidate.splitlines(), "system running", "system candidate", lineterm="", n=1
        )
    )
    if not same_secrets:
        diff.append("# system: a password or community changed (values not shown)")
    return "\n".join(diff)


def _nft_diff(candidate: str, applied: str, recorded: str, live: str) -> str:
    diff = list(
        difflib.unified_diff(
            applied.splitlines(), candidate.splitlines(), "nftables running", "nftables candidate", lineterm="", n=1
        )
    )
    if recorded != live:
        diff += ["# nftables: the running table differs from what gpufabric applied:"]
        diff += list(
            difflib.unified_diff(recorded.splitlines(), live.splitlines(), "applied", "running", lineterm="", n=1)
        )
    return "\n".join(diff)


def _shown(parts: CandidateParts) -> str:
    """The host settings as a diff shows them: the system file (communities hidden) and the interfaces file."""
    return frr_system.masked(parts.system or "") + (parts.interfaces or "")


__all__ = ["NFT_MARKER", "FrrDriver"]
