"""Problems found in an intent, located by file, line and field.

The classes live on the ground floor (gpufabric.errors), where the readers of outside input can
raise them too; the intent's package names them here for its callers."""

from __future__ import annotations

from gpufabric.errors import MAX_SHOWN, IntentError, Path, Problem, dotted, printable

__all__ = ["MAX_SHOWN", "IntentError", "Path", "Problem", "dotted", "printable"]
