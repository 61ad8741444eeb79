"""roles/supernic: the SuperNICs of a Spectrum-X plane set with mlxconfig (non-volatile) and mlxreg (ROCE_ACCL, at
boot), run here against stand-ins for the two tools that record their arguments (no SuperNIC ran here)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from tests.conftest import INVENTORY, ROOT, plan_doc

ROLE = ROOT / "roles" / "supernic"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def _vars(**overrides: object) -> dict[str, Any]:
    return {
        "ansible_managed": "test",
        "supernic_nvconfig": DEFAULTS["supernic_nvconfig"],
        "supernic_settings": DEFAULTS["supernic_nvconfig"],  # vars/main.yml: these, on a single plane
        "supernic_planes": ["compute"],
        "supernic_multiplane_nvconfig": {},
        "gpufabric_planes": {"compute": {}},
        "supernic_roce_accl": DEFAULTS["supernic_roce_accl"],
        "supernic_script": "/usr/local/sbin/gpufabric-supernic",
        "supernic_unit": "gpufabric-supernic.service",
        "supernic_devices": {"enp3s0np0": "0000:03:00.0", "enp4s0np0": "0000:04:00.0", "eth9": ""},
        **overrides,
    }


def _template(name: str, variables: dict[str, Any]) -> str:
    source = trust_as_template((ROLE / "templates" / name).read_text())
    return str(Templar(loader=DataLoader(), variables=variables).template(source))


# What the tools print when read back, in their layouts (mlxconfig's query table, mlxreg's field table): the
# stand-ins answer `query` and `--get` with these, and record every call.
MLXCONFIG_QUERY = """
Device #1:
----------

Device type:        ConnectX8
Name:               900-9X81Q-00CN-ST0_Ax
Description:        NVIDIA ConnectX-8 C8180 HHHL SuperNIC
Device:             {pci}

Configurations:                                          Next Boot
        ROCE_ADAPTIVE_ROUTING_EN                    True(1)
        USER_PROGRAMMABLE_CC                        1
        TX_SCHEDULER_LOCALITY_MODE                  {locality}
"""
MLXREG_GET = """Sending access register...

Field Name                                 | Data
=======================================================
roce_adp_retrans_field_select              | 0x00000000
roce_adp_retrans_en                        | 0x00000001
roce_tx_window_field_select                | 0x00000000
roce_tx_window_en                          | 0x00000001
roce_slow_restart_field_select             | 0x00000000
roce_slow_restart_en                       | 0x00000000
roce_slow_restart_idle_field_select        | 0x00000000
roce_slow_restart_idle_en                  | 0x00000000
adaptive_routing_forced_en_field_select    | 0x00000000
adaptive_routing_forced_en                 | 0x00000001
=======================================================
"""


def _run(
    tmp_path: Path, script: str, *args: str, locality: str = "TX_SCHEDULER_LOCALITY_ACCUMULATIVE(2)"
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The script with mlxconfig and mlxreg stand-ins first on PATH; each call's arguments, one line per call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls"
    answers = {
        "mlxconfig": ("query", MLXCONFIG_QUERY.replace("{locality}", locality)),
        "mlxreg": ("--get", MLXREG_GET),
    }
    for tool, (asked, answer) in answers.items():
        stub = bin_dir / tool
        (tmp_path / f"{tool}.answer").write_text(answer)
        record = f'printf "%s" "{tool}" >> "{log}"\nfor a; do printf " [%s]" "$a" >> "{log}"; done\necho >> "{log}"'
        reply = f'for a; do [ "$a" = "{asked}" ] && sed "s/{{pci}}/$2/" "{tmp_path}/{tool}.answer"; done; exit 0'
        stub.write_text(f"#!/bin/sh\n{record}\n{reply}\n")
        stub.chmod(0o755)
    path = tmp_path / "supernic.sh"
    path.write_text(script)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["sh", str(path), *args], capture_output=True, text=True, env=env, check=False)
    return done, log.read_text().splitlines() if log.exists() else []


def test_nvconfig_sets_the_spectrum_x_parameters_on_each_nics_pci_function(tmp_path: Path) -> None:
    done, calls = _run(tmp_path, _template("supernic.sh.j2", _vars()), "nvconfig")
    assert done.returncode == 0, done.stderr
    want = "[-y] [set] [ROCE_ADAPTIVE_ROUTING_EN=1] [TX_SCHEDULER_LOCALITY_MODE=2] [USER_PROGRAMMABLE_CC=1]"
    assert calls == [f"mlxconfig [-d] [0000:03:00.0] {want}", f"mlxconfig [-d] [0000:04:00.0] {want}"]
    skipped = "skipped eth9: no PCI function behind it"
    assert done.stdout.splitlines() == ["changed enp3s0np0", "changed enp4s0np0", skipped]


def test_runtime_sets_roce_accl_each_field_with_its_select_bit(tmp_path: Path) -> None:
    done, calls = _run(tmp_path, _template("supernic.sh.j2", _vars()))  # the unit's default: runtime
    assert done.returncode == 0, done.stderr
    assert len(calls) == 2
    assert calls[0].startswith("mlxreg [-d] [0000:03:00.0] [--yes] [--reg_name] [ROCE_ACCL] [--set] [")
    fields = dict(pair.split("=") for pair in calls[0].split("[--set] [")[1].rstrip("]").split(","))
    assert fields == {
        "adaptive_routing_forced_en_field_select": "0x1",
        "adaptive_routing_forced_en": "0x1",
        "roce_adp_retrans_field_select": "0x1",
        "roce_adp_retrans_en": "0x1",
        "roce_slow_restart_field_select": "0x1",
        "roce_slow_restart_en": "0x0",
        "roce_slow_restart_idle_field_select": "0x1",
        "roce_slow_restart_idle_en": "0x0",
        "roce_tx_window_field_select": "0x1",
        "roce_tx_window_en": "0x1",
    }
    assert "[-y] [set]" not in "".join(calls)  # runtime never touches the non-volatile configuration


def test_a_mode_it_does_not_know_is_refused_and_a_hostile_nic_name_stays_one_word(tmp_path: Path) -> None:
    done, calls = _run(tmp_path, _template("supernic.sh.j2", _vars()), "erase")
    assert done.returncode == 2 and calls == []
    pwned = tmp_path / "pwned"
    script = _template("supernic.sh.j2", _vars(supernic_devices={f"x;touch {pwned}": "0000:03:00.0"}))
    done, calls = _run(tmp_path, script, "nvconfig")
    assert done.returncode == 0 and not pwned.exists()
    assert done.stdout.strip() == f"changed x;touch {pwned}"


def test_the_unit_runs_the_runtime_part_at_boot() -> None:
    unit = _template("supernic.service.j2", _vars())
    assert "ExecStart=/usr/local/sbin/gpufabric-supernic runtime" in unit and "WantedBy=multi-user.target" in unit


def test_the_plan_gives_the_role_its_nics_only_on_a_spectrum_x_plane() -> None:
    from gpufabric.export import inventory

    doc = yaml.safe_load((INVENTORY / "examples" / "spectrum-x.yml").read_text())
    planes = inventory.plane_facts(plan_doc(doc))
    templar = Templar(loader=DataLoader(), variables={"gpufabric_planes": planes})
    assert templar.template(trust_as_template(DEFAULTS["supernic_planes"])) == ["compute"]
    plain = inventory.plane_facts(plan_doc(yaml.safe_load((INVENTORY / "fabric.yml").read_text())))
    templar = Templar(loader=DataLoader(), variables={"gpufabric_planes": plain})
    assert templar.template(trust_as_template(DEFAULTS["supernic_planes"])) == []


def _role_vars() -> dict[str, Any]:
    return {
        name: trust_as_template(text) for name, text in yaml.safe_load((ROLE / "vars" / "main.yml").read_text()).items()
    }


def test_query_reads_back_what_each_nic_holds_and_the_role_parses_only_that(tmp_path: Path) -> None:
    """`query` asks each NIC's tools for the planned parameters and fields; the role's parse keeps each NIC's
    numbers (an enumerated value by its number, a register field from hex) and nothing else the tools print."""
    done, calls = _run(tmp_path, _template("supernic.sh.j2", _vars()), "query")
    assert done.returncode == 0, done.stderr
    assert calls[:2] == [
        "mlxconfig [-d] [0000:03:00.0] [query] [ROCE_ADAPTIVE_ROUTING_EN] [TX_SCHEDULER_LOCALITY_MODE] "
        "[USER_PROGRAMMABLE_CC]",
        "mlxreg [-d] [0000:03:00.0] [--reg_name] [ROCE_ACCL] [--get]",
    ]
    assert "skipped eth9: no PCI function behind it" in done.stdout and "changed" not in done.stdout
    lines = [*done.stdout.splitlines(), "nvconfig enp3s0np0 ROCE_ADAPTIVE_ROUTING_EN 0; touch /tmp/x", "garbage"]
    held = Templar(loader=DataLoader(), variables={**_role_vars(), "supernic_query": {"stdout_lines": lines}})
    found = held.template(trust_as_template("{{ supernic_held }}"))
    planned = {"ROCE_ADAPTIVE_ROUTING_EN": 1, "TX_SCHEDULER_LOCALITY_MODE": 2, "USER_PROGRAMMABLE_CC": 1}
    accl = {k: v["value"] for k, v in DEFAULTS["supernic_roce_accl"].items()}
    assert found == {
        "nvconfig": {"enp3s0np0": planned, "enp4s0np0": planned},
        "roce_accl": {"enp3s0np0": accl, "enp4s0np0": accl},
    }


def _checks(record: dict[str, Any] | None, **overrides: object) -> list[dict[str, str]]:
    """The role's read-back checks (vars/main.yml) on a host whose record is `record` (None: not read)."""
    import base64
    import json

    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    variables: dict[str, Any] = {
        **_vars(),
        "supernic_nics": [
            {"interface": "enp3s0np0", "plane": "compute"},
            {"interface": "enp4s0np0", "plane": "compute"},
        ],
        "supernic_via_kubernetes": False,
        "supernic_read": {} if record is None else {"content": base64.b64encode(json.dumps(record).encode()).decode()},
        **_role_vars(),  # a role's vars file is trusted
        **overrides,
    }
    templar = Templar(loader=DataLoader(), variables=variables)
    return list(templar.template(trust_as_template(role_vars["supernic_checks"])))


def test_validate_holds_each_nic_to_what_its_tools_read_back() -> None:
    planned = {"ROCE_ADAPTIVE_ROUTING_EN": 1, "TX_SCHEDULER_LOCALITY_MODE": 2, "USER_PROGRAMMABLE_CC": 1}
    accl = {k: v["value"] for k, v in DEFAULTS["supernic_roce_accl"].items()}
    good = {
        "nvconfig": {"enp3s0np0": planned},
        "roce_accl": {"enp3s0np0": accl},
        "applied": ["enp3s0np0"],
        "skipped": ["enp4s0np0"],
    }
    checks = _checks(good)
    assert [c["setting"] for c in checks] == [
        "SuperNIC mlxconfig (mlxconfig query, next boot)",
        "SuperNIC ROCE_ACCL (mlxreg --get)",
        "SuperNICs applied or skipped",
    ]
    assert all(c["expected"] == c["found"] for c in checks), checks
    # A NIC that holds another value than the plan's, as its tools said it: found, on the one check it fails.
    off = {**good, "roce_accl": {"enp3s0np0": {**accl, "roce_tx_window_en": 0}}}
    assert [c["setting"] for c in _checks(off) if c["expected"] != c["found"]] == ["SuperNIC ROCE_ACCL (mlxreg --get)"]
    locality = {**good, "nvconfig": {"enp3s0np0": {**planned, "TX_SCHEDULER_LOCALITY_MODE": 0}}}
    assert [c["setting"] for c in _checks(locality) if c["expected"] != c["found"]] == [
        "SuperNIC mlxconfig (mlxconfig query, next boot)"
    ]
    # A NIC the role set but whose tools said nothing readable is not taken as holding the plan.
    silent = {**good, "applied": ["enp3s0np0", "enp4s0np0"], "skipped": []}
    assert [c["setting"] for c in _checks(silent) if c["expected"] != c["found"]][:2] == [
        "SuperNIC mlxconfig (mlxconfig query, next boot)",
        "SuperNIC ROCE_ACCL (mlxreg --get)",
    ]
    assert all(c["expected"] != c["found"] for c in _checks(None)[:2])  # no record: nothing equals the plan
    # Nothing to check where the NIC Configuration Operator configures them, or on a host of no Spectrum-X plane.
    assert _checks(None, supernic_via_kubernetes=True) == [] and _checks(None, supernic_nics=[]) == []


def _multiplane_planes() -> dict[str, Any]:
    """The plan's plane facts for the Spectrum-X example built as two planes."""
    from gpufabric.export import inventory

    doc = yaml.safe_load((INVENTORY / "examples" / "spectrum-x.yml").read_text())
    doc["planes"]["compute"]["multiplane"] = {"planes": 2, "ports": "interleaved"}
    return inventory.plane_facts(plan_doc(doc))


# A stand-in parameter name: NVIDIA's Spectrum-X profile names the real ones; the role takes them as given.
STANDIN_SPLIT = {"STANDIN_PLANE_SPLIT": 2}


def _role_template(expression: str, **overrides: object) -> Any:
    variables = {**_vars(), "gpufabric_planes": _multiplane_planes(), **_role_vars(), **overrides}
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def test_a_multiplane_plane_sets_its_modes_parameters_with_the_spectrum_x_ones(tmp_path: Path) -> None:
    assert _multiplane_planes()["compute"]["multiplane"] == {"mode": "swplb", "planes": 2}
    settings = _role_template("{{ supernic_settings }}", supernic_multiplane_nvconfig=STANDIN_SPLIT)
    assert settings == {**DEFAULTS["supernic_nvconfig"], **STANDIN_SPLIT}
    done, calls = _run(tmp_path, _template("supernic.sh.j2", _vars(supernic_settings=settings)), "nvconfig")
    assert done.returncode == 0, done.stderr
    assert calls[0] == (
        "mlxconfig [-d] [0000:03:00.0] [-y] [set] [ROCE_ADAPTIVE_ROUTING_EN=1] [STANDIN_PLANE_SPLIT=2] "
        "[TX_SCHEDULER_LOCALITY_MODE=2] [USER_PROGRAMMABLE_CC=1]"
    )
    # ... and validate holds the NICs to them too.
    planned = _role_template("{{ supernic_planned_nvconfig }}", supernic_multiplane_nvconfig=STANDIN_SPLIT)
    assert planned["STANDIN_PLANE_SPLIT"] == 2


def _guard(**overrides: object) -> bool:
    tasks = yaml.safe_load((ROLE / "tasks" / "configure.yml").read_text())
    (task,) = [t for t in tasks if t["name"].startswith("A multi-plane plane's")]
    return all(_role_template("{{ " + cond + " }}", **overrides) for cond in task["ansible.builtin.assert"]["that"])


def test_a_multiplane_plane_without_its_modes_parameters_is_refused() -> None:
    assert _guard() is False  # the single-plane settings alone would configure the NICs wrongly
    assert _guard(supernic_multiplane_nvconfig=STANDIN_SPLIT) is True
    assert _guard(supernic_multiplane_nvconfig={"bad name; reboot": 1}) is False
    single = {"compute": {"spectrum_x": {"profile": "p", "platform": "gb300"}}}
    assert _guard(gpufabric_planes=single) is True
