"""What a lab's things are called on this machine, so labs of different names run side by side.

A lab has a name (`lab up --name N`; "default" when none is given). Everything a lab makes that the machine
shares carries that name: its network namespaces (which are also its FRR pathspaces, /etc/frr/<ns>), the
links and bridge it puts in the root namespace, its host containers' namespaces, its state folder.

The default lab keeps the names it always had: each switch's namespace is the switch's own name, its bridge
`gf-oob`. Another lab's namespace is `<lab>_<switch>`: a switch name holds no `_` and a lab name none either,
so the part before the `_` says whose namespace it is, and no other lab's, the default's included, can have
it. Interface names are at most 15 characters (IFNAMSIZ): a named lab's root-namespace links carry a short
tag, six hexadecimal digits of the name's SHA-256, in place of the name (the default lab's `gfm`/`gf-oob`
names hold a letter no tag has; two names with the same tag are refused when the second comes up).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from gpufabric.errors import GpufabricError

DEFAULT_LAB = "default"
LAB_NAME = re.compile(r"[a-z][a-z0-9-]{0,15}")
SEPARATOR = "_"  # in no switch name (SWITCH_NAME_PATTERN) and in no lab name (LAB_NAME)
IFNAMSIZ = 15  # the kernel's limit on an interface name, its terminating NUL not counted
MAX_NETNS = 64  # a namespace is also an FRR pathspace, which the FRR driver takes up to 64 characters
TAG_DIGITS = 6
DEFAULT_STATE_DIR = Path("/var/lib/gpufabric/lab")
LABS_DIR = Path("/var/lib/gpufabric/labs")  # a named lab's state folder: LABS_DIR/<name>
DEFAULT_BRIDGE = "gf-oob"
DEFAULT_MGMT_PREFIX = "gfm"  # + the switch's management address in hex (gfmac140005 for 172.20.0.5)
DEFAULT_HOST_PREFIX = "h-"


class LabNameError(GpufabricError):
    """A lab name that cannot be used, or a name too long for the kernel or FRR once the lab's mark is on it."""


def check_name(name: str) -> str:
    if not LAB_NAME.fullmatch(name):
        raise LabNameError(
            f"lab name {name!r}: use lower-case letters, digits and '-', starting with a letter, at most 16"
        )
    return name


def owner_of(netns: str) -> str:
    """The name of the lab a namespace (or FRR pathspace) of this module's naming belongs to. Not checked: a
    name that is no lab's is refused where it is looked up (check_name)."""
    head, sep, _switch = netns.partition(SEPARATOR)
    return head if sep else DEFAULT_LAB


@dataclass(frozen=True)
class LabNames:
    """The names of one lab's things. Pure: nothing here looks at the machine."""

    name: str = DEFAULT_LAB

    def __post_init__(self) -> None:
        check_name(self.name)

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_LAB

    @property
    def tag(self) -> str:
        """Six hexadecimal digits standing for the name where 15 characters leave no room for it."""
        return hashlib.sha256(self.name.encode()).hexdigest()[:TAG_DIGITS]

    @property
    def state_dir(self) -> Path:
        """Where the lab records what it made, unless --state-dir names another folder."""
        return DEFAULT_STATE_DIR if self.is_default else LABS_DIR / self.name

    def netns(self, switch: str) -> str:
        """The switch's network namespace, which is also its FRR pathspace and its folder's name."""
        ns = switch if self.is_default else f"{self.name}{SEPARATOR}{switch}"
        if len(ns) > MAX_NETNS:
            raise LabNameError(
                f"lab {self.name}: switch {switch}'s namespace {ns} is longer than {MAX_NETNS} characters "
                "(FRR's pathspace); use a shorter lab name"
            )
        return ns

    def switch_of(self, netns: str) -> str | None:
        """The switch whose namespace `netns` is in this lab; None for a namespace of no switch of this lab."""
        if self.is_default:
            return None if SEPARATOR in netns else netns
        head, sep, switch = netns.partition(SEPARATOR)
        return switch if sep and head == self.name and switch else None

    @property
    def bridge(self) -> str:
        """The OOB bridge, in the root namespace."""
        return DEFAULT_BRIDGE if self.is_default else f"gfo-{self.tag}"

    def mgmt_root_end(self, mgmt_ip: int | None, index: int) -> str:
        """A switch's management veth end on the bridge, named by its management address (stable when the
        fabric grows, where a running number would shift onto another switch)."""
        if self.is_default:
            return f"{DEFAULT_MGMT_PREFIX}{mgmt_ip:08x}" if mgmt_ip is not None else f"{DEFAULT_MGMT_PREFIX}{index}"
        return f"g{self.tag}{mgmt_ip:08x}" if mgmt_ip is not None else f"g{self.tag}n{index}"

    @property
    def host_prefix(self) -> str:
        """Before a host container's name in its namespace's name (and its bridge port's)."""
        return DEFAULT_HOST_PREFIX if self.is_default else f"h{self.tag}-"


__all__ = ["DEFAULT_LAB", "IFNAMSIZ", "LabNameError", "LabNames", "check_name", "owner_of"]
