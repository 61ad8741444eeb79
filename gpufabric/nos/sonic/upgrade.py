"""SONiC's reboot and image upgrade, as methods of its NAPALM driver (a mixin of SonicDriver).

sonic-utilities' procedure (its Command Reference, "SONiC Installer" and "Reboot Commands"): the image is
fetched onto the switch, checked, and installed with `sonic-installer install -y <image>`, which keeps the
running image installed. gpufabric then keeps the previous image the default (`sonic-installer set-default
<previous>`) and boots the new one once (`sonic-installer set-next-boot <new>`): a switch that hangs on the
new image comes back on the previous one at its next reset. Only when the switch runs the new release and
passes its checks is the new image made the default. Reboots: `warm-reboot`, `fast-reboot`, `reboot`. Not
shown on a real switch (docs/not-shown.md): the staging folder (IMAGE_DIR) is assumed.
"""

from __future__ import annotations

import shlex

from gpufabric.drivers.images import ImageStepError, Installed, image_name, image_url, send_reboot, sha512_of
from gpufabric.drivers.linux_switch import LinuxSwitchDriver

IMAGE_DIR = "/host/gpufabric-images"  # on /host, the partition SONiC keeps its images on (assumed)
# sonic-utilities' Command Reference, "SONiC Installer" and "Reboot Commands". sonic-utilities' own setup.py and
# sonic-installer's click commands judge these words where the tests are given its tree; nothing else here does
# (docs/not-shown.md).
INSTALLER = "sonic-installer"
INSTALL, SET_DEFAULT, SET_NEXT_BOOT, LIST, BINARY_VERSION = (
    "install -y",
    "set-default",
    "set-next-boot",
    "list",
    "binary-version",
)
CURRENT = "Current"  # `sonic-installer list`'s line naming the running image
REBOOTS = {"warm": "warm-reboot", "fast": "fast-reboot", "cold": "reboot"}


def current_image(listed: str) -> str:
    """`Current: <image>` of `sonic-installer list`."""
    for line in listed.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == CURRENT:
            return value.strip()
    return ""


class SonicUpgrade(LinuxSwitchDriver):
    """The reboot and upgrade steps `nornir restart` and `nornir upgrade` call (nornir_tasks/lifecycle.py)."""

    root = "sudo -n "

    def _image(self, name: str) -> str:
        return f"{IMAGE_DIR}/{image_name(name)}"

    def stage_image(self, url: str, name: str) -> None:
        self._run(f"{self.root}mkdir -p {IMAGE_DIR}")
        self._run(f"{self.root}curl -fsS -o {self._image(name)} {shlex.quote(image_url(url))}")

    def image_checksum(self, name: str) -> str:
        found = sha512_of(self._run(f"{self.root}sha512sum {self._image(name)}"))
        if found is None:
            raise ImageStepError(f"{self.hostname}: sha512sum of {name} printed no checksum")
        return found

    def running_image(self) -> str:
        return current_image(self._run(f"{self.root}{INSTALLER} {LIST}"))

    def _version(self, name: str) -> str:
        """The image name sonic-installer gives the file once installed (`binary-version`)."""
        version = self._run(f"{self.root}{INSTALLER} {BINARY_VERSION} {self._image(name)}").strip()
        return image_name(version)

    def install_image(self, name: str) -> Installed:
        previous = image_name(self.running_image())
        new = self._version(name)
        self._run(f"{self.root}{INSTALLER} {INSTALL} {self._image(name)}")
        self._run(f"{self.root}{INSTALLER} {SET_DEFAULT} {previous}")
        self._run(f"{self.root}{INSTALLER} {SET_NEXT_BOOT} {new}")
        return Installed(previous)

    def reboot(self, mode: str = "cold") -> bool:
        command = REBOOTS.get(mode)
        if command is None:
            raise ValueError(f"SONiC reboots {', '.join(REBOOTS)}, not {mode!r}")
        send_reboot(self._try, f"{self.root}{command}")
        return False

    def boot_previous(self, previous: str) -> bool:
        self._run(f"{self.root}{INSTALLER} {SET_DEFAULT} {image_name(previous)}")
        self._run(f"{self.root}{INSTALLER} {SET_NEXT_BOOT} {image_name(previous)}")
        return False

    def keep_image(self, name: str) -> None:
        self._run(f"{self.root}{INSTALLER} {SET_DEFAULT} {self._version(name)}")
