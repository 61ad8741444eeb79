"""What the `frr` and `cumulus` drivers share: an SSH session to a Linux switch, and getters that read
FRR (vtysh JSON), iproute2 (`ip -j`) and lldpd (`lldpcli -f json`).

Both platforms are Linux running FRR and lldpd, so the operational state is read the same way on
both; the lab proves these readers against real daemons. Only how configuration is changed differs
(frr-reload on FRR, NVUE transactions on Cumulus): subclasses provide that.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from napalm.base import NetworkDriver
from napalm.base.exceptions import MergeConfigException, ReplaceConfigException

from gpufabric.drivers import frr_getters
from gpufabric.drivers.answers import PARSE_FAILURES, bounds_of, located
from gpufabric.drivers.transport import CommandFailedError, Output, SSHTransport, Transport, check
from gpufabric.hidden import reveal

NO_BGP = {"global": {"router_id": "", "peers": {}}}
T = TypeVar("T")


def one_line(command: str) -> str:
    """A device command from a caller: one printable line, or refused (a newline would be a second
    command to vtysh, and to a shell)."""
    if not command.isprintable():
        raise ValueError(f"command {command[:40]!r} holds a newline or control character")
    return command


_PORT = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")  # a Linux interface name: nothing a shell would read
LINK_STATS = "ip -s -s -j link show"
# How long one getter's reading of LINK_STATS may serve the other: long enough for a scrape or a
# check that asks for both, back to back; too short for a poll loop to read old counters.
LINK_STATS_SHARED_FOR = 2.0


_PUSH_ID = re.compile(r"gf-(\d{8}T\d{6}Z)-[0-9a-f]{6}")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class PushMark:
    """The push a commit belongs to, as the driver writes it on the switch: `push-id start controller`.
    Only values that need no quoting go there (anything else is written as `unknown`)."""

    push_id: str = ""
    controller: str = ""

    @classmethod
    def from_args(cls, optional_args: dict[str, Any]) -> PushMark:
        return cls(str(optional_args.get("push_id") or ""), str(optional_args.get("push_controller") or ""))

    @property
    def line(self) -> str:
        m = _PUSH_ID.fullmatch(self.push_id)
        if not m:
            return ""
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.strptime(m.group(1), "%Y%m%dT%H%M%SZ"))
        controller = self.controller if _NAME.fullmatch(self.controller) else "unknown"
        return f"{self.push_id} {started} {controller}"


def parse_push_line(line: str) -> dict[str, str]:
    """A marker's push line back as {"push_id", "started", "controller"}; a pending commit whose marker
    names no push (made before push ids, or by hand) reads as push `unknown`."""
    words = line.split()
    if len(words) != 3 or not _PUSH_ID.fullmatch(words[0]):
        return {"push_id": "unknown", "started": "", "controller": ""}
    return dict(zip(("push_id", "started", "controller"), words, strict=True))


class LinuxSwitchDriver(NetworkDriver):
    platform = "linux-switch"

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
        self.lldp_socket: str | None = self.optional_args.get("lldp_socket")
        self.candidate: str | None = None
        self.merge = False
        self._link_stats_kept: tuple[str, float, str] | None = None  # (getter, when, output)
        self._setup()

    def _setup(self) -> None:
        """A platform's own settings, read from optional_args once they are known."""

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
                private_key=reveal(self.optional_args.get("private_key")),
                known_hosts=self.optional_args.get("known_hosts"),
                accept_new=bool(self.optional_args.get("accept_new", False)),
                bounds=bounds_of(self.optional_args),
                jump=tuple(self.optional_args.get("jump", ())),
            )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
            self.transport = None

    def is_alive(self) -> dict[str, bool]:
        return {"is_alive": self.transport is not None}

    @property
    def concurrent_reads(self) -> bool:
        """Whether its getters may run beside one another and beside a candidate being loaded: each command is
        a channel of its own on one SSH session (a replayed recording answers in order, one at a time)."""
        return bool(getattr(self.transport, "concurrent", False))

    def _run(self, command: str, stdin: str | None = None) -> str:
        assert self.transport is not None, "call open() first"
        return check(self.transport, command, stdin)

    def _try(self, command: str, stdin: str | None = None) -> Output:
        assert self.transport is not None, "call open() first"
        return self.transport.run(command, stdin)

    def _parsed(self, command: str, parse: Callable[..., T], *answers: str) -> T:
        """`parse(*answers)`, or the named failure of this switch's answer to `command` when the answer
        is not of the shape the parser reads (a list for an object, a key missing, NaN, ...)."""
        try:
            return parse(*answers)
        except PARSE_FAILURES as exc:
            raise located(self.hostname, command, exc) from None

    def _vtysh_command(self, command: str) -> tuple[str, str | None]:
        """The shell command running one vtysh command, and what to feed its stdin."""
        return f"vtysh -c {shlex.quote(command)}", None

    def _vtysh(self, command: str) -> str:
        shell, stdin = self._vtysh_command(one_line(command))
        out = self._try(shell, stdin)
        if out.rc != 0:
            raise CommandFailedError(f"vtysh -c '{command}'", out)
        return out.stdout

    def _lldpcli(self, args: str) -> str:
        sock = f"-u {shlex.quote(self.lldp_socket)} " if self.lldp_socket else ""
        return self._run(f"lldpcli {sock}{args}")

    # -- candidates --------------------------------------------------------------------------
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
            from gpufabric.verify.facts import read_rendered  # only for a caller that names a file

            config = read_rendered(filename)
        return config

    # -- getters -------------------------------------------------------------------------------
    def _facts_system(self) -> str:
        return self._run("hostname; hostname -f 2>/dev/null || hostname; cat /proc/uptime")

    def get_facts(self) -> dict[str, Any]:
        answers = (self._facts_system(), self._vtysh("show version"), self._run(frr_getters.LINKS))
        return self._parsed(f"{frr_getters.LINKS} (facts)", frr_getters.facts, *answers)

    def get_os_version(self) -> str:
        """get_facts' `os_version` alone, in one command (validate's release check reads nothing else)."""
        return frr_getters.os_version(self._vtysh("show version"))

    def get_interfaces(self) -> dict[str, dict[str, Any]]:
        answers = (self._run(frr_getters.LINKS), self._vtysh(frr_getters.FRR_INTERFACES))
        return self._parsed(f"{frr_getters.LINKS}; {frr_getters.FRR_INTERFACES}", frr_getters.interfaces, *answers)

    def get_port_states(self) -> dict[str, dict[str, Any]]:
        """get_interfaces' `is_up`, `is_enabled` and `mtu` of every port, from iproute2 alone (one command, not
        two): what a push's or a restart's health poll reads, several times a switch, and validate. The
        description and speed are FRR's, and left out."""
        return self._parsed(frr_getters.LINKS, frr_getters.port_states, self._run(frr_getters.LINKS))

    def _link_stats(self, getter: str) -> str:
        """LINK_STATS for one getter. The counters and the carrier changes come from the same command,
        and a scrape or a check asks for both: the second of the pair is answered from the first's
        reading, once, if it is recent, so both describe the same moment at the cost of one command."""
        kept, self._link_stats_kept = self._link_stats_kept, None
        if kept is not None and kept[0] != getter and time.monotonic() - kept[1] < LINK_STATS_SHARED_FOR:
            return kept[2]
        out = self._run(LINK_STATS)
        self._link_stats_kept = (getter, time.monotonic(), out)
        return out

    def get_interfaces_counters(self) -> dict[str, dict[str, int]]:
        return self._parsed(LINK_STATS, frr_getters.interfaces_counters, self._link_stats("counters"))[0]

    def get_carrier_changes(self) -> dict[str, int]:
        """gpufabric's getter beside NAPALM's: per port, how often its link went down or up."""
        return self._parsed(LINK_STATS, frr_getters.interfaces_counters, self._link_stats("carrier"))[1]

    def get_ethtool_stats(self, ports: list[str]) -> dict[str, str]:
        """`ethtool -S` per port, as text (PFC, ECN and buffer counters where the ASIC driver has them);
        nothing where ethtool or the counters are absent."""
        names = [p for p in ports if _PORT.fullmatch(p)]
        if not names:
            return {}
        script = f"command -v ethtool >/dev/null || exit 0; for p in {' '.join(names)}; do " + (
            'echo "@@port $p"; ethtool -S "$p" 2>/dev/null; done'
        )
        found: dict[str, list[str]] = {}
        current: list[str] | None = None
        for line in self._try(script).stdout.splitlines():
            if line.startswith("@@port "):
                current = found.setdefault(line[7:], [])
            elif current is not None:
                current.append(line)
        return {port: "\n".join(lines) for port, lines in found.items() if lines}

    def get_link_quality_text(self, ports: list[str]) -> dict[str, dict[str, str]]:
        """Per port, ethtool's module diagnostics (`-m`), FEC statistics (`-I --show-fec`) and the link's
        speed in Mb/s, as text by section (`module`, `fec`, `speed`); a section the port cannot give is
        absent. Reading a module's memory needs CAP_NET_ADMIN: a login that is not root tries sudo -n."""
        names = [p for p in ports if _PORT.fullmatch(p)]
        if not names:
            return {}
        each = (
            'echo "@@port $p"; echo @@module; ethtool -m "$p" 2>/dev/null || sudo -n ethtool -m "$p" 2>/dev/null; '
            'echo @@fec; ethtool -I --show-fec "$p" 2>/dev/null; '
            'echo @@speed; cat "/sys/class/net/$p/speed" 2>/dev/null'
        )
        script = f"command -v ethtool >/dev/null || exit 0; for p in {' '.join(names)}; do {each}; done"
        found: dict[str, dict[str, list[str]]] = {}
        port: dict[str, list[str]] | None = None
        current: list[str] | None = None
        for line in self._try(script).stdout.splitlines():
            if line.startswith("@@port "):
                port, current = found.setdefault(line[7:], {}), None
            elif port is not None and line in ("@@module", "@@fec", "@@speed"):
                current = port.setdefault(line[2:], [])
            elif current is not None:
                current.append(line)
        return {p: {k: "\n".join(v) for k, v in sections.items() if v} for p, sections in found.items()}

    def get_interfaces_ip(self) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
        return self._parsed(frr_getters.ADDRESSES, frr_getters.interfaces_ip, self._run(frr_getters.ADDRESSES))

    def _bgp_answer(self, command: str) -> str | None:
        """vtysh's answer to a BGP command; None when no BGP daemon runs (then no session is up)."""
        shell, stdin = self._vtysh_command(command)
        probe = self._try(shell, stdin)
        if probe.rc != 0 and "bgpd is not running" in probe.stdout + probe.stderr:
            return None
        if probe.rc != 0:
            raise CommandFailedError(command, probe)
        return probe.stdout

    def get_bgp_neighbors(self) -> dict[str, Any]:
        summary = self._bgp_answer(frr_getters.BGP_SUMMARY)
        if summary is None:
            return {k: dict(v) for k, v in NO_BGP.items()}
        neighbors = self._vtysh(frr_getters.BGP_NEIGHBORS)
        return self._parsed(frr_getters.BGP_NEIGHBORS, frr_getters.bgp_neighbors, neighbors, summary)

    def get_bgp_sessions(self) -> dict[str, Any]:
        """get_bgp_neighbors' peers from one command, not two: each VRF's router id (the summary's) is left
        empty. What a push's or a restart's health poll reads: which sessions are up, with which ASN."""
        neighbors = self._bgp_answer(frr_getters.BGP_NEIGHBORS)
        if neighbors is None:
            return {k: dict(v) for k, v in NO_BGP.items()}
        return self._parsed(frr_getters.BGP_NEIGHBORS, lambda text: frr_getters.bgp_neighbors(text, None), neighbors)

    def get_lldp_neighbors(self) -> dict[str, list[dict[str, str]]]:
        return self._parsed(frr_getters.LLDP, frr_getters.lldp_neighbors, self._lldpcli("show neighbors -f json"))

    def cli(self, commands: list[str], encoding: str = "text") -> dict[str, str]:
        return {command: self._vtysh(command) for command in commands}

    def get_route_to(self, destination: str = "", protocol: str = "", longer: bool = False) -> dict[str, Any]:
        if destination:
            try:
                destination = str(ipaddress.ip_network(destination, strict=False))
            except ValueError:
                raise ValueError(f"get_route_to: {destination!r} is not an IPv4 or IPv6 prefix") from None
        command = f"show ip route {destination} json".replace("  ", " ")
        return self._parsed(command, frr_getters.routes, self._vtysh(command))
