"""What a name, a GUID or a path may be before it reaches a file the InfiniBand tools read.

OpenSM's files have no quoting for most fields: partitions.conf splits a line on `=`, `,`, `:` and
`;`, opensm.conf takes a key and the rest of its line, the node-name map a GUID and a name in double
quotes with no escape for a quote, and a newline anywhere is one more line of the file. So patterns,
not escaping, are the defence: the design file refuses what does not match (with a located error),
and every renderer checks each value again on its way into a line (defence in depth: the planner
and the intent are not the only callers), refusing rather than writing a line that means more.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpufabric.ib.errors import IbError, Problem
from gpufabric.intent.errors import printable
from gpufabric.intent.types import NAME_PATTERN, PATTERN_HINTS

# Unicast LIDs run from 0x0001 to 0xBFFF: with LMC 0 every adapter port and every switch takes one,
# so a subnet holds at most this many of them together.
MAX_LIDS = 0xBFFF
MAX_GUID = (1 << 64) - 1  # GUIDs are EUI-64: sixteen hex digits
# A node description (what every tool shows as the node's name) is a 64-byte attribute.
NODE_DESCRIPTION_BYTES = 64

# Fabric and partition names: the intent's own name pattern (lower-case, digits, '-', at most 31).
NAME = re.compile(NAME_PATTERN)
# A host in a node description "<host> <adapter>": a DNS label short enough that the description
# (with a 15-character adapter name) fits in 64 bytes.
HOST_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$"
PATTERN_HINTS.setdefault(
    HOST_PATTERN,
    "a host name: lower-case letters, digits and '-', not at either end, at most 48 (the node description "
    "'<host> <adapter>' holds 64 bytes)",
)
HOST = re.compile(HOST_PATTERN)
# A planned node description: a switch's name, or "<host> <adapter>" (adapters are Linux-style names).
NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(?: [A-Za-z0-9_.-]+)?$")
# OpenSM's member keywords and the default partition's name: as a tenant's name they would read as one.
RESERVED_PARTITIONS = frozenset({"default", "all", "all_cas", "all_switches", "all_routers", "self"})
# An absolute path OpenSM takes as the rest of an opensm.conf line: no space, quote, '#' or control.
SM_PATH = re.compile(r"^/[A-Za-z0-9_.+/-]{0,4000}$")
# Further opensm.conf options (`SmSettings.extra`): a key and a one-word value.
OPTION_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
OPTION_VALUE = re.compile(r"^[A-Za-z0-9_.,:/+-]{1,4000}$")


def _refuse(where: str, what: str, value: object, fix: str) -> IbError:
    shown = printable(str(value))
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return IbError([Problem(where, f"{what} {shown!r} cannot be written into a line of OpenSM's files", fix)])


def fabric_name(value: str, where: str = "design.name") -> str:
    if not NAME.match(value):
        raise _refuse(where, "fabric name", value, f"write {PATTERN_HINTS[NAME_PATTERN]}")
    return value


def partition_name(value: str, where: str) -> str:
    if not NAME.match(value):
        raise _refuse(where, "partition name", value, f"write {PATTERN_HINTS[NAME_PATTERN]}")
    if value.lower() in RESERVED_PARTITIONS:
        raise _refuse(where, "partition name", value, "choose another name: OpenSM reads this one as a keyword")
    return value


def node_description(value: str, where: str) -> str:
    if not NODE.match(value) or len(value.encode()) > NODE_DESCRIPTION_BYTES:
        raise _refuse(
            where,
            "node description",
            value,
            "name hosts with lower-case letters, digits and '-', adapters like mlx5_0 (64 bytes in all)",
        )
    return value


def guid(value: int, where: str) -> str:
    """`value` as OpenSM's files write a GUID: 0x and sixteen hex digits."""
    if not 0 < value <= MAX_GUID:
        raise _refuse(where, "GUID", hex(value), "discover the fabric again: a GUID has sixteen hex digits, not zero")
    return f"0x{value:016x}"


def sm_path(value: Path, where: str = "sm-dir") -> str:
    text = str(value)
    if not SM_PATH.match(text):
        raise _refuse(where, "path", text, "give a folder whose absolute path has letters, digits and _ . + / - only")
    return text


def option(key: str, value: object) -> tuple[str, str]:
    text = str(value)
    if not OPTION_KEY.match(key) or not OPTION_VALUE.match(text):
        raise _refuse("opensm.conf", f"option {key!r} with value", text, "give a key and a one-word value")
    return key, text
