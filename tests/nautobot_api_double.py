"""A TEST DOUBLE of Nautobot's REST API: an HTTP server on loopback keeping objects in memory, answering only
the calls `gpufabric sot` makes, written from Nautobot's REST API documentation (2.x/3.x), not from a
real Nautobot (the real one runs in tests/sot/test_sot_nautobot.py when it is installed):

- `GET /api/<app>/<model>/?limit=N&offset=M&depth=0[&tags=NAME]`: a page `{count, next, previous,
  results}`, references as `{"id", "object_type", "url"}` (depth 0), `tags` as such references;
- `POST`, `PATCH`, `DELETE /api/<app>/<model>/` with a list: bulk create (ids made here), update
  (merged), delete (by id).

`drop_tag_filter` makes it answer as a proxy that drops the `tags=` query would: every object,
tagged or not. It records every request (method, path) in `calls`.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REFERENCES = {"status", "location", "rack", "role", "platform", "device_type", "device", "manufacturer",
              "location_type", "namespace", "ip_address", "interface", "primary_ip4", "parent"}  # fmt: skip


@dataclass
class Store:
    objects: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # endpoint -> id -> object
    drop_tag_filter: bool = False
    calls: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, endpoint: str, **fields: Any) -> str:
        ident = str(uuid.uuid4())
        self.objects.setdefault(endpoint, {})[ident] = {"id": ident, **fields}
        return ident

    def tag_id(self, name: str) -> str | None:
        return next((i for i, o in self.objects.get("extras/tags", {}).items() if o.get("name") == name), None)

    def shown(self, o: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for key, value in o.items():
            if key in REFERENCES and isinstance(value, str):
                out[key] = {"id": value, "object_type": "x.y", "url": f"/api/x/{value}/"}
            elif key == "tags":
                out[key] = [{"id": t, "object_type": "extras.tag", "url": f"/api/extras/tags/{t}/"} for t in value]
            else:
                out[key] = value
        return out

    def handle(self, method: str, raw: str, body: Any) -> tuple[int, Any]:
        parts = urllib.parse.urlsplit(raw)
        self.calls.append((method, parts.path))
        endpoint = parts.path.removeprefix("/api/").strip("/")
        table = self.objects.setdefault(endpoint, {})
        if method == "GET":
            query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
            found = list(table.values())
            if "tags" in query and not self.drop_tag_filter:
                tag = self.tag_id(query["tags"])
                found = [o for o in found if tag in o.get("tags", [])]
            limit, offset = int(query.get("limit", 50)), int(query.get("offset", 0))
            page = found[offset : offset + limit]
            more = offset + limit < len(found)
            query["offset"] = str(offset + limit)
            link = f"http://double{parts.path}?{urllib.parse.urlencode(query)}" if more else None
            return 200, {"count": len(found), "next": link, "previous": None, "results": [self.shown(o) for o in page]}
        if method == "POST":
            made = []
            for item in body:
                ident = self.add(endpoint, **item)
                made.append(self.shown(table[ident]))
            return 201, made
        if method == "PATCH":
            for item in body:
                table[item["id"]].update(item)
            return 200, [self.shown(table[item["id"]]) for item in body]
        if method == "DELETE":
            for item in body:
                table.pop(item["id"], None)
            return 204, None
        return 405, {"detail": "method not allowed"}


class _Handler(BaseHTTPRequestHandler):
    store: Store
    base: str

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        with self.store.lock:
            code, answer = self.store.handle(self.command, self.path, body)
        data = b"" if answer is None else json.dumps(answer).replace("http://double", self.base).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = _serve  # noqa: N815 (http.server's names)

    def log_message(self, *args: Any) -> None:
        pass


def fresh_store() -> Store:
    """What a new Nautobot holds that gpufabric does not make: the statuses and the Global namespace."""
    store = Store()
    store.add("extras/statuses", name="Active")
    store.add("extras/statuses", name="Connected")
    store.add("ipam/namespaces", name="Global")
    return store


@contextmanager
def nautobot_double(store: Store) -> Iterator[str]:
    """The double serving `store` on 127.0.0.1 (a free port); yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    server.RequestHandlerClass = type("Handler", (_Handler,), {"store": store, "base": base})
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
