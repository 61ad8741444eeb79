"""Render switch configurations from templates/<platform>/, in-process, with one Jinja2 environment.

StrictUndefined turns a missing value into an error instead of an empty string in a
config that would still load. Output file names per platform are in OUTPUTS.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from gpufabric.config.context import LinkIndex, build
from gpufabric.plan.model import Device, Plan, ip

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"

# platform -> (file suffix, template) pairs; one switch may need several files.
OUTPUTS: dict[str, tuple[tuple[str, str], ...]] = {
    "frr": ((".frr.conf", "frr/frr.conf.j2"), (".interfaces", "frr/interfaces.j2")),
}


class NoTemplatesError(Exception):
    """A platform whose templates are not written yet."""


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
    return env


@dataclass(frozen=True)
class Rendered:
    device: str
    files: dict[str, str]  # file name -> text


def render_device(plan: Plan, device: Device, index: LinkIndex) -> Rendered:
    outputs = OUTPUTS.get(device.platform)
    if outputs is None:
        raise NoTemplatesError(device.platform)
    ctx = build(plan, device, index)
    variables = {
        "d": device,
        "ports": ctx.ports,
        "neighbors": ctx.neighbors,
        "networks": ctx.networks,
        "ecmp": plan.planes[device.plane].routing.get("ecmp", 64),
        "mgmt_prefixlen": plan.intent.planes.oob.subnet.prefixlen if plan.intent.planes.oob else None,
    }
    env = environment()
    files = {f"{device.name}{suffix}": env.get_template(tpl).render(variables) for suffix, tpl in outputs}
    return Rendered(device.name, files)
