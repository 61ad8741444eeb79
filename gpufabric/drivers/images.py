"""What every OS's upgrade steps share: an image's name and where a switch fetches it from, held to a
pattern before any of it reaches a switch's command line, and a SHA-512 read back out of a command's answer.

The steps themselves are each OS's own (gpufabric/nos/<os>/upgrade.py, a mixin of its NAPALM driver):
stage the image, read its checksum on the switch, install it as the next boot, reboot, and boot the previous
image again when the new one does not hold (docs/upgrade.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gpufabric.drivers.transport import CommandFailedError, Output
from gpufabric.errors import GpufabricError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
# A URL a switch fetches from: a scheme its copy command takes, then only characters no shell or CLI reads.
_URL = re.compile(r"(https?|ftp|tftp|scp|sftp)://[A-Za-z0-9._~:/@%+=,-]{1,1000}")
_SHA512 = re.compile(r"(?<![0-9a-fA-F])([0-9a-fA-F]{128})(?![0-9a-fA-F])")


class ImageInputError(ValueError, GpufabricError):
    """An image name, URL or checksum that cannot be sent to a switch as it is."""


class ImageStepError(GpufabricError):
    """A switch's answer to an upgrade step is not what the step needs (no checksum, no image named)."""


def image_name(name: str) -> str:
    """A file name on the switch's flash: letters, digits, `._+-`, no folder, no leading dot."""
    if not _NAME.fullmatch(name):
        raise ImageInputError(f"image name {name[:60]!r}: use letters, digits and ._+- only (no folder)")
    return name


def image_url(url: str) -> str:
    """Where the switch fetches the image: http(s), ftp, tftp, scp or sftp, with no space, quote or `;`."""
    if not _URL.fullmatch(url):
        raise ImageInputError(
            f"image URL {url[:80]!r}: give an http(s)/ftp/tftp/scp/sftp URL of letters, digits and ._~:/@%+=,-"
        )
    return url


def sha512_of(text: str) -> str | None:
    """The one SHA-512 (128 hex digits) a checksum command printed, lower-case; None: none, or several."""
    found = {m.lower() for m in _SHA512.findall(text)}
    return found.pop() if len(found) == 1 else None


@dataclass(frozen=True)
class Installed:
    """What installing an image left: the image the switch ran before (what a fallback boots), and whether
    the install reboots the switch by itself (NX-OS's `install all`)."""

    previous: str
    reboots: bool = False


@dataclass(frozen=True)
class Restarted:
    """A reboot that returned once the switch was back (FRR's daemons restarted), with what the restart
    reported on its way: each note one of the driver's own sentences, never a line the switch made up."""

    notes: tuple[str, ...] = ()

    def __bool__(self) -> bool:  # as a reboot's True: back already, nothing to wait for
        return True


def send_reboot(attempt: Callable[[str], Output], command: str) -> None:
    """A reboot's command on a shell-like session: refused (a non-zero exit) is an error; the session
    dropping under it is the reboot under way."""
    try:
        out = attempt(command)
    except (OSError, EOFError):
        return
    except Exception as exc:  # the transport's own "session closed" while the switch goes down
        words = str(exc).lower()
        if "closed" in words or "eof" in words or "reset" in words:
            return
        raise
    if out.rc not in (0, -1):
        raise CommandFailedError(command, out)
