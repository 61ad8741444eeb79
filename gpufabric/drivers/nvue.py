"""NVUE (Cumulus Linux 5.x) command lines and the pure functions that read their output.

Kept apart from the driver so the recorded-output tests exercise exactly the strings the driver sends.
"""

from __future__ import annotations

import shlex
from typing import Any

import yaml

WORKDIR = ".gpufabric"  # under the login's home: the candidate and the rollback point live here
CANDIDATE = f"{WORKDIR}/candidate.yaml"
ROLLBACK = f"{WORKDIR}/rollback.yaml"
DEADLINE = f"{WORKDIR}/confirm-deadline"  # epoch seconds on the switch's clock; present while a commit is pending
STARTUP = "/etc/nvue.d/startup.yaml"

PREPARE = f"mkdir -p {WORKDIR} && chmod 700 {WORKDIR}"
DETACH = "nv config detach"
DIFF = "nv config diff -o commands"
SHOW_APPLIED = "nv config show -r applied -o yaml"
SAVE_ROLLBACK = f"{SHOW_APPLIED} > {ROLLBACK}.tmp && mv -f {ROLLBACK}.tmp {ROLLBACK}"
CONFIRM = "nv config apply --confirm-yes"
ABORT = "nv config apply --confirm-no"
PENDING = f"cat {DEADLINE} 2>/dev/null || echo 0; date +%s"
CLEAR_PENDING = f"rm -f {DEADLINE}"
RESTORE = f"nv config replace {ROLLBACK} && nv config apply -y"


def stage(merge: bool) -> str:
    """Put the uploaded candidate into a fresh pending revision (a stale pending one is dropped first)."""
    verb = "patch" if merge else "replace"
    return f"{DETACH} && nv config {verb} {CANDIDATE}"


def apply(revert_in: int | None) -> str:
    """Apply the pending revision; with `revert_in`, NVUE rolls it back unless `--confirm-yes` comes in time."""
    if revert_in:
        return f"nv config apply --confirm {int(revert_in)}s -y"
    return "nv config apply -y"


def arm_deadline(revert_in: int) -> str:
    return f"echo $(( $(date +%s) + {int(revert_in)} )) > {shlex.quote(DEADLINE)}"


def pending(output: str) -> bool:
    """`PENDING`'s output: the recorded deadline and the switch's clock."""
    values = [int(v) for v in output.split() if v.strip().lstrip("-").isdigit()]
    return len(values) >= 2 and values[0] > values[1]


def diff_text(output: str) -> str:
    """`nv config diff -o commands`, as the change list; NVUE prints nothing (or an empty list) when equal."""
    lines = [ln.rstrip() for ln in output.splitlines() if ln.strip() and ln.strip() not in ("[]", "{}")]
    return "\n".join(lines)


def documents(text: str) -> list[dict[str, Any]]:
    """A candidate as NVUE's startup-file documents (`- header:` / `- set:` / `- unset:`)."""
    data = yaml.safe_load(text)
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ValueError("an NVUE configuration file is a YAML list of documents (- header: / - set: ...)")
    return data


def users(docs: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for doc in docs:
        tree = doc.get("set") or {}
        found |= set(((tree.get("system") or {}).get("aaa") or {}).get("user") or {})
    return found


def set_tree(text: str) -> dict[str, Any]:
    """The configuration a document list (or NVUE's single-tree output) sets: `set` trees merged in order."""
    data = yaml.safe_load(text)
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
    """What would change, as a unified diff of the two trees written the same way; empty when equal."""
    import difflib

    def lines(tree: dict[str, Any]) -> list[str]:
        return yaml.safe_dump(tree, sort_keys=True, default_flow_style=False).splitlines()

    if applied == candidate:
        return ""
    return "\n".join(difflib.unified_diff(lines(applied), lines(candidate), "applied", "candidate", lineterm="", n=1))
