"""Cisco NX-OS's PowerOn Auto Provisioning (POAP): a Python script named by DHCP options 66 and 67.

Cisco's "Using PowerOn Auto Provisioning" (Nexus 9000 NX-OS Fundamentals Configuration Guide) and the
POAP process page of Cisco's NX-OS developer documentation: the switch takes its script server from
option 66 and the script's name from option 67, downloads the script, checks the MD5 sum on its
`#md5sum="..."` line (computed over the script without that line) and runs it. This script copies the
switch's rendered configuration (the file `push` loads) over the management VRF and schedules it, so the
switch applies it after POAP's reboot. Cisco's own poap.py also stages images; gpufabric's does not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from gpufabric.platforms.spec import ZtpForm
from gpufabric.platforms.ztp_text import BOOTFILE_NAME, TFTP_SERVER_NAME, file_url, served_name

MD5_LINE = "#md5sum="


def with_md5(text: str) -> str:
    """The script with its `#md5sum="..."` line filled in: the MD5 of every other line, as POAP checks it."""
    lines = text.splitlines(keepends=True)
    digest = hashlib.md5("".join(ln for ln in lines if not ln.startswith(MD5_LINE)).encode()).hexdigest()
    return "".join(f'{MD5_LINE}"{digest}"\n' if ln.startswith(MD5_LINE) else ln for ln in lines)


def ztp_form(device: str, files: Mapping[str, str], base_url: str, title: str) -> ZtpForm:
    config = f"{device}.cfg"
    script = f"{device}.poap.py"
    # Python that NX-OS's python3 and the older python 2.7 both run: no f-string, no annotation.
    text = f'''#!/bin/env python3
{MD5_LINE}"-"
"""gpufabric POAP: {device} ({title}). Copies the planned configuration and schedules it for the next boot."""
import sys

from cli import cli  # NX-OS's own module, there during POAP

CONFIG_URL = "{file_url(base_url, config)}"
LOCAL = "bootflash:gpufabric-poap.cfg"


def main():
    try:
        cli("terminal dont-ask ; copy " + CONFIG_URL + " " + LOCAL + " vrf management")
        cli("copy " + LOCAL + " scheduled-config")
    except Exception as exc:  # POAP logs what a script prints; a non-zero exit restarts POAP
        print("gpufabric POAP failed: %s" % exc)
        return 1
    return 0


sys.exit(main())
'''
    options = ((TFTP_SERVER_NAME, base_url.rstrip("/")), (BOOTFILE_NAME, served_name(script)))
    return ZtpForm({script: with_md5(text), config: files[config]}, options)
