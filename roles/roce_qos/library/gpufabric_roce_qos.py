#!/usr/bin/python
"""Read each RoCE NIC's QoS and congestion control back as its tools report them, and check it; change nothing.

Self-contained (the standard library and AnsibleModule only): Ansible copies it to the host, where
gpufabric is not installed. The tests import it and call `read_qos(...)` on stand-in NICs.

What it reads, per NIC with a ConnectX (mlx5) RDMA device (every path under `root`, `` on a host):
- `mlnx_qos -i IF` (mlnx-tools): the line `Priority trust state: dscp|pcp`, and under `PFC configuration:`
  the `priority 0 1 .. 7` row and the `enabled 0 0 0 1 0 0 0 0` row below it (NVIDIA MLNX_OFED user manual,
  "Quality of Service", mlnx_qos).
- `ethtool -a IF`: `RX:` and `TX:` of "Pause parameters for IF:" (ethtool(8), -a/--show-pause): link-level
  (global) pause.
- /sys/kernel/config/rdma_cm/DEV/ports/1/default_roce_tos: the RDMA-CM default ToS that `cma_roce_tos -d
  DEV -t TOS` writes (kernel ABI, Documentation/ABI/testing/configfs-rdma_cm).
- /sys/class/infiniband/DEV/tc/1/traffic_class: the traffic class of RoCE traffic not set by RDMA-CM; the mlx5
  driver reads it back as `Global tclass=N` (NVIDIA, "HowTo Set Egress ToS/DSCP on RDMA-CM QPs"); a bare
  number is taken too.
- /sys/class/net/IF/ecn/roce_np/enable/P and .../roce_rp/enable/P: ECN notification and reaction point
  (DCQCN) on priority P, `1` or `0`; .../roce_np/cnp_dscp and .../roce_np/cnp_802p_prio: the CNPs' DSCP and
  802.1p priority (NVIDIA MLNX_OFED user manual, "Explicit Congestion Notification (ECN)"; NVIDIA, "DCQCN
  Parameters").
"""

# The boilerplate ansible-core 2.16's sanity tests ask of every module, line for line (later releases
# no longer do); ruff's UP010, UP001 and I001 are off for these files in pyproject.toml.
from __future__ import absolute_import, division, print_function
from __future__ import annotations

__metaclass__ = type

DOCUMENTATION = r"""
module: gpufabric_roce_qos
short_description: Read back and check the RoCE QoS and congestion control of ConnectX NICs
description:
  - Runs mlnx_qos -i and ethtool -a on each RoCE NIC and reads its ECN, CNP, traffic class and RDMA-CM ToS
    files, then compares each with the plan's QoS contract.
  - Returns what was read per NIC, the NICs without a ConnectX device (skipped), and a list of checks, each
    with setting, expected and found.
  - Changes nothing on the host.
author:
  - gpufabric maintainers (@gpufabric)
options:
  root:
    type: str
    default: ""
    description: Prefix of /sys (empty on a host; a stand-in tree in tests).
  tools_path:
    type: str
    default: ""
    description: A folder searched first for mlnx_qos and ethtool (empty, the host's PATH).
  devices:
    type: dict
    default: {}
    description: RoCE NICs, interface -> its RDMA device (empty, found in sysfs).
  priority:
    type: int
    required: true
    description: Priority of RoCE (PFC and ECN on it only).
  tos:
    type: int
    required: true
    description: ToS byte of RoCE traffic.
  cnp_dscp:
    type: int
    required: true
    description: DSCP of CNPs.
  cnp_priority:
    type: int
    required: true
    description: 802.1p priority of CNPs.
  lossless:
    type: bool
    default: true
    description: PFC on the RoCE priority (else on none).
  global_pause_off:
    type: bool
    default: true
    description: Require link-level pause off (checked only when lossless).
  dcqcn:
    type: dict
    default: {}
    description: DCQCN parameters (roce_rp/NAME, roce_np/NAME) and the whole numbers they must hold.
"""

EXAMPLES = r"""
- name: Read the RoCE NICs back
  gpufabric_roce_qos:
    devices: {eth1: mlx5_0}
    priority: 3
    tos: 106
    cnp_dscp: 48
    cnp_priority: 6
"""

RETURN = r"""
nics:
  description: Per NIC, what its tools reported.
  type: dict
  returned: always
skipped:
  description: NICs without a ConnectX RDMA device.
  type: list
  returned: always
differing:
  description: NICs with at least one setting that differs from the contract.
  type: list
  returned: always
checks:
  description: One per setting and NIC, with setting, expected and found.
  type: list
  returned: always
differences:
  description: The checks whose found differs from expected, one sentence each.
  type: list
  returned: always
"""

import os
import re
from collections.abc import Callable

from ansible.module_utils.basic import AnsibleModule

NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
DCQCN_KEY = re.compile(r"^roce_(rp|np)/[a-z0-9_]{1,64}$")
PORT = 1  # RoCE NICs of the plan are single-port functions: port 1 of their RDMA device
MAX_BYTES = 64 * 1024  # more than any of these tools prints for one port

# run(argv) -> (exit code, stdout, stderr)
Runner = Callable[[list[str]], "tuple[int, str, str]"]


def parse_mlnx_qos(text: str) -> dict[str, object]:
    """Trust state and the priorities with PFC enabled, from `mlnx_qos -i`; missing parts are absent."""
    found: dict[str, object] = {}
    trust = re.search(r"^\s*Priority trust state:\s*(\S+)\s*$", text, re.M)
    if trust:
        found["trust"] = trust.group(1)
    pfc = re.search(r"^\s*PFC configuration:\s*\n\s*priority((?:\s+\d)+)\s*\n\s*enabled((?:\s+[01])+)\s*$", text, re.M)
    if pfc:
        prios, enabled = pfc.group(1).split(), pfc.group(2).split()
        if len(prios) == len(enabled):
            found["pfc"] = sorted(int(p) for p, e in zip(prios, enabled, strict=True) if e == "1")
    return found


def parse_ethtool_pause(text: str) -> dict[str, str]:
    """`RX:` and `TX:` of `ethtool -a` (on or off)."""
    return {k.lower(): v for k, v in re.findall(r"^(RX|TX):\s+(on|off)\s*$", text, re.M)}


def parse_traffic_class(text: str) -> int | None:
    match = re.fullmatch(r"\s*(?:Global tclass=)?(\d{1,3})\s*", text)
    return int(match.group(1)) if match else None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read(MAX_BYTES)
    except OSError:
        return None


def _number(path: str) -> str:
    text = _read(path)
    if text is None:
        return f"unreadable ({path})"
    return text.strip() if re.fullmatch(r"\s*\d{1,10}\s*", text) else f"not a number ({text.strip()[:40]!r} in {path})"


def _hca(root: str, nic: str, given: str) -> str | None:
    """The NIC's RDMA device: the one given if sysfs lists it, else the first sysfs lists; None when none."""
    folder = f"{root}/sys/class/net/{nic}/device/infiniband"
    try:
        present = sorted(os.listdir(folder))
    except OSError:
        return None
    if given:
        return given if given in present else None
    return present[0] if present else None


def _tool(run: Runner, argv: list[str]) -> tuple[str | None, str]:
    """The tool's output, or None and why it gave none."""
    try:
        code, out, err = run(argv)
    except OSError as exc:
        return None, f"{argv[0]} did not run: {exc.strerror}"
    if code != 0:
        return None, f"{' '.join(argv)} failed (exit {code}): {err.strip()[:200]}"
    return out[:MAX_BYTES], ""


def read_nic(root: str, run: Runner, nic: str, hca: str, want: dict) -> dict[str, object]:
    """What the NIC's tools and files say; a part that cannot be read says why."""
    dcqcn, priority = want["dcqcn"], want["priority"]
    found: dict[str, object] = {"hca": hca}
    qos, why = _tool(run, ["mlnx_qos", "-i", nic])
    parsed = parse_mlnx_qos(qos) if qos is not None else {}
    found["trust"] = parsed.get("trust", why or "no 'Priority trust state' line in mlnx_qos -i")
    pfc = parsed.get("pfc")
    if isinstance(pfc, list):
        found["pfc"] = ",".join(map(str, pfc)) or "none"
    else:
        found["pfc"] = why or "no PFC table in mlnx_qos -i"
    pause, why = _tool(run, ["ethtool", "-a", nic])
    flags = parse_ethtool_pause(pause) if pause is not None else {}
    found["pause"] = f"rx {flags['rx']}, tx {flags['tx']}" if len(flags) == 2 else why or "no RX/TX lines in ethtool -a"
    cm = f"{root}/sys/kernel/config/rdma_cm/{hca}/ports/{PORT}/default_roce_tos"
    found["cm_tos"] = _number(cm) if os.path.exists(cm) else "unset (cma_roce_tos never ran for the device)"
    tc_path = f"{root}/sys/class/infiniband/{hca}/tc/{PORT}/traffic_class"
    tc_text = _read(tc_path)
    tclass = parse_traffic_class(tc_text) if tc_text is not None else None
    found["traffic_class"] = str(tclass) if tclass is not None else f"unreadable ({tc_path})"
    ecn = f"{root}/sys/class/net/{nic}/ecn"
    found["ecn_np"] = _number(f"{ecn}/roce_np/enable/{priority}")
    found["ecn_rp"] = _number(f"{ecn}/roce_rp/enable/{priority}")
    found["cnp_dscp"] = _number(f"{ecn}/roce_np/cnp_dscp")
    found["cnp_priority"] = _number(f"{ecn}/roce_np/cnp_802p_prio")
    found["dcqcn"] = {key: _number(f"{ecn}/{key}") for key in sorted(dcqcn)}
    return found


def nic_checks(nic: str, found: dict, want: dict) -> list[dict[str, str]]:
    """The NIC's settings against the contract, each named with the tool or file it was read from."""
    prio = want["priority"]
    checks = [
        (f"{nic} trust (mlnx_qos -i)", "dscp", found["trust"]),
        (f"{nic} PFC priorities (mlnx_qos -i)", str(prio) if want["lossless"] else "none", found["pfc"]),
        (f"{nic} RDMA-CM ToS ({found['hca']} default_roce_tos, cma_roce_tos)", str(want["tos"]), found["cm_tos"]),
        (f"{nic} traffic class ({found['hca']} tc/{PORT}/traffic_class)", str(want["tos"]), found["traffic_class"]),
        (f"{nic} ECN notification point on priority {prio} (ecn/roce_np/enable/{prio})", "1", found["ecn_np"]),
        (f"{nic} ECN reaction point on priority {prio} (ecn/roce_rp/enable/{prio})", "1", found["ecn_rp"]),
        (f"{nic} CNP DSCP (ecn/roce_np/cnp_dscp)", str(want["cnp_dscp"]), found["cnp_dscp"]),
        (f"{nic} CNP priority (ecn/roce_np/cnp_802p_prio)", str(want["cnp_priority"]), found["cnp_priority"]),
    ]
    if want["lossless"] and want["global_pause_off"]:
        checks.append((f"{nic} global pause (ethtool -a)", "rx off, tx off", found["pause"]))
    for key, value in sorted(want["dcqcn"].items()):
        checks.append((f"{nic} DCQCN {key} (ecn/{key})", str(value), found["dcqcn"][key]))
    return [{"setting": s, "expected": e, "found": str(f)} for s, e, f in checks]


def read_qos(root: str, run: Runner, devices: dict[str, str], want: dict) -> dict[str, object]:
    """Every NIC (interface -> RDMA device, empty to find it) read and checked: {nics, skipped, differing, checks,
    differences}."""
    nics: dict[str, dict[str, object]] = {}
    skipped: list[str] = []
    differing: list[str] = []
    checks: list[dict[str, str]] = []
    differences: list[str] = []
    for name, given in sorted(devices.items()):
        hca = _hca(root, name, str(given or ""))
        if hca is None:
            skipped.append(name)
            continue
        nics[name] = read_nic(root, run, name, hca, want)
        mine = nic_checks(name, nics[name], want)
        checks += mine
        wrong = [
            f"{c['setting']}: expected {c['expected']}, found {c['found']}" for c in mine if c["found"] != c["expected"]
        ]
        if wrong:
            differing.append(name)
            differences += wrong
    return {"nics": nics, "skipped": skipped, "differing": differing, "checks": checks, "differences": differences}


def _problems(params: dict) -> list[str]:
    """Names that reach a path or an argument: one component each, the DCQCN keys by their pattern."""
    bad = [f"nic {n!r}" for n in params["devices"] if not NAME.match(str(n))]
    bad += [f"hca {h!r}" for h in params["devices"].values() if h and not NAME.match(str(h))]
    bad += [f"dcqcn {k!r}" for k in params["dcqcn"] if not DCQCN_KEY.match(str(k))]
    bad += [f"dcqcn {k} value {v!r}" for k, v in params["dcqcn"].items() if not re.fullmatch(r"\d{1,10}", str(v))]
    if not 0 <= params["priority"] <= 7 or not 0 <= params["cnp_priority"] <= 7:
        bad.append("priority and cnp_priority are 0-7")
    return bad


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "root": {"type": "str", "default": ""},
            "tools_path": {"type": "str", "default": ""},
            "devices": {"type": "dict", "default": {}},
            "priority": {"type": "int", "required": True},
            "tos": {"type": "int", "required": True},
            "cnp_dscp": {"type": "int", "required": True},
            "cnp_priority": {"type": "int", "required": True},
            "lossless": {"type": "bool", "default": True},
            "global_pause_off": {"type": "bool", "default": True},
            "dcqcn": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    params = module.params
    bad = _problems(params)
    if bad:
        module.fail_json(msg="gpufabric_roce_qos: refused " + "; ".join(bad))
    path = os.pathsep.join(
        p for p in (params["tools_path"], os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")) if p
    )

    def run(argv: list[str]) -> tuple[int, str, str]:
        code, out, err = module.run_command(argv, environ_update={"PATH": path, "LC_ALL": "C"})
        return code, out, err

    want = {k: params[k] for k in ("priority", "tos", "cnp_dscp", "cnp_priority", "lossless", "global_pause_off")}
    want["dcqcn"] = {str(k): int(v) for k, v in params["dcqcn"].items()}
    module.exit_json(changed=False, **read_qos(params["root"].rstrip("/"), run, params["devices"], want))


if __name__ == "__main__":
    main()
