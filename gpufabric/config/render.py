"""Render switch configurations from templates/<platform>/, in-process, with one Jinja2 environment.

StrictUndefined turns a missing value into an error instead of an empty string in a
config that would still load. Which files a switch gets is its platform's (gpufabric/platforms/);
Cumulus NVUE documents are built as a tree (gpufabric/platforms/cumulus/document.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from gpufabric.config.context import DeviceContext, LinkIndex, breakouts, build
from gpufabric.config.policy import MGMT_UDP_PORTS, NXOS_MGMT0_TCP_PORTS
from gpufabric.plan.model import Device, Plan, ip
from gpufabric.platforms import platform
from gpufabric.platforms.eos import breakout_speed as eos_breakout_speed
from gpufabric.platforms.yaml_text import scalar as yaml_scalar

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def kbytes(value: int) -> int:
    """Bytes to the kilobytes (of 1,000, as the vendors' RoCE documents count) switch CLIs take."""
    return value // 1000


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # network configs, not HTML
    )
    env.filters["ip"] = ip
    env.filters["kbytes"] = kbytes
    env.filters["eos_speed"] = eos_breakout_speed
    env.filters["yq"] = yaml_scalar
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
        "breakouts": breakouts(ctx),
    }


def render_context(ctx: DeviceContext) -> dict[str, str]:
    name = ctx.device.name
    spec = platform(ctx.device.platform)
    if spec.builder is not None:
        return spec.builder(ctx)
    env = environment()
    values = variables(ctx)
    return {f"{name}{suffix}": env.get_template(tpl).render(values) for suffix, tpl in spec.outputs}


def render_device(plan: Plan, device: Device, index: LinkIndex) -> Rendered:
    return Rendered(device.name, render_context(build(plan, device, index)))
