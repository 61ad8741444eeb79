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

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpufabric.errors import GpufabricError
from gpufabric.platforms.disruption import Disruption, Reason

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


# Groups of facts a running reader returns, named by the OS folders (PlatformFacts.running_facts): what a
# reader of the switch's configuration text finds of load balancing and lossless QoS, and of its BGP, BFD and
# the planes a converged switch carries.
QOS_FACTS = frozenset(
    {"dscp_map", "adaptive", "adaptive_ports", "hash_fields", "multipath_hash"}
    | {"cable_length", "pause_buffer", "headroom"}
)
ROUTING_FACTS = frozenset({"asn", "bfd", "bgp_timers", "subinterfaces", "vrf_neighbors", "shares"})


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
    # The name NAPALM resolves to that driver (`napalm.get_network_driver(...)`, a module `napalm_<name>`), which
    # the Nornir inventory gives the host's `napalm` connection: a Nornir script's own `napalm_get` then opens
    # gpufabric's driver, where `napalm_driver` ("eos", "nxos") would open NAPALM's own, which trusts any
    # certificate. None: NAPALM's lookup of `napalm_driver` already finds the platform's driver.
    napalm_name: str | None = None
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
    # The facts (gpufabric.verify.facts.SwitchFacts' fields) the platform's running-configuration reader
    # (`read_running`) returns: validate holds the running switch to every check of the one comparison
    # (gpufabric/verify/expect.py) whose facts are all among them, and to no other. Empty: none.
    running_facts: frozenset[str] = frozenset()
    # The configuration carries BGP max-MED on startup (the plane's routing.max_med_on_startup), a line its
    # vendor's model proves; False: the intent's rules refuse the field on a plane with the platform's switches.
    bgp_max_med: bool = False


@dataclass(frozen=True)
class LoadBalancing:
    """What a switch's configuration says about the plane's `load_balancing`, as verify and validate expect it."""

    adaptive: bool | None = None  # adaptive routing on or off; None: the platform has none to check
    adaptive_ports: frozenset[str] = frozenset()  # ports that must switch it on one by one
    multipath_hash: int | None = None  # the Linux kernel's fib_multipath_hash_policy; None: not the kernel's
    # The packet fields the switch's ECMP hash is told to use (ROCE_HASH's names), where the configuration says;
    # empty: the configuration leaves the platform's default.
    hash_fields: tuple[str, ...] = ()


# RoCE-aware ECMP: RoCEv2 is UDP to port 4791, and a NIC gives each queue pair its own UDP source port, so a
# hash over the five-tuple (the UDP source port above all) spreads one server's QPs over every uplink where a
# hash over addresses alone puts every QP between two NICs on one path.
ROCE_HASH = ("src-ip", "dst-ip", "ip-protocol", "l4-src-port", "l4-dst-port")
# The destination queue pair a RoCEv2 packet carries in its InfiniBand base transport header (the first 12
# bytes of the UDP payload; bytes 5-7 hold the 24-bit destination QP): a hash field where a platform can read
# the UDP payload.
BTH_DEST_QP = "bth-dest-qp"


@dataclass(frozen=True)
class LosslessBuffers:
    """The lossless class's buffer settings the switch's configuration carries (None: it carries none of that
    kind): computed by gpufabric/config/headroom.py, read back by verify and validate."""

    cable_metres: int | None = None  # the switch sizes PFC headroom itself from the plane's cable length
    # (traffic class, buffer size, pause threshold, resume threshold): an ingress queuing reservation
    pause_buffer: tuple[int, int, int, int] | None = None
    headroom: int | None = None  # the lossless ports' PFC headroom in bytes


# -- drain and maintenance ------------------------------------------------------------------

# The policy name of the FRR drain (route-map), and how many times the switch's own ASN is prepended: a path
# through a drained switch is longer than any path the planned Clos offers between two switches (at most two AS
# hops longer than the shortest in three tiers), so every neighbour with another way prefers it.
DRAIN_POLICY = "GF-DRAIN"
DRAIN_PREPEND = 3


@dataclass(frozen=True)
class DrainSpec:
    """What a switch's drain is made from: its OS release, its ASN and its BGP neighbours as it names them
    (interfaces for unnumbered sessions, addresses otherwise), read from the switch when it is drained."""

    release: str
    asn: int | None = None
    neighbors: tuple[str, ...] = ()
    # (VRF, its BGP neighbours): the carried planes' sessions of a converged plane, drained with the rest
    vrfs: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class DrainSteps:
    """A platform's drain, in its vendor's own form."""

    mechanism: str  # what the vendor calls it, as `maintenance status` reports it
    form: str  # "config": configuration lines loaded as a change; "commands": commands run one a line
    drain: str  # the text that drains the switch
    undrain: str  # the text that puts it back into service
    source: str  # the vendor document the steps follow (docs/operating.md cites it)


def frr_drain_steps(spec: DrainSpec) -> DrainSteps:
    """FRR (RFC 8326 graceful shutdown, and an outbound AS-path prepend to every neighbour): the GSHUT
    community tells peers that honour it to prefer other paths; the prepend makes every other path shorter
    for peers that do not (the planned fabric's FRR peers carry no GSHUT policy). Both in the default BGP
    instance and in each VRF's (a converged plane's carried planes): FRR's graceful shutdown is per
    instance, and a carried plane's traffic must leave the switch as its own plane's does. Config lines for
    vtysh."""
    if spec.asn is None:
        raise ValueError("an FRR drain needs the switch's BGP ASN")
    asn = int(spec.asn)
    for name in (*spec.neighbors, *(n for _, peers in spec.vrfs for n in peers)):
        if not _NEIGHBOR.fullmatch(name):
            raise ValueError(f"BGP neighbour {name[:40]!r} is not an interface name or an address")
    for vrf, _ in spec.vrfs:
        if not _VRF.fullmatch(vrf) or vrf == "default":
            raise ValueError(f"VRF {vrf[:40]!r} is not a VRF name (letters, digits, - and _, at most 15)")
    prepend = " ".join([str(asn)] * DRAIN_PREPEND)
    instances = [(f"router bgp {asn}", spec.neighbors)] + [(f"router bgp {asn} vrf {v}", p) for v, p in spec.vrfs]
    drain = f"route-map {DRAIN_POLICY} permit 10\n set as-path prepend {prepend}\nexit\n!\n" + "".join(
        _instance(head, "", peers) for head, peers in instances
    )
    undrain = "".join(_instance(head, "no ", peers) for head, peers in instances) + f"!\nno route-map {DRAIN_POLICY}\n"
    return DrainSteps(
        "bgp graceful-shutdown + as-path prepend",
        "config",
        drain,
        undrain,
        "FRR User Guide, BGP: Graceful Shutdown (RFC 8326); route-map `set as-path prepend`",
    )


def _instance(head: str, no: str, neighbors: tuple[str, ...]) -> str:
    """One BGP instance's drain (`no` = "") or undrain (`no` = "no "): its graceful shutdown and the drain
    policy on each neighbour."""
    bound = "".join(f"  {no}neighbor {n} route-map {DRAIN_POLICY} out\n" for n in neighbors)
    return f"{head}\n {no}bgp graceful-shutdown\n address-family ipv4 unicast\n{bound} exit-address-family\nexit\n"


_NEIGHBOR = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_VRF = re.compile(r"[A-Za-z0-9_-]{1,15}")


@dataclass(frozen=True)
class ZtpForm:
    """What an empty switch of one OS is handed on day 0 (`gpufabric export ztp`): the files it fetches over
    HTTP, and the DHCP options its answer carries to point it at the first of them."""

    files: dict[str, str]  # file name -> text, served from the provisioning server's root; the entry file first
    options: tuple[tuple[int, str], ...]  # (DHCP option code, value): the URL (or server and file) of the entry file


class NoZtpFormError(GpufabricError):
    """The platform has no zero-touch provisioning form in gpufabric."""


@dataclass(frozen=True)
class Bootstrap:
    """What an OOB switch needs before the others can be provisioned through it (`gpufabric export ztp`):
    the OOB switches relay DHCP for every other switch, so their own first configuration comes from the
    console. Every value is the plan's (addresses, port and switch names), checked by the export."""

    server: str  # the provisioning (DHCP) server the relay forwards to
    gateway: str  # the OOB gateway: the switch's default route
    relay_ports: tuple[str, ...]  # the ports cabled to a provisioned switch's management port (the relay's clients)
    remote_id: str | None  # option 82's remote-id the relay sends (its own name) where the plane has several
    relay_clients: tuple[str, ...] = ()  # the planned management address of each relay port's switch, in order
    release: str | None = None  # the OS release the intent pins for the switch's platform


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

    def spectrum_x(self, model: str) -> bool:
        """A switch of hardware `model` is an NVIDIA Spectrum-X switch, whose adaptive routing pairs with the
        SuperNICs' Spectrum-X settings (the plane's `spectrum_x`). Default: no."""
        return False

    def load_balancing(self, ctx: DeviceContext) -> LoadBalancing:
        """What the switch's configuration says about load balancing. Default: adaptive routing on or off as
        the plane asks, where the platform has it; nothing else."""
        return LoadBalancing(adaptive=ctx.adaptive if self.adaptive_routing() else None)

    def balancing_problem(self, model: str, release: str, adaptive: bool) -> tuple[str, str] | None:
        """Why a compute-plane switch of hardware `model` on `release` would render no load-balancing setting
        (`adaptive`: the plane asks for adaptive routing): (what is wrong, what would be right), which the
        intent check reports at the role's model; None: it renders one. Default: None."""
        return None

    def carried_planes_problem(self) -> str | None:
        """Why a switch of this platform cannot carry logical planes (a converged plane's `carries`: VRFs on
        802.1Q subinterfaces, BGP per VRF, a class per plane in the scheduler), or None when it renders them.
        Default: it does not, and the intent check says so at the switch role's platform."""
        return f"gpufabric renders no VRFs on tagged subinterfaces for {self.facts.title}"

    def vrf_name(self, name: str) -> str:
        """How a carried plane's VRF (the intent's upper-case name, at most 11 characters) is named on this
        platform. Default: as written."""
        return name

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

    # -- changing a running switch --------------------------------------------------------------------------

    def disruptions(self, diff: str) -> tuple[Disruption, ...]:
        """Why applying `diff` (what the platform's driver's `compare_config` returned: the running
        configuration against the candidate) would disturb traffic through the switch; empty when the
        change is hitless. `nornir push --drain auto` drains the switches with a reason first. Default: a
        platform that does not classify its changes calls any change disruptive (the safe side)."""
        if not diff.strip():
            return ()
        return (Disruption(Reason.UNCLASSIFIED, f"platform {self.name} does not classify its changes"),)

    # -- telemetry ----------------------------------------------------------------------------------------

    def read_lossless(self, conn: Any, ports: list[str]) -> dict[str, PortCounters] | None:
        """Per port: PFC pauses, watchdog events, ECN marks, queue drops, read through the open NAPALM
        connection. Default: None, the driver's own `ethtool -S` (a Linux switch) answers, if it has one."""
        return None

    def read_optics(self, conn: Any, ports: list[str]) -> dict[str, Optics] | None:
        """Per port: transceivers and FEC counters. Default: None, the driver's own ethtool answers."""
        return None

    # -- releases, reboots and upgrades --------------------------------------------------------------------

    def running_release(self, os_version: str) -> str | None:
        """The release train (the intent's `platforms.<os>.release` form) a switch's running version belongs
        to, from the text its driver reports as NAPALM's `os_version`; None: no release can be read in it.
        Default: the first `major.minor` of the text ("Cumulus Linux 5.14.0" -> "5.14", "4.33.1F" -> "4.33",
        "10.4(3)" -> "10.4")."""
        found = _MAJOR_MINOR.search(os_version)
        return f"{found.group(1)}.{found.group(2)}" if found else None

    def reboot_modes(self) -> tuple[str, ...]:
        """How the switch can be rebooted, the least disruptive first (`nornir restart` takes the first unless
        told): `warm` (the data plane forwards on while the control plane restarts), `fast` (a short data-plane
        outage), `cold` (a full reload), `daemons` (only the routing daemons restart). Default: cold only."""
        return ("cold",)

    def installs_images(self) -> bool:
        """`nornir upgrade` can install an OS image on it (its driver stages, checks, installs and falls
        back). Default: yes."""
        return True

    def image_fallback(self) -> str:
        """What the OS does when a switch does not come back on a new image: which image it boots next, and
        who sets it (docs/upgrade.md prints it per platform)."""
        return "no fallback is known for this platform: a switch that does not come back needs its console"

    # -- drain and maintenance ----------------------------------------------------------

    def drain_steps(self, spec: DrainSpec) -> DrainSteps:
        """How this OS takes a switch out of service and puts it back: the vendor's own mechanism. Default:
        FRR's (graceful shutdown and an outbound AS-path prepend), the routing stack of a Linux switch."""
        return frr_drain_steps(spec)

    def keep_drain(self, candidate: str, spec: DrainSpec) -> str:
        """The candidate a push loads onto a switch that its marker says is drained: `candidate` (what
        `candidate()` joined) with the drain kept in it, so that replacing the configuration with it leaves the
        switch drained and shows no diff for the drain. Default: `candidate` as it is, for a drain that is not
        configuration (a replace leaves it alone) or that the OS's driver keeps on the switch itself (FRR's
        driver appends the lines it recorded at drain time: gpufabric.nos.frr.files.DeviceFiles.keep_drain)."""
        return candidate

    # -- third-party test catalogs ------------------------------------------------------------------------

    def anta_catalog(self, ctx: DeviceContext) -> dict[str, Any] | None:
        """The switch's catalog for Arista's ANTA (test module -> tests with their inputs), or None where ANTA
        does not test this OS. Default: None (ANTA speaks eAPI: EOS only)."""
        return None

    # -- zero-touch provisioning ------------------------------------------------------------------------

    def ztp(self, device: str, files: Mapping[str, str], base_url: str) -> ZtpForm:
        """Day 0 for one switch: `files` are its rendered files (secrets resolved), `base_url` the provisioning
        server's HTTP root ("http://a.b.c.d:port/"). Default: the platform has no ZTP form here."""
        raise NoZtpFormError(
            f"platform {self.name} ({self.title}) has no zero-touch provisioning form in gpufabric: "
            f"its switches ({device}, ...) are provisioned by hand or by `nornir push` once reachable"
        )

    def console_bootstrap(self, device: str, files: Mapping[str, str], bootstrap: Bootstrap) -> dict[str, str]:
        """Day 0 for one OOB switch, typed or served on its console: file name -> text, the minimal part of its
        rendered `files` (name, management address, default route, SSH, the admin's hashed login) and the
        DHCP relay towards the provisioning server. Default: the platform has no console bootstrap here."""
        raise NoZtpFormError(
            f"platform {self.name} ({self.title}) has no console bootstrap in gpufabric: the OOB switch {device} "
            "is configured by hand on its console (docs/ztp.md, day 0)"
        )

    # -- telemetry: buffer occupancy and watermarks ------------------------------------------------

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


_MAJOR_MINOR = re.compile(r"(?<![0-9.])([0-9]{1,3})\.([0-9]{1,3})(?![0-9])")


def linux_port(cage: int, lane: int, split: int) -> str:
    """Linux switch ports (Cumulus, FRR): swp1, or swp1s0.. for a split cage."""
    return f"swp{cage}" if split == 1 else f"swp{cage}s{lane}"
