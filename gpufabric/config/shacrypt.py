"""SHA-crypt password hashes ($5$ SHA-256, $6$ SHA-512), as switches store local users.

Written from Ulrich Drepper's "Unix crypt using SHA-256 and SHA-512" specification
because Python's `crypt` module is deprecated and gone in 3.13, and switches accept
exactly these strings (EOS `secret sha512`, NVUE `hashed-password`, NX-OS `password 5`).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

ALPHABET = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
ROUNDS = 5000  # the specification's default: a hash with this many rounds carries no rounds= field
MIN_ROUNDS, MAX_ROUNDS = 1000, 999_999_999  # the specification clamps rounds= to this range

# The specification's byte order for the final encoding: groups of three digest bytes.
_ORDER: dict[str, tuple[list[tuple[int, ...]], tuple[int, ...]]] = {
    "sha512": (
        [(i, i + 21, i + 42)[i % 3 :] + (i, i + 21, i + 42)[: i % 3] for i in range(21)],
        (63,),
    ),
    "sha256": (
        [
            (0, 10, 20),
            (21, 1, 11),
            (12, 22, 2),
            (3, 13, 23),
            (24, 4, 14),
            (15, 25, 5),
            (6, 16, 26),
            (27, 7, 17),
            (18, 28, 8),
            (9, 19, 29),
        ],
        (31, 30),
    ),
}
_PREFIX = {"sha512": "$6$", "sha256": "$5$"}


def _encode(value: int, chars: int) -> str:
    out = []
    for _ in range(chars):
        out.append(ALPHABET[value & 0x3F])
        value >>= 6
    return "".join(out)


def _repeat(block: bytes, length: int) -> bytes:
    return (block * (length // len(block) + 1))[:length]


def sha_crypt(password: str, salt: str, algorithm: str = "sha512", rounds: int = ROUNDS) -> str:
    """The crypt(3) string for `password` with `salt` (up to 16 characters of ALPHABET) and `rounds`."""
    rounds = min(max(rounds, MIN_ROUNDS), MAX_ROUNDS)
    new: Callable[..., hashlib._Hash] = getattr(hashlib, algorithm)
    p, s = password.encode(), salt[:16].encode()
    b = new(p + s + p).digest()
    a = new(p + s)
    a.update(_repeat(b, len(p)))
    n = len(p)
    while n:
        a.update(b if n & 1 else p)
        n >>= 1
    c = a.digest()
    p_str = _repeat(new(p * len(p)).digest(), len(p))
    s_str = _repeat(new(s * (16 + c[0])).digest(), len(s))
    for r in range(rounds):
        h = new(p_str if r & 1 else c)
        if r % 3:
            h.update(s_str)
        if r % 7:
            h.update(p_str)
        h.update(c if r & 1 else p_str)
        c = h.digest()
    groups, tail = _ORDER[algorithm]
    text = "".join(_encode((c[x] << 16) | (c[y] << 8) | c[z], 4) for x, y, z in groups)
    if len(tail) == 1:
        text += _encode(c[tail[0]], 2)
    else:
        text += _encode((c[tail[0]] << 8) | c[tail[1]], 3)
    spec = "" if rounds == ROUNDS else f"rounds={rounds}$"
    return f"{_PREFIX[algorithm]}{spec}{salt[:16]}${text}"


def salt_for(*parts: str, key: str | None = None) -> str:
    """A salt that is the same on every render of the same fabric and user, unique across them.

    Deterministic so that rendering twice gives byte-identical files (golden tests, an empty diff on
    a second push). With `key` (a secret the user holds) it is an HMAC of the names, which nobody
    without the key can predict, so no dictionary can be computed ahead for a fabric and user.
    Without it, the names alone decide it: stable, but public.
    """
    message = ":".join(("gpufabric", *parts)).encode()
    if key is None:
        digest = hashlib.sha256(message).digest()
    else:
        digest = hmac.new(key.encode(), message, hashlib.sha256).digest()
    return "".join(ALPHABET[x & 0x3F] for x in digest[:16])
