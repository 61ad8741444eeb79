"""Cumulus Linux's zero-touch provisioning: a bash script its ZTP service fetches from DHCP option 239.

NVIDIA's "Zero Touch Provisioning - ZTP" (Cumulus Linux 5.x user guide): the script must hold the
`CUMULUS-AUTOPROVISIONING` marker and exit 0 on success. This one fetches the switch's NVUE startup
document (the file `render` writes and `push` loads), replaces the configuration with it, applies and
saves it, as a push's `nv config replace` does.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpufabric.platforms.spec import ZtpForm
from gpufabric.platforms.ztp_text import CUMULUS_PROVISION_URL, file_url

MARKER = "CUMULUS-AUTOPROVISIONING"


def ztp_form(device: str, files: Mapping[str, str], base_url: str, title: str) -> ZtpForm:
    startup = f"{device}.yaml"
    script = f"{device}.ztp.sh"
    text = f"""#!/bin/bash
# {MARKER}
# gpufabric zero-touch provisioning: {device} ({title}, NVUE). Cumulus Linux's ZTP runs this once, as root.
set -euo pipefail
startup=$(mktemp /tmp/gpufabric-ztp.XXXXXX.yaml)
trap 'rm -f "$startup"' EXIT
curl -fsS --retry 5 --retry-delay 2 -o "$startup" '{file_url(base_url, startup)}'
test -s "$startup"
nv config replace "$startup"
nv config apply -y
nv config save
exit 0
"""
    return ZtpForm({script: text, startup: files[startup]}, ((CUMULUS_PROVISION_URL, file_url(base_url, script)),))
