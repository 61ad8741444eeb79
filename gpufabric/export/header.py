"""What an export's header comment may say about outside text (the intent's file name): one line, printable.

A file name may hold any byte but `/` and NUL: a newline in it ended the comment of topology.conf and wrote
the rest as a line of its own (`SwitchName=...`). Every header names the file through `comment_text`.
"""

from __future__ import annotations

from gpufabric.intent.errors import printable


def comment_text(text: str) -> str:
    """`text` with every control character, line or paragraph separator (and an undecodable byte of a file
    name) written as a backslash escape: it stays inside the one comment line of any export format."""
    return printable(text)
