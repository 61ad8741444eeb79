"""Arista EOS's reboot and image upgrade, as methods of its NAPALM driver (a mixin of GpufabricEOSDriver).

Arista's standard upgrade ("Upgrade/Downgrade Overview", EOS user manual): copy the SWI to flash:, check it
(`verify /sha512 flash:<image>`), point the boot-config at it (`boot system flash:<image>`), reload (`reload
now`, or `reload fast-boot now` where Accelerated Software Upgrade is offered). The previous SWI stays on
flash: and is what `boot system` names again to go back. Not shown on a real switch (docs/not-shown.md).
"""

from __future__ import annotations

import contextlib
from typing import Any

from napalm.eos.eos import EOSDriver

from gpufabric.drivers.images import ImageStepError, Installed, image_name, image_url, sha512_of

# Arista EOS User Manual, "Upgrades and Downgrades" (copy the SWI to flash:, `verify /sha512`, `boot system`,
# `reload`; `reload fast-boot` for Accelerated Software Upgrade) and "show boot-config". No model here checks
# these exec commands (docs/not-shown.md); `boot system` is configuration AVD's schema does not describe.
COPY = "copy"
VERIFY_SHA512 = "verify /sha512"
BOOT_SYSTEM = "boot system"
SHOW_BOOT = "show boot-config"
RELOADS = {"fast": "reload fast-boot now", "cold": "reload now"}


def _text(answer: Any) -> str:
    """eAPI's text answer of one command (`{"output": ...}`)."""
    return str(answer.get("output", "")) if isinstance(answer, dict) else str(answer)


class EosUpgrade(EOSDriver):  # type: ignore[misc]
    """The reboot and upgrade steps `nornir restart` and `nornir upgrade` call (nornir_tasks/lifecycle.py)."""

    def stage_image(self, url: str, name: str) -> None:
        self._run_commands([f"{COPY} {image_url(url)} flash:{image_name(name)}"], encoding="text")

    def image_checksum(self, name: str) -> str:
        answers = self._run_commands([f"{VERIFY_SHA512} flash:{image_name(name)}"], encoding="text")
        found = sha512_of(_text(answers[-1]))
        if found is None:
            raise ImageStepError(f"{self.hostname}: `verify /sha512 flash:{name}` printed no checksum")
        return found

    def running_image(self) -> str:
        boot = self._run_commands([SHOW_BOOT], encoding="json")[-1]
        image = str(boot.get("softwareImage", "")) if isinstance(boot, dict) else ""
        return image.removeprefix("flash:/").removeprefix("flash:")

    def install_image(self, name: str) -> Installed:
        previous = self.running_image()
        self._run_commands(["configure", f"{BOOT_SYSTEM} flash:{image_name(name)}", "end"], encoding="text")
        return Installed(previous)

    def reboot(self, mode: str = "cold") -> bool:
        command = RELOADS.get(mode)
        if command is None:
            raise ValueError(f"EOS reboots fast or cold, not {mode!r}")
        with contextlib.suppress(OSError, ConnectionError):  # eAPI's connection drops as the switch goes down
            self._run_commands([command], encoding="text")
        return False

    def boot_previous(self, previous: str) -> bool:
        self._run_commands(["configure", f"{BOOT_SYSTEM} flash:{image_name(previous)}", "end"], encoding="text")
        return False

    def keep_image(self, name: str) -> None:
        """Nothing to do: boot-config already names the new image."""
