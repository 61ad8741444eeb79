"""Servers the tests start on 127.0.0.1: a free port to give one, and whether it answers ready yet."""

from __future__ import annotations

import socket
import urllib.request


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def http_ready(port: int, path: str = "/-/ready") -> bool:
    """The server on 127.0.0.1:`port` answers `path` with 200 (Prometheus's and Alertmanager's readiness)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status == 200
    except OSError:
        return False
