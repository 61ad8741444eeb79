"""Two intents compared: what a change of intent does to the plan and to every switch's configuration.

`load_side` reads one side (a file, or REV:PATH as git holds it); `compare` plans both and renders
every switch's configuration with secrets as references (never their values) to diff them.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpufabric.inputs import InputError, git_blob
from gpufabric.intent import load_intent
from gpufabric.intent.errors import Problem
from gpufabric.intent.loader import LoadedIntent, load_intent_text
from gpufabric.plan import Plan
from gpufabric.plan.diff import PlanDiff
from gpufabric.yaml_lines import MAX_BYTES

_REVISION = re.compile(r"(?P<rev>[A-Za-z0-9][A-Za-z0-9._/~^@{}-]{0,99}):(?P<path>[^\0]+)")


def load_side(spec: str) -> LoadedIntent:
    """An intent file, or REV:PATH for the file as git holds it at that revision.

    A spec of the form REV:PATH (a letter or digit first, then a colon) is always read from git's
    object store, never from a file in the working tree that happens to have that name: a change that
    adds such a file must not decide what the CI gate compares against. A file whose name has a colon
    is named as a path, ./NAME."""
    m = _REVISION.fullmatch(spec)
    if m is None:
        return load_intent(spec)
    try:
        text = git_blob(m["rev"], m["path"], what="an intent file", max_bytes=MAX_BYTES)
    except InputError as exc:
        if not Path(spec).exists():
            raise
        hint = f"{exc.problems[0].hint}; to compare the file named {spec} instead, write ./{spec}"
        raise InputError(spec, [Problem((), exc.problems[0].message, hint)]) from None
    return load_intent_text(text, spec)


def compare(old: Plan, new: Plan) -> PlanDiff:
    from gpufabric.config.batch import config_texts  # rendering: loaded only when two plans are compared
    from gpufabric.config.context import LinkIndex
    from gpufabric.config.secrets import ReferenceHasher
    from gpufabric.plan.diff import plan_diff

    texts = []
    for plan in (old, new):
        index = LinkIndex(plan, ReferenceHasher(plan.intent.fabric.name, {}))  # references, never secrets
        texts.append(config_texts(plan, index, [d.name for d in plan.devices()]))
    return plan_diff(old, new, texts[0], texts[1])
