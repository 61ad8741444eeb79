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


def _text(answer: Any) -> str:
    """eAPI's text answer of one command (`{"output": ...}`)."""
    return str(answer.get("output", "")) if isinstance(answer, dict) else str(answer)


class EosUpgrade(EOSDriver):  # type: ignore[misc]
    """The reboot and upgrade steps `nornir restart` and `nornir upgrade` call (nornir_tasks/lifecycle.py)."""

    def stage_image(self, url: str, name: str) -> None:
        self._run_commands([f"copy {image_url(url)} flash:{image_name(name)}"], encoding="text")

    def image_checksum(self, name: str) -> str:
        answers = self._run_commands([f"verify /sha512 flash:{image_name(name)}"], encoding="text")
        found = sha512_of(_text(answers[-1]))
        if found is None:
            raise ImageStepError(f"{self.hostname}: `verify /sha512 flash:{name}` printed no checksum")
        return found

    def running_image(self) -> str:
        boot = self._run_commands(["show boot-config"], encoding="json")[-1]
        image = str(boot.get("softwareImage", "")) if isinstance(boot, dict) else ""
        return image.removeprefix("flash:/").removeprefix("flash:")

    def install_image(self, name: str) -> Installed:
        previous = self.running_image()
        self._run_commands(["configure", f"boot system flash:{image_name(name)}", "end"], encoding="text")
        return Installed(previous)

    def reboot(self, mode: str = "cold") -> bool:
        command = {"fast": "reload fast-boot now", "cold": "reload now"}.get(mode)
        if command is None:
            raise ValueError(f"EOS reboots fast or cold, not {mode!r}")
        with contextlib.suppress(OSError, ConnectionError):  # eAPI's connection drops as the switch goes down
            self._run_commands([command], encoding="text")
        return False

    def boot_previous(self, previous: str) -> bool:
        self._run_commands(["configure", f"boot system flash:{image_name(previous)}", "end"], encoding="text")
        return False

    def keep_image(self, name: str) -> None:
        """Nothing to do: boot-config already names the new image."""
