"""A SONiC switch's running CONFIG_DB as SONiC's own code builds it on first boot, and SONiC's generic config
updater (sonic-utilities' `generic_config_updater`) computing what `config replace` would change. Nothing of
SONiC runs here as a switch: its Python runs offline, from published trees, with stand-ins for the modules that
only exist on a switch (named below).

The trees: `GPUFABRIC_SONIC_BUILDIMAGE` names a sonic-buildimage tree and `GPUFABRIC_SONIC_UTILITIES` a
sonic-utilities tree, else `schemas/sonic-buildimage` and `schemas/sonic-utilities` in the shared folder
(`GPUFABRIC_SHARED`). They hold, at their repositories' paths:

- sonic-buildimage: `src/sonic-config-engine/` (sonic-cfggen, portconfig, config_samples...),
  `files/build_templates/` (init_cfg.json.j2, qos_config.j2, buffers_config.j2) and, per SKU,
  `device/mellanox/<platform>/` (platform.json, default_sku) and its `<hwsku>/` folder (hwsku.json,
  buffers_dynamic.json.j2, qos.json.j2, buffers_defaults_t1.j2 and the files they include, symbolic links
  resolved);
- sonic-utilities: `generic_config_updater/`, `scripts/db_migrator.py`, `scripts/mellanox_buffer_migrator.py`.

First boot without minigraph or ZTP (sonic-buildimage `files/image_config/config-setup/config-setup`,
`generate_config factory` then `reload_configdb`), as built here, in SONiC's order:

1. `sonic-cfggen -H -k <hwsku> --preset <preset>` with the platform's `default_sku` (`ACS-SN5600 t1`): the
   factory preset (ports from platform.json and hwsku.json, BREAKOUT_CFG, the t1 sample's /31s and BGP
   neighbours, FLEX_COUNTER_TABLE's ACL group, DEVICE_METADATA with the platform and the MAC).
2. `sonic-cfggen -j init_cfg.json -j config_db.json --print-data`: the image's init_cfg.json (rendered from
   `init_cfg.json.j2` with the build's switches for a Mellanox image, `BUILD` below) under the preset, as
   `config reload` loads them.
3. `config qos reload` as sonic-utilities does it: `sonic-cfggen -t buffers_dynamic.json.j2,<file> -t
   qos.json.j2,<file> -y sonic_version.yml` over that data, and both files loaded on top.
4. `db_migrator.py -o migrate` (what `config reload` runs), over the result in a stand-in CONFIG_DB.

Stand-ins (no swsscommon, no redis, no switch): `swsscommon.swsscommon` (ConfigDBConnector and
SonicV2Connector kept in a JSON file; `connect` fails when no file is named, as on a switch whose database is
not up, which sonic-cfggen's port reader takes for "no database"), `sonic_py_common` (`device_info` answering
from the tree and the platform named: platform, SKU, `asic_type: mellanox`, a fixed MAC; `multi_asic` for a
single-ASIC switch; `logger` discarding), `sonic_yang` and `sonic_yang_ext` (the updater's YANG loader, not
used: the models judge through libyang elsewhere), and the path to SONiC's device folder
(`/usr/share/sonic/device`, which portconfig hard-codes) mapped into the tree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jinja2
import pytest

from tests.conftest import ROOT

_SHARED = Path(os.environ.get("GPUFABRIC_SHARED", ROOT.parent / "shared"))
BUILDIMAGE = Path(os.environ.get("GPUFABRIC_SONIC_BUILDIMAGE") or _SHARED / "schemas" / "sonic-buildimage")
UTILITIES = Path(os.environ.get("GPUFABRIC_SONIC_UTILITIES") or _SHARED / "schemas" / "sonic-utilities")

CONFIG_ENGINE = "src/sonic-config-engine"
PLATFORMS = {"ACS-SN5600": "x86_64-nvidia_sn5600-r0", "ACS-MSN4700": "x86_64-mlnx_msn4700-r0"}
MAC = "1c:34:da:5a:00:00"  # the stand-in's answer for the switch's MAC (SONiC reads it from the EEPROM)
VERSION = "SONiC.202411.0-gpufabric-test"

# The build's switches init_cfg.json.j2 is rendered with (sonic-buildimage rules/config and
# platform/mellanox/rules.mk; slave.mk exports them to the template), for a Mellanox image.
BUILD = {
    "default_buffer_model": "dynamic",  # platform/mellanox/rules.mk: SONIC_BUFFER_MODEL=dynamic
    "sonic_asic_platform": "mellanox",
    "include_teamd": "y",
    "include_router_advertiser": "y",
    "include_system_gnmi": "y",
    "include_system_telemetry": "n",
    "include_system_otel": "y",
    "include_system_eventd": "y",
    "include_restapi": "n",
    "include_nat": "y",
    "include_p4rt": "y",
    "include_snmp": "y",
    "include_lldp": "y",
    "include_sflow": "y",
    "include_macsec": "y",
    "include_mgmt_framework": "y",
    "include_mux": "y",
    "include_iccpd": "n",
    "include_dhcp_server": "n",
    "include_kubernetes": "n",
    "enable_auto_tech_support": "y",
    "shutdown_bgp_on_start": "n",
    "enable_pfcwd_on_start": "n",
    "installer_services": " ".join(
        f"{s}.service" for s in ("bgp", "database", "pmon", "swss", "syncd", "lldp", "snmp", "teamd", "radv", "gnmi")
    ),
}


def tree_or_skip(root: Path, needed: tuple[str, ...], what: str, env: str) -> Path:
    """`root` when it holds every file of `needed`, else the test is skipped naming what is missing and the
    environment variable that names such a tree."""
    missing = [p for p in needed if not (root / p).is_file()]
    if missing:
        pytest.skip(f"{what} not in {root} ({', '.join(missing)}): {env} names one")
    return root


def trees() -> tuple[Path, Path]:
    """(sonic-buildimage, sonic-utilities), or the test is skipped naming what is missing."""
    needed = [
        BUILDIMAGE / CONFIG_ENGINE / "sonic-cfggen",
        BUILDIMAGE / "files/build_templates/init_cfg.json.j2",
        *(BUILDIMAGE / "device/mellanox" / p / "default_sku" for p in PLATFORMS.values()),
        *(BUILDIMAGE / "device/mellanox" / p / s / "qos.json.j2" for s, p in PLATFORMS.items()),
        UTILITIES / "generic_config_updater/generic_updater.py",
        UTILITIES / "scripts/db_migrator.py",
    ]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        pytest.skip(
            f"SONiC's code is not here ({', '.join(missing)}): GPUFABRIC_SONIC_BUILDIMAGE names a sonic-buildimage "
            "tree and GPUFABRIC_SONIC_UTILITIES a sonic-utilities tree (tests/sonic_factory.py lists the files)"
        )
    for module in ("natsort", "jsonpatch", "jsonpointer", "lxml", "netaddr"):
        pytest.importorskip(module, reason=f"SONiC's code imports {module} (pip install it; the test extra has it)")
    return BUILDIMAGE, UTILITIES


# -- stand-ins for the modules that exist only on a switch -------------------------------------------------

_SWSSCOMMON = r'''
"""Stand-in for swsscommon (a C++ library on a switch): CONFIG_DB and the other databases in a JSON file."""
import json, os

def _path():
    return os.environ.get("SONIC_STANDIN_DB")

class SonicDBConfig:
    @staticmethod
    def isInit(): return True
    @staticmethod
    def isGlobalInit(): return True
    @staticmethod
    def initialize(*a, **k): pass
    @staticmethod
    def initializeGlobalConfig(*a, **k): pass

class _Store:
    def _load(self):
        with open(_path()) as fh:
            return json.load(fh)
    def _save(self, doc):
        with open(_path(), "w") as fh:
            json.dump(doc, fh, sort_keys=True)

class ConfigDBConnector(_Store):
    CONFIG_DB, APPL_DB, STATE_DB = "CONFIG_DB", "APPL_DB", "STATE_DB"
    LOGLEVEL_DB, COUNTERS_DB = "LOGLEVEL_DB", "COUNTERS_DB"
    KEY_SEPARATOR = TABLE_NAME_SEPARATOR = "|"
    def __init__(self, *a, **k):
        self.name = "CONFIG_DB"
    def db_connect(self, name, *a, **k):
        if not _path():
            raise RuntimeError("no database on this machine")
        self.name = name
    def connect(self, *a, **k):
        self.db_connect("CONFIG_DB")
    def _tables(self):
        return self._load().setdefault(self.name, {})
    def _write(self, tables):
        doc = self._load(); doc[self.name] = {t: r for t, r in tables.items() if r}; self._save(doc)
    @staticmethod
    def _key(key):
        return "|".join(key) if isinstance(key, (tuple, list)) else key
    @staticmethod
    def serialize_key(key, separator="|"):
        return separator.join(key) if isinstance(key, (tuple, list)) else key
    @staticmethod
    def deserialize_key(key, separator="|"):
        parts = key.split(separator, 1)
        return tuple(key.split(separator)) if len(parts) > 1 else key
    def get_table(self, table):
        return {(tuple(k.split("|")) if "|" in k else k): dict(v) for k, v in self._tables().get(table, {}).items()}
    def get_entry(self, table, key):
        return dict(self._tables().get(table, {}).get(self._key(key), {}))
    def get_keys(self, table, split=True):
        return [tuple(k.split("|")) if split and "|" in k else k for k in self._tables().get(table, {})]
    def set_entry(self, table, key, data):
        tables = self._tables(); key = self._key(key)
        if data is None:
            tables.get(table, {}).pop(key, None)
        else:
            tables.setdefault(table, {})[key] = {f: v for f, v in data.items() if v is not None}
        self._write(tables)
    def mod_entry(self, table, key, data):
        tables = self._tables(); key = self._key(key)
        if data is None:
            tables.get(table, {}).pop(key, None)
        else:
            tables.setdefault(table, {}).setdefault(key, {}).update(data)
        self._write(tables)
    def delete_table(self, table):
        tables = self._tables(); tables.pop(table, None); self._write(tables)
    def get_config(self):
        return {t: self.get_table(t) for t in self._tables()}
    def mod_config(self, data):
        for table, rows in data.items():
            for key, fields in (rows or {}).items():
                self.mod_entry(table, key, fields)
    # the raw redis calls the migrator makes: keys are "TABLE|KEY"
    def keys(self, db, pattern="*"):
        import fnmatch
        return [f"{t}|{k}" for t, rows in self._tables().items() for k in rows if fnmatch.fnmatch(f"{t}|{k}", pattern)]
    def _split(self, key):
        table, _, row = key.partition("|"); return table, row
    def get_all(self, db, key):
        table, row = self._split(key); return dict(self._tables().get(table, {}).get(row, {}))
    def get(self, db, key, field):
        return self.get_all(db, key).get(field)
    def set(self, db, key, field, value):
        table, row = self._split(key); self.mod_entry(table, row, {field: value})
    def delete(self, db, key):
        table, row = self._split(key); self.set_entry(table, row, None)
    def get_db_separator(self, db):
        return ":" if db == "APPL_DB" else "|"
    def hexists(self, db, key, field):
        return field in self.get_all(db, key)

ConfigDBPipeConnector = ConfigDBConnector

class SonicV2Connector(ConfigDBConnector):
    def connect(self, name, *a, **k):
        self.db_connect(name)
'''

_DEVICE_INFO = r'''
"""Stand-in for sonic_py_common.device_info: the switch's facts from the environment and the tree."""
import os
VS_PLATFORM = "x86_64-kvm_x86_64-r0"
PLATFORM_JSON_FILE = "platform.json"
def _dir():
    return os.path.join(os.environ["SONIC_TREE"], "device/mellanox", os.environ["SONIC_PLATFORM"])
def get_platform():
    return os.environ["SONIC_PLATFORM"]
def get_hwsku():
    return os.environ["SONIC_HWSKU"]
def get_path_to_platform_dir():
    return _dir()
def get_path_to_hwsku_dir():
    return os.path.join(_dir(), get_hwsku())
def get_path_to_port_config_file(hwsku=None, asic=None):
    platform_json = os.path.join(_dir(), "platform.json")
    hwsku_json = os.path.join(_dir(), hwsku or get_hwsku(), "hwsku.json")
    if os.path.isfile(platform_json) and os.path.isfile(hwsku_json):
        return platform_json
    return os.path.join(_dir(), hwsku or get_hwsku(), "port_config.ini")
def get_path_to_fabric_port_config_file(hwsku=None, asic=None):
    return None
def get_path_to_fabric_monitor_config_file(hwsku=None, asic=None):
    return None
def get_system_mac(*a, **k):
    return os.environ["SONIC_MAC"]
def get_localhost_info(field, config_db=None):
    if config_db is None:
        return None
    return config_db.get_entry("DEVICE_METADATA", "localhost").get(field)
def get_platform_info(config_db=None):
    return {"platform": get_platform(), "hwsku": get_hwsku(), "asic_type": "mellanox", "asic_count": 1}
def get_sonic_version_info():
    return {"asic_type": "mellanox", "build_version": os.environ["SONIC_VERSION"]}
def is_warm_restart_enabled(*a, **k):
    return False
def is_fast_reboot_enabled(*a, **k):
    return False
def is_switch_bmc():
    return False
def is_smartswitch():
    return False
def is_multi_npu():
    return False
def is_supervisor():
    return False
def is_chassis():
    return False
def get_device_runtime_metadata():
    return {}
'''

_MULTI_ASIC = r'''
"""Stand-in for sonic_py_common.multi_asic: a single-ASIC switch."""
DEFAULT_NAMESPACE = ""
def is_multi_asic(): return False
def get_asic_id_from_name(name): return None
def get_asic_device_id(asic_id): return None
def get_asic_sub_role(asic_id): return None
def get_namespace_list(*a, **k): return [DEFAULT_NAMESPACE]
def get_num_asics(): return 1
'''

_LOGGER = r'''
"""Stand-in for sonic_py_common.logger: syslog is not here; messages are dropped."""
class Logger:
    LOG_PRIORITY_ERROR = 3; LOG_PRIORITY_WARNING = 4; LOG_PRIORITY_NOTICE = 5; LOG_PRIORITY_INFO = 6
    LOG_PRIORITY_DEBUG = 7
    def __init__(self, *a, **k): pass
    def set_min_log_priority(self, *a, **k): pass
    def set_min_log_priority_info(self): pass
    def set_min_log_priority_notice(self): pass
    def log(self, *a, **k): pass
    def log_error(self, *a, **k): pass
    def log_warning(self, *a, **k): pass
    def log_notice(self, *a, **k): pass
    def log_info(self, *a, **k): pass
    def log_debug(self, *a, **k): pass
'''

_INTERFACE = 'backplane_prefix = lambda: "Ethernet-BP"\n'

_SONIC_YANG = r'''
"""Stand-in for sonic_yang (sonic-yang-mgmt, which loads libyang 1): the updater's YANG loader is not used here."""
class SonicYang:
    def __init__(self, *a, **k):
        raise RuntimeError("sonic_yang stand-in: the YANG models are judged through libyang elsewhere")
'''

# Runs SONiC's sonic-cfggen with portconfig's device folder mapped into the tree.
_CFGGEN = r"""
import os, runpy, sys
import portconfig
device = os.path.join(os.environ["SONIC_TREE"], "device/mellanox")
portconfig.PLATFORM_ROOT_PATH = device
portconfig.PLATFORM_ROOT_PATH_DOCKER = portconfig.SONIC_ROOT_PATH = portconfig.HWSKU_ROOT_PATH = "/nonexistent"
sys.argv = ["sonic-cfggen", *sys.argv[1:]]
runpy.run_path(os.path.join(os.environ["SONIC_TREE"], "src/sonic-config-engine/sonic-cfggen"), run_name="__main__")
"""


# Runs SONiC's db_migrator.py with its init_cfg.json path (/etc/sonic/init_cfg.json) mapped to the one built here.
_MIGRATOR = r"""
import os, sys
import db_migrator
db_migrator.INIT_CFG_FILE = os.environ["SONIC_INIT_CFG"]
sys.argv = ["db_migrator.py", *sys.argv[1:]]
db_migrator.main()
"""


# SONiC's generic config updater's `config replace`: its ConfigReplacer, with its PatchWrapper computing the patch
# (jsonpatch), against a stand-in of the switch's CONFIG_DB (the ConfigWrapper's `sonic-cfggen -d --print-data`)
# and a stand-in PatchApplier that records the patch and applies it to that CONFIG_DB (the real one sorts it and
# writes it through swsscommon); the replacer then checks, as on a switch, that CONFIG_DB equals the target.
_REPLACE = r'''
import copy, json, sys
from generic_config_updater.change_applier import DryRunChangeApplier
from generic_config_updater.generic_updater import ConfigReplacer
from generic_config_updater.gu_common import PatchWrapper

class ConfigDb:
    """Stand-in for ConfigWrapper: the switch's CONFIG_DB."""
    def __init__(self, config):
        self.config = config
    def get_config_db_as_json(self):
        return copy.deepcopy(self.config)

class RecordingApplier:
    """Stand-in for PatchApplier: keeps the patch, applies it to the stand-in CONFIG_DB."""
    def __init__(self, db):
        self.db, self.patches = db, []
        self.changeapplier = DryRunChangeApplier(db)
    def apply(self, patch, sort=True, trace_io=None):
        self.patches.append(list(patch))
        self.db.config = patch.apply(self.db.config)

with open(sys.argv[1]) as fh:
    db = ConfigDb(json.load(fh))
with open(sys.argv[2]) as fh:
    target = json.load(fh)
applier = RecordingApplier(db)
ConfigReplacer(patch_applier=applier, config_wrapper=db, patch_wrapper=PatchWrapper(config_wrapper=db)).replace(target)
print(json.dumps(applier.patches[0]))
'''


def standins(folder: Path) -> Path:
    """The stand-in modules, written into `folder` (first on the path of SONiC's code)."""
    files = {
        "swsscommon/__init__.py": "",
        "swsscommon/swsscommon.py": _SWSSCOMMON,
        "sonic_py_common/__init__.py": "",
        "sonic_py_common/device_info.py": _DEVICE_INFO,
        "sonic_py_common/multi_asic.py": _MULTI_ASIC,
        "sonic_py_common/logger.py": _LOGGER,
        "sonic_py_common/interface.py": _INTERFACE,
        "sonic_yang.py": _SONIC_YANG,
        "sonic_yang_ext.py": "",
        "netifaces.py": '"""Stand-in for netifaces: sonic-utilities\' CLI helpers import it; unused here."""\n',
        "run_cfggen.py": _CFGGEN,
        "run_migrator.py": _MIGRATOR,
        "run_replace.py": _REPLACE,
        "jsondiff.py": '"""Stand-in for jsondiff: the change applier imports it; not run here."""\n',
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _env(folder: Path, tree: Path, utilities: Path, hwsku: str, db: Path | None) -> dict[str, str]:
    path = [str(folder), str(tree / CONFIG_ENGINE), str(utilities / "scripts"), str(utilities)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "SONIC_TREE": str(tree), "SONIC_HWSKU": hwsku}
    env.update(SONIC_PLATFORM=PLATFORMS[hwsku], SONIC_MAC=MAC, SONIC_VERSION=VERSION)
    env.pop("SONIC_STANDIN_DB", None)
    if db is not None:
        env["SONIC_STANDIN_DB"] = str(db)
    return env


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=300, check=False)
    if done.returncode:
        raise AssertionError(f"{' '.join(argv[:4])}...: exit {done.returncode}\n{done.stderr[-3000:]}")
    return done.stdout


def init_cfg(tree: Path) -> str:
    """init_cfg.json as the build renders it (`j2 files/build_templates/init_cfg.json.j2`, Jinja2 with `do`)."""
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    return env.from_string((tree / "files/build_templates/init_cfg.json.j2").read_text()).render(**BUILD)


def stored(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as `sonic-cfggen --write-to-db` stores it in redis and `sonic-cfggen -d --print-data` reads it back:
    every value a string (swsscommon's ConfigDBConnector writes `str(value)`: init_cfg.json's `true` becomes
    "True"), lists (the `@` fields) as lists."""
    return {
        table: {
            key: {f: v if isinstance(v, (str, list)) else str(v) for f, v in row.items()} for key, row in rows.items()
        }
        for table, rows in doc.items()
    }


def factory_config_db(hwsku: str, work: Path) -> dict[str, Any]:
    """The running CONFIG_DB of a switch of this SKU after its first boot (the module's steps 1-4)."""
    tree, utilities = trees()
    platform = PLATFORMS[hwsku]
    folder = standins(work / "standins")
    env = _env(folder, tree, utilities, hwsku, None)
    cfggen = [sys.executable, str(folder / "run_cfggen.py")]
    sku, preset = (tree / "device/mellanox" / platform / "default_sku").read_text().split()[:2]
    assert sku == hwsku, f"{platform}'s default_sku is {sku}, not {hwsku}"
    (work / "config_db.json").write_text(_run([*cfggen, "-H", "-k", hwsku, "--preset", preset], env, work))
    (work / "init_cfg.json").write_text(init_cfg(tree))
    loaded = _run([*cfggen, "-j", "init_cfg.json", "-j", "config_db.json", "--print-data"], env, work)
    (work / "loaded.json").write_text(loaded)
    # config qos reload: the SKU's buffer (dynamic model) and QoS templates over the loaded data.
    skudir = tree / "device/mellanox" / platform / hwsku
    (work / "sonic_version.yml").write_text(f"asic_type: mellanox\nbuild_version: '{VERSION}'\n")
    templates = ["-t", f"{skudir / 'buffers_dynamic.json.j2'},buffers.json", "-t", f"{skudir / 'qos.json.j2'},qos.json"]
    _run([*cfggen, "-j", "loaded.json", *templates, "-y", "sonic_version.yml"], env, work)
    with_qos = _run([*cfggen, "-j", "loaded.json", "-j", "buffers.json", "-j", "qos.json", "--print-data"], env, work)
    # db_migrator.py -o migrate over that CONFIG_DB, in the stand-in database.
    db = work / "db.json"
    db.write_text(json.dumps({"CONFIG_DB": stored(json.loads(with_qos))}))
    migrate = [sys.executable, str(folder / "run_migrator.py"), "-o", "migrate"]
    _run(migrate, {**_env(folder, tree, utilities, hwsku, db), "SONIC_INIT_CFG": str(work / "init_cfg.json")}, work)
    config_db: dict[str, Any] = json.loads(db.read_text())["CONFIG_DB"]
    return config_db


def config_replace(running: dict[str, Any], target: dict[str, Any], work: Path) -> list[dict[str, Any]]:
    """The JSON patch (RFC 6902 operations) SONiC's `config replace` computes from `running` to `target`."""
    tree, utilities = trees()
    folder = standins(work / "standins")
    (work / "running.json").write_text(json.dumps(running))
    (work / "target.json").write_text(json.dumps(target))
    env = _env(folder, tree, utilities, "ACS-SN5600", None)
    out = _run([sys.executable, str(folder / "run_replace.py"), "running.json", "target.json"], env, work)
    patch: list[dict[str, Any]] = json.loads(out.strip().splitlines()[-1])
    return patch
