"""Value types of the intent: speeds, ratios, ASN ranges and secret references.

Each type accepts the spellings network engineers write by hand ("400G", "3:1",
"4200000000-4200000999") and keeps one canonical value, so the planner never
parses strings.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    PlainSerializer,
    Strict,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from gpufabric.platforms import names


def _address_text(value: Any) -> Any:
    """Addresses are written as text: pydantic would read `true` as 0.0.0.1 and 167772160 as 10.0.0.0."""
    if isinstance(value, bool | int | float):
        raise ValueError(f"{value!r} is not an address; write it like 10.0.0.0/24 or 10.0.0.1")
    return value


def whole_number(value: Any) -> Any:
    """For Literal numbers, which strict mode still matches by equality (2.0 == 2)."""
    if isinstance(value, float):
        raise ValueError(f"{value!r} is not a whole number; write {int(value) if value.is_integer() else 2}")
    return value


# Strict(False): addresses arrive as text, which strict mode would refuse (it wants IPv4Address objects).
Network = Annotated[IPv4Network, BeforeValidator(_address_text), Strict(False)]
Address = Annotated[IPv4Address, BeforeValidator(_address_text), Strict(False)]

# (Patterns run on pydantic's regex engine: no look-around.)
# Strings of the intent that reach switch configurations, host files and shells: each has a pattern
# (and a hint said when it is not met) or is printable text. Patterns, not escaping, are the first
# defence: a newline in a domain would otherwise be one more line of an EOS configuration.
PATTERN_HINTS: dict[str, str] = {}


def _pattern(regex: str, hint: str) -> str:
    PATTERN_HINTS[regex] = hint
    return regex


NAME_PATTERN = _pattern(
    r"^[a-z][a-z0-9-]{0,30}$", "lower-case letters, digits and '-', starting with a letter, at most 31"
)
PREFIX_PATTERN = _pattern(
    r"^[a-z][a-z0-9]{0,7}$",
    "lower-case letters and digits, starting with a letter, at most 8 (no '-': it separates name parts)",
)
INTERFACE_PATTERN = _pattern(
    r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$",
    "a Linux interface name: a letter, then letters, digits, '_', '.' or '-', at most 15",
)
SERIAL_PATTERN = _pattern(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
    "a serial number: letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64",
)
SWITCH_NAME_PATTERN = _pattern(
    r"^[a-z][a-z0-9-]{0,62}$", "a planned switch's name: lower-case letters, digits and '-', at most 63"
)
HOST_NAME_PATTERN = _pattern(
    r"^[a-z][a-z0-9-]{0,62}$", "a host name: lower-case letters, digits and '-', starting with a letter, at most 63"
)
RACK_PATTERN = _pattern(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$",
    "a rack name: letters, digits, '.', '_' or '-', starting with a letter or digit, at most 32",
)
USER_PATTERN = _pattern(
    r"^[a-z_][a-z0-9_-]{0,31}$",
    "a login name: lower-case letters, digits, '_' and '-', starting with a letter or '_', at most 32",
)
MODEL_PATTERN = _pattern(
    r"^[A-Za-z0-9][A-Za-z0-9_.+/-]{0,39}$",
    "a hardware model like SN5600 or 7060X6-64PE: letters, digits and _ . + / -, at most 40",
)
DOMAIN_PATTERN = _pattern(
    r"^$|^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
    "a DNS domain (RFC 1123) like mgmt.example.net",
)
LABEL_PATTERN = _pattern(
    r"^$|^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$",
    "letters, digits and _ . -, at most 63 (it becomes a Kubernetes label value)",
)
_TOKEN_SYNTAX = re.compile(r"@(secret|hash):")


def _printable(limit: int) -> Any:
    def check(value: str) -> str:
        if len(value) > limit:
            raise ValueError(f"is {len(value)} characters long; at most {limit}")
        bad = next((c for c in value if not c.isprintable()), None)
        if bad is not None:
            raise ValueError(f"holds the control character {bad!r}; write printable text on one line")
        if value != value.strip():
            raise ValueError("starts or ends with a space, which some switch CLIs drop; remove it")
        if _TOKEN_SYNTAX.search(value):
            raise ValueError("holds secret-token syntax (@secret:...@): free text is never a secret reference")
        return value

    return AfterValidator(check)


Text = Annotated[str, _printable(200)]
# Names the kernel gives a meaning of its own: `lo` is the loopback, and /proc/sys/net/*/conf/{all,default}
# set every interface at once, so a host role writing "its NIC's" settings there would change them all.
RESERVED_INTERFACES = frozenset({"lo", "all", "default"})


def _not_reserved(value: str) -> str:
    if value in RESERVED_INTERFACES:
        raise ValueError(
            f"'{value}' is a name the kernel reserves (the loopback, or the settings of all interfaces); "
            "write the NIC's own name, e.g. eth1"
        )
    return value


InterfaceName = Annotated[str, Field(pattern=INTERFACE_PATTERN), AfterValidator(_not_reserved)]
UserName = Annotated[str, Field(pattern=USER_PATTERN)]
Serial = Annotated[str, Field(pattern=SERIAL_PATTERN)]
SwitchName = Annotated[str, Field(pattern=SWITCH_NAME_PATTERN)]
HostName = Annotated[str, Field(pattern=HOST_NAME_PATTERN)]
RackName = Annotated[str, Field(pattern=RACK_PATTERN)]
ModelName = Annotated[str, Field(pattern=MODEL_PATTERN)]
DomainName = Annotated[str, Field(pattern=DOMAIN_PATTERN, max_length=253)]
LabelValue = Annotated[str, Field(pattern=LABEL_PATTERN)]

PLATFORM_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
_PLATFORM_NAME = re.compile(PLATFORM_PATTERN)


def _registered_platform(value: str) -> str:
    """A network OS some installed distribution registers (entry-point group `gpufabric.platforms`)."""
    if not _PLATFORM_NAME.fullmatch(value) or value not in names():
        raise ValueError(f"{value!r} is not a registered platform: {', '.join(names())}")
    return value


def _platform_schema(schema: dict[str, Any]) -> None:
    # The editor's completion lists what is registered where the schema is printed.
    schema["enum"] = list(names())


Platform = Annotated[str, AfterValidator(_registered_platform), Field(json_schema_extra=_platform_schema)]


def _time_zone(value: Any) -> Any:
    """IANA names as every switch OS lists them (`Etc/UTC`, `Europe/Paris`); NVUE refuses the bare `UTC`."""
    if not isinstance(value, str) or not _ZONE.fullmatch(value):
        hint = " (write Etc/UTC)" if value in ("UTC", "GMT", "Z") else ""
        raise ValueError(f"{value!r} is not an IANA time zone name like Etc/UTC or America/New_York{hint}")
    from zoneinfo import available_timezones

    if value not in available_timezones():
        raise ValueError(f"{value!r} is not in the IANA time zone database; e.g. Etc/UTC or America/New_York")
    return value


_ZONE = re.compile(r"[A-Z][A-Za-z_]{1,30}(/[A-Za-z0-9_+-]{1,30}){1,2}")
TimeZone = Annotated[str, BeforeValidator(_time_zone)]
PlaneName = Literal["compute", "storage", "business", "oob"]
DATA_PLANES: tuple[PlaneName, ...] = ("compute", "storage", "business")
ALL_PLANES: tuple[PlaneName, ...] = ("compute", "storage", "business", "oob")

_SPEED = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mMgGtT]?)(?:b|bps|B)?\s*$")
_SPEED_UNIT_GBPS = {"": 1.0, "g": 1.0, "m": 0.001, "t": 1000.0}


def _parse_speed(value: Any) -> Any:
    """Speeds are carried as whole Gb/s; "100M" is refused because no fabric port runs below 1G."""
    if isinstance(value, bool):
        raise ValueError("a speed is written like 400G, not true/false")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        m = _SPEED.match(value)
        if not m:
            raise ValueError(f"'{value}' is not a speed; write it like 100G, 400G or 800G")
        gbps = float(m.group(1)) * _SPEED_UNIT_GBPS[m.group(2).lower()]
        if gbps < 1 or gbps != int(gbps):
            raise ValueError(f"'{value}' is not a whole number of Gb/s; ports run at 1G or more")
        return int(gbps)
    raise ValueError("a speed is written like 400G")


# The JSON Schema (`gpufabric schema`, for editors) says what a person writes, not the number the model
# keeps: pydantic would print the core type (an integer, a number) and an editor would mark every "400G".
# The same patterns the validators match, so the two cannot drift apart; the range of a written speed
# is still checked only on load.
SPEED_JSON_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "integer", "minimum": 1, "maximum": 1600},
        {"type": "string", "pattern": _SPEED.pattern},
    ],
    "examples": ["400G", "800G"],
}

Speed = Annotated[
    int,
    BeforeValidator(_parse_speed),
    Field(ge=1, le=1600),
    PlainSerializer(lambda v: f"{v}G", return_type=str),
    WithJsonSchema(SPEED_JSON_SCHEMA),
]


# What float() takes from a hand-written ratio's parts ("3:1", "1.5:1", "3"); the validator still checks it.
_RATIO_TEXT = r"^\s*[0-9]+(\.[0-9]+)?\s*(:\s*[0-9]+(\.[0-9]+)?\s*)?$"


def _parse_ratio(value: Any) -> Any:
    """Oversubscription as downlink:uplink bandwidth; "3:1" and 3 mean the same."""
    if isinstance(value, bool):
        raise ValueError("oversubscription is written like 1:1 or 3:1")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        parts = value.split(":")
        try:
            if len(parts) == 1:
                return float(parts[0])
            if len(parts) == 2:
                down, up = float(parts[0]), float(parts[1])
                if up <= 0:
                    raise ValueError
                return down / up
        except ValueError:
            pass
        raise ValueError(f"'{value}' is not a ratio; write it like 1:1 (non-blocking) or 3:1")
    raise ValueError("oversubscription is written like 1:1 or 3:1")


RATIO_JSON_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "number", "minimum": 1, "maximum": 64},
        {"type": "string", "pattern": _RATIO_TEXT},
    ],
    "examples": ["1:1", "3:1"],
}

Ratio = Annotated[
    float,
    BeforeValidator(_parse_ratio),
    Field(ge=1.0, le=64.0),
    PlainSerializer(lambda v: f"{v:g}:1", return_type=str),
    WithJsonSchema(RATIO_JSON_SCHEMA),
]

# RFC 6996 private ranges; RFC 7938 fabrics number their switches from these.
PRIVATE_ASN_2B = (64512, 65534)
PRIVATE_ASN_4B = (4200000000, 4294967294)

# AS numbers no BGP speaker may be numbered with, (first, last, why). A router configured with one
# either cannot peer at all (0, the two last ones) or is mistaken for something else (AS_TRANS is what
# a 2-octet speaker sees in place of every 4-octet ASN, so a real AS 23456 is indistinguishable from
# "some 4-octet AS"); the documentation ranges are examples, owned by no network.
RESERVED_ASNS: tuple[tuple[int, int, str], ...] = (
    (0, 0, "AS 0 is reserved and never numbers a BGP speaker (RFC 7607)"),
    (23456, 23456, "AS 23456 is AS_TRANS, which 2-octet speakers see for every 4-octet ASN (RFC 6793)"),
    (64496, 64511, "64496-64511 are for documentation and examples (RFC 5398)"),
    (65535, 65535, "AS 65535 is reserved, the last 2-octet ASN (RFC 7300)"),
    (65536, 65551, "65536-65551 are for documentation and examples (RFC 5398)"),
    (4294967295, 4294967295, "AS 4294967295 is reserved, the last 4-octet ASN (RFC 7300)"),
)


def reserved_asn(first: int, last: int | None = None) -> str | None:
    """Why an ASN (or any of first..last) may not number a BGP speaker; None when none is reserved."""
    last = first if last is None else last
    return next((why for lo, hi, why in RESERVED_ASNS if lo <= last and first <= hi), None)


def _usable_asn(value: int) -> int:
    why = reserved_asn(value)
    if why is not None:
        raise ValueError(f"{why}; use the AS number the router is really configured with")
    return value


# One AS number a router is configured with: public or private, never a reserved one.
Asn = Annotated[int, Field(ge=1, le=4294967294), AfterValidator(_usable_asn)]


def _in_private(first: int, last: int) -> bool:
    return any(lo <= first and last <= hi for lo, hi in (PRIVATE_ASN_2B, PRIVATE_ASN_4B))


# "FIRST-LAST" as AsnRange reads it: spaces anywhere, digits on both sides of one '-'.
ASN_RANGE_TEXT = r"^[ ]*[0-9][0-9 ]*-[ ]*[0-9][0-9 ]*$"


class AsnRange(BaseModel):
    """An inclusive range of private AS numbers, written "FIRST-LAST"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: int
    last: int

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            parts = value.replace(" ", "").split("-")
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                raise ValueError(f"'{value}' is not an ASN range; write it like 4200000000-4200009999")
            return {"first": int(parts[0]), "last": int(parts[1])}
        if isinstance(value, int) and not isinstance(value, bool):
            raise ValueError("an ASN pool is a range; write it like 4200000000-4200009999")
        return value

    @model_validator(mode="after")
    def _private(self) -> AsnRange:
        if self.first > self.last:
            raise ValueError(f"the range {self.first}-{self.last} runs backwards; put the smaller ASN first")
        why = reserved_asn(self.first, self.last)
        if why is not None:  # the private ranges hold none today; this keeps it so if they are ever widened
            raise ValueError(
                f"{self.first}-{self.last} reaches a reserved ASN: {why}; use a private range inside "
                "64512-65534 or 4200000000-4294967294 (RFC 6996)"
            )
        if not _in_private(self.first, self.last):
            raise ValueError(
                f"{self.first}-{self.last} is not inside a private ASN range; use 64512-65534 "
                "or 4200000000-4294967294 (RFC 6996)"
            )
        return self

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def overlaps(self, other: AsnRange) -> bool:
        return self.first <= other.last and other.first <= self.last

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The text form people write ("4200000000-4200000999") beside the mapping the model also takes."""
        return {"anyOf": [{"type": "string", "pattern": ASN_RANGE_TEXT}, handler(core_schema)]}


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SecretRef(BaseModel):
    """Where a secret lives: an environment variable or an Ansible Vault variable. Never the value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env: str | None = Field(None, description="Name of the environment variable that holds the secret.")
    vault: str | None = Field(None, description="Name of the Ansible Vault variable that holds the secret.")

    @model_validator(mode="before")
    @classmethod
    def _refuse_literal(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            # Deliberately never echo the value: it may be a real password.
            raise ValueError(
                "secrets are referenced, never written in the intent; use {env: VARIABLE} or {vault: NAME}"
            )
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretRef:
        if (self.env is None) == (self.vault is None):
            raise ValueError("name exactly one place for the secret: either env or vault")
        name = self.env if self.env is not None else self.vault
        if not name or not _ENV_NAME.match(name):
            raise ValueError(
                "the reference must be a variable name (letters, digits, _), e.g. GPUFABRIC_SWITCH_PASSWORD"
            )
        return self

    def describe(self) -> str:
        return f"env:{self.env}" if self.env else f"vault:{self.vault}"
