"""Management services every switch gets: users, NTP, syslog, DNS, SNMP, gNMI, the management VRF."""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.config.secrets import PasswordHasher, token
from gpufabric.plan.model import Device, Plan, ip

# Management VRF per platform; FRR switches run on Linux hosts (and in the lab) without one.
MGMT_VRF = {"cumulus": "mgmt", "eos": "MGMT", "nxos": "management", "frr": None}
# crypt(3) flavour each platform accepts for a pre-hashed local password.
HASH_ALGORITHM = {"cumulus": "sha512", "eos": "sha512", "nxos": "sha256", "frr": "sha512"}


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
    timezone: str
    snmp_community: str | None  # a secret token, resolved only by push
    snmp_location: str
    gnmi: bool
    users: list[User]
    allow: list[str]  # prefixes allowed to reach SSH, SNMP and gNMI


def management(plan: Plan, device: Device, hasher: PasswordHasher) -> Mgmt:
    intent = plan.intent
    m = intent.management
    oob = intent.planes.oob
    address = f"{ip(device.mgmt_ip)}/{oob.subnet.prefixlen}" if oob and device.mgmt_ip is not None else None
    gateway = str(oob.gateway_address) if oob is not None else None
    cred = intent.credentials.switches
    users = []
    if cred.password is not None:
        hashed = hasher.hash(
            cred.password, cred.username, HASH_ALGORITHM[device.platform], "credentials.switches.password"
        )
        users.append(User(cred.username, hashed))
    allow = [str(oob.subnet)] if oob is not None else []
    business = intent.planes.business
    if business is not None and business.border is not None:
        allow += [str(p) for p in business.border.management_prefixes]
    return Mgmt(
        vrf=MGMT_VRF[device.platform],
        address=address,
        gateway=gateway,
        ntp=[str(a) for a in m.ntp_servers],
        syslog=[str(a) for a in m.syslog_servers],
        dns=[str(a) for a in m.dns_servers],
        domain=m.domain,
        timezone=m.timezone,
        snmp_community=token(m.snmp.community) if m.snmp is not None else None,
        snmp_location=m.snmp.location if m.snmp is not None else "",
        gnmi=m.gnmi,
        users=users,
        allow=allow,
    )
