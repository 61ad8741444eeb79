"""Cisco NX-OS's reboot and image upgrade, as methods of its NAPALM driver (a mixin of GpufabricNXOSDriver).

Cisco's procedure ("Cisco Nexus 9000 Series NX-OS Software Upgrade and Downgrade Guide"): copy the image to
bootflash: (`copy <url> bootflash:<image> vrf management`), compare its checksum with Cisco's
(`show file bootflash:<image> sha512sum`), check what the install would do (`show install all impact nxos
bootflash:<image>`: each module bootable or not), then `install all nxos bootflash:<image>
non-interruptive`, which sets the boot variables and reloads the switch itself. Going back is the same
`install all` with the previous image, still on bootflash:. Not shown on a real switch (docs/not-shown.md).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from napalm.nxos.nxos import NXOSDriver

from gpufabric.drivers.images import ImageStepError, Installed, image_name, image_url, sha512_of

# Cisco Nexus 9000 Series NX-OS Software Upgrade and Downgrade Guide: `copy ... vrf management`, `show file ...
# sha512sum`, `show install all impact nxos <image>`, `install all nxos <image>`, `reload`. The two install
# commands are judged by Cisco's own module (cisco.nxos nxos_install_os builds the same); the others by no model
# here (docs/not-shown.md). `non-interruptive` keeps `install all` from asking for a confirmation: Cisco Nexus
# 3000 and 9000 Series NX-API REST SDK User Guide, "ISSU Commands" (`install all nxos bootflash:<image>
# non-disruptive non-interruptive`); Cisco's nxos_install_os answers the prompts with `terminal dont-ask` instead.
COPY = "copy"
VRF = "vrf management"
SHA512 = "sha512sum"
IMPACT = "show install all impact nxos"
INSTALL_ALL = "install all nxos"
NO_PROMPT = "non-interruptive"
RELOAD = "reload"

# A module's row of `show install all impact`: module, bootable (yes/no), impact, install type, reason.
_IMPACT_ROW = re.compile(r"^\s*(\d+)\s+(yes|no)\s+(\S+)", re.MULTILINE)


def not_bootable(impact: str) -> list[str]:
    """The modules `show install all impact` says would not boot the image ([] when all would); a table
    with no module row is refused too (the check did not run)."""
    rows = _IMPACT_ROW.findall(impact)
    if not rows:
        return ["(no module row in the impact table)"]
    return [module for module, bootable, _impact in rows if bootable != "yes"]


class NxosUpgrade(NXOSDriver):  # type: ignore[misc]
    """The reboot and upgrade steps `nornir restart` and `nornir upgrade` call (nornir_tasks/lifecycle.py)."""

    def _exec(self, command: str) -> str:
        """One exec command with confirmations off (GpufabricNXOSDriver's)."""
        raise NotImplementedError

    def stage_image(self, url: str, name: str) -> None:
        self._exec(f"{COPY} {image_url(url)} bootflash:{image_name(name)} {VRF}")

    def image_checksum(self, name: str) -> str:
        shown: Any = self._send_command(f"show file bootflash:{image_name(name)} {SHA512}", raw_text=True)
        found = sha512_of(str(shown or ""))
        if found is None:
            raise ImageStepError(f"{self.hostname}: `show file bootflash:{name} sha512sum` printed no checksum")
        return found

    def running_image(self) -> str:
        version: Any = self._send_command("show version")
        path = str(version.get("nxos_file_name", "")) if isinstance(version, dict) else ""
        return path.rsplit("/", 1)[-1].removeprefix("bootflash:")

    def _install(self, name: str) -> None:
        impact = self._exec(f"{IMPACT} bootflash:{name}")
        refused = not_bootable(impact)
        if refused:
            raise ImageStepError(
                f"{self.hostname}: `show install all impact` says {name} would not boot on module(s) "
                f"{', '.join(refused)}; nothing was installed"
            )
        with contextlib.suppress(OSError, ConnectionError):  # NX-API's connection drops as the switch reloads
            self._exec(f"{INSTALL_ALL} bootflash:{name} {NO_PROMPT}")

    def install_image(self, name: str) -> Installed:
        previous = self.running_image()
        self._install(image_name(name))
        return Installed(previous, reboots=True)

    def reboot(self, mode: str = "cold") -> bool:
        if mode != "cold":
            raise ValueError(f"NX-OS reboots cold only, not {mode!r}")
        with contextlib.suppress(OSError, ConnectionError):
            self._exec(RELOAD)
        return False

    def boot_previous(self, previous: str) -> bool:
        """`install all` with the previous image: it reloads the switch itself (True)."""
        self._install(image_name(previous))
        return True

    def keep_image(self, name: str) -> None:
        """Nothing to do: `install all` set the boot variables."""
