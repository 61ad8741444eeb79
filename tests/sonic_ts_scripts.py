"""SONiC's own traffic-shift code, run here against an FRR configuration: the bgp container's `TSA`, `TSB`,
`TSC` and `TS` scripts and bgpcfgd's TSA templates, read from a sonic-buildimage tree (no SONiC runs here).

The tree is the folder `GPUFABRIC_SONIC_BUILDIMAGE` names, else `schemas/sonic-buildimage` in the shared folder
(`GPUFABRIC_SHARED`), holding these files at their sonic-buildimage paths:

- dockers/docker-fpm-frr/TS, TSA, TSB, TSC: the scripts the bgp container runs (the host's TSC runs this TSC);
- dockers/docker-fpm-frr/frr/bgpd/tsa/bgpd.tsa.isolate.conf.j2 and bgpd.tsa.unisolate.conf.j2: what TSA and TSB
  load into FRR, the templates bgpcfgd's DeviceGlobalCfgMgr renders too;
- files/build_templates/constants.yml.j2: SONiC's constants (the traffic-shift community, the internal tag).

The scripts run unchanged but for their one absolute path (`source /usr/bin/TS`), with two stand-ins first on
PATH: `sonic-cfggen`, which renders a template as sonic-cfggen does (Jinja2 with `trim_blocks`, the `-a` JSON and
the `-y` constants as variables, SONiC's template folder and constants file mapped into the tree) and answers
`-v` with nothing (a single-ASIC switch with no `switch_type`); and `vtysh`, which either passes every argument
to the real vtysh of a lab switch (`vtysh -N NAMESPACE`), or answers `-c "show run"` with a file and keeps what
`-f` would load, in order.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml

from tests.conftest import ROOT

BUILDIMAGE = Path(
    os.environ.get("GPUFABRIC_SONIC_BUILDIMAGE")
    or Path(os.environ.get("GPUFABRIC_SHARED", ROOT.parent / "shared")) / "schemas" / "sonic-buildimage"
)
FPM_FRR = "dockers/docker-fpm-frr"
TEMPLATES = f"{FPM_FRR}/frr"
ISOLATE = f"{TEMPLATES}/bgpd/tsa/bgpd.tsa.isolate.conf.j2"
UNISOLATE = f"{TEMPLATES}/bgpd/tsa/bgpd.tsa.unisolate.conf.j2"
CONSTANTS = "files/build_templates/constants.yml.j2"
NEEDED = (f"{FPM_FRR}/TS", f"{FPM_FRR}/TSA", f"{FPM_FRR}/TSB", f"{FPM_FRR}/TSC", ISOLATE, UNISOLATE, CONSTANTS)


def buildimage() -> Path:
    """The sonic-buildimage tree, or the test is skipped naming what is missing."""
    from tests.sonic_factory import tree_or_skip

    return tree_or_skip(BUILDIMAGE, NEEDED, "SONiC's traffic-shift files are", "GPUFABRIC_SONIC_BUILDIMAGE")


def constants(tree: Path) -> dict[str, object]:
    """SONiC's constants.yml as the build makes it from constants.yml.j2 (the FRR SNMP agent off)."""
    text = jinja2.Template((tree / CONSTANTS).read_text()).render(ENABLE_FRR_SNMP_AGENT="n")
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


def bgpcfgd_render(tree: Path, template: str, **values: object) -> str:
    """One of the TSA templates rendered as bgpcfgd renders it (its TemplateFabric: Jinja2, trim_blocks off)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tree / TEMPLATES)), trim_blocks=False)
    return env.get_template(template.removeprefix(f"{TEMPLATES}/")).render(**values)


_CFGGEN = r"""
import json, os, sys
from pathlib import Path
import jinja2, yaml
tree = Path(os.environ["SONIC_TREE"])
args = sys.argv[1:]
if "-v" in args:
    sys.exit(0)  # DEVICE_METADATA['localhost']['switch_type'] and the like: not set on this switch
data = {}
template = None
i = 0
while i < len(args):
    if args[i] == "-a":
        data.update(json.loads(args[i + 1])); i += 2
    elif args[i] == "-y":
        data.update(json.loads(Path(os.environ["SONIC_CONSTANTS"]).read_text())); i += 2
    elif args[i] == "-t":
        template = args[i + 1].replace("/usr/share/sonic/templates/", str(tree / "dockers/docker-fpm-frr/frr") + "/")
        i += 2
    else:
        i += 1
env = jinja2.Environment(loader=jinja2.FileSystemLoader("/"), trim_blocks=True)
sys.stdout.write(env.get_template(str(Path(template).resolve())).render(data))
"""

_VTYSH_FILE = r"""
import os, sys
from pathlib import Path
args = sys.argv[1:]
if args[:1] == ["-c"] and args[1] in ("show run", "show running-config"):
    sys.stdout.write(Path(os.environ["SONIC_RUNNING"]).read_text())
elif args[:1] == ["-f"]:
    with open(os.environ["SONIC_LOADED"], "a") as fh:
        fh.write(Path(args[1]).read_text())
else:
    sys.exit(f"vtysh: not in this stand-in: {args}")
"""


@dataclass
class TsScripts:
    """SONiC's TS scripts ready to run in `folder`; `namespace` sends vtysh to a lab switch, else a file."""

    tree: Path
    folder: Path
    namespace: str | None = None

    def __post_init__(self) -> None:
        import json

        bin_dir = self.folder / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        for name in ("TS", "TSA", "TSB", "TSC"):
            text = (self.tree / FPM_FRR / name).read_text().replace("/usr/bin/TS", str(bin_dir / "TS"))
            (bin_dir / name).write_text(text)
            (bin_dir / name).chmod(0o755)
        (bin_dir / "sonic-cfggen").write_text(f"#!{sys.executable}\n{_CFGGEN}")
        if self.namespace is None:
            (bin_dir / "vtysh").write_text(f"#!{sys.executable}\n{_VTYSH_FILE}")
        else:
            (bin_dir / "vtysh").write_text(f'#!/bin/sh\nexec /usr/bin/vtysh -N "{self.namespace}" "$@"\n')
        for name in ("sonic-cfggen", "vtysh"):
            (bin_dir / name).chmod(0o755)
        (self.folder / "constants.json").write_text(json.dumps(constants(self.tree)))
        self.bin = bin_dir
        self.running = self.folder / "running.conf"
        self.loaded = self.folder / "loaded.conf"

    def run(self, tool: str, running: str | None = None) -> tuple[str, str]:
        """(what the script printed, what it loaded into FRR); `running` is `show run`'s answer (file mode)."""
        if running is not None:
            self.running.write_text(running)
        self.loaded.write_text("")
        env = {
            **os.environ,
            "PATH": f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "SONIC_TREE": str(self.tree),
            "SONIC_CONSTANTS": str(self.folder / "constants.json"),
            "SONIC_RUNNING": str(self.running),
            "SONIC_LOADED": str(self.loaded),
        }
        done = subprocess.run(["bash", str(self.bin / tool)], capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 0, f"{tool}: {done.stdout}{done.stderr}"
        return done.stdout, self.loaded.read_text()
