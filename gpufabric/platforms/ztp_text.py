"""What the OSes' zero-touch provisioning files share: URLs on the provisioning server and shell here-documents.

The names put into a script or a URL are the plan's switch names and the platforms' own file suffixes: both
are checked against a pattern here before they reach a line, so nothing outside the plan's alphabet does.
"""

from __future__ import annotations

import re

# A file the provisioning server serves: a switch name (the intent's naming patterns) and a suffix.
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# http://a.b.c.d:port/ as the export builds it from the intent's address and port.
_BASE = re.compile(r"^http://[0-9]{1,3}(\.[0-9]{1,3}){3}:[0-9]{1,5}/$")
# DHCP option codes the provisioning forms use.
BOOTFILE_NAME = 67  # RFC 2132 bootfile-name: a URL for EOS, SONiC and the Linux + FRR form
TFTP_SERVER_NAME = 66  # RFC 2132 tftp-server-name: NX-OS POAP's script server
CUMULUS_PROVISION_URL = 239  # a site-specific option (RFC 3942) that Cumulus Linux's ZTP reads


def file_url(base_url: str, name: str) -> str:
    """The URL of one served file: `base_url` as the export makes it, `name` a plain file name."""
    if not _BASE.match(base_url):
        raise ValueError(f"not a provisioning server root: {base_url!r} (want http://a.b.c.d:port/)")
    return base_url + served_name(name)


def served_name(name: str) -> str:
    """`name`, refused unless it is a plain file name (no '/', no quote, no space): it lands in URLs and scripts."""
    if not _FILE.match(name):
        raise ValueError(f"not a plain file name for the provisioning server: {name!r}")
    return name


def heredoc(path: str, text: str, mode: str | None = None) -> str:
    """Shell that writes `text` exactly into `path` (a fixed path of the script's own, no user input): a
    quoted here-document, so nothing in the text is expanded, under a delimiter the text does not hold."""
    n = 0
    while f"GPUFABRIC_EOF_{n}" in text:
        n += 1
    end = f"GPUFABRIC_EOF_{n}"
    body = text if text.endswith("\n") or not text else text + "\n"
    # printf keeps a text without a final newline as it is: the here-document always adds one, which
    # `head -c` takes off again.
    if text and not text.endswith("\n"):
        write = f"head -c {len(text.encode())} > {path} <<'{end}'\n{body}{end}\n"
    else:
        write = f"cat > {path} <<'{end}'\n{body}{end}\n"
    return write + (f"chmod {mode} {path}\n" if mode else "")
