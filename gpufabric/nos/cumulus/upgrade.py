"""Cumulus Linux's reboot and image upgrade, as methods of its NAPALM driver (a mixin of CumulusDriver).

NVIDIA's optimized (two-partition) image upgrade ("Upgrading Cumulus Linux", Cumulus Linux user guide):
`nv action fetch system image <url>` stages the image, `nv action install system image files <image>`
installs it into the partition that is not running, `nv action boot-next system image other` boots that
partition next, `nv action reboot system mode warm|fast|cold` reboots. The running partition keeps the
previous release: booting it again is `nv action boot-next system image other` once more. Releases older
than the optimized upgrade install with ONIE (`onie-install -a -i <url>`), which erases the configuration:
gpufabric does not drive that one. Not shown on a real switch (docs/not-shown.md): the folder a fetched image
lands in (IMAGE_DIR) and the JSON layout of `nv show system image` are assumed.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from gpufabric.drivers.images import ImageStepError, Installed, image_name, image_url, send_reboot, sha512_of
from gpufabric.drivers.linux_switch import LinuxSwitchDriver

IMAGE_DIR = "/var/lib/cumulus/images"  # assumed: where `nv action fetch system image` keeps what it fetched
# NVIDIA Cumulus Linux User Guide, "Upgrading Cumulus Linux" (optimized image upgrade), and the NVUE Command
# Reference's Action Commands (System Image, System Reboot). Actions are no configuration: NVUE's object model
# does not describe them, so no model here checks these words (docs/not-shown.md).
FETCH = "nv action fetch system image"
INSTALL = "nv action install system image files"
BOOT_OTHER = "nv action boot-next system image other"
REBOOT = "nv action reboot system mode"
SHOW_IMAGE = "nv show system image -o json"
MODES = ("warm", "fast", "cold")


class CumulusUpgrade(LinuxSwitchDriver):
    """The reboot and upgrade steps `nornir restart` and `nornir upgrade` call (nornir_tasks/lifecycle.py)."""

    def _as_root(self, command: str) -> str:
        if getattr(self, "sudo", True):
            return self._run(f"sudo -S -p '' {command}", f"{self.password}\n")
        return self._run(command)

    def stage_image(self, url: str, name: str) -> None:
        image_name(name)
        self._run(f"{FETCH} {shlex.quote(image_url(url))}")

    def image_checksum(self, name: str) -> str:
        out = self._as_root(f"sha512sum {IMAGE_DIR}/{image_name(name)}")
        found = sha512_of(out)
        if found is None:
            raise ImageStepError(f"{self.hostname}: sha512sum of {name}: no checksum in its answer")
        return found

    def image_state(self) -> dict[str, Any]:
        """`nv show system image`: which partition runs (`current`), which boots next (`next`), and each
        partition's `build-id`."""
        state = json.loads(self._run(SHOW_IMAGE) or "{}")
        if not isinstance(state, dict):
            raise ImageStepError(f"{self.hostname}: `{SHOW_IMAGE}` is not a JSON object")
        return state

    def running_image(self) -> str:
        state = self.image_state()
        part = state.get(f"partition{state.get('current', '')}", {})
        return str(part.get("build-id", "")) if isinstance(part, dict) else ""

    def install_image(self, name: str) -> Installed:
        previous = self.running_image()
        self._run(f"{INSTALL} {image_name(name)}")
        self._run(BOOT_OTHER)
        return Installed(previous)

    def reboot(self, mode: str = "cold") -> bool:
        """Ask for the reboot; False: the switch goes away and comes back by itself (wait for it)."""
        if mode not in MODES:
            raise ValueError(f"Cumulus Linux reboots {', '.join(MODES)}, not {mode!r}")
        send_reboot(self._try, f"{REBOOT} {mode}")
        return False

    def boot_previous(self, previous: str) -> bool:
        """Boot the other partition (the previous release) next; False: reboot it to get there."""
        self._run(BOOT_OTHER)
        return False

    def keep_image(self, name: str) -> None:
        """Nothing to do: the partition booted stays the one booted."""
