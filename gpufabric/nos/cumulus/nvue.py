"""NVUE (Cumulus Linux 5.x) command lines and the pure functions that read their output.

Kept apart from the driver so the recorded-output tests exercise exactly the strings the driver sends.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from typing import Any

import yaml

from gpufabric.verify.yaml_block import load_block_yaml

WORKDIR = ".gpufabric"  # under the login's home: the candidate and the rollback point live here
CANDIDATE = f"{WORKDIR}/candidate.yaml"
ROLLBACK = f"{WORKDIR}/rollback.yaml"
# Which push an apply awaiting confirmation belongs to ("push-id start controller"). It only names the
# push: whether a confirm is pending is NVUE's to say (CONFIRM_STATUS), so a stale file means nothing.
PUSH_MARK = f"{WORKDIR}/pending-push"
STARTUP = "/etc/nvue.d/startup.yaml"

PREPARE = f"mkdir -p {WORKDIR} && chmod 700 {WORKDIR}"
DRAINED = f"{WORKDIR}/drained"  # who drained the switch (gpufabric.drivers.maintenance.DrainMark), while drained
# The drain marker (empty when the switch is not drained).
READ_DRAINED = f"cat {DRAINED} 2>/dev/null || true"
DETACH = "nv config detach"
DIFF = "nv config diff -o commands"
SHOW_APPLIED = "nv config show -r applied -o yaml"
# The rollback point is read into a file of its own, beside NVUE's confirm status, and kept (KEEP_ROLLBACK)
# only once no commit is pending; otherwise dropped (DROP_NEW_ROLLBACK).
SAVE_NEW_ROLLBACK = f"{SHOW_APPLIED} > {ROLLBACK}.new"
KEEP_ROLLBACK = f"mv -f {ROLLBACK}.new {ROLLBACK}"
DROP_NEW_ROLLBACK = f"rm -f {ROLLBACK}.new"
CONFIRM = "nv config apply --confirm-yes"
ABORT = "nv config apply --confirm-no"
# NVUE's own account of its confirm timer: the time left before it rolls the apply back. The switch's
# wall clock plays no part, so a clock step (NTP, an operator) neither ends nor extends a pending confirm.
CONFIRM_STATUS = "nv config apply --confirm-status"
READ_MARK = f"cat {PUSH_MARK} 2>/dev/null || true"
CLEAR_PENDING = f"rm -f {PUSH_MARK}"
RESTORE = f"nv config replace {ROLLBACK} && nv config apply -y"


def stage(merge: bool) -> str:
    """Put the uploaded candidate into a fresh pending revision (a stale pending one is dropped first)."""
    verb = "patch" if merge else "replace"
    return f"{DETACH} && nv config {verb} {CANDIDATE}"


def upload_and_stage(merge: bool) -> str:
    """One round trip: the working folder, the candidate (the command's stdin) written whole, then `stage`."""
    return f"{PREPARE} && cat > {CANDIDATE}.tmp && mv -f {CANDIDATE}.tmp {CANDIDATE} && {stage(merge)}"


def apply(revert_in: int | None) -> str:
    """Apply the pending revision; with `revert_in`, NVUE rolls it back unless `--confirm-yes` comes in time."""
    if revert_in:
        return f"nv config apply --confirm {int(revert_in)}s -y"
    return "nv config apply -y"


def write_mark(line: str) -> str:
    """Name the push whose apply awaits confirmation (written before the apply, so a session cut right
    after it still leaves the name beside NVUE's timer)."""
    return f"printf '%s\\n' {shlex.quote(line)} > {PUSH_MARK}.tmp && mv -f {PUSH_MARK}.tmp {PUSH_MARK}"


_CLOCK = re.compile(r"\b(?:(\d+):)?(\d{1,2}):(\d{2})\b")  # [H:]MM:SS
_UNIT = re.compile(r"(\d+)\s*(h|hours?|m|min|minutes?|s|secs?|seconds?)\b", re.IGNORECASE)
_SECONDS = {"h": 3600, "m": 60, "s": 1}
_NONE = re.compile(r"\b(no|none|not)\b", re.IGNORECASE)


def confirm_left(output: str) -> int | None:
    """Seconds left on NVUE's confirm timer, from `nv config apply --confirm-status`; None when NVUE
    reports no apply awaiting confirmation. NVIDIA's reference says the option shows the time left
    before the automatic rollback without giving its layout: this reads a time written as [H:]MM:SS
    or with units (`1m 30s`, `90 seconds`), or a bare number of seconds."""
    text = output.strip()
    if m := _CLOCK.search(text):
        hours, minutes, seconds = (int(g or 0) for g in m.groups())
        return hours * 3600 + minutes * 60 + seconds or None
    if units := _UNIT.findall(text):
        return sum(int(n) * _SECONDS[u[0].lower()] for n, u in units) or None
    numbers = re.findall(r"\b\d+\b", text)
    if _NONE.search(text) or len(numbers) != 1:  # "no pending confirm (revision 12)": a number, but no time
        return None
    return int(numbers[0]) or None


def diff_text(output: str) -> str:
    """`nv config diff -o commands`, as the change list; NVUE prints nothing (or an empty list) when equal."""
    lines = [ln.rstrip() for ln in output.splitlines() if ln.strip() and ln.strip() not in ("[]", "{}")]
    return "\n".join(lines)


# libyaml's safe loader where PyYAML was built with it: 5-7x faster on a fabric switch's candidate
# (600-2,100 lines: 11-15 ms against 56-106 ms). The same YAML 1.1 rules and the same safe constructors.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(text: str) -> Any:
    """YAML text as PyYAML's safe loader reads it. The block-style text NVUE and the renderer write goes
    through the line reader (0.8 ms for a 2,100-line candidate against libyaml's 11 ms: a push checks every
    switch's candidate, validate reads every switch's configuration); anything else, PyYAML reads."""
    read = load_block_yaml(text)
    if read is not None:
        return read[0]
    _no_aliases(text)
    return yaml.load(text, Loader=_LOADER)  # a safe loader either way


def _no_aliases(text: str) -> None:
    """Refuse YAML aliases: neither NVUE nor the renderer writes them, and a few lines of them make a tree
    of billions of nodes for whoever walks it (a switch's answer is compared with its candidate)."""
    for token in yaml.scan(text, Loader=_LOADER):
        if isinstance(token, yaml.AliasToken):
            mark = token.start_mark
            raise ValueError(f"line {mark.line + 1}: a YAML alias (*{token.value}); NVUE configuration holds none")


def documents(text: str) -> list[dict[str, Any]]:
    """A candidate as NVUE's startup-file documents (`- header:` / `- set:` / `- unset:`)."""
    data = _load(text)
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ValueError("an NVUE configuration file is a YAML list of documents (- header: / - set: ...)")
    return data


# A candidate's digest -> its users, for candidates read whole already. A push checks each switch's candidate
# when it previews the change and again when it stages it, minutes apart on another session: the second check
# reuses the first's reading. Bounded: a few hundred bytes a switch, twice the largest fleet, then it starts
# again.
_READ_USERS: dict[bytes, frozenset[str]] = {}
_READ_USERS_MAX = 32_768


def candidate_users(text: str) -> frozenset[str]:
    """The users of a candidate that is an NVUE configuration file (`documents` raises when it is not)."""
    key = hashlib.blake2b(text.encode(), digest_size=16).digest()
    found = _READ_USERS.get(key)
    if found is None:
        found = frozenset(users(documents(text)))
        if len(_READ_USERS) >= _READ_USERS_MAX:
            _READ_USERS.clear()
        _READ_USERS[key] = found
    return found


def users(docs: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for doc in docs:
        tree = doc.get("set") or {}
        found |= set(((tree.get("system") or {}).get("aaa") or {}).get("user") or {})
    return found


def set_tree(text: str) -> dict[str, Any]:
    """The configuration a document list (or NVUE's single-tree output) sets: `set` trees merged in order."""
    data = _load(text)
    if isinstance(data, dict):
        return data.get("set", data) if set(data) <= {"set", "header"} else data
    tree: dict[str, Any] = {}
    for doc in data if isinstance(data, list) else []:
        if isinstance(doc, dict) and isinstance(doc.get("set"), dict):
            _merge(tree, doc["set"])
    return tree


def _merge(into: dict[str, Any], tree: dict[str, Any]) -> None:
    for key, value in tree.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def tree_diff(applied: dict[str, Any], candidate: dict[str, Any]) -> str:
    """What would change, as the `nv set` / `nv unset` lines taking `applied` to `candidate` (the form
    `nv config diff -o commands` gives a push's preview); empty when equal. Computed from the trees
    alone: writing both out as YAML to diff them cost four times the parse (validate reads every switch)."""
    if applied == candidate:
        return ""
    return "\n".join(_commands(applied, candidate, ()))


def _commands(old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...]) -> list[str]:
    lines: list[str] = []
    for key in sorted(set(old) | set(new), key=str):
        here = (*path, str(key))
        if key not in new:
            lines.append("nv unset " + " ".join(here))
            continue
        value = new[key]
        if key in old and old[key] == value:
            continue
        if isinstance(value, dict):
            before = old.get(key)
            lines += _commands(before if isinstance(before, dict) else {}, value, here) or ["nv set " + " ".join(here)]
        else:
            lines.append("nv set " + " ".join(here) + f" {_scalar(value)}")
    return lines


def _scalar(value: Any) -> str:
    """A leaf as NVUE's command line writes it (booleans as on/off's YAML spelling, lists comma-separated)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(_scalar(v) for v in value)
    return str(value)
