"""What gpufabric knows about one network OS, in one place: the bottom layer of the platform registry.

Every module that needs a platform fact (port names, the management VRF, the password hash, which
files a switch gets, how `verify` reads them, the NAPALM driver, the containerlab kind, the releases
the templates follow) asks the platform's `PlatformSpec` rather than keeping a table of its own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# This module imports nothing of gpufabric's, not even for type checking: the layers above (intent, plan,
# config, verify, telemetry) import the registry, so a type of theirs named here would close a circle.
# Their objects appear as `Any`; each reader's own module types them exactly.
SwitchFacts = Any  # gpufabric.verify.facts.SwitchFacts
PortCounters = Any  # gpufabric.telemetry.ethtool.PortCounters
DeviceContext = Any  # gpufabric.config.context.DeviceContext

# A logical port is (physical cage, lane) on a cage split `split` ways: the platform spells it.
PortNamer = Callable[[int, int, int], str]
# How `verify` reads a switch's rendered files back: (device name, folder) -> facts.
Reader = Callable[[str, Path], SwitchFacts]
# How `validate` reads the QoS map out of a running configuration the driver returned.
RunningReader = Callable[[str], SwitchFacts]
# How telemetry and `validate --counter-window` read a switch's lossless counters (PFC pauses,
# watchdog events, ECN marks, queue drops) through its open NAPALM connection: (conn, ports) -> per port.
LosslessReader = Callable[[Any, list[str]], dict[str, PortCounters]]
# How telemetry reads a switch's transceivers and FEC counters: (conn, ports) -> per port, an
# Optics (gpufabric.telemetry.optics) with None where the switch does not say.
OpticsReader = Callable[[Any, list[str]], dict[str, Any]]
# A platform whose configuration is a data document, not CLI text, builds it in Python:
# DeviceContext -> {file name: text}. None: the Jinja2 templates in `outputs` render it.
Builder = Callable[[DeviceContext], dict[str, str]]
# How push assembles the one candidate text its driver loads from a switch's rendered files:
# (device name, {file name: text}) -> text. None: the file named by `candidate_suffix`, as rendered.
CandidateAssembler = Callable[[str, Mapping[str, str]], str]
# What a switch role of the intent asks of this platform's hardware that it does not have: SwitchRole ->
# [(role field, what is wrong, what would be right)]; empty when the model can carry the role.
RoleChecker = Callable[[Any], list[tuple[str, str, str]]]
# A Jinja2 filter a platform's templates use (EOS spells a split port's speed its own way).
TemplateFilter = Callable[..., Any]
# Why a platform's configuration would not carry a free-text value (the SNMP location) exactly: a reason, or
# None when it would.
TextCheck = Callable[[str], str | None]


def any_text(value: str) -> str | None:
    """The default: the value is carried as it is (the intent already keeps it printable and on one line)."""
    return None


@dataclass(frozen=True)
class VendorJudge:
    """The vendor's own model that `verify` hands this platform's files to, where it is installed."""

    title: str  # whose model it is
    package: str  # the import name of the vendor's package
    requirement: str  # what to install
    module: str  # gpufabric's module that runs it, with `judge(ctx, path) -> list[Finding]`


@dataclass(frozen=True)
class PlatformSpec:
    name: str  # the intent's `platform:` value
    title: str  # what a person calls it
    releases: tuple[str, ...]  # OS releases the rendered configuration is proven for, oldest first
    default_release: str
    mgmt_port: str
    mgmt_vrf: str | None  # None: the platform has no management VRF (FRR on a Linux host, the lab)
    max_mtu: int
    hash_algorithm: str  # crypt(3) flavour the platform accepts for a pre-hashed local password
    hash_prefix: str  # how such a hash starts in the rendered text
    numbered_only: bool  # BGP over /31s only: unnumbered (RFC 5549) is not rendered for it
    mlag: bool  # has MLAG/vPC toward LACP hosts
    outputs: tuple[tuple[str, str], ...]  # (file suffix, template); one switch may need several files
    candidate_suffix: str  # the rendered file push loads as the candidate
    napalm_driver: str
    containerlab_kind: str
    containerlab_image: str  # name only, no registry host: users load or tag their own images
    eth_numbering: bool  # containerlab names this kind's ports eth1.. in front-panel order
    port_name: PortNamer
    reader: Reader
    running_reader: RunningReader
    confirm_timer: bool  # the device reverts an unconfirmed commit by itself (EOS commit timer, NX-OS commit-timeout)
    ecn_unit_bytes: int  # the unit the CLI takes ECN thresholds in (kbytes of 1,000 on EOS and NX-OS)
    docs: str  # the vendor document the configuration follows, for docs/configs.md
    builder: Builder | None = None
    # SHA-crypt rounds of a rendered password hash. Linux's crypt(3) (FRR hosts, Cumulus) reads a
    # rounds= field; EOS and NX-OS document only the plain form, so they keep the default 5,000.
    hash_rounds: int = 5000
    # None: the driver's own `get_ethtool_stats` where it has one (Linux switches), else nothing.
    lossless_reader: LosslessReader | None = None
    # None: the driver's own `get_link_quality_text` (ethtool) where it has one (Linux switches), else nothing.
    optics_reader: OpticsReader | None = None
    # "module:Class" of the NAPALM driver gpufabric opens for it, where it has its own (None: NAPALM's lookup
    # of `napalm_driver`). EOS and NX-OS subclass NAPALM's drivers to verify TLS and arm a switch-side revert.
    driver_class: str | None = None
    # The revert timers the device accepts, in seconds (NX-OS's commit-timeout: 30-3600): --confirm-timeout
    # must fall inside for every targeted switch.
    confirm_timeout_range: tuple[int, int] = (10, 3600)
    # An MLAG/vPC pair's BGP session over its peer link: on an SVI of this VLAN (carried by the peer
    # link only, on the /31 the plan gives the pair), or unnumbered on this interface.
    mlag_l3_vlan: int | None = None
    mlag_l3_interface: str | None = None
    judge: VendorJudge | None = None
    # The folder of the project's templates tree (templates/<folder>/) holding the Jinja2 templates `outputs`
    # names: the built-in platforms' templates sit apart from their code, shipped in the wheel as package data.
    templates_dir: str | None = None
    # A third-party platform's package whose `templates/` folder holds its own templates (package data).
    # None for both: a `builder` makes every file.
    templates_package: str | None = None
    # Filters the platform's templates use beyond the shared ones (ip, kbytes, yq).
    filters: tuple[tuple[str, TemplateFilter], ...] = ()
    # Where the platform sorts among the registered ones: every listing (docs, exports, containerlab
    # kinds) follows (rank, name). The built-ins take 0-3; a third party keeps the default and sorts after.
    rank: int = 1000
    # None: push loads NAME<candidate_suffix> as it is; else this joins several rendered files into one candidate.
    assemble_candidate: CandidateAssembler | None = None
    # Reached through an HTTPS API (eAPI, NX-API) that logs in with a password, never an SSH key alone.
    password_login: bool = False
    # The configuration sets PFC, ECN queues and a scheduler (verify checks them); False: classification only.
    lossless_qos: bool = True
    # The switch sizes PFC headroom itself from the plane's cable length class, which gpufabric renders
    # (Cumulus `qos pfc ... cable-length`, SONiC's dynamic buffer model `CABLE_LENGTH`); verify reads it back.
    cable_length: bool = False
    # The switch is given the lossless queue's buffer sizes (NX-OS ingress queuing `pause buffer-size ...
    # pause-threshold ... resume-threshold ...`), computed by gpufabric/config/headroom.py; verify reads them back.
    pause_buffer: bool = False
    # The switch is given the lossless ports' PFC headroom in bytes (EOS `platform trident mmu queue profile`
    # `ingress headroom`), computed by gpufabric/config/headroom.py; verify and validate read it back.
    ingress_headroom: bool = False
    # The ASIC can steer flows by link load (`load_balancing: adaptive`): Cumulus adaptive routing, EOS dynamic
    # load balancing. False: the intent's `adaptive` is refused for a plane with this platform's switches.
    adaptive_routing: bool = False
    # The BFD timers the platform takes (FRR's bfdd by default): transmit/receive interval in milliseconds and
    # detect multiplier. The intent's routing.bfd is refused outside them for a plane with this platform's switches.
    bfd_interval_range: tuple[int, int] = (10, 60_000)
    bfd_multiplier_range: tuple[int, int] = (2, 255)
    # Adaptive routing is also switched on per port (NVUE: interface <port> router adaptive-routing), not only
    # globally: verify expects it on every fabric port of an adaptive plane.
    adaptive_per_port: bool = False
    # A Linux kernel forwards the traffic, and its ECMP hash is set by sysctl: gpufabric renders
    # net.ipv4.fib_multipath_hash_policy=1 (the L4 five-tuple) in the host settings.
    linux_multipath_hash: bool = False
    # The port the OS's gNMI server listens on by default (what `telemetry gnmi` subscribes to); None: the
    # OS streams nothing, and the SSH exporter reads it.
    gnmi_port: int | None = None
    # How the platform's configuration carries free text (see `free_text_problem`).
    free_text: TextCheck = any_text
    # The hardware facts a role's model, ports and speeds are checked against when the intent is read (SONiC's
    # SKU table). None: the platform renders for any model the intent names.
    role_checker: RoleChecker | None = None

    def files(self, device: str) -> list[str]:
        return [f"{device}{suffix}" for suffix, _ in self.outputs]

    def free_text_problem(self, value: str) -> str | None:
        """Why this OS would not read `value` back exactly where the configuration writes free text (the SNMP
        location): the intent refuses such a value for a fabric with this platform's switches. None: it would."""
        return self.free_text(value)


def templates_root() -> Path:
    """The project's templates tree, one folder per OS: shipped in the wheel as gpufabric/templates/ (a
    package-dir mapping), the repository's top-level templates/ in a checkout."""
    package = Path(__file__).resolve().parents[1]
    shipped = package / "templates"
    return shipped if shipped.is_dir() else package.parent / "templates"


def file_reader(module: str, function: str, suffix: str) -> Reader:
    """`verify`'s reader of NAME<suffix>, imported on first use (checking an intent never loads it)."""

    def read(name: str, folder: Path) -> SwitchFacts:
        facts: SwitchFacts = getattr(importlib.import_module(module), function)(name, folder / f"{name}{suffix}")
        return facts

    return read


def lossless_reader(module: str, function: str) -> LosslessReader:
    """The platform's lossless-counter reader, imported on first use."""

    def read(conn: Any, ports: list[str]) -> dict[str, PortCounters]:
        found: dict[str, PortCounters] = getattr(importlib.import_module(module), function)(conn, ports)
        return found

    return read


def optics_reader(module: str, function: str) -> OpticsReader:
    """The platform's optics and link-quality reader, imported on first use."""

    def read(conn: Any, ports: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = getattr(importlib.import_module(module), function)(conn, ports)
        return found

    return read


def running_reader(module: str, function: str, **options: object) -> RunningReader:
    """`validate`'s reader of a running configuration's text, imported on first use."""

    def read(text: str) -> SwitchFacts:
        facts: SwitchFacts = getattr(importlib.import_module(module), function)("", text, "running-config", **options)
        return facts

    return read


def lazy(module: str, function: str) -> Callable[..., Any]:
    """MODULE.FUNCTION, imported on its first call: a platform's spec names its code without loading it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), function)(*args, **kwargs)

    call.__qualname__ = call.__name__ = f"{module}.{function}"
    return call


def linux_port(cage: int, lane: int, split: int) -> str:
    """Linux switch ports (Cumulus, FRR): swp1, or swp1s0.. for a split cage."""
    return f"swp{cage}" if split == 1 else f"swp{cage}s{lane}"
