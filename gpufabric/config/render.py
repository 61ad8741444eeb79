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
    "frr": (
        (".frr.conf", "frr/frr.conf.j2"),
        (".interfaces", "frr/interfaces.j2"),
        (".nft", "frr/nftables.j2"),
        (".system.yaml", "frr/system.yaml.j2"),
    ),
    "cumulus": ((".yaml", "cumulus/startup.yaml.j2"),),
    "eos": ((".cfg", "eos/config.j2"),),
    "nxos": ((".cfg", "nxos/config.j2"),),
}


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
    return env


@dataclass(frozen=True)
class Rendered:
    device: str
    files: dict[str, str]  # file name -> text


def render_device(plan: Plan, device: Device, index: LinkIndex) -> Rendered:
    outputs = OUTPUTS[device.platform]  # every Platform of the schema has an entry
    ctx = build(plan, device, index)
    variables = {
        "d": device,
        "ports": ctx.ports,
        "neighbors": ctx.neighbors,
        "networks": ctx.networks,
        "ecmp": ctx.ecmp,
        "qos": ctx.qos,
        "mgmt": ctx.mgmt,
        "mlag": ctx.mlag,
        "acl": ctx.acl,
        "border": ctx.border,
    }
    env = environment()
    files = {f"{device.name}{suffix}": env.get_template(tpl).render(variables) for suffix, tpl in outputs}
    return Rendered(device.name, files)
