"""Management services every switch gets: users, NTP, syslog, DNS, SNMP, gNMI, the management VRF."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

from gpufabric.config.secrets import PasswordHasher, token
from gpufabric.plan.model import Device, Plan, ip
from gpufabric.platforms import platform


@dataclass(slots=True)
class User:
    name: str
    hashed: str


@dataclass(slots=True)
class Mgmt:
    vrf: str | None
    address: str | None  # "a.b.c.d/len" on the management port
    gateway: str | None
    ntp: list[str]
    syslog: list[str]
    dns: list[str]
    domain: str
    timezone: str  # IANA name
    zone_abbrev: str  # for platforms that take an abbreviation and an offset (NX-OS): standard time's
    zone_offset: tuple[int, int]  # hours, minutes east of UTC, standard time
    snmp_community: str | None  # a secret token, resolved only by push
    snmp_location: str
    gnmi: bool
    users: list[User]
    allow: list[str]  # prefixes allowed to reach SSH, SNMP and gNMI


@cache  # one zone per fabric, asked for by every switch
def standard_time(zone: str) -> tuple[str, tuple[int, int]]:
    """The zone's abbreviation and UTC offset in January (standard time north of the equator)."""
    moment = datetime(2025, 1, 15, tzinfo=ZoneInfo(zone))
    delta = moment.utcoffset() or timedelta(0)
    minutes = int(delta.total_seconds()) // 60
    name = moment.tzname() or "UTC"
    if not name.isalpha():  # zones named by offset ("+03") get a name NX-OS takes
        name = "UTC"
    return name[:8], (int(minutes / 60), abs(minutes) % 60)


def management(plan: Plan, device: Device, hasher: PasswordHasher) -> Mgmt:
    intent = plan.intent
    m = intent.management
    oob = intent.planes.oob
    address = f"{ip(device.mgmt_ip)}/{oob.subnet.prefixlen}" if oob and device.mgmt_ip is not None else None
    gateway = str(oob.gateway_address) if oob is not None else None
    cred = intent.credentials.switches
    spec = platform(device.platform)
    users = []
    if cred.password is not None:
        hashed = hasher.hash(
            cred.password,
            cred.username,
            spec.facts.hash_algorithm,
            "credentials.switches.password",
            spec.facts.hash_rounds,
        )
        users.append(User(cred.username, hashed))
    abbrev, offset = standard_time(m.timezone)
    allow = [str(oob.subnet)] if oob is not None else []
    business = intent.planes.business
    if business is not None and business.border is not None:
        allow += [str(p) for p in business.border.management_prefixes]
    return Mgmt(
        vrf=spec.facts.mgmt_vrf,
        address=address,
        gateway=gateway,
        ntp=[str(a) for a in m.ntp_servers],
        syslog=[str(a) for a in m.syslog_servers],
        dns=[str(a) for a in m.dns_servers],
        domain=m.domain,
        timezone=m.timezone,
        zone_abbrev=abbrev,
        zone_offset=offset,
        snmp_community=token(m.snmp.community) if m.snmp is not None else None,
        snmp_location=m.snmp.location if m.snmp is not None else "",
        gnmi=m.gnmi,
        users=users,
        allow=allow,
    )
