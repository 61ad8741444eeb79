"""`sot push` and `sot pull`: the plan into Nautobot, and the physical facts back into an intent.

Pull reads what a data-centre team keeps in the source of truth and the plan cannot know: which servers
are installed under which names, the rack and unit of every server and switch, serial numbers, and cable
lengths. It writes them into the intent (`site`, each group's `hosts`); a cable whose recorded length is
not the one its ends' positions give is kept as measured (`site.cable_lengths`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpufabric.errors import printable
from gpufabric.intent.loader import LoadedIntent, load_intent_text
from gpufabric.plan.model import Plan, cable_label
from gpufabric.plan.planner import build_plan
from gpufabric.sot.client import Nautobot, SotError, Source
from gpufabric.sot.nautobot import Sync, SyncResult, _norm, carries_tag
from gpufabric.sot.records import desired
from gpufabric.yaml_lines import load_yaml

PULLED = "<the intent with the facts pulled from the source of truth>"
UNITS_TO_M = {"m": 1.0, "cm": 0.01, "km": 1000.0, "ft": 0.3048, "in": 0.0254, "mi": 1609.344}


def push(plan: Plan, api: Nautobot, dry_run: bool = False) -> SyncResult:
    """Make the source of truth hold `plan`: create what is missing, update what differs, remove what the
    fabric's tag marks and the plan no longer has."""
    return Sync(api, desired(plan), dry_run).run()


@dataclass
class PullResult:
    intent: dict[str, Any]  # the intent's document with the pulled facts in it
    servers: int = 0
    switches: int = 0
    racks: int = 0
    measured: int = 0  # cables whose recorded length is not their positions'
    groups: list[str] = field(default_factory=list)
    untagged: list[str] = field(default_factory=list)  # listed as the fabric's without its tag: not read


def _fields(o: dict[str, Any]) -> dict[str, Any]:
    cf = o.get("custom_fields")
    return cf if isinstance(cf, dict) else {}


def _int(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SotError(f"{what} is not a whole number")
    return value


def _text(value: Any, what: str) -> str | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise SotError(f"{what} is not text")
    return value


def metres(value: Any, unit: Any, label: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SotError(f"cable {label}: its length is not a number") from None
    unit = _norm(unit) or "m"
    if unit not in UNITS_TO_M or not math.isfinite(number) or number <= 0:
        raise SotError(f"cable {label}: length {number!r} {unit!r} is not a length")
    return math.ceil(round(number * UNITS_TO_M[unit], 6))


@dataclass
class _Tagged:
    """The fabric's objects of a listing: asked for by tag, and each checked for the tag itself (a proxy that
    dropped `tags=` would hand over every team's devices as the fabric's servers)."""

    api: Source
    tag: str
    skipped: list[str] = field(default_factory=list)
    tag_id: str | None = None
    selector: str | None = None  # the listing filter's value: the tag's name (Nautobot) or slug (NetBox)

    def __post_init__(self) -> None:
        found = [o for o in self.api.objects("extras/tags", name=self.tag) if o.get("name") == self.tag]
        self.tag_id = found[0]["id"] if found else None
        self.selector = self.tag
        if self.api.tag_filter == "tag":  # NetBox selects by slug, and refuses one it does not have
            slug = found[0].get("slug") if found else None
            self.selector = slug if isinstance(slug, str) and slug else None

    def objects(self, endpoint: str) -> Iterator[dict[str, Any]]:
        if self.selector is None:
            return  # no such tag: nothing is the fabric's
        for o in self.api.objects(endpoint, **{self.api.tag_filter: self.selector}):
            if carries_tag(o, self.tag_id, self.tag):
                yield o
            else:
                name = o.get("name") or o.get("label") or ""
                self.skipped.append(f"{endpoint} {printable(str(name)[:120])} (id {printable(o['id'])})")


def _one_index(indexes: dict[tuple[str, int], str], group: str, index: int, name: str) -> None:
    """A server's place in its group (`gpufabric_index`, which decides its leaf ports) is its own: a device
    cloned in Nautobot copies it, and sorting the two would move an installed server to another port."""
    other = indexes.setdefault((group, index), name)
    if other != name:
        raise SotError(
            f"devices {printable(other)} and {printable(name)} both have gpufabric_index {index} in group "
            f"{printable(group)} (a cloned device copies it): give one of them its own index in the source of "
            "truth; nothing was written"
        )
    if index < 1:
        raise SotError(f"device {printable(name)}: gpufabric_index {index} is not 1 or more")


def pull(loaded: LoadedIntent, text: str, api: Source) -> PullResult:
    """The intent `text` (already `loaded`) with the physical facts the source of truth holds for it."""
    intent = loaded.intent
    tag = f"gpufabric-{intent.fabric.name}"
    data, _ = load_yaml(text, loaded.file, core_schema=True)
    assert isinstance(data, dict)
    tagged = _Tagged(api, tag)
    racks_by_id: dict[str, str] = {}
    racks = []
    for o in tagged.objects("dcim/racks"):
        name = _text(o.get("name"), "a rack's name")
        cf = _fields(o)
        row, column = _int(cf.get("gpufabric_row"), f"rack {name}'s row"), _int(cf.get("gpufabric_column"), "column")
        if name is None or row is None or column is None:
            raise SotError(f"rack {name}: no name, row or column (custom fields gpufabric_row/gpufabric_column)")
        units = _int(o.get("u_height"), f"rack {name}'s height") or 42
        racks_by_id[o["id"]] = name
        racks.append({"name": name, "row": row, "column": column, "units": units})
    racks.sort(key=lambda r: (r["row"], r["column"], r["name"]))
    hosts: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    indexes: dict[tuple[str, int], str] = {}  # (group, gpufabric_index) -> the device that holds it
    switches: dict[str, dict[str, Any]] = {}
    for o in tagged.objects("dcim/devices"):
        name = _text(o.get("name"), "a device's name")
        if name is None:
            raise SotError("a device without a name")
        cf = _fields(o)
        rack_id = _norm(o.get("rack"))
        rack = racks_by_id.get(rack_id) if rack_id is not None else None
        if rack_id is not None and rack is None:
            raise SotError(f"device {name} stands in a rack that is not the fabric's")
        position = _int(_norm(o.get("position")), f"device {name}'s position")
        serial = _text(o.get("serial"), f"device {name}'s serial")
        place = {k: v for k, v in (("rack", rack), ("position", position), ("serial", serial)) if v is not None}
        group = _text(cf.get("gpufabric_group"), f"device {name}'s group")
        if group is not None:
            index = _int(cf.get("gpufabric_index"), f"device {name}'s index")
            if index is None:
                raise SotError(f"server {name} has no gpufabric_index")
            _one_index(indexes, group, index, name)
            hosts.setdefault(group, []).append((index, {"name": name, **place}))
        elif rack is not None and position is not None:
            switches[name] = place
    site = dict(data.get("site") or {})
    site |= {"racks": racks, "switches": dict(sorted(switches.items()))}
    site.pop("cable_lengths", None)
    data["site"] = site
    result = PullResult(data, racks=len(racks), switches=len(switches), untagged=tagged.skipped)
    for group in data.get("server_groups") or []:
        listed = hosts.get(group.get("name"))
        if not listed:
            continue
        listed.sort(key=lambda h: h[0])
        group.pop("naming", None)
        group.pop("count", None)
        group.pop("start_index", None)
        group["hosts"] = [h for _, h in listed]
        result.servers += len(listed)
        result.groups.append(group["name"])
    # The lengths the positions give, then the cables recorded otherwise kept as measured.
    draft = build_plan(load_intent_text(yaml.safe_dump(data, sort_keys=False), PULLED))
    positional = {cable_label(p.prefix, link.number): link.length for p in draft.planes.values() for link in p.links}
    measured: dict[str, int] = {}
    for o in tagged.objects("dcim/cables"):
        label = _text(o.get("label"), "a cable's label")
        if label is None or label not in positional:
            continue
        length = metres(o.get("length"), o.get("length_unit"), label)
        if length is not None and length != positional[label]:
            measured[label] = length
    if measured:
        site["cable_lengths"] = dict(sorted(measured.items()))
    result.measured = len(measured)
    return result
