"""SONiC's own drain: Traffic Shift Away (TSA), Back (TSB) and Check (TSC).

From 202205 `TSA` and `TSB` (sonic-buildimage dockers/docker-fpm-frr/base_image_files/TSA, TSB, TS) only write
CONFIG_DB's `BGP_DEVICE_GLOBAL|STATE tsa_enabled`; bgpcfgd (src/sonic-bgpcfgd/bgpcfgd/managers_device_global.py)
reacts: it reads FRR's running configuration, takes every route map bound outbound to a neighbour (`neighbor X
route-map NAME out`) whose name holds `V4` or `V6`, and loads, per name, the lines of
dockers/docker-fpm-frr/frr/bgpd/tsa/bgpd.tsa.isolate.conf.j2: sequence 20 sends the switch's loopback (prefix
list `PL_LoopbackV4`) with the traffic-shift community, 30 the routes tagged with the internal tag, and 40 denies
everything else; TSB loads `no` of those three (bgpd.tsa.unisolate.conf.j2). `TSC` runs the bgp container's TSC
(dockers/docker-fpm-frr/TSC, TS), which looks for those three sequences in `show running-config` and prints
`System Mode: Normal`, `Maintenance`, `Not consistent`, or `No external neighbors` when no such route map is
bound. gpufabric's frr.conf (templates/sonic/frr.conf.j2) binds `GF-FABRIC-OUT-V4` outbound on every fabric
neighbour, with its planned sequence 100 after TSA's, so that TSA moves the traffic.

TSA's state is configuration twice over. FRR's configuration a push replaces whole (frr-reload), which would
delete the three sequences bgpcfgd added while CONFIG_DB still says `true`; so a drained switch's frr.conf carries
TSA's sequences (`keep_frr`). CONFIG_DB's row is not gpufabric's: the push replaces CONFIG_DB with the running one
merged with gpufabric's tables (gpufabric.nos.sonic.owned), which leaves `BGP_DEVICE_GLOBAL` as TSA wrote it
(`config replace` of the planned file alone would delete it, and bgpcfgd would take the deleted row for TSA's
default, `false`, and shift the traffic back). `keep` writes both into a candidate, for a push that replaces
CONFIG_DB with it. TSB leaves `tsa_enabled: "false"` behind, which the undrain removes (`HDEL`; bgpcfgd reads its
absence as the same `false`, so nothing moves), so the database is as the image left it again.
"""

from __future__ import annotations

import json
import re

from gpufabric.nos.sonic.candidate import FRR_MARKER, split
from gpufabric.outputs import json_dumps
from gpufabric.platforms.spec import DrainSpec, DrainSteps

# sonic-buildimage dockers/docker-fpm-frr/TSA, TSB and TSC: the scripts' names are the commands; SONiC's own scripts
# judge them where a sonic-buildimage tree is given to the tests (tests/sonic_ts_scripts.py), nothing here otherwise.
TSA, TSB = "TSA", "TSB"
STATUS = "TSC"
NORMAL = "System Mode: Normal"
MAINTENANCE = "System Mode: Maintenance"


TABLE, ROW, FIELD = "BGP_DEVICE_GLOBAL", "STATE", "tsa_enabled"
# TSB's leftover field removed (the row goes with its last field): CONFIG_DB as planned again.
TIDY = f'sonic-db-cli CONFIG_DB HDEL "{TABLE}|{ROW}" {FIELD} >/dev/null'


def steps(spec: DrainSpec) -> DrainSteps:
    return DrainSteps(
        "TSA (traffic shift away)",
        "commands",
        f"{TSA}\nconfig save -y\n",
        f"{TSB}\n{TIDY}\nconfig save -y\n",
        "sonic-buildimage TSA, TSB, TSC (dockers/docker-fpm-frr) and bgpcfgd (managers_device_global.py); "
        "sonic-mgmt tests/bgp/test_traffic_shift.py",
    )


def in_maintenance(tsc: str) -> bool | None:
    """TSC's verdict; None when it says neither (inconsistent across ASICs, no external neighbours)."""
    if MAINTENANCE in tsc:
        return True
    if NORMAL in tsc:
        return False
    return None


# SONiC's constants (sonic-buildimage files/build_templates/constants.yml.j2, /etc/sonic/constants.yml on a switch).
TRAFFIC_SHIFT_COMMUNITY = "12345:12345"  # constants.bgp.traffic_shift_community
INTERNAL_MATCH_TAG = 201  # constants.bgp.internal_community_match_tag
# bgpcfgd's reading of the running configuration: every outbound route map bound to a neighbour.
_OUT_POLICY = re.compile(r"^\s*neighbor \S+ route-map (\S+) out$", re.MULTILINE)


def tsa_lines(frr: str) -> str:
    """What bgpcfgd's TSA adds to FRR for the outbound route maps bound in `frr`, as FRR shows it back: for each
    name with `V4` or `V6` (internal ones, `_INTERNAL_` or `VOQ_`, only mark routes no-export), sequences 20, 30
    and 40 of bgpd.tsa.isolate.conf.j2. Empty when no route map qualifies (TSA then moves nothing)."""
    out = []
    for name in sorted(set(_OUT_POLICY.findall(frr))):
        if "V4" in name:
            family, match = "V4", "ip"
        elif "V6" in name:
            family, match = "V6", "ipv6"
        else:
            continue
        if "_INTERNAL_" in name or "VOQ_" in name:
            out.append(f"route-map {name} permit 20\n set community no-export additive\nexit\n!\n")
            continue
        out.append(
            f"route-map {name} permit 20\n match {match} address prefix-list PL_Loopback{family}\n"
            f" set community {TRAFFIC_SHIFT_COMMUNITY}\nexit\n!\n"
            f"route-map {name} permit 30\n match tag {INTERNAL_MATCH_TAG}\n set community {TRAFFIC_SHIFT_COMMUNITY}\n"
            f"exit\n!\nroute-map {name} deny 40\nexit\n!\n"
        )
    return "".join(out)


def keep_frr(frr: str) -> str:
    """`frr` (the planned frr.conf) with TSA's sequences, before its closing `end`."""
    lines = tsa_lines(frr)
    if not lines:
        return frr
    body, end, tail = frr.rpartition("\nend\n")
    return f"{body}\n{lines}end\n{tail}" if end else f"{frr.rstrip(chr(10))}\n{lines}"


def keep(candidate: str, spec: DrainSpec) -> str:
    """`candidate` (config_db.json, then frr.conf after the marker) with `BGP_DEVICE_GLOBAL|STATE tsa_enabled`
    "true" in its CONFIG_DB and TSA's route-map sequences in its frr.conf, the rest of it as it was."""
    config_db, frr = split(candidate)
    doc = json.loads(config_db)
    if not isinstance(doc, dict):
        raise ValueError("the candidate's CONFIG_DB is not a JSON object")
    table = doc.setdefault(TABLE, {})
    table[ROW] = {**(table.get(ROW) or {}), FIELD: "true"}
    text = json_dumps(doc, indent=4, sort_keys=True)
    return text + "\n" if frr is None else f"{text}\n{FRR_MARKER}\n{keep_frr(frr)}"
