"""A secret held in memory that no repr, str, log line or JSON dump shows."""

from __future__ import annotations


class Hidden:
    """A password or private key on its way to a driver: what `inventory.dict()`, a repr, a log line or a
    JSON dump shows is stars; only the connection plugin and the SSH transport reveal the text."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'********'"

    __str__ = __repr__


def reveal(value: object) -> str | None:
    """The text behind a Hidden (or a plain string, or None), for the one call that must send it."""
    if isinstance(value, Hidden):
        return value.reveal()
    return None if value is None else str(value)
