"""The Debian mirror this machine's apt uses, read from its sources at run time.

Containers get packages through this mirror (forwarded by the lab), so no registry host name is
ever written into the repository or an image: a machine with another mirror builds with that one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from gpufabric.errors import GpufabricError
from gpufabric.inputs import MiB, read_text

APT_DIR = Path("/etc/apt")


class MirrorError(GpufabricError):
    pass


@dataclass(frozen=True)
class Mirror:
    url: str  # as apt has it, e.g. scheme://host/debian
    suite: str

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def port(self) -> int:
        parts = urlsplit(self.url)
        return parts.port or (443 if parts.scheme == "https" else 80)


def _deb822_entries(text: str) -> list[dict[str, str]]:
    entries = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[0].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if fields:
            entries.append(fields)
    return entries


def _one_line_entries(text: str) -> list[dict[str, str]]:
    entries = []
    for line in text.splitlines():
        words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb":
            entries.append({"types": "deb", "uris": words[1], "suites": words[2], "components": " ".join(words[3:])})
    return entries


def entries(apt_dir: Path = APT_DIR) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    main = apt_dir / "sources.list"
    if main.is_file():
        found += _one_line_entries(_apt_file(main))
    parts = apt_dir / "sources.list.d"
    for path in sorted(parts.glob("*.list")) if parts.is_dir() else []:
        found += _one_line_entries(_apt_file(path))
    for path in sorted(parts.glob("*.sources")) if parts.is_dir() else []:
        found += [e for e in _deb822_entries(_apt_file(path)) if e.get("enabled", "yes") != "no"]
    return found


def _apt_file(path: Path) -> str:
    return read_text(path, what="an apt sources file", max_bytes=MiB)


def debian_mirror(suite: str, apt_dir: Path = APT_DIR) -> Mirror:
    """The first `deb` source carrying `suite` with the main component (not the security archive)."""
    for entry in entries(apt_dir):
        if "deb" not in entry.get("types", "").split() or suite not in entry.get("suites", "").split():
            continue
        if "main" not in entry.get("components", "").split():
            continue
        for uri in entry.get("uris", "").split():
            if urlsplit(uri).scheme in ("http", "https"):
                return Mirror(uri.rstrip("/"), suite)
    raise MirrorError(
        f"no http(s) apt source for '{suite} main' in {apt_dir}/sources.list or sources.list.d: "
        "the host containers install packages through this machine's Debian mirror"
    )


def release() -> str:
    """This machine's Debian codename; the containers run the same release."""
    for line in read_text("/etc/os-release", what="os-release(5)", max_bytes=64 * 1024).splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip().strip('"')
    raise MirrorError("/etc/os-release names no VERSION_CODENAME: the host containers need a Debian machine")
