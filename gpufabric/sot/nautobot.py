"""Keeping a plan's records in Nautobot: read what is there, change only what differs.

Everything `sot push` makes carries the fabric's tag (`gpufabric-<fabric>`), and only tagged objects are
ever updated or removed: a site's other devices, prefixes and cables are left alone. The listing is
asked for the tag (`?tags=`), and each object it returns is checked for the tag itself all the same: a
proxy or a server that dropped the filter would otherwise hand over every team's objects for removal.
An object listed without the tag is reported (`SyncResult.untagged`) and left alone. Shared vocabulary
(device types, roles, platforms, the custom fields) is made when missing and never removed.

Every value is checked against Nautobot's own field limits before the first request that writes
(`check_limits`): a value the server would refuse half-way through a push is refused before it starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpufabric.errors import printable
from gpufabric.sot.client import Nautobot, SotError
from gpufabric.sot.records import MANUFACTURER, Desired, Record, Ref

TAGGED = [
    "dcim.location",
    "dcim.rack",
    "dcim.device",
    "dcim.interface",
    "dcim.cable",
    "ipam.prefix",
    "ipam.ipaddress",
    "ipam.vlan",
]
CUSTOM_FIELDS = {  # key -> (type, content types)
    "gpufabric_asn": ("integer", ["dcim.device"]),
    "gpufabric_group": ("text", ["dcim.device"]),
    "gpufabric_index": ("integer", ["dcim.device"]),
    "gpufabric_row": ("integer", ["dcim.rack"]),
    "gpufabric_column": ("integer", ["dcim.rack"]),
}
LOCATION_TYPE = "Site"
ENDPOINTS = {
    "locations": "dcim/locations",
    "racks": "dcim/racks",
    "vlans": "ipam/vlans",
    "devices": "dcim/devices",
    "interfaces": "dcim/interfaces",
    "prefixes": "ipam/prefixes",
    "ip-addresses": "ipam/ip-addresses",
    "ip-address-to-interface": "ipam/ip-address-to-interface",
    "cables": "dcim/cables",
}
ORDER = list(ENDPOINTS)
CREATE_ONLY = {
    "ip-addresses": ("namespace",)
}  # sent when made; an address shows its namespace through its parent  # made in this order, removed in the reverse
VOCABULARY = {  # kind -> (endpoint, the field that is its key)
    "manufacturers": ("dcim/manufacturers", "name"),
    "device-types": ("dcim/device-types", "model"),
    "roles": ("extras/roles", "name"),
    "platforms": ("dcim/platforms", "name"),
}


# Nautobot's field limits (its models, 2.x and 3.x): every name, model, label, serial and description is a
# CharField of CHARFIELD_MAX_LENGTH = 255 characters (nautobot/core/constants.py); a cable's length a
# PositiveSmallIntegerField (0-32767); a rack's u_height 1-500 (RACK_U_HEIGHT_MAXIMUM); a device's position
# a PositiveSmallIntegerField of at least 1; an interface's mtu 1-65536; a VLAN's vid 1-4094.
TEXT_MAX = 255
TEXT_FIELDS = ("name", "model", "label", "serial", "description", "address", "prefix")
NUMBER_RANGES = {
    "length": (0, 32767),
    "u_height": (1, 500),
    "position": (1, 32767),
    "mtu": (1, 65536),
    "vid": (1, 4094),
}


def check_limits(want: Desired) -> None:
    """Every record's values within Nautobot's field limits, else a SotError naming each record, field and
    limit (before anything is written)."""
    problems = [
        problem
        for kind, records in [*want.vocabulary.items(), *want.owned.items()]
        for r in records
        for name, value in r.fields.items()
        if (problem := _over(f"{kind} {printable(r.key[:80])}", name, value))
    ]
    if len(want.tag) > TEXT_MAX:
        problems.append(f"tag {printable(want.tag[:80])}: {len(want.tag)} characters, Nautobot keeps {TEXT_MAX}")
    if problems:
        shown = "; ".join(problems[:20]) + (f"; and {len(problems) - 20} more" if len(problems) > 20 else "")
        raise SotError(f"the plan does not fit Nautobot's fields, nothing was written: {shown}")


def _over(what: str, name: str, value: Any) -> str:
    """What is wrong with one field's value against Nautobot's limit for it ("" when it fits)."""
    if name in TEXT_FIELDS and isinstance(value, str) and len(value) > TEXT_MAX:
        return f"{what}: {name} is {len(value)} characters, Nautobot keeps {TEXT_MAX}"
    low, high = NUMBER_RANGES.get(name, (None, None))
    if low is not None and high is not None and isinstance(value, int) and not low <= value <= high:
        return f"{what}: {name} {value} is outside Nautobot's {low}-{high}"
    return ""


@dataclass
class Counts:
    created: int = 0
    updated: int = 0
    deleted: int = 0

    @property
    def total(self) -> int:
        return self.created + self.updated + self.deleted


@dataclass
class SyncResult:
    site: str
    dry_run: bool
    kinds: dict[str, Counts] = field(default_factory=dict)
    requests: int = 0
    untagged: list[str] = field(default_factory=list)  # listed as the fabric's, without its tag: left alone

    def count(self, kind: str) -> Counts:
        return self.kinds.setdefault(kind, Counts())

    @property
    def total(self) -> Counts:
        c = Counts()
        for k in self.kinds.values():
            c.created, c.updated, c.deleted = c.created + k.created, c.updated + k.updated, c.deleted + k.deleted
        return c


def _norm(value: Any) -> Any:
    """A value as the server shows it, reduced to what a record writes: references to their ids, choices
    to their values, decimals to numbers, empty to None."""
    if isinstance(value, dict):
        if "id" in value:
            return value["id"]
        if "value" in value:
            return _norm(value["value"])
    if value == "":
        return None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() and not value.isdigit() else value
    return value


def carries_tag(o: dict[str, Any], tag_id: str | None, tag_name: str) -> bool:
    """The object carries the fabric's tag itself (by id, as depth 0 shows it, or by name)."""
    tags = o.get("tags")
    if not isinstance(tags, list):
        return False
    return any(
        (tag_id is not None and _norm(t) == tag_id) or (isinstance(t, dict) and t.get("name") == tag_name) for t in tags
    )


def _same(want: Any, have: Any) -> bool:
    if isinstance(want, dict):
        have = have if isinstance(have, dict) else {}
        return all(_same(v, have.get(k)) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and sorted(map(str, want)) == sorted(str(_norm(h)) for h in have)
    w, h = _norm(want), _norm(have)
    if isinstance(w, int) and isinstance(h, float | int):
        return float(w) == float(h)
    return bool(w == h)


class Sync:
    """One push of `desired` to `api` (or its dry run)."""

    def __init__(self, api: Nautobot, desired: Desired, dry_run: bool) -> None:
        self.api = api
        self.want = desired
        self.dry = dry_run
        self.result = SyncResult(desired.site, dry_run)
        self.ids: dict[tuple[str, str], str] = {}  # (kind, key) -> id on the server
        self.fixed: dict[str, str] = {}  # statuses, namespace, tag, location type by name
        self.devices_before: dict[str, dict[str, Any]] = {}

    # -- shared vocabulary ---------------------------------------------------------------------------

    def _ensure(self, kind: str, endpoint: str, key_field: str, wanted: list[dict[str, Any]]) -> None:
        have = {o.get(key_field): o for o in self.api.objects(endpoint)}
        missing = [w for w in wanted if w[key_field] not in have]
        for key, o in have.items():
            if isinstance(key, str):
                self.ids[kind, key] = o["id"]
        if missing:
            self.result.count(kind).created += len(missing)
            made = (
                self.api.create(endpoint, missing)
                if not self.dry
                else [{"id": f"new:{kind}:{m[key_field]}"} | m for m in missing]
            )
            for m, o in zip(missing, made, strict=True):
                self.ids[kind, m[key_field]] = o["id"]
        # A role, custom field or tag found without the content types it needs gets them added.
        for w in wanted:
            found = have.get(w[key_field])
            types = w.get("content_types")
            if found is None or types is None:
                continue
            o = found
            present = set(o.get("content_types") or [])
            if not set(types) <= present:
                self.result.count(kind).updated += 1
                if not self.dry:
                    self.api.update(endpoint, [{"id": o["id"], "content_types": sorted(present | set(types))}])

    def _prepare(self) -> None:
        statuses = {o.get("name"): o for o in self.api.objects("extras/statuses")}
        for name in ("Active", "Connected"):
            if name not in statuses:
                raise SotError(f"the source of truth has no status '{name}'")
            self.fixed[name] = statuses[name]["id"]
        namespaces = {o.get("name"): o["id"] for o in self.api.objects("ipam/namespaces")}
        if "Global" not in namespaces:
            raise SotError("the source of truth has no IP namespace 'Global'")
        self.fixed["Global"] = namespaces["Global"]
        self._ensure("tags", "extras/tags", "name", [{"name": self.want.tag, "content_types": TAGGED}])
        self.fixed["tag"] = self.ids["tags", self.want.tag]
        self._ensure(
            "location-types",
            "dcim/location-types",
            "name",
            [{"name": LOCATION_TYPE, "content_types": ["dcim.rack", "dcim.device", "ipam.prefix"]}],
        )
        self._ensure(
            "custom-fields",
            "extras/custom-fields",
            "key",
            [{"key": k, "label": k, "type": t, "content_types": c} for k, (t, c) in CUSTOM_FIELDS.items()],
        )
        self._ensure("manufacturers", "dcim/manufacturers", "name", [{"name": MANUFACTURER}])
        for kind in ("device-types", "roles", "platforms"):
            endpoint, key_field = VOCABULARY[kind]
            wanted: dict[str, dict[str, Any]] = {}
            for r in self.want.vocabulary.get(kind, []):
                body = {k: self._ref(v) for k, v in r.fields.items()}
                if kind == "roles":
                    body["content_types"] = ["dcim.device"]
                wanted.setdefault(r.key, body)
            self._ensure(kind, endpoint, key_field, list(wanted.values()))

    def _ref(self, value: Any) -> Any:
        if isinstance(value, Ref):
            found = self.ids.get((value.kind, value.key))
            if found is None:
                raise SotError(f"nothing in the source of truth for {value.kind} '{value.key}'")
            return found
        return value

    # -- owned objects -------------------------------------------------------------------------------

    def _body(self, kind: str, r: Record) -> dict[str, Any]:
        f = {k: self._ref(v) for k, v in r.fields.items()}
        tags = [self.fixed["tag"]]
        active, connected, ns = self.fixed["Active"], self.fixed["Connected"], self.fixed["Global"]
        if kind == "locations":
            return f | {"location_type": self.ids["location-types", LOCATION_TYPE], "status": active, "tags": tags}
        if kind in ("racks", "devices", "interfaces", "vlans"):
            return f | {"status": active, "tags": tags}
        if kind == "prefixes":
            return f | {"namespace": ns, "status": active, "type": "network", "tags": tags}
        if kind == "ip-addresses":
            return f | {"namespace": ns, "status": active, "type": "host", "tags": tags}
        if kind == "cables":
            a, b = f.pop("a"), f.pop("b")
            return f | {
                "termination_a_type": "dcim.interface",
                "termination_a_id": a,
                "termination_b_type": "dcim.interface",
                "termination_b_id": b,
                "status": connected,
                "tags": tags,
            }
        return f

    def _existing(self, kind: str) -> dict[str, dict[str, Any]]:
        """The fabric's objects of `kind` on the server, by key."""
        endpoint = ENDPOINTS[kind]
        if kind == "ip-address-to-interface":
            if self.fixed["tag"].startswith("new:"):
                return {}
            ours = {v: k for (kk, k), v in self.ids.items() if kk == "ip-addresses"}
            names = {v: k for (kk, k), v in self.ids.items() if kk == "interfaces"}
            out = {}
            for o in self.api.objects(endpoint):
                address, iface = ours.get(_norm(o.get("ip_address"))), names.get(_norm(o.get("interface")))
                if address is not None:
                    out[f"{address}@{iface or _norm(o.get('interface'))}"] = o
            return out
        if self.fixed["tag"].startswith("new:"):
            return {}  # a dry run before the first push: the tag, and so the fabric's objects, do not exist yet
        objects = self.api.objects(endpoint, tags=self.want.tag)
        key: Callable[[dict[str, Any]], Any]
        if kind == "interfaces":
            devices = {v: k for (kk, k), v in self.ids.items() if kk == "devices"}
            key = lambda o: f"{devices.get(_norm(o.get('device')), _norm(o.get('device')))}:{o.get('name')}"  # noqa: E731
        elif kind == "prefixes":
            key = lambda o: o.get("prefix")  # noqa: E731
        elif kind == "ip-addresses":
            key = lambda o: o.get("address")  # noqa: E731
        elif kind == "cables":
            key = lambda o: o.get("label")  # noqa: E731
        else:
            key = lambda o: o.get("name")  # noqa: E731
        out = {}
        for o in objects:
            k = key(o)
            if not isinstance(k, str):
                raise SotError(f"/api/{endpoint}/: an object without its {kind} key")
            if not self._tagged(o):
                self.result.untagged.append(f"{kind} {printable(k[:120])} (id {printable(o['id'])})")
                continue  # not the fabric's, whatever the listing said: never updated, never removed
            out[k] = o
        return out

    def _tagged(self, o: dict[str, Any]) -> bool:
        return carries_tag(o, self.fixed["tag"], self.want.tag)

    def _primary_ips(self) -> None:
        """Each device's primary address, once its addresses are assigned to its interfaces."""
        counts = self.result.count("primary-ips")
        changes = []
        for r in self.want.owned.get("primary-ips", []):
            device, address = self._ref(r.fields["device"]), self._ref(r.fields["ip_address"])
            current = _norm(self.devices_before.get(r.key, {}).get("primary_ip4"))
            if current == address:
                continue
            if current is None:
                counts.created += 1
            else:
                counts.updated += 1
            changes.append({"id": device, "primary_ip4": address})
        # A device that goes, or whose management address goes, loses its primary address with it.
        keep = {r.key for r in self.want.owned.get("primary-ips", [])}
        counts.deleted += sum(
            1 for key, o in self.devices_before.items() if key not in keep and _norm(o.get("primary_ip4"))
        )
        if changes and not self.dry:
            self.api.update(ENDPOINTS["devices"], changes)

    def run(self) -> SyncResult:
        check_limits(self.want)
        self._prepare()
        stale: dict[str, list[str]] = {}
        for kind in ORDER:
            records = {r.key: r for r in self.want.owned.get(kind, [])}
            have = self._existing(kind)
            if kind == "devices":
                self.devices_before = have
            for key, o in have.items():
                self.ids[kind, key] = o["id"]
            counts = self.result.count(kind)
            create: list[tuple[str, dict[str, Any]]] = []
            update: list[dict[str, Any]] = []
            replace: list[str] = []
            for key, r in records.items():
                body = self._body(kind, r)
                current = have.get(key)
                if current is None:
                    create.append((key, body))
                    continue
                if kind == "ip-address-to-interface":
                    continue  # an assignment is its key: nothing of it to update
                if kind == "cables" and not all(
                    _same(body[f], current.get(f)) for f in ("termination_a_id", "termination_b_id")
                ):
                    replace.append(current["id"])  # a cable moved to other ports is another cable
                    create.append((key, body))
                    continue
                skip = CREATE_ONLY.get(kind, ())
                changed = {k: v for k, v in body.items() if k not in skip and not _same(v, current.get(k))}
                if changed:
                    update.append({"id": current["id"], **changed})
            stale[kind] = [o["id"] for key, o in have.items() if key not in records]
            counts.created += len(create) - len(replace)
            counts.updated += len(update) + len(replace)
            if self.dry:
                for key, _ in create:
                    self.ids[kind, key] = f"new:{kind}:{key}"
                continue
            if replace:
                self.api.delete(ENDPOINTS[kind], replace)
            if update:
                self.api.update(ENDPOINTS[kind], update)
            made = self.api.create(ENDPOINTS[kind], [b for _, b in create]) if create else []
            # Nautobot 3.2 makes a cable without the tags it was sent (and answers as if it had them):
            # they are set on it afterwards.
            if kind == "cables" and made:
                self.api.update(ENDPOINTS[kind], [{"id": o["id"], "tags": [self.fixed["tag"]]} for o in made])
            for (key, _), o in zip(create, made, strict=True):
                self.ids[kind, key] = o["id"]
        self._primary_ips()
        for kind in reversed(ORDER):
            ids = stale.get(kind, [])
            self.result.count(kind).deleted += len(ids)
            if ids and not self.dry:
                self.api.delete(ENDPOINTS[kind], ids)
        self.result.requests = self.api.requests
        return self.result
