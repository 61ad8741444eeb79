"""SONiC's zero-touch provisioning: a ZTP JSON document named by DHCP option 67.

SONiC's "Zero Touch Provisioning (ZTP)" design (sonic-net/SONiC, doc/ztp/ztp.md): the ZTP service fetches
the ZTP JSON from option 67's URL and runs its sections in lexical order: `configdb-json` downloads a
config_db.json to /etc/sonic/config_db.json and reloads it; `provisioning-script` runs a script. The first
section loads the switch's rendered CONFIG_DB (halting on failure), the second puts its rendered FRR
configuration in the bgp container's one frr.conf (split-unified mode) and reloads FRR, as a push does.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpufabric.outputs import json_dumps
from gpufabric.platforms.spec import ZtpForm
from gpufabric.platforms.ztp_text import BOOTFILE_NAME, file_url


def ztp_form(device: str, files: Mapping[str, str], base_url: str, title: str) -> ZtpForm:
    config_db, frr = f"{device}.config_db.json", f"{device}.frr.conf"
    document, script = f"{device}.ztp.json", f"{device}.ztp-frr.sh"
    ztp = {
        "ztp": {
            "01-configdb-json": {
                "url": {"source": file_url(base_url, config_db), "destination": "/etc/sonic/config_db.json"},
                "halt-on-failure": True,
            },
            "02-provisioning-script": {
                "plugin": {"url": file_url(base_url, script)},
                "halt-on-failure": True,
            },
        }
    }
    text = f"""#!/bin/bash
# gpufabric zero-touch provisioning: {device} ({title}): FRR's configuration in the bgp container.
set -euo pipefail
new=/etc/sonic/frr/gpufabric-ztp.frr.conf
curl -fsS --retry 5 --retry-delay 2 -o "$new" '{file_url(base_url, frr)}'
mv -f "$new" /etc/sonic/frr/frr.conf
docker exec bgp /usr/lib/frr/frr-reload.py --reload /etc/frr/frr.conf
docker exec bgp vtysh -c 'write memory'
exit 0
"""
    served = {
        document: json_dumps(ztp, indent=2) + "\n",
        script: text,
        config_db: files[config_db],
        frr: files.get(frr, ""),
    }
    return ZtpForm(served, ((BOOTFILE_NAME, file_url(base_url, document)),))
