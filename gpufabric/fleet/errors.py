"""Why a command that reaches the switches cannot go ahead as asked. Library code raises these; the
command line alone turns them into messages and exit codes (2: nothing was changed)."""

from __future__ import annotations

from gpufabric.errors import GpufabricError


class PushRefusedError(GpufabricError):
    """The command cannot go ahead as asked, and nothing was changed. `option` names the command-line
    option at fault when one is (`--device`); `bad_value` marks an error in a value the user gave
    rather than in the command as a whole."""

    option: str | None = None
    bad_value: bool = False


class NoLabError(PushRefusedError):
    """The lab was asked for, and no lab of the fabric is up."""


class MissingLoginError(PushRefusedError):
    """The intent names no secret to log into the switches with."""


class UnknownSwitchError(PushRefusedError):
    option = "--device"
    bad_value = True


class EmptySelectionError(PushRefusedError):
    """No switch matches --plane/--device/--role."""


class RenderedFilesMissingError(PushRefusedError):
    """`--from DIR` holds no rendered file for a targeted switch."""

    bad_value = True
