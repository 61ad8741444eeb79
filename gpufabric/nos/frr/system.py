"""The host side of a Linux/FRR switch: users, time, NTP, syslog, DNS, SNMP, port MTU and state.

FRR holds routing (addresses included, through zebra); these settings live in the Linux host's
own files. Push carries them in the candidate after a SYSTEM_MARKER line (the rendered
`NAME.system.yaml`) and an INTERFACES_MARKER line (`NAME.interfaces`), and the driver turns them
into one shell script built here, every value quoted for the shell. Before a commit the managed
files are saved, so the revert timer and `rollback()` restore them with the routing config.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

SYSTEM_MARKER = "! gpufabric: system"
INTERFACES_MARKER = "! gpufabric: interfaces"

CHRONY = "/etc/chrony/sources.d/gpufabric.sources"
RSYSLOG = "/etc/rsyslog.d/90-gpufabric.conf"
SNMPD = "/etc/snmp/snmpd.conf.d/gpufabric.conf"
RESOLV = "/etc/resolv.conf"
INTERFACES = "/etc/network/interfaces.d/gpufabric"
SYSCTL = "/etc/sysctl.d/90-gpufabric.conf"  # read again at boot by systemd-sysctl
# Every file the system part may change; saved before a commit and put back by a revert.
MANAGED = (
    "/etc/hostname",
    "/etc/timezone",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/shadow",
    "/etc/group",
    "/etc/gshadow",
    CHRONY,
    RSYSLOG,
    SNMPD,
    RESOLV,
    INTERFACES,
    SYSCTL,
)
# The kernel settings the system file may carry: each is written to its /proc/sys file at once and to
# SYSCTL for the next boot. A name outside this list is refused, so the file cannot reach any other path.
SYSCTLS = frozenset({"net.ipv4.fib_multipath_hash_policy"})
_IFACE = re.compile(r"^iface\s+(\S+)")
_MTU = re.compile(r"^\s+mtu\s+(\d+)$")


@dataclass
class SystemSettings:
    hostname: str
    timezone: str
    users: list[tuple[str, str]]  # (name, crypt(3) hash)
    ntp: list[str]
    syslog: list[str]
    dns: list[str]
    domain: str
    snmp_community: str | None
    snmp_location: str
    allow: list[str]
    port_mtu: dict[str, int] = field(default_factory=dict)  # data ports only; management is left alone
    interfaces_file: str = ""
    sysctl: dict[str, int] = field(default_factory=dict)


def parse(system_yaml: str, interfaces: str = "") -> SystemSettings:
    doc: dict[str, Any] = yaml.safe_load(system_yaml) or {}
    return SystemSettings(
        hostname=str(doc["hostname"]),
        timezone=str(doc["timezone"]),
        users=[(str(u["name"]), str(u["hashed_password"])) for u in doc.get("users") or []],
        ntp=[str(s) for s in doc.get("ntp_servers") or []],
        syslog=[str(s) for s in doc.get("syslog_servers") or []],
        dns=[str(s) for s in (doc.get("dns") or {}).get("servers") or []],
        domain=str((doc.get("dns") or {}).get("domain") or ""),
        snmp_community=(doc.get("snmp") or {}).get("community"),
        snmp_location=str((doc.get("snmp") or {}).get("location") or ""),
        allow=[str(p) for p in (doc.get("management") or {}).get("allow") or []],
        port_mtu=_port_mtus(interfaces, str((doc.get("management") or {}).get("port") or "")),
        interfaces_file=interfaces,
        sysctl=_sysctl(doc.get("sysctl") or {}),
    )


def _sysctl(found: dict[str, Any]) -> dict[str, int]:
    unknown = sorted(set(found) - SYSCTLS)
    if unknown:
        raise ValueError(f"system file: sysctl {', '.join(unknown)} is not one gpufabric sets")
    return {str(k): int(v) for k, v in found.items()}


def _port_mtus(interfaces: str, mgmt_port: str) -> dict[str, int]:
    mtus: dict[str, int] = {}
    current = None
    for line in interfaces.splitlines():
        if m := _IFACE.match(line):
            current = m.group(1)
        elif (m := _MTU.match(line)) and current and current not in ("lo", mgmt_port) and "." not in current:
            # a carried plane's subinterface (`swp1.20`) is ifupdown2's to make (`ifreload -a`), not this script's
            mtus[current] = int(m.group(1))
    return mtus


def _write(path: str, text: str) -> str:
    directory = path.rsplit("/", 1)[0]
    return f"mkdir -p {shlex.quote(directory)}\nprintf '%s' {shlex.quote(text)} > {shlex.quote(path)}"


def apply_script(s: SystemSettings) -> str:
    """POSIX shell that makes the switch's host settings those of `s` (idempotent; `set -e`)."""
    q = shlex.quote
    lines = [
        "set -e",
        _write("/etc/hostname", s.hostname + "\n"),
        f"hostname {q(s.hostname)}",
        f"ln -sfn {q('/usr/share/zoneinfo/' + s.timezone)} /etc/localtime",
        _write("/etc/timezone", s.timezone + "\n"),
    ]
    for name, hashed in s.users:
        lines.append(f"getent passwd {q(name)} >/dev/null || useradd -m -s /bin/bash {q(name)}")
        lines.append(f"usermod -p {q(hashed)} {q(name)}")
    lines.append(_write(CHRONY, "".join(f"server {n} iburst\n" for n in s.ntp)))
    lines.append(_write(RSYSLOG, "".join(f"*.* @{h}:514\n" for h in s.syslog)))
    resolv = (f"search {s.domain}\n" if s.domain else "") + "".join(f"nameserver {n}\n" for n in s.dns)
    lines.append(_write(RESOLV, resolv))
    snmp = ""
    if s.snmp_community is not None:
        snmp = "".join(f"rocommunity {s.snmp_community} {p}\n" for p in s.allow)
        snmp += f"sysLocation {s.snmp_location}\n" if s.snmp_location else ""
    lines.append(_write(SNMPD, snmp))
    lines.append(_write(INTERFACES, s.interfaces_file))
    lines.append(_write(SYSCTL, "".join(f"{k} = {v}\n" for k, v in sorted(s.sysctl.items()))))
    lines += [f"echo {v} > /proc/sys/{k.replace('.', '/')}" for k, v in sorted(s.sysctl.items())]
    lines += [
        f"if ip link show dev {q(port)} >/dev/null 2>&1; then ip link set dev {q(port)} mtu {mtu} up; fi"
        for port, mtu in sorted(s.port_mtu.items())
    ]
    # Services pick their files up where they run; a switch without one simply has the file.
    lines += [
        "command -v chronyc >/dev/null 2>&1 && chronyc reload sources >/dev/null 2>&1 || true",
        "command -v systemctl >/dev/null 2>&1 && systemctl try-reload-or-restart rsyslog snmpd >/dev/null 2>&1 || true",
    ]
    return "\n".join(lines) + "\n"


def snapshot_script(archive: str, absent: str, host: str) -> str:
    """Save the managed files that exist into `archive`, list the ones that do not in `absent`, and the
    running host name in `host` (what the switch answers to, which /etc/hostname may not say yet)."""
    files = " ".join(MANAGED)
    return (
        f"hostname > {host}\n"
        f": > {absent}\n"
        f'present=\'\'\nfor f in {files}; do if [ -e "$f" ] || [ -L "$f" ]; then present="$present $f"; '
        f'else echo "$f" >> {absent}; fi; done\n'
        f"tar -cpf {archive} -P $present\n"
        # The kernel's running values too: restoring SYSCTL alone would leave them as the push set them.
        + "".join(
            f"rm -f {archive}.{k}; if [ -r {_proc(k)} ]; then cat {_proc(k)} > {archive}.{k}; fi\n"
            for k in sorted(SYSCTLS)
        )
    )


def restore_script(archive: str, absent: str, host: str) -> str:
    """Put the saved files back, remove the ones that did not exist, and take the saved host name."""
    return (
        f"if [ -f {archive} ]; then tar -xpf {archive} -P; fi\n"
        f'if [ -f {absent} ]; then while read -r f; do rm -f "$f"; done < {absent}; fi\n'
        f'if [ -s {host} ]; then hostname "$(cat {host})"; fi\n'
        + "".join(
            f"if [ -s {archive}.{k} ]; then cat {archive}.{k} > {_proc(k)} || true; fi\n" for k in sorted(SYSCTLS)
        )
    )


def _proc(name: str) -> str:
    """The /proc/sys file of a kernel setting (names are from SYSCTLS: no shell metacharacters)."""
    return "/proc/sys/" + name.replace(".", "/")


_SECRET_LINE = re.compile(r"(?m)^(\s*(?:-\s+)?(?:community|hashed_password):\s*)(?!null\s*$)(\S.*)$")


def masked(text: str) -> str:
    """The system section with SNMP communities and password hashes hidden, for diffs and logs."""
    return _SECRET_LINE.sub(r"\1<hidden>", text)


def secret_values(text: str) -> str:
    """What `masked` hides, one value a line: kept root-only on the switch, so a changed secret shows
    in a diff as changed without its value ever leaving the switch or the controller's memory."""
    return "".join(m.group(2) + "\n" for m in _SECRET_LINE.finditer(text))
