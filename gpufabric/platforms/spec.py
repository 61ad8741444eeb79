"""The contract between gpufabric and one network OS: the bottom layer of the platform registry.

A platform is two things. Its `PlatformFacts` are plain data every layer may read (port and management
names, the MTU ceiling, the password hash, which files a switch gets, how push reaches it, the containerlab
kind). Its `Platform` object answers everything that differs in behaviour from one OS to another: how its
files are made and read back, which buffer and load-balancing settings its configuration carries, how its
telemetry is read. The base class does the common thing; each OS's subclass (gpufabric/nos/<os>/, or a
distribution of its own) overrides only what it does differently, as a NAPALM driver overrides
NetworkDriver. No layer above asks which OS it is talking to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

# The layers above (intent, config, verify, telemetry) import the registry, so this module names none of their
# types, not even for the type checker (that would be an import up the floors, a circle): their objects appear
# here as `Any`, and each OS's subclass types them exactly where it overrides a method.
DeviceContext = Any  # gpufabric.config.context.DeviceContext
SwitchRole = Any  # gpufabric.intent.model.SwitchRole
PortCounters = Any  # the lossless counters of one port (gpufabric/verify/running/)
Optics = Any  # gpufabric.telemetry.optics.Optics
SwitchFacts = Any  # gpufabric.verify.facts.SwitchFacts
PortBuffers = Any  # one port's queue buffers (gpufabric.telemetry.buffers.PortBuffers)

# A Jinja2 filter a platform's templates use beyond the shared ones.
TemplateFilter = Callable[..., Any]
# Renders one template of the platform's templates with the switch's variables: template name -> text.
TemplateRender = Callable[[str], str]


@dataclass(frozen=True)
class VendorJudge:
    """The vendor's own model that `verify` hands this platform's files to, where it is installed."""

    title: str  # whose model it is
    package: str  # the import name of the vendor's package
    requirement: str  # what to install
    module: str  # gpufabric's module that runs it, with `judge(ctx, path) -> list[Finding]`


@dataclass(frozen=True)
class PlatformFacts:
    """What is true of one network OS, as data: read by every layer, never a switch naming one vendor."""

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
    outputs: tuple[tuple[str, str], ...]  # (file suffix, template or source); one switch may need several files
    candidate_suffix: str  # the rendered file push loads as the candidate
    napalm_driver: str
    containerlab_kind: str
    containerlab_image: str  # name only, no registry host: users load or tag their own images
    eth_numbering: bool  # containerlab names this kind's ports eth1.. in front-panel order
    confirm_timer: bool  # the device reverts an unconfirmed commit by itself (EOS commit timer, NX-OS commit-timeout)
    ecn_unit_bytes: int  # the unit the CLI takes ECN thresholds in (kbytes of 1,000 on EOS and NX-OS)
    docs: str  # the vendor document the configuration follows, for docs/configs.md
    # SHA-crypt rounds of a rendered password hash. Linux's crypt(3) (FRR hosts, Cumulus) reads a
    # rounds= field; EOS and NX-OS document only the plain form, so they keep the default 5,000.
    hash_rounds: int = 5000
    # "module:Class" of the NAPALM driver gpufabric opens for it, where it has its own (None: NAPALM's lookup
    # of `napalm_driver`). EOS and NX-OS subclass NAPALM's drivers to verify TLS and arm a switch-side revert.
    driver_class: str | None = None
    # The revert timers the device accepts, in seconds (NX-OS's commit-timeout: 30-3600): --confirm-timeout
    # must fall inside for every targeted switch.
    confirm_timeout_range: tuple[int, int] = (10, 3600)
    # Reached through an HTTPS API (eAPI, NX-API) that logs in with a password, never an SSH key alone.
    password_login: bool = False
    # An MLAG/vPC pair's BGP session over its peer link: on an SVI of this VLAN (carried by the peer
    # link only, on the /31 the plan gives the pair), or unnumbered on this interface.
    mlag_l3_vlan: int | None = None
    mlag_l3_interface: str | None = None
    # The BFD timers the platform takes (FRR's bfdd by default): transmit/receive interval in milliseconds and
    # detect multiplier. The intent's routing.bfd is refused outside them for a plane with this platform's switches.
    bfd_interval_range: tuple[int, int] = (10, 60_000)
    bfd_multiplier_range: tuple[int, int] = (2, 255)
    # The port the OS's gNMI server listens on by default (what `telemetry gnmi` subscribes to); None: the
    # OS streams nothing, and the SSH exporter reads it.
    gnmi_port: int | None = None
    # The folder of the project's templates tree (templates/<folder>/) holding the Jinja2 templates `outputs`
    # names: the built-in platforms' templates sit apart from their code, shipped in the wheel as package data.
    templates_dir: str | None = None
    # A third-party platform's package whose `templates/` folder holds its own templates (package data).
    templates_package: str | None = None
    # Where the platform sorts among the registered ones: every listing (docs, exports, containerlab
    # kinds) follows (rank, name). The built-ins take 0-4; a third party keeps the default and sorts after.
    rank: int = 1000


@dataclass(frozen=True)
class LoadBalancing:
    """What a switch's configuration says about the plane's `load_balancing`, as verify and validate expect it."""

    adaptive: bool | None = None  # adaptive routing on or off; None: the platform has none to check
    adaptive_ports: frozenset[str] = frozenset()  # ports that must switch it on one by one
    multipath_hash: int | None = None  # the Linux kernel's fib_multipath_hash_policy; None: not the kernel's


@dataclass(frozen=True)
class LosslessBuffers:
    """The lossless class's buffer settings the switch's configuration carries (None: it carries none of that
    kind): computed by gpufabric/config/headroom.py, read back by verify and validate."""

    cable_metres: int | None = None  # the switch sizes PFC headroom itself from the plane's cable length
    # (traffic class, buffer size, pause threshold, resume threshold): an ingress queuing reservation
    pause_buffer: tuple[int, int, int, int] | None = None
    headroom: int | None = None  # the lossless ports' PFC headroom in bytes


class Platform:
    """One network OS's behaviour. Every method has a default that does the common thing; an OS overrides
    those it does differently. Subclasses live in gpufabric/nos/<os>/ or in a third party's distribution and
    are found only through the `gpufabric.platforms` entry points (see docs/adding-a-platform.md)."""

    # The vendor's own model verify hands the rendered files to, where it is installed; None: no judge.
    judge: VendorJudge | None = None

    def __init__(self, facts: PlatformFacts) -> None:
        self.facts = facts

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.facts.name}>"

    @property
    def name(self) -> str:
        return self.facts.name

    @property
    def title(self) -> str:
        return self.facts.title

    # -- naming -------------------------------------------------------------------------------------------

    def port_name(self, cage: int, lane: int, split: int) -> str:
        """A logical port, (physical cage, lane) on a cage split `split` ways. Default: a Linux switch's
        swp1, or swp1s0.. for a split cage."""
        return linux_port(cage, lane, split)

    def files(self, device: str) -> list[str]:
        """The files one switch gets, in the order `outputs` names them."""
        return [f"{device}{suffix}" for suffix, _ in self.facts.outputs]

    # -- rendering ----------------------------------------------------------------------------------------

    def template_loader(self) -> jinja2.BaseLoader | None:
        """Where the platform's Jinja2 templates are: the project's templates tree for a built-in, the
        package data of a third party's `templates_package`. None: the platform names no templates."""
        import jinja2  # only when rendering: checking an intent loads the registry, never Jinja2

        if self.facts.templates_dir is not None:
            return jinja2.FileSystemLoader(templates_root() / self.facts.templates_dir)
        if self.facts.templates_package is not None:
            return jinja2.PackageLoader(self.facts.templates_package, "templates")
        return None

    def template_filters(self) -> Mapping[str, TemplateFilter]:
        """Filters the platform's templates use beyond the shared ones (ip, kbytes, yq). Default: none."""
        return {}

    def render(self, ctx: DeviceContext, template: TemplateRender) -> dict[str, str]:
        """{file name: text} of one switch. Default: each of `outputs` rendered from its Jinja2 template.
        A platform whose configuration is a data document builds it in Python instead."""
        name = ctx.device.name
        return {f"{name}{suffix}": template(source) for suffix, source in self.facts.outputs}

    def candidate(self, device: str, files: Mapping[str, str]) -> str:
        """The one text push loads from a switch's rendered files. Default: the `candidate_suffix` file."""
        return files[f"{device}{self.facts.candidate_suffix}"]

    # -- reading back -------------------------------------------------------------------------------------

    def read_files(self, device: str, folder: Path) -> SwitchFacts:
        """What `verify` reads out of a switch's rendered files in `folder`."""
        raise NotImplementedError(f"platform {self.name} reads no rendered files back")

    def read_running(self, text: str) -> SwitchFacts:
        """What `validate` reads out of a running configuration the driver returned (at least the QoS map)."""
        raise NotImplementedError(f"platform {self.name} reads no running configuration")

    # -- what the configuration carries -------------------------------------------------------------------

    def adaptive_routing(self) -> bool:
        """The ASIC can steer flows by link load (`load_balancing: adaptive`). Default: no, and the intent
        refuses `adaptive` for a plane with this platform's switches."""
        return False

    def load_balancing(self, ctx: DeviceContext) -> LoadBalancing:
        """What the switch's configuration says about load balancing. Default: adaptive routing on or off as
        the plane asks, where the platform has it; nothing else."""
        return LoadBalancing(adaptive=ctx.adaptive if self.adaptive_routing() else None)

    def lossless_qos(self) -> bool:
        """The configuration sets PFC, ECN queues and a scheduler (verify checks them). Default: yes."""
        return True

    def lossless_buffers(self, ctx: DeviceContext) -> LosslessBuffers:
        """The lossless class's buffer settings the configuration carries. Default: none (the switch's own)."""
        return LosslessBuffers()

    # -- checking the intent ------------------------------------------------------------------------------

    def role_problems(self, role: SwitchRole) -> list[tuple[str, str, str]]:
        """What a switch role asks of this platform's hardware that it does not have: [(role field, what is
        wrong, what would be right)]. Default: nothing, the platform renders for any model the intent names."""
        return []

    def free_text_problem(self, value: str) -> str | None:
        """Why this OS would not read `value` back exactly where the configuration writes free text (the SNMP
        location): the intent refuses such a value for a fabric with this platform's switches. Default: None,
        the value is carried as it is (the intent already keeps it printable and on one line)."""
        return None

    # -- telemetry ----------------------------------------------------------------------------------------

    def read_lossless(self, conn: Any, ports: list[str]) -> dict[str, PortCounters] | None:
        """Per port: PFC pauses, watchdog events, ECN marks, queue drops, read through the open NAPALM
        connection. Default: None, the driver's own `ethtool -S` (a Linux switch) answers, if it has one."""
        return None

    def read_optics(self, conn: Any, ports: list[str]) -> dict[str, Optics] | None:
        """Per port: transceivers and FEC counters. Default: None, the driver's own ethtool answers."""
        return None

    # -- telemetry: buffer occupancy and watermarks (issue 43) ------------------------------------------------

    def read_buffers(self, conn: Any, ports: list[str], queues: list[str]) -> dict[str, PortBuffers] | None:
        """Per port, per traffic class in `queues` and buffer (egress queue, ingress priority group): the bytes
        held now and the most held in the OS's window, read with the OS's own feature through the open NAPALM
        connection. Default: None, the OS shows no switch buffer (FRR on a Linux host has none)."""
        return None


def templates_root() -> Path:
    """The project's templates tree, one folder per OS: shipped in the wheel as gpufabric/templates/ (a
    package-dir mapping), the repository's top-level templates/ in a checkout."""
    package = Path(__file__).resolve().parents[1]
    shipped = package / "templates"
    return shipped if shipped.is_dir() else package.parent / "templates"


def linux_port(cage: int, lane: int, split: int) -> str:
    """Linux switch ports (Cumulus, FRR): swp1, or swp1s0.. for a split cage."""
    return f"swp{cage}" if split == 1 else f"swp{cage}s{lane}"
