"""Arista EOS's Zero Touch Provisioning: a bootstrap script named by DHCP option 67.

Arista's EOS User Manual ("Initial Switch Access", Zero Touch Provisioning): a switch with no
startup-config asks DHCP for option 67, downloads that file, runs it when it is a script (it starts with
`#!`) and reboots. This script fetches the switch's rendered configuration (the file `push` loads) into
flash as its startup-config, so the switch boots into it.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpufabric.platforms.spec import ZtpForm
from gpufabric.platforms.ztp_text import BOOTFILE_NAME, file_url


def ztp_form(device: str, files: Mapping[str, str], base_url: str, title: str) -> ZtpForm:
    config = f"{device}.cfg"
    script = f"{device}.ztp.sh"
    text = f"""#!/bin/bash
# gpufabric zero-touch provisioning: {device} ({title}). EOS's ZTP runs this, then reboots into the startup-config.
set -euo pipefail
new=/mnt/flash/gpufabric-ztp.cfg
curl -fsS --retry 5 --retry-delay 2 -o "$new" '{file_url(base_url, config)}'
test -s "$new"
mv -f "$new" /mnt/flash/startup-config
exit 0
"""
    return ZtpForm({script: text, config: files[config]}, ((BOOTFILE_NAME, file_url(base_url, script)),))
