"""Names a Linux switch's session uses on the switch, kept apart from the driver so that what only
needs the names (`gpufabric lab`, FRR's file set) does not import NAPALM and its every vendor driver
(about a third of a second a command).
"""

from __future__ import annotations

import re

# A session's own folder for its candidate files on the switch. Named after the switch's FRR pathspace where it has
# one: the lab's switches share this machine's /tmp, and `lab down` removes the folders of its own switches that
# an interrupted session left (a switch clears its /tmp at boot).
CANDIDATE_FOLDER = "/tmp/gpufabric-candidate."
PATHSPACE = re.compile(r"[A-Za-z0-9_-]{1,64}")  # an FRR pathspace (vtysh -N): a name no shell reads


def candidate_folder(pathspace: str | None, token: str) -> str:
    return f"{CANDIDATE_FOLDER}{pathspace}.{token}" if pathspace else f"{CANDIDATE_FOLDER}{token}"
