"""FRR on Linux: frr.conf (routing), the interfaces file (MTU, addresses), nftables (DSCP
classification) and the system file (users, SNMP), read back into facts.

Linux has no PFC, ECN queue or PFC watchdog; the checks know FRR switches cannot carry them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from gpufabric.verify.cli_text import children, line, parse, read_common, sections
from gpufabric.verify.facts import Fact, SwitchFacts, read_rendered

HASH_POLICY = "net.ipv4.fib_multipath_hash_policy"
_IFACE = re.compile(r"^iface (\S+)")
_SETTING = re.compile(r"^\s+(mtu|address) (\S+)")
_VRF = re.compile(r"^\s+vrf (\S+)$")
# A rendered file writes DSCP values as numbers; `nft list` prints well-known ones by name.
_DSCP = re.compile(r"ip dscp (\w+) meta priority set 0:(\d+)")
DSCP_NAMES = {
    **{f"cs{i}": 8 * i for i in range(8)},
    **{f"af{c}{d}": 8 * c + 2 * d for c in range(1, 5) for d in range(1, 4)},
    "ef": 46,
    "va": 44,
    "be": 0,
}


def read_frr(device: str, folder: Path) -> SwitchFacts:
    facts = SwitchFacts(device, "frr")
    conf_path = folder / f"{device}.frr.conf"
    facts.files.append(conf_path.name)
    conf = parse(read_rendered(conf_path).splitlines(), "ios")
    read_common(facts, conf, conf_path.name, mtu=False)
    bgp_facts(facts, conf, conf_path.name)
    _interfaces(facts, folder / f"{device}.interfaces")
    _nft(facts, folder / f"{device}.nft")
    _system(facts, folder / f"{device}.system.yaml")
    return facts


def bgp_facts(facts: SwitchFacts, conf: Any, file: str) -> None:
    """BGP out of a parsed frr.conf: the one reader of every FRR-routed platform's BGP (SONiC's too)."""
    for obj, m in sections(conf, r"^router bgp (\d+)$"):
        facts.asn = Fact(int(m.group(1)), file, line(obj))
        facts.anchors["bgp"] = facts.anchors["ecmp"] = facts.asn
        for child, cm in children(obj, r"neighbor (\S+) (?:interface )?remote-as (\d+)"):
            facts.neighbors[cm.group(1)] = Fact(int(cm.group(2)), file, line(child))
        for child, _ in children(obj, r"bgp bestpath as-path multipath-relax"):
            facts.multipath_relax = Fact(True, file, line(child))
        max_med(facts, obj, file)
        for child, cm in children(obj, r"maximum-paths (\d+)", deep=True):
            facts.max_paths = Fact(int(cm.group(1)), file, line(child))
        session_timers(facts, conf, obj, file)
    profiles = _bfd_profiles(conf)
    for obj, m in sections(conf, r"^router bgp \d+ vrf (\S+)$"):
        vrf = m.group(1)
        for child, cm in children(obj, r"neighbor (\S+) (?:interface )?remote-as (\d+)"):
            facts.vrf_neighbors[f"{vrf} {cm.group(1)}"] = Fact(int(cm.group(2)), file, line(child))
        bfd, timers = _section_timers(profiles, obj, file)
        facts.vrf_bfd.update({f"{vrf} {key}": fact for key, fact in bfd.items()})
        if timers is not None:
            facts.vrf_timers[vrf] = timers


# bfdd's defaults for a profile line left out (FRR user guide, BFD): 300 ms both ways, 3 packets.
BFD_DEFAULTS = {"transmit-interval": 300, "receive-interval": 300, "detect-multiplier": 3}
BFD_DEFAULT_TIMERS = (BFD_DEFAULTS["transmit-interval"], BFD_DEFAULTS["detect-multiplier"])


def max_med(facts: SwitchFacts, bgp: Any, file: str) -> None:
    """`bgp max-med on-startup SECONDS` of a `router bgp` section (FRR prints no MED value equal to its default)."""
    for child, cm in children(bgp, r"bgp max-med on-startup (\d+)"):
        facts.max_med = Fact(int(cm.group(1)), file, line(child))


def _bfd_profiles(conf: Any) -> dict[str, tuple[Any, int]]:
    """(interval, multiplier) of each `bfd` / `profile NAME`; the interval reads `tx/rx` when the two differ."""
    out: dict[str, tuple[Any, int]] = {}
    for obj, _ in sections(conf, r"^bfd$"):
        for profile, pm in children(obj, r"profile (\S+)"):
            got = dict(BFD_DEFAULTS)
            for _, cm in children(profile, r"(transmit-interval|receive-interval|detect-multiplier) (\d+)"):
                got[cm.group(1)] = int(cm.group(2))
            tx, rx = got["transmit-interval"], got["receive-interval"]
            out[pm.group(1)] = (tx if tx == rx else f"{tx}/{rx}", got["detect-multiplier"])
    return out


def session_timers(facts: SwitchFacts, conf: Any, bgp: Any, file: str) -> None:
    """BFD per neighbor (`neighbor X bfd [profile NAME]`, the profile's timers or bfdd's defaults) and
    `timers bgp`, under one `router bgp` section of an FRR configuration."""
    bfd, timers = _section_timers(_bfd_profiles(conf), bgp, file)
    facts.bfd.update(bfd)
    if timers is not None:
        facts.bgp_timers = timers


def _section_timers(profiles: dict[str, tuple[Any, int]], bgp: Any, file: str) -> tuple[dict[str, Fact], Fact | None]:
    """One `router bgp` section's (default or a VRF's) BFD per neighbor, its profiles' timers read once per
    file (`_bfd_profiles`), and its `timers bgp`, if set."""
    bfd = {}
    for child, cm in children(bgp, r"neighbor (\S+) bfd(?: profile (\S+))?"):
        value = profiles.get(cm.group(2)) if cm.group(2) else BFD_DEFAULT_TIMERS
        bfd[cm.group(1)] = Fact(value, file, line(child))
    timers = None
    for child, cm in children(bgp, r"timers bgp (\d+) (\d+)"):
        timers = Fact((int(cm.group(1)), int(cm.group(2))), file, line(child))
    return bfd, timers


def _interfaces(facts: SwitchFacts, path: Path) -> None:
    facts.files.append(path.name)
    port = None
    vrfs: dict[str, tuple[str, int]] = {}  # a carried plane's subinterface -> (its VRF, its line)
    for n, text in enumerate(read_rendered(path).splitlines(), 1):
        if m := _IFACE.match(text):
            port = m.group(1)
            facts.anchors[f"interface {port}"] = Fact(port, path.name, n)
        elif (m := _VRF.match(text)) and port is not None:
            vrfs[port] = (m.group(1), n)
        elif (m := _SETTING.match(text)) and port is not None:
            if m.group(1) == "mtu":
                facts.mtu[port] = Fact(int(m.group(2)), path.name, n)
            else:
                facts.address[port] = Fact(m.group(2), path.name, n)
    for port, (vrf, n) in vrfs.items():
        base, _, tag = port.rpartition(".")
        if base and tag.isdigit():  # an 802.1Q subinterface (ifupdown2's dotted name) in a VRF
            address = facts.address.pop(port, None)
            facts.subinterfaces[port] = Fact((vrf, int(tag), address.value if address else None), path.name, n)


def _nft(facts: SwitchFacts, path: Path) -> None:
    facts.files.append(path.name)
    nft_facts(facts, read_rendered(path), path.name)


def nft_facts(facts: SwitchFacts, text: str, file: str) -> None:
    """The DSCP classification of an nftables ruleset: a rendered file or `nft list table`'s output."""
    for n, row in enumerate(text.splitlines(), 1):
        if "chain qos" in row:
            facts.trust_dscp = Fact(True, file, n)
            facts.anchors["qos"] = facts.trust_dscp
        if m := _DSCP.search(row):
            dscp = int(m.group(1)) if m.group(1).isdigit() else DSCP_NAMES.get(m.group(1))
            if dscp is not None:
                facts.dscp_map[dscp] = Fact(int(m.group(2)), file, n)


def _system(facts: SwitchFacts, path: Path) -> None:
    facts.files.append(path.name)
    text = read_rendered(path)
    for n, raw in enumerate(text.splitlines(), 1):
        if "password" in raw or "community" in raw:
            facts.secrets.append(Fact(raw.strip(), path.name, n))
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        facts.problem("parse", path.name, 1, "a YAML mapping", f"YAML error: {exc}")
        return
    sysctl = data.get("sysctl") if isinstance(data, dict) else None
    if isinstance(sysctl, dict) and (policy := sysctl.get(HASH_POLICY)) is not None:
        facts.multipath_hash = Fact(policy, path.name, _line_of(text, HASH_POLICY))
    host = facts.hostname
    if isinstance(data, dict) and "hostname" in data and host is not None and data["hostname"] != host.value:
        facts.problem("hostname", path.name, 1, str(host.value), str(data["hostname"]))


def _line_of(text: str, key: str) -> int:
    return next((n for n, row in enumerate(text.splitlines(), 1) if row.strip().startswith(f"{key}:")), 1)


def running_facts(text: str) -> SwitchFacts:
    """QoS classification on a Linux switch lives in the nftables part of the running candidate, the
    kernel's ECMP hash policy in its sysctl part (`name = value`, as the driver reads /proc/sys)."""
    from gpufabric.nos.frr.files import candidate_parts

    facts = SwitchFacts("", "frr", ["running-config"])
    parts = candidate_parts(text)
    nft_facts(facts, parts.nft or "", "running-config")
    running_session_timers(facts, parts.frr)
    for n, row in enumerate((parts.sysctl or "").splitlines(), 1):
        name, _, value = row.partition("=")
        if name.strip() == HASH_POLICY and value.strip().lstrip("-").isdigit():
            facts.multipath_hash = Fact(int(value), "running-config", n)
    return facts


# What bgpd runs when `router bgp` sets no timers: `show running-config` leaves out a value equal to the
# profile's default (FRR user guide, `frr defaults`), and the lab and gpufabric's files use `datacenter`.
PROFILE_TIMERS = {"datacenter": (3, 9), "traditional": (60, 180)}


def running_session_timers(facts: SwitchFacts, frr: str) -> None:
    """BFD and BGP timers of FRR's running configuration, and the profile's timers bgpd runs where no line
    sets them (a line equal to them is left out of the running configuration)."""
    conf = parse(frr.splitlines(), "ios")
    for obj, m in sections(conf, r"^router bgp (\d+)"):
        facts.asn = Fact(int(m.group(1)), "running-config", line(obj))
        session_timers(facts, conf, obj, "running-config")
        max_med(facts, obj, "running-config")
        profile = re.search(r"^frr defaults (\S+)", frr, re.M)
        facts.default_bgp_timers = PROFILE_TIMERS.get(profile.group(1) if profile else "datacenter")
