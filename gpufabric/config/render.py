"""Render switch configurations in-process from each platform's templates, one Jinja2 environment per platform.

The built-in platforms' templates sit in the project's templates tree (templates/<os>/), shipped in the
wheel as package data, so an installed wheel renders exactly as a checkout does; a third-party platform's
are package data of its own package.

StrictUndefined turns a missing value into an error instead of an empty string in a
config that would still load. Which files a switch gets is its platform's (gpufabric/nos/<os>/);
Cumulus NVUE documents are built as a tree (gpufabric/nos/cumulus/document.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import jinja2

from gpufabric.config.context import DeviceContext, LinkIndex, breakouts, build
from gpufabric.config.policy import MGMT_UDP_PORTS, NXOS_MGMT0_TCP_PORTS
from gpufabric.plan.model import Device, Plan, ip
from gpufabric.platforms import platform
from gpufabric.platforms.spec import PlatformSpec, templates_root
from gpufabric.platforms.yaml_text import scalar as yaml_scalar


def kbytes(value: int) -> int:
    """Bytes to the kilobytes (of 1,000, as the vendors' RoCE documents count) switch CLIs take."""
    return value // 1000


class NoTemplatesError(LookupError):
    """A platform names template outputs but no package holding them."""


@cache
def environment(spec: PlatformSpec) -> jinja2.Environment:
    """The platform's templates, loaded as resources of its package: an installed wheel renders as a checkout does."""
    loader: jinja2.BaseLoader
    if spec.templates_dir is not None:
        loader = jinja2.FileSystemLoader(templates_root() / spec.templates_dir)
    elif spec.templates_package is not None:
        loader = jinja2.PackageLoader(spec.templates_package, "templates")
    else:
        raise NoTemplatesError(f"platform {spec.name} names no templates folder for {spec.outputs}")
    env = jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # network configs, not HTML
    )
    env.filters["ip"] = ip
    env.filters["kbytes"] = kbytes
    env.filters["yq"] = yaml_scalar
    env.filters.update(dict(spec.filters))
    env.globals["mgmt0_guard"] = {"tcp": NXOS_MGMT0_TCP_PORTS, "udp": MGMT_UDP_PORTS}
    return env


@dataclass(frozen=True)
class Rendered:
    device: str
    files: dict[str, str]  # file name -> text


def variables(ctx: DeviceContext) -> dict[str, object]:
    return {
        "d": ctx.device,
        "ports": ctx.ports,
        "neighbors": ctx.neighbors,
        "networks": ctx.networks,
        "ecmp": ctx.ecmp,
        "qos": ctx.qos,
        "mgmt": ctx.mgmt,
        "mlag": ctx.mlag,
        "acl": ctx.acl,
        "border": ctx.border,
        "release": ctx.release,
        "adaptive": ctx.adaptive,
        "lossless_buffer": ctx.lossless_buffer,
        "breakouts": breakouts(ctx),
        "bfd": ctx.bfd,
        "bgp_timers": ctx.bgp_timers,
    }


def render_context(ctx: DeviceContext) -> dict[str, str]:
    name = ctx.device.name
    spec = platform(ctx.device.platform)
    if spec.builder is not None:
        return spec.builder(ctx)
    env = environment(spec)
    values = variables(ctx)
    return {f"{name}{suffix}": env.get_template(tpl).render(values) for suffix, tpl in spec.outputs}


def render_device(plan: Plan, device: Device, index: LinkIndex) -> Rendered:
    return Rendered(device.name, render_context(build(plan, device, index)))
