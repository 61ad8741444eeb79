"""NAPALM driver for FRR on Linux (the lab's switches, or any FRR box reached over SSH).

Configuration: the candidate is FRR's integrated config (plus an optional nftables section,
see frr_files). `compare_config` is `frr-reload.py --test`; `commit_config(revert_in=N)` saves
the running config as the rollback target, applies the candidate with `frr-reload.py --reload`
and arms a timer *on the device* that reverts unless `confirm_commit` disarms it, so a change
that cuts the management session off still undoes itself.

Optional args: `pathspace` (FRR pathspace; default: $FRR_NS of the login session),
`lldp_socket` (lldpd's control socket; default: $GF_LLDP_SOCKET), `key_file`, `known_hosts`.
"""

from __future__ import annotations

import difflib
from typing import Any

from napalm.base import NetworkDriver
from napalm.base.exceptions import CommitError, MergeConfigException, ReplaceConfigException

from gpufabric.drivers import frr_getters
from gpufabric.drivers.frr_files import NFT_MARKER, NFT_TABLE, DeviceFiles, join_candidate, split_candidate
from gpufabric.drivers.transport import CommandFailedError, SSHTransport, Transport, check, put_file


class FrrDriver(NetworkDriver):
    platform = "frr"

    def __init__(
        self,
        hostname: str,
        username: str,
        password: str,
        timeout: int = 60,
        optional_args: dict[str, Any] | None = None,
    ) -> None:
        self.hostname = hostname
        self.username = username
        self.password = password
        self.timeout = timeout
        self.optional_args = dict(optional_args or {})
        self.transport: Transport | None = self.optional_args.pop("transport", None)
        self.files = DeviceFiles(self.optional_args.get("pathspace"))
        self.lldp_socket: str | None = self.optional_args.get("lldp_socket")
        self.candidate: str | None = None
        self.merge = False

    # -- session ---------------------------------------------------------------------------
    def open(self) -> None:
        if self.transport is None:
            self.transport = SSHTransport(
                self.hostname,
                self.username,
                self.password,
                port=int(self.optional_args.get("port", 22)),
                timeout=float(self.timeout),
                key_file=self.optional_args.get("key_file"),
                known_hosts=self.optional_args.get("known_hosts"),
            )
        if "pathspace" not in self.optional_args or self.lldp_socket is None:
            ns, sock = ([*self._run('printf "%s\\n%s\\n" "${FRR_NS:-}" "${GF_LLDP_SOCKET:-}"').split("\n"), "", ""])[:2]
            if "pathspace" not in self.optional_args:
                self.files = DeviceFiles(ns or None)
            self.lldp_socket = self.lldp_socket or sock or None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
            self.transport = None

    def is_alive(self) -> dict[str, bool]:
        return {"is_alive": self.transport is not None}

    def _run(self, command: str, stdin: str | None = None) -> str:
        assert self.transport is not None, "call open() first"
        return check(self.transport, command, stdin)

    def _vtysh(self, command: str) -> str:
        return self._run(f"{self.files.vtysh} -c '{command}'")

    # -- configuration ---------------------------------------------------------------------
    def load_replace_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self.candidate, self.merge = self._read(filename, config, ReplaceConfigException), False

    def load_merge_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self.candidate, self.merge = self._read(filename, config, MergeConfigException), True

    @staticmethod
    def _read(filename: str | None, config: str | None, error: type[Exception]) -> str:
        if config is None and filename is None:
            raise error("give a filename or a config")
        if config is None:
            assert filename is not None
            with open(filename) as fh:
                config = fh.read()
        return config

    def _upload(self) -> tuple[str, str | None]:
        if self.candidate is None:
            raise CommitError("no candidate loaded")
        frr, nft = split_candidate(self.candidate)
        put_file(self.transport, self.files.path("candidate.conf"), frr)  # type: ignore[arg-type]
        if nft is None:
            return self.files.path("candidate.conf"), None
        put_file(self.transport, self.files.path("candidate.nft"), nft)  # type: ignore[arg-type]
        return self.files.path("candidate.conf"), self.files.path("candidate.nft")

    def compare_config(self) -> str:
        """What a commit would change: FRR lines to delete/add, then the nftables diff. Empty: nothing."""
        if self.candidate is None:
            return ""
        conf, nft = self._upload()
        if self.merge:
            return "\n".join(f"+ {line}" for line in split_candidate(self.candidate)[0].splitlines() if line.strip())
        assert self.transport is not None
        if self.transport.run(self.files.unchanged_check(conf)).rc == 0:
            parts = [""]  # the fast path: no frr-reload (about a second of CPU per switch)
        else:
            parts = [frr_getters.reload_diff(self._run(f"{self.files.reload} --test {conf}"))]
        if nft is not None:
            parts.append(self._nft_diff(split_candidate(self.candidate)[1] or ""))
        return "\n".join(p for p in parts if p)

    def _nft_diff(self, candidate: str) -> str:
        applied = self._run(f"cat {self.files.path('applied.nft')} 2>/dev/null || true")
        diff = list(
            difflib.unified_diff(
                applied.splitlines(), candidate.splitlines(), "nftables running", "nftables candidate", lineterm="", n=1
            )
        )
        recorded = self._run(f"cat {self.files.path('applied.listing')} 2>/dev/null || true")
        live = self._run(f"nft -s list table {NFT_TABLE} 2>/dev/null || true")
        if recorded != live:
            diff += ["# nftables: the running table differs from what gpufabric applied:"]
            diff += list(
                difflib.unified_diff(recorded.splitlines(), live.splitlines(), "applied", "running", lineterm="", n=1)
            )
        return "\n".join(diff)

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if self.has_pending_commit():
            raise CommitError("a commit is pending confirmation: confirm or roll it back first")
        conf, nft = self._upload()
        self._run("sh -s", self.files.snapshot_script())
        put_file(self.transport, self.files.path("revert.sh"), self.files.revert_script())  # type: ignore[arg-type]
        try:
            self._run("sh -s", self.files.apply_script(conf, nft, merge=self.merge))
        except CommandFailedError as exc:
            self._run(f"sh {self.files.path('revert.sh')}")
            raise CommitError(f"{self.hostname}: the candidate did not apply and was reverted: {exc}") from None
        if revert_in:
            self._run("sh -s", self.files.arm_timer_script(revert_in))
        self.candidate = None

    def has_pending_commit(self) -> bool:
        return self.transport is not None and self.transport.run(self.files.pending_check).rc == 0

    def confirm_commit(self) -> None:
        if not self.has_pending_commit():
            raise CommitError("no commit is pending confirmation")
        self._run("sh -s", self.files.disarm_script)

    def discard_config(self) -> None:
        self.candidate = None
        if self.transport is not None:
            self._run(f"rm -f {self.files.path('candidate.conf')} {self.files.path('candidate.nft')}")

    def rollback(self) -> None:
        """Back to the configuration before the last commit (and stop its revert timer)."""
        self._run("sh -s", self.files.disarm_script)
        self._run(f"sh {self.files.path('revert.sh')}")

    # -- getters -------------------------------------------------------------------------------
    def get_config(
        self, retrieve: str = "all", full: bool = False, sanitized: bool = False, format: str = "text"
    ) -> dict[str, str]:
        result = {"running": "", "startup": "", "candidate": ""}
        if retrieve in ("all", "running"):
            running = frr_getters.strip_header(self._vtysh("show running-config"))
            nft = self._run(f"nft -s list table {NFT_TABLE} 2>/dev/null || true")
            result["running"] = join_candidate(running, nft) if nft.strip() else running
        if retrieve in ("all", "startup"):
            saved = self._run(f"cat {self.files.confdir}/frr.conf")
            nft = self._run(f"cat {self.files.path('applied.nft')} 2>/dev/null || true")
            result["startup"] = join_candidate(saved, nft) if nft.strip() else saved
        if retrieve in ("all", "candidate"):
            result["candidate"] = self.candidate or ""
        return result

    def get_facts(self) -> dict[str, Any]:
        return frr_getters.facts(
            self._run("hostname; hostname -f 2>/dev/null || hostname; cat /proc/uptime"),
            self._vtysh("show version"),
            self._run("ip -j link show"),
        )

    def get_interfaces(self) -> dict[str, dict[str, Any]]:
        return frr_getters.interfaces(self._run("ip -j link show"), self._vtysh("show interface json"))

    def get_interfaces_ip(self) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
        return frr_getters.interfaces_ip(self._run("ip -j address show"))

    def get_bgp_neighbors(self) -> dict[str, Any]:
        assert self.transport is not None
        probe = self.transport.run(f"{self.files.vtysh} -c 'show bgp vrf all summary json'")
        if probe.rc != 0 and "bgpd is not running" in probe.stdout + probe.stderr:
            return {"global": {"router_id": "", "peers": {}}}  # no BGP daemon: no session is up
        if probe.rc != 0:
            raise CommandFailedError("show bgp vrf all summary json", probe)
        return frr_getters.bgp_neighbors(self._vtysh("show bgp vrf all neighbors json"), probe.stdout)

    def get_lldp_neighbors(self) -> dict[str, list[dict[str, str]]]:
        sock = f"-u {self.lldp_socket} " if self.lldp_socket else ""
        return frr_getters.lldp_neighbors(self._run(f"lldpcli {sock}show neighbors -f json"))

    def cli(self, commands: list[str], encoding: str = "text") -> dict[str, str]:
        return {command: self._vtysh(command) for command in commands}

    def get_route_to(self, destination: str = "", protocol: str = "", longer: bool = False) -> dict[str, Any]:
        return frr_getters.routes(self._vtysh(f"show ip route {destination} json".replace("  ", " ")))


__all__ = ["NFT_MARKER", "FrrDriver"]
