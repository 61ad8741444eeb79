"""The servers' BMCs, read over Redfish: the system's health rollup and power state, and per chassis the
power supplies, fans and temperature sensors, each with its Redfish health.

Which BMCs: the servers of the groups whose intent has `bmc`, at the address the plan gives the server's
OOB port, with the login `credentials.bmc` names. Both of Redfish's models are read: the older
`Power` / `Thermal` resources of a chassis (arrays inside one answer) and the newer `PowerSubsystem` /
`ThermalSubsystem` (collections of `PowerSupply` and `Fan` resources, temperatures in `ThermalMetrics`
with their thresholds on the `Sensor` each reading names). A chassis that offers the newer model is
read through it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpufabric.config.secrets import SecretUnavailableError
from gpufabric.errors import GpufabricError
from gpufabric.hidden import Hidden
from gpufabric.intent.types import SecretRef
from gpufabric.plan.model import Plan, ip
from gpufabric.telemetry.read import Sample
from gpufabric.telemetry.redfish import Endpoint, Limits, RedfishError, Resource, Session, name_pattern

HEALTH_NAMES = ("OK", "Warning", "Critical")
CRITICAL = 2
# Resource.PowerState (DMTF Redfish schema).
POWER_STATES = frozenset({"On", "Off", "PoweringOn", "PoweringOff", "Paused"})


class BmcSetupError(GpufabricError):
    """The BMCs cannot be read as the intent asks: no group has `bmc`, a node asked for has none, or the
    login's secret is not at hand."""


@dataclass(frozen=True)
class BmcTarget:
    """One server's BMC, labelled from the plan."""

    node: str
    address: str
    rack: str = ""
    position: str = ""

    @property
    def labels(self) -> dict[str, str]:
        return {"node": self.node, "rack": self.rack, "position": self.position, "bmc": self.address}


@dataclass(frozen=True)
class Part:
    """A part a BMC reports on: a power supply, a fan or a temperature sensor, in a chassis."""

    kind: str  # psu | fan | temperature
    chassis: str
    id: str
    name: str
    health: int | None  # 0 OK, 1 Warning, 2 Critical; None when the BMC does not say
    path: str  # the resource that said it
    reading: float | None = None  # celsius (temperature) or RPM (fan)
    critical: float | None = None  # temperature: the upper critical threshold


@dataclass(frozen=True)
class SystemState:
    id: str
    health: int | None  # the rollup of the system and what it contains (Status.HealthRollup), else its own
    power: str | None  # PowerState: On, Off, PoweringOn, PoweringOff, Paused
    path: str


@dataclass
class BmcReading:
    """One BMC's read: what it said, or the error that stopped it."""

    target: BmcTarget
    systems: list[SystemState] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    error: RedfishError | None = None

    @property
    def failures(self) -> list[str]:
        """Every part (or system) the BMC reports Critical, or a temperature at or past its critical mark."""
        out = [f"system {s.id}: health rollup Critical" for s in self.systems if s.health == CRITICAL]
        for p in self.parts:
            if p.health == CRITICAL:
                out.append(f"{p.kind} {p.chassis}/{p.id} ({p.name}): Critical")
            elif p.kind == "temperature" and _too_hot(p):
                out.append(f"temperature {p.chassis}/{p.id} ({p.name}): {p.reading:g} C, critical at {p.critical:g} C")
        return out

    @property
    def warnings(self) -> list[str]:
        out = [f"system {s.id}: health rollup Warning" for s in self.systems if s.health == 1]
        return out + [f"{p.kind} {p.chassis}/{p.id} ({p.name}): Warning" for p in self.parts if p.health == 1]

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.target.labels,
            "read": self.error is None,
            "error": str(self.error) if self.error else None,
            "systems": [
                {"id": s.id, "health": _health_name(s.health), "power": s.power, "path": s.path} for s in self.systems
            ],
            "parts": [
                {
                    "kind": p.kind,
                    "chassis": p.chassis,
                    "id": p.id,
                    "name": p.name,
                    "health": _health_name(p.health),
                    "reading": p.reading,
                    "critical": p.critical,
                    "path": p.path,
                }
                for p in self.parts
            ],
            "failures": self.failures,
            "warnings": self.warnings,
        }


def _health_name(value: int | None) -> str | None:
    return None if value is None else HEALTH_NAMES[value]


def _too_hot(p: Part) -> bool:
    return p.reading is not None and p.critical is not None and p.reading >= p.critical


# -- which BMCs, from the plan ---------------------------------------------------------------------------


def bmc_targets(plan: Plan, nodes: tuple[str, ...] = ()) -> list[BmcTarget]:
    """The servers whose group reads its BMCs, at their planned OOB addresses (those of `nodes` if given)."""
    groups = {g.name: g for g in plan.intent.server_groups if g.bmc is not None}
    if not groups:
        raise BmcSetupError("no server group has `bmc` in the intent: there are no BMCs to read")
    out = []
    for s in plan.servers:
        if s.group not in groups or s.mgmt_ip is None:
            continue
        place = plan.places.get(s.name)
        rack = place.rack or "" if place else ""
        position = str(place.position) if place and place.position is not None else ""
        out.append(BmcTarget(s.name, str(ip(s.mgmt_ip)), rack, position))
    if nodes:
        known = {t.node for t in out}
        unknown = [n for n in nodes if n not in known]
        if unknown:
            raise BmcSetupError(f"no BMC is read for {', '.join(unknown[:5])}: not a server of a group with `bmc`")
        out = [t for t in out if t.node in nodes]
    return out


def endpoints(
    plan: Plan, targets: list[BmcTarget], secrets: Mapping[str, str] | None = None, *, plain_http: bool = False
) -> list[Endpoint]:
    """Each target's endpoint, with the login's secret read from `secrets` (the environment and an opened
    vault, as `vault:NAME`); the secret is held Hidden, never in a message."""
    login = plan.intent.credentials.bmc
    if login is None:
        raise BmcSetupError("credentials.bmc names no login for the BMCs")
    password = Hidden(_secret(dict(os.environ) if secrets is None else secrets, login.password))
    by_server = {s.name: s.group for s in plan.servers}
    groups = {g.name: g for g in plan.intent.server_groups}
    out = []
    for t in targets:
        bmc = groups[by_server[t.node]].bmc
        assert bmc is not None
        out.append(Endpoint(t.node, t.address, bmc.port, bmc.scheme, login.username, password, bmc.ca_file, plain_http))
    return out


def _secret(secrets: Mapping[str, str], ref: SecretRef) -> str:
    key = ref.env or f"vault:{ref.vault}"
    if not secrets.get(key):
        raise SecretUnavailableError(ref, "credentials.bmc.password")
    return secrets[key]


# -- one BMC's read --------------------------------------------------------------------------------------


LIMITS = Limits()


def read_bmc(target: BmcTarget, endpoint: Endpoint, limits: Limits = LIMITS) -> BmcReading:
    """Read one BMC whole, or stop at the first answer that is not what Redfish says (kept as the error)."""
    reading = BmcReading(target)
    try:
        session = Session(endpoint, limits)
        root = Resource(session, "/redfish/v1/", session.get("/redfish/v1/"))
        systems = root.link("Systems")
        if systems is not None:
            for path in root.read(systems).members():
                reading.systems.append(_system(root.read(path)))
        chassis = root.link("Chassis")
        if chassis is not None:
            for path in root.read(chassis).members():
                reading.parts += _chassis(root.read(path))
    except RedfishError as exc:
        reading.error = exc
    return reading


def _system(r: Resource) -> SystemState:
    ident = r.ident("Id", required=True)
    # DMTF's Resource.Status names the rollup `HealthRollup`; sushy-tools' emulator (OpenStack) writes
    # `HealthRollUp`: both are read, the DMTF spelling first. Without a rollup, the system's own health.
    rollup = r.health("Status.HealthRollup")
    if rollup is None:
        rollup = r.health("Status.HealthRollUp")
    if rollup is None:
        rollup = r.health("Status.Health")
    power = r.value("PowerState", (str,))
    if power is not None and power not in POWER_STATES:
        raise r.session.error(r.path, f"{power[:40]!r} is not a Redfish PowerState", "PowerState")
    return SystemState(str(ident), rollup, power, r.path)


def _absent(r: Resource, at: Any = None) -> bool:
    return r.value("Status.State", (str,), at=at) == "Absent"


def _chassis(r: Resource) -> list[Part]:
    chassis = str(r.ident("Id", required=True))
    parts: list[Part] = []
    power_sub, thermal_sub = r.link("PowerSubsystem"), r.link("ThermalSubsystem")
    if power_sub is not None:
        parts += _power_subsystem(r.read(power_sub), chassis)
    elif (power := r.link("Power")) is not None:
        parts += _power(r.read(power), chassis)
    if thermal_sub is not None:
        parts += _thermal_subsystem(r.read(thermal_sub), chassis)
    elif (thermal := r.link("Thermal")) is not None:
        parts += _thermal(r.read(thermal), chassis)
    return parts


def _items(r: Resource, field: str) -> list[dict[str, Any]]:
    """An array of objects inside an answer (the older model's PowerSupplies, Temperatures, Fans)."""
    items = r.value(field, (list,)) or []
    cap = r.session.limits.max_members
    if len(items) > cap:
        raise r.session.error(r.path, f"{len(items)} entries, more than the {cap} allowed", field)
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise r.session.error(r.path, f"a JSON {type(item).__name__}, not an object", f"{field}[{i}]")
    return items


def _member_id(r: Resource, field: str, i: int, item: dict[str, Any]) -> tuple[str, str]:
    """An array entry's id (MemberId, else its index) and name (Name, else the id)."""
    ident = r.ident("MemberId", at=item) or str(i)
    name = r.ident("Name", at=item, pattern=name_pattern()) or ident
    return ident, name


def _power(r: Resource, chassis: str) -> list[Part]:
    out = []
    for i, item in enumerate(_items(r, "PowerSupplies")):
        try:
            if _absent(r, item):
                continue
            ident, name = _member_id(r, "PowerSupplies", i, item)
            out.append(Part("psu", chassis, ident, name, r.health("Status.Health", item), r.path))
        except RedfishError as exc:
            raise _within(exc, f"PowerSupplies[{i}]") from None
    return out


def _thermal(r: Resource, chassis: str) -> list[Part]:
    out = []
    for i, item in enumerate(_items(r, "Temperatures")):
        try:
            if _absent(r, item):
                continue
            ident, name = _member_id(r, "Temperatures", i, item)
            reading = r.value("ReadingCelsius", (float,), at=item)
            critical = r.value("UpperThresholdCritical", (float,), at=item)
            health = r.health("Status.Health", item)
            out.append(Part("temperature", chassis, ident, name, health, r.path, reading, critical))
        except RedfishError as exc:
            raise _within(exc, f"Temperatures[{i}]") from None
    for i, item in enumerate(_items(r, "Fans")):
        try:
            if _absent(r, item):
                continue
            ident, name = _member_id(r, "Fans", i, item)
            units = r.value("ReadingUnits", (str,), at=item)
            reading = r.value("Reading", (float,), at=item) if units == "RPM" else None
            out.append(Part("fan", chassis, ident, name, r.health("Status.Health", item), r.path, reading))
        except RedfishError as exc:
            raise _within(exc, f"Fans[{i}]") from None
    return out


def _within(exc: RedfishError, prefix: str) -> RedfishError:
    """`exc` located inside an array entry (its field prefixed with the entry's place)."""
    field = f"{prefix}.{exc.field}" if exc.field else prefix
    return RedfishError(exc.bmc, exc.path, exc.problem, field)


def _resource_part(r: Resource, kind: str, chassis: str) -> Part | None:
    if _absent(r):
        return None
    ident = str(r.ident("Id", required=True))
    name = r.ident("Name", pattern=name_pattern()) or ident
    reading = r.value("SpeedPercent.SpeedRPM", (float,)) if kind == "fan" else None
    return Part(kind, chassis, ident, name, r.health("Status.Health"), r.path, reading)


def _power_subsystem(r: Resource, chassis: str) -> list[Part]:
    supplies = r.link("PowerSupplies")
    if supplies is None:
        return []
    parts = [_resource_part(r.read(p), "psu", chassis) for p in r.read(supplies).members()]
    return [p for p in parts if p is not None]


def _thermal_subsystem(r: Resource, chassis: str) -> list[Part]:
    out: list[Part] = []
    fans = r.link("Fans")
    if fans is not None:
        out += [p for p in (_resource_part(r.read(f), "fan", chassis) for f in r.read(fans).members()) if p]
    metrics = r.link("ThermalMetrics")
    if metrics is not None:
        m = r.read(metrics)
        for i, item in enumerate(_items(m, "TemperatureReadingsCelsius")):
            try:
                sensor = m.path_of("DataSourceUri", at=item)
            except RedfishError as exc:
                raise _within(exc, f"TemperatureReadingsCelsius[{i}]") from None
            if sensor is not None:  # the reading's Sensor: its health and thresholds
                out.append(_sensor(m.read(sensor), chassis))
    return out


def _sensor(r: Resource, chassis: str) -> Part:
    ident = str(r.ident("Id", required=True))
    name = r.ident("Name", pattern=name_pattern()) or ident
    reading = r.value("Reading", (float,))
    critical = r.value("Thresholds.UpperCritical.Reading", (float,))
    return Part("temperature", chassis, ident, name, r.health("Status.Health"), r.path, reading, critical)


# -- as Prometheus samples -------------------------------------------------------------------------------


def samples(reading: BmcReading) -> list[Sample]:
    """The reading as the exporter serves it; an unread BMC is `gpufabric_bmc_up 0` and nothing else."""
    base = reading.target.labels
    if reading.error is not None:
        return [Sample("gpufabric_bmc_up", base, 0.0)]
    out = [Sample("gpufabric_bmc_up", base, 1.0)]
    for s in reading.systems:
        labels = {**base, "system": s.id}
        if s.health is not None:
            out.append(Sample("gpufabric_bmc_health", labels, float(s.health)))
        if s.power is not None:
            out.append(Sample("gpufabric_bmc_power_on", labels, 1.0 if s.power == "On" else 0.0))
    for p in reading.parts:
        key = {"psu": "psu", "fan": "fan", "temperature": "sensor"}[p.kind]
        labels = {**base, "chassis": p.chassis, key: p.id, "name": p.name}
        if p.health is not None:
            out.append(Sample(f"gpufabric_bmc_{p.kind}_health", labels, float(p.health)))
        if p.kind == "fan" and p.reading is not None:
            out.append(Sample("gpufabric_bmc_fan_rpm", labels, p.reading))
        if p.kind == "temperature":
            if p.reading is not None:
                out.append(Sample("gpufabric_bmc_temperature_celsius", labels, p.reading))
            if p.critical is not None:
                out.append(Sample("gpufabric_bmc_temperature_critical_celsius", labels, p.critical))
    return out
