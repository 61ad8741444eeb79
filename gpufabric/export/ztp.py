"""Day 0: what brings an empty switch from power-on to its planned configuration (`gpufabric export ztp`).

Written into one folder:
- `dhcp/kea-dhcp4.json` (ISC Kea) and `dhcp/dnsmasq.conf` (dnsmasq): either answers the OOB plane. Each
  switch gets its planned management address, its name, and the DHCP options its OS's ZTP agent reads to
  find its provisioning file, and nothing is given to a client the plan does not know.
- `http/`: the provisioning server's document root, every switch's files in its OS's ZTP form (the
  platform's `ztp` method) named after the switch.
- `console/`: each OOB switch's first configuration, typed or copied on its console before anything else
  (the platform's `console_bootstrap`): the OOB switches relay DHCP for every other switch, so none of
  them can be provisioned through itself. It is the minimal part of the switch's rendered configuration
  (name, management address, default route, SSH, the users' hashed passwords) and the DHCP relay towards
  the provisioning server that the other switches' identities need (option 82).

A switch is known by what the plan knows (docs/ztp.md):
- the OOB switch port its management port is cabled to, as a DHCP relay agent reports it in option 82:
  the circuit-id is the port's name as the plan writes it (`swp5`), and where the OOB plane has more than
  one management switch the remote-id must be that switch's name (`oob-mgmt2`);
- or a serial the intent records (`planes.oob.ztp.serials`), which the switch sends as its DHCP client
  identifier (option 61), with or without a leading type byte 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.config.secrets import PasswordHasher, ReferenceHasher, declared, resolve_tokens
from gpufabric.errors import GpufabricError
from gpufabric.intent.errors import Problem
from gpufabric.intent.model import OobPlane
from gpufabric.outputs import json_dumps
from gpufabric.plan.model import Plan, ip
from gpufabric.platforms import platform
from gpufabric.platforms.spec import Bootstrap, NoZtpFormError, ZtpForm

KEA = "dhcp/kea-dhcp4.json"
DNSMASQ = "dhcp/dnsmasq.conf"
HTTP = "http"
CONSOLE = "console"
# What a console file may never hold: a secret token of the rendered files, resolved or not (the password is
# only ever there as its hash).
_TOKEN = re.compile(r"@(secret|hash):")
LEASE_SECONDS = 86_400
CLASS_PREFIX = "gpufabric-"
# What reaches a Kea expression or a dnsmasq line between quotes: the plan's port and switch names and the
# intent's serials are all inside this alphabet (their own patterns are narrower); checked again here.
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,63}$")
_AT = ("planes", "oob", "ztp")


class ZtpError(ValueError, GpufabricError):
    """The plan cannot be given zero-touch provisioning; `problems` locate the causes in the intent."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


@dataclass(frozen=True)
class Identity:
    """How the DHCP server knows one switch, and what it gives it."""

    device: str
    address: str
    circuit_id: str | None = None  # the OOB port its management port is cabled to
    remote_id: str | None = None  # that port's switch, where the OOB plane has several
    serial: str | None = None

    @property
    def tag(self) -> str:
        return f"{CLASS_PREFIX}{self.device}"


@dataclass
class ZtpExport:
    """Relative path -> text, and what was left out with the reason."""

    files: dict[str, str] = field(default_factory=dict)
    provisioned: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    consoled: list[str] = field(default_factory=list)  # the OOB switches given a console bootstrap
    secret_files: set[str] = field(default_factory=set)  # files that hold a resolved secret (written 0600)


def _oob(plan: Plan) -> OobPlane:
    oob = plan.intent.planes.oob
    if oob is None:
        raise ZtpError(
            "zero-touch provisioning runs over the OOB plane",
            [Problem(("planes", "oob"), "the intent has no OOB plane", "add planes.oob (docs/ztp.md)")],
        )
    return oob


def server(plan: Plan) -> IPv4Address:
    """The provisioning server's address: the intent's, or the OOB gateway."""
    oob = _oob(plan)
    return oob.ztp.server if oob.ztp.server is not None else oob.gateway_address


def base_url(plan: Plan) -> str:
    return f"http://{server(plan)}:{_oob(plan).ztp.port}/"


def _check(plan: Plan) -> None:
    oob = _oob(plan)
    names = {d.name for d in plan.devices()}
    problems = [
        Problem((*_AT, "serials", name), f"no switch named {name} in the plan", "name a planned switch")
        for name in oob.ztp.serials
        if name not in names
    ]
    seen: dict[str, str] = {}
    for name, serial in oob.ztp.serials.items():
        if serial in seen:
            problems.append(
                Problem((*_AT, "serials", name), f"serial {serial} is {seen[serial]}'s too", "give each its own")
            )
        seen.setdefault(serial, name)
    problems += _serials_within_others(oob.ztp.serials)
    problems += _server_problems(plan, oob)
    if problems:
        raise ZtpError("the intent's zero-touch provisioning settings do not fit the plan", problems)


def _serials_within_others(serials: Mapping[str, str]) -> list[Problem]:
    """dnsmasq matches a quoted `dhcp-match` value anywhere in the option the client sends ("If the value is a
    string, substring matching is used": dnsmasq(8), --dhcp-match), so a switch whose serial holds another's
    would get both switches' tags: two addresses, two names, two provisioning files for one switch."""
    return [
        Problem(
            (*_AT, "serials", name),
            f"serial {serial} holds {other}'s serial {inner}: dnsmasq matches a serial anywhere in the client "
            f"identifier a switch sends, so {name} would be known as {other} too",
            "record each switch's whole serial, as the switch sends it; no serial may be part of another's",
        )
        for name, serial in serials.items()
        for other, inner in serials.items()
        if other != name and inner != serial and inner in serial
    ]


def _server_problems(plan: Plan, oob: OobPlane) -> list[Problem]:
    """The provisioning server must be a host of the OOB subnet that no switch leases: the network and
    broadcast addresses reach no one (every switch's HTTP fetch would fail), and a switch's own address
    would have the switch fetch its files from itself, or the server lose its address to a lease."""
    address, net = server(plan), oob.subnet
    where = (*_AT, "server")
    given = "" if oob.ztp.server is not None else f" (the default: the OOB gateway {address})"
    leased = {ip(d.mgmt_ip): d.name for d in plan.devices() if d.mgmt_ip is not None}
    if address not in net:
        return [Problem(where, f"{address}{given} is not on the OOB subnet {net}", _free_host(net, leased))]
    if net.prefixlen < 31 and address in (net.network_address, net.broadcast_address):
        kind = "network" if address == net.network_address else "broadcast"
        return [
            Problem(where, f"{address}{given} is the OOB subnet's {kind} address, no host's", _free_host(net, leased))
        ]
    if str(address) in leased:
        return [
            Problem(
                where,
                f"{address}{given} is {leased[str(address)]}'s management address, which ZTP leases to that switch",
                _free_host(net, leased),
            )
        ]
    return []


def _free_host(net: IPv4Network, leased: Mapping[str | None, str]) -> str:
    free = next((str(a) for a in net.hosts() if str(a) not in leased), None)
    hint = f", such as {free}" if free is not None else ""
    return f"a host address of the OOB subnet {net} that no switch leases{hint}"


def identities(plan: Plan) -> tuple[list[Identity], dict[str, str]]:
    """Every switch the DHCP server can know, in plan order, and the others with the reason."""
    oob = _oob(plan)
    mgmt_switches = {d.name for d in plan.planes["oob"].devices if d.role == "mgmt"} if "oob" in plan.planes else set()
    cabled = {
        link.a: (link.b_port, link.b)
        for link in (plan.planes["oob"].links if "oob" in plan.planes else [])
        if link.kind == "mgmt"
    }
    found, skipped = [], {}
    for d in plan.devices():
        port, oob_switch = cabled.get(d.name, (None, None))
        serial = oob.ztp.serials.get(d.name)
        if d.mgmt_ip is None:
            skipped[d.name] = "the plan gives it no management address"
            continue
        if port is None and serial is None:
            skipped[d.name] = (
                "no planned cable reaches its management port (an OOB switch): record its serial under "
                "planes.oob.ztp.serials"
            )
            continue
        remote = oob_switch if port is not None and len(mgmt_switches) > 1 else None
        found.append(Identity(d.name, str(ip(d.mgmt_ip)), port, remote, serial))
    for ident in found:
        for value in (ident.circuit_id, ident.remote_id, ident.serial, ident.device):
            if value is not None and not _SAFE.match(value):
                raise ZtpError(f"{ident.device}: {value!r} cannot be written into a DHCP server's configuration")
    return found, skipped


def _forms(
    plan: Plan, index: LinkIndex, wanted: Iterable[Identity], secrets: Mapping[str, str] | None, out: ZtpExport
) -> dict[str, ZtpForm]:
    url = base_url(plan)
    allowed = declared(plan.intent)
    forms: dict[str, ZtpForm] = {}
    for ident in wanted:
        device = index.devices[ident.device]
        rendered = render_context(build(plan, device, index))
        resolved = {name: resolve_tokens(text, secrets, allowed) for name, text in rendered.items()}
        try:
            form = platform(device.platform).ztp(device.name, resolved, url)
        except NoZtpFormError as exc:
            out.skipped[device.name] = str(exc)
            continue
        if resolved != rendered:  # a secret the switch keeps in clear: every file of this switch is kept 0600
            out.secret_files.update(f"{HTTP}/{name}" for name in form.files)
        forms[device.name] = form
    return forms


def export(
    plan: Plan, index: LinkIndex | None = None, secrets: Mapping[str, str] | None = None, *, resolve: bool = True
) -> ZtpExport:
    """The DHCP configurations and every switch's provisioning files. `secrets` (the environment by default)
    hash passwords and fill the tokens a switch loads in clear (SNMP communities), as `push` does; with
    `resolve` false nothing is resolved and no switch file is kept (what `export ztp` prints to stdout)."""
    _check(plan)
    if index is None:
        fabric = plan.intent.fabric.name
        index = LinkIndex(plan, PasswordHasher.for_intent(plan.intent, secrets) if resolve else ReferenceHasher(fabric))
    out = ZtpExport()
    found, out.skipped = identities(plan)
    forms = _forms(plan, index, found, secrets, out) if resolve else _forms_unresolved(plan, found, out)
    served = [i for i in found if i.device in forms]
    out.provisioned = [i.device for i in served]
    out.files[KEA] = kea(plan, served, forms)
    out.files[DNSMASQ] = dnsmasq(plan, served, forms)
    if resolve:
        for form in forms.values():
            for name, text in form.files.items():
                out.files[f"{HTTP}/{name}"] = text
        _bootstraps(plan, index, served, out, secrets)
    else:
        out.secret_files.clear()
    return out


def _bootstraps(
    plan: Plan, index: LinkIndex, served: list[Identity], out: ZtpExport, secrets: Mapping[str, str] | None
) -> None:
    """Every OOB switch's console bootstrap, relaying for the switches cabled to it that ZTP serves. Its rendered
    files are resolved as the ZTP files are (a password referenced in a vault is there as a token until then)."""
    if "oob" not in plan.planes:
        return
    allowed = declared(plan.intent)
    oob = _oob(plan)
    switches = plan.planes["oob"].devices
    several = len([d for d in switches if d.role == "mgmt"]) > 1
    by_name = {i.device: i for i in served if i.circuit_id is not None}
    clients: dict[str, list[Identity]] = {}
    for link in plan.planes["oob"].links:
        if link.kind == "mgmt" and link.a in by_name:
            clients.setdefault(link.b, []).append(by_name[link.a])
    for d in switches:
        relayed = clients.get(d.name, [])
        settings = Bootstrap(
            server=str(server(plan)),
            gateway=str(oob.gateway_address),
            relay_ports=tuple(str(i.circuit_id) for i in relayed),
            remote_id=d.name if several and relayed else None,
            relay_clients=tuple(i.address for i in relayed),
            release=plan.intent.release(d.platform),
        )
        device = index.devices[d.name]
        rendered = render_context(build(plan, device, index))
        resolved = {name: resolve_tokens(text, secrets, allowed) for name, text in rendered.items()}
        try:
            files = platform(d.platform).console_bootstrap(d.name, resolved, settings)
        except NoZtpFormError as exc:
            out.skipped[d.name] = str(exc)
            continue
        except ValueError as exc:  # a rendered file or a plan value the bootstrap cannot carry: said, not written
            raise ZtpError(f"{d.name}: no console bootstrap: {exc}") from None
        for name, text in files.items():
            if _TOKEN.search(text):
                raise ZtpError(f"{d.name}: its console bootstrap would hold a secret token ({name})")
            out.files[f"{CONSOLE}/{name}"] = text
            if resolved != rendered:  # a secret resolved into the switch's files: kept 0600, as its ZTP files
                out.secret_files.add(f"{CONSOLE}/{name}")
        out.consoled.append(d.name)
        if d.name in out.skipped:  # known by no relay: the console is how it gets its first configuration
            out.skipped[d.name] = (
                f"an OOB switch: its first configuration is {CONSOLE}/{next(iter(files))}, for its console "
                "(or record its serial under planes.oob.ztp.serials and relay its DHCP upstream)"
            )


def _forms_unresolved(plan: Plan, found: list[Identity], out: ZtpExport) -> dict[str, ZtpForm]:
    """The DHCP options alone: the URLs name files, whose content is not needed to point at them."""
    url = base_url(plan)
    devices = {d.name: d for d in plan.devices()}
    forms = {}
    for ident in found:
        try:
            forms[ident.device] = platform(devices[ident.device].platform).ztp(ident.device, _Blank(), url)
        except NoZtpFormError as exc:
            out.skipped[ident.device] = str(exc)  # left out of the DHCP configuration, as with files
    return forms


class _Blank(dict[str, str]):
    """Every rendered file, empty: enough for a platform to name its files and URLs."""

    def __missing__(self, key: str) -> str:
        return ""


def render(plan: Plan) -> str:
    """`export ztp` to stdout: Kea's configuration (with -o, the whole folder)."""
    return export(plan, resolve=False).files[KEA]


# -- the DHCP servers ---------------------------------------------------------------------------------------


def _common_options(plan: Plan, ident: Identity) -> list[tuple[int, str]]:
    mgmt = plan.intent.management
    options = [(12, ident.device)]
    if mgmt.domain:
        options.append((15, mgmt.domain))
    return options


def _hex(text: str) -> str:
    return "0x" + text.encode().hex()


def kea_test(ident: Identity) -> str:
    """The Kea client-class expression that is true for this switch's requests only."""
    tests = []
    if ident.circuit_id is not None:
        circuit = f"relay4[1].hex == '{ident.circuit_id}'"
        if ident.remote_id is not None:
            circuit += f" and relay4[2].hex == '{ident.remote_id}'"
        tests.append(circuit)
    if ident.serial is not None:
        tests.append(f"option[61].hex == '{ident.serial}' or option[61].hex == 0x00{ident.serial.encode().hex()}")
    return tests[0] if len(tests) == 1 else " or ".join(f"({t})" for t in tests)


def kea(plan: Plan, served: list[Identity], forms: Mapping[str, ZtpForm]) -> str:
    oob = _oob(plan)
    mgmt = plan.intent.management
    custom = sorted({code for f in forms.values() for code, _ in f.options if code >= 224})
    classes = [
        {
            "name": ident.tag,
            "test": kea_test(ident),
            "option-data": [
                {"code": code, "data": value, "always-send": True}
                for code, value in _common_options(plan, ident) + list(forms[ident.device].options)
            ],
        }
        for ident in served
    ]
    subnet_options: list[dict[str, object]] = [{"name": "routers", "data": str(oob.gateway_address)}]
    if mgmt.dns_servers:
        subnet_options.append({"name": "domain-name-servers", "data": ", ".join(map(str, mgmt.dns_servers))})
    config = {
        "Dhcp4": {
            "interfaces-config": {"interfaces": [oob.ztp.interface]},
            "lease-database": {"type": "memfile", "persist": True, "lfc-interval": 3600},
            "valid-lifetime": LEASE_SECONDS,
            # Answer only the switches the plan knows: no pool is open to any other client.
            "authoritative": False,
            "option-def": [
                {"name": f"gpufabric-option-{code}", "code": code, "type": "string", "space": "dhcp4"}
                for code in custom
            ],
            "client-classes": classes,
            "subnet4": [
                {
                    "id": 1,
                    "subnet": str(oob.subnet),
                    "pools": [
                        {"pool": f"{ident.address} - {ident.address}", "client-class": ident.tag} for ident in served
                    ],
                    "option-data": subnet_options,
                }
            ],
        }
    }
    return json_dumps(config)


def _dnsmasq_value(value: str) -> str:
    if '"' in value or "\\" in value or "\n" in value:
        raise ZtpError(f"{value!r} cannot be written into dnsmasq's configuration")
    return f'"{value}"'


def dnsmasq(plan: Plan, served: list[Identity], forms: Mapping[str, ZtpForm]) -> str:
    oob = _oob(plan)
    mgmt = plan.intent.management
    net = oob.subnet
    lines = [
        f"# gpufabric zero-touch provisioning: fabric {plan.intent.fabric.name}, OOB plane {net}",
        "# DHCP only (no DNS), on the OOB interface alone, to the switches the plan knows (docs/ztp.md)",
        "port=0",
        f"interface={oob.ztp.interface}",
        "bind-interfaces",
        f"dhcp-range=set:gpufabric-oob,{net.network_address},static,{net.netmask},{LEASE_SECONDS}",
        f"dhcp-option=tag:gpufabric-oob,option:router,{oob.gateway_address}",
    ]
    if mgmt.dns_servers:
        lines.append(f"dhcp-option=tag:gpufabric-oob,option:dns-server,{','.join(map(str, mgmt.dns_servers))}")
    remotes = sorted({i.remote_id for i in served if i.remote_id is not None})
    lines += [f"dhcp-remoteid=set:gpufabric-remote-{r},{r}" for r in remotes]
    for ident in served:
        lines.append(f"# {ident.device}")
        if ident.circuit_id is not None:
            if ident.remote_id is None:
                lines.append(f"dhcp-circuitid=set:{ident.tag},{ident.circuit_id}")
            else:
                lines.append(f"dhcp-circuitid=set:{ident.tag}-port,{ident.circuit_id}")
                lines.append(f"tag-if=set:{ident.tag},tag:{ident.tag}-port,tag:gpufabric-remote-{ident.remote_id}")
        if ident.serial is not None:
            lines.append(f"dhcp-match=set:{ident.tag},61,{_dnsmasq_value(ident.serial)}")
        lines.append(f"dhcp-host=tag:{ident.tag},*:*:*:*:*:*,{ident.address},{ident.device},{LEASE_SECONDS}")
        lines += [
            f"dhcp-option-force=tag:{ident.tag},{code},{_dnsmasq_value(value)}"
            for code, value in _common_options(plan, ident)[1:] + list(forms[ident.device].options)
        ]
    return "\n".join(lines) + "\n"


__all__ = ["CONSOLE", "DNSMASQ", "HTTP", "KEA", "Identity", "ZtpError", "ZtpExport", "base_url", "export", "render"]


def summary(out: ZtpExport) -> str:
    """One line for the command line."""
    console = f", {len(out.consoled)} OOB switch(es) bootstrapped on the console ({CONSOLE}/)" if out.consoled else ""
    return f"{len(out.provisioned)} switch(es) provisioned{console}, {len(out.skipped)} left out"
