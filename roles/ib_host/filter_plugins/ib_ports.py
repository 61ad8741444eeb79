"""`ib_host_read.results | gpufabric_ib_ports`: what the role's shell read from each adapter's sysfs
(`link_layer=`, `state=`, `pkey <index>=<value>`, `netdev=` lines, or `missing`) as one mapping per
device: rail, missing, link_layer, state, netdev (its IPoIB interface), pkeys (value -> index).
`ports | gpufabric_ib_pkey_indexes(devices, pkey)`: the index of `pkey` in each device's table (None
where it is not)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def ib_ports(results: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        lines: list[str] = list(r.get("stdout_lines") or [])
        port: dict[str, Any] = {
            "rail": r["item"]["rail"],
            "missing": lines == ["missing"],
            "link_layer": "",
            "state": "",
            "netdev": "",
            "pkeys": {},
        }
        for line in lines:
            key, _eq, value = line.partition("=")
            if key in ("link_layer", "state", "netdev") and not port[key]:
                port[key] = value.strip()
            elif key.startswith("pkey "):
                port["pkeys"].setdefault(value.strip().lower(), int(key.split()[1]))
        out[r["item"]["device"]] = port
    return out


def pkey_indexes(ports: Mapping[str, Mapping[str, Any]], devices: Iterable[str], pkey: str) -> list[int | None]:
    return [ports[d]["pkeys"].get(pkey.lower()) for d in devices]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"gpufabric_ib_ports": ib_ports, "gpufabric_ib_pkey_indexes": pkey_indexes}
