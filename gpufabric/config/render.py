"""Render switch configurations in-process from each platform's templates, one Jinja2 environment per platform.

The built-in platforms' templates sit in the project's templates tree (templates/<os>/), shipped in the
wheel as package data, so an installed wheel renders exactly as a checkout does; a third-party platform's
are package data of its own package.

StrictUndefined turns a missing value into an error instead of an empty string in a
config that would still load. Which files a switch gets is its platform's (gpufabric/nos/<os>/);
Cumulus NVUE documents are built as a tree (gpufabric/nos/cumulus/document.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache

import jinja2

from gpufabric.config.context import DeviceContext, LinkIndex, breakouts, build
from gpufabric.config.policy import MGMT_UDP_PORTS, NXOS_MGMT0_TCP_PORTS
from gpufabric.errors import GpufabricError
from gpufabric.plan.model import Device, Plan, ip
from gpufabric.platforms import platform
from gpufabric.platforms.spec import Platform
from gpufabric.platforms.yaml_text import scalar as yaml_scalar


def kbytes(value: int) -> int:
    """Bytes to the kilobytes (of 1,000, as the vendors' RoCE documents count) switch CLIs take."""
    return value // 1000


class NoTemplatesError(LookupError, GpufabricError):
    """A platform names template outputs but no package holding them."""


@cache
def environment(spec: Platform) -> jinja2.Environment:
    """The platform's templates, loaded as resources of its package: an installed wheel renders as a checkout does."""
    loader = spec.template_loader()
    if loader is None:
        raise NoTemplatesError(f"platform {spec.name} names no templates folder for {spec.facts.outputs}")
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
    env.filters.update(spec.template_filters())
    env.globals["mgmt0_guard"] = {"tcp": NXOS_MGMT0_TCP_PORTS, "udp": MGMT_UDP_PORTS}
    return env


@dataclass(frozen=True)
class Rendered:
    device: str
    files: dict[str, str]  # file name -> text


# A context field a template knows by another name: the switch is `d` in every template.
RENAMED = {"device": "d"}


def variables(ctx: DeviceContext) -> dict[str, object]:
    """Every field of the switch's context, by its own name (a new field reaches the templates without being
    listed here), and what the context derives from them."""
    values: dict[str, object] = {RENAMED.get(f.name, f.name): getattr(ctx, f.name) for f in fields(ctx)}
    return values | {
        "adaptive": ctx.adaptive,
        "balancing": platform(ctx.device.platform).load_balancing(ctx),  # what verify reads back
        "lossless_buffer": ctx.lossless_buffer,
        "breakouts": breakouts(ctx),
    }


def render_context(ctx: DeviceContext) -> dict[str, str]:
    spec = platform(ctx.device.platform)
    values: dict[str, object] = {}

    def template(name: str) -> str:
        # Only a platform that renders from templates asks: a document-built one never loads Jinja2's environment.
        if not values:  # computed once for all of the switch's templates
            values.update(variables(ctx))
        return environment(spec).get_template(name).render(values)

    return spec.render(ctx, template)


def render_device(plan: Plan, device: Device, index: LinkIndex) -> Rendered:
    return Rendered(device.name, render_context(build(plan, device, index)))
