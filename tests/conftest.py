from __future__ import annotations

import copy
import fcntl
import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufabric.intent import load_intent, load_intent_text
from gpufabric.plan import Plan, build_plan

# Test modules import this file as `conftest` or as `tests.conftest`: one module either way, so the
# caches below are made once per process, not once per name.
sys.modules.setdefault("tests.conftest", sys.modules[__name__])

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = ROOT / "inventory"
EXAMPLES = sorted((INVENTORY / "examples").glob("*.yml"))
ALL_INTENTS = [INVENTORY / "fabric.yml", *EXAMPLES]
BIN = Path(sys.executable).parent
# containerlab's schema sits in ../shared beside a clone (CI has it); tests that need it say so when it is absent.
CLAB_SCHEMA = ROOT.parent / "shared" / "schemas" / "containerlab-topology.schema.json"
# The Network Operator's, nv-ipam's and SR-IOV's CRDs, also in ../shared (GPUFABRIC_SHARED names another folder).
K8S_CRDS = Path(os.environ.get("GPUFABRIC_SHARED", ROOT.parent / "shared")) / "schemas" / "k8s-network"
# SONiC's YANG models for CONFIG_DB (sonic-yang-models), in the same folder.
SONIC_YANG = Path(os.environ.get("GPUFABRIC_SHARED", ROOT.parent / "shared")) / "schemas" / "sonic-yang"


def default_doc() -> dict[str, Any]:
    return yaml.safe_load((INVENTORY / "fabric.yml").read_text())


def plan_doc(doc: dict[str, Any], name: str = "<test>") -> Plan:
    return build_plan(load_intent_text(yaml.safe_dump(doc, sort_keys=False), name))


def plan_text(text: str, name: str = "<test>") -> Plan:
    return build_plan(load_intent_text(text, name))


def set_path(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy of doc with `path` set to `value` (or removed when value is DELETE)."""
    out = copy.deepcopy(doc)
    node = out
    for part in path[:-1]:
        node = node[part]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


DELETE = object()

# Tiers: `lab` tests bring up namespaces, containers or the demo and need root; `slow` ones take
# seconds each (the 32k fabric, fuzzing). `scripts/test.sh --fast` runs neither; CI runs all.
LAB_MODULES = {
    "test_lab_fleet",
    "test_lab_growth",
    "test_lab_wiring",
    "test_lab_readme_sequence",
    "test_demo_e2e",
    "test_molecule",
}
SLOW_MODULES = {"test_fuzz_intents", "test_fuzz_designs"}
# The largest designs: a test run once per example over these is slow (seconds each), so the fast tier
# keeps the smaller examples (the default fabric, multi-vendor, sonic, superpod-1su, lab-infiniband) and
# CI runs these too.
LARGE_EXAMPLES = ("32k", "28k", "superpod-4su", "superpod-ib", "superpod-b200-ib")
# Tests of 1-4.5 s each (most start the CLI or Ansible several times, run a vendor's model over a whole
# fabric, or build the docs site): the fast tier leaves them to CI so it stays under 90 s on two slow
# cores; `scripts/test.sh` runs them all. The default fabric's own cases of the per-example tests stay.
SLOW_TESTS = {
    "test_oracle_avd.py::test_every_eos_config_says_what_pyavd_renders[all-eos-from-edge]",
    "test_oracle_avd.py::test_every_eos_config_says_what_pyavd_renders[all-eos-originate]",
    "test_telemetry.py::test_commands_that_log_in_say_when_no_lab_is_up[command0]",
    "test_telemetry.py::test_commands_that_log_in_say_when_no_lab_is_up[command1]",
    "test_telemetry.py::test_commands_that_log_in_say_when_no_lab_is_up[command2]",
    "test_load_balancing.py::test_cumulus_adaptive_routing_fits_nvidias_model[5.11]",
    "test_load_balancing.py::test_cumulus_adaptive_routing_fits_nvidias_model[5.18]",
    "test_verify.py::test_every_example_renders_and_verifies_clean[examples/sonic.yml]",
    "test_verify.py::test_every_example_renders_and_verifies_clean[examples/lab-infiniband.yml]",
    "test_verify.py::test_every_example_renders_and_verifies_clean[examples/superpod-1su.yml]",
    "test_cli.py::test_both_commands_are_the_same_cli[nornir]",
    "test_oracle_nvue.py::test_every_supported_release_accepts_its_documents[superpod-1su-5.11]",
    "test_oracle_nvue.py::test_every_supported_release_accepts_its_documents[superpod-1su-5.15]",
    "test_oracle_nvue.py::test_every_supported_release_accepts_its_documents[superpod-1su-5.18]",
    "test_growth.py::test_without_a_build_out_growth_renumbers_and_says_so",
    "test_growth.py::test_diff_drawing_shows_what_the_growth_adds_in_green",
    "test_buffers.py::test_cumulus_pfc_carries_the_cable_length_nvidias_model_accepts[5.14-None-5]",
    "test_buffers.py::test_cumulus_pfc_carries_the_cable_length_nvidias_model_accepts[5.15-None-5]",
    "test_fleet_sim.py::test_the_confirm_timer_reverts_by_itself",
    "test_intent_warnings.py::test_strict_exits_3_on_a_warning[render]",
    "test_docs_site.py::test_the_site_builds_strictly_and_fails_on_a_page_outside_the_nav_or_a_broken_link",
    "test_docs_site.py::test_the_cli_checks_the_pages_in_the_repository_and_fails_on_drift",
    "test_push_audit.py::test_one_record_per_switch_touched_with_its_outcome",
    "test_push_audit.py::test_no_secret_in_the_trail_or_the_debug_log",
    "test_intent_strict.py::test_every_number_and_boolean_of_the_default_fabric_refuses_yaml11_spellings",
    "test_intent_strict.py::test_template_syntax_reaching_the_static_inventory_is_unsafe_for_ansible",
    "test_verify.py::test_the_vendors_models_judge_what_verify_does_not_read",
    "test_verify.py::test_a_vendor_model_that_is_not_installed_is_named_with_how_to_install_it",
    "test_verify.py::test_every_example_renders_and_verifies_clean[examples/multi-vendor.yml]",
    "test_intent_warnings.py::test_strict_verify_exits_3_when_the_configs_pass_but_the_intent_warns",
    "test_nxos_scp_keys.py::test_an_unknown_host_key_gets_no_password_and_no_file",
    "test_nxos_scp_keys.py::test_a_changed_host_key_is_refused_even_with_accept_new",
    "test_inventory_plugins.py::test_ansible_plugin_narrows_to_hosts_and_reaches_lab_hosts_as_recorded",
    "test_ansible_site.py::test_site_syntax_and_hosts_from_the_plan",
    "test_oracle_nxos.py::test_the_lines_no_cisco_parser_reads_are_exactly_the_documented_ones",
    "test_ib_cli.py::test_validate_green_then_a_swapped_cable_named_exit_1",
    "test_secrets.py::test_the_rendered_hash_is_the_password_hash",
    "test_acceptance.py::test_iperf3_and_ping_outputs_are_read_from_the_real_tools",
    "test_sonic_driver.py::test_an_unconfirmed_change_reverts_by_itself",
    # Each export kind's determinism: the plan's stays in the fast tier, the others run in CI.
    "test_exports.py::test_exports_are_byte_identical_across_runs[structured]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[ib-topology]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[slurm]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[slurm-yaml]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[slurm-block]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[bom]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[k8s-labels]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[k8s-network]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[cabling]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[containerlab]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[ansible-inventory]",
    "test_exports.py::test_exports_are_byte_identical_across_runs[drawing]",
    "test_intent_warnings.py::test_strict_exits_3_on_a_warning[plan-json]",
    "test_intent_warnings.py::test_strict_exits_3_on_a_warning[plan]",
    "test_intent_warnings.py::test_strict_exits_3_on_a_warning[export]",
    "test_push_tls.py::test_accept_new_records_the_first_certificate_and_refuses_a_changed_one[nxos]",
    "test_hostile_switch.py::test_a_hostile_api_answer_is_a_named_failure_in_bounded_time_and_memory[nxos-drip]",
    "test_switch_keys.py::test_a_private_key_is_read_from_its_text[rsa-RSAKey]",
    "test_telemetry_deadline.py::test_the_cli_refuses_a_deadline_past_the_budget_before_any_login",
    "test_growth.py::test_push_changed_from_an_identical_intent_pushes_nothing",
    "test_acceptance_incast.py::test_an_unknown_incast_job_is_bad_input",
    "test_oracle_nvue.py::test_a_document_for_one_release_is_refused_by_the_other_generation",
    "test_buffers.py::test_cumulus_pfc_carries_the_cable_length_nvidias_model_accepts[5.14-30m-30]",
    "test_load_balancing.py::test_cumulus_adaptive_routing_fits_nvidias_model[5.14]",
    "test_ib_cli.py::test_discover_configs_and_export_from_real_ibnetdiscover_output",
    "test_push_target.py::test_render_for_the_lab_gives_what_a_push_to_the_lab_loads_with_nothing_exported",
    "test_ib_intent.py::test_push_to_an_infiniband_compute_plane_says_what_configures_it",
    "test_intent_strict.py::test_template_syntax_reaching_the_inventory_plugin_stays_literal",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""
        if module in LAB_MODULES:
            item.add_marker(pytest.mark.lab)
            item.add_marker(pytest.mark.root)
        if module == "test_molecule":
            item.add_marker(pytest.mark.molecule)
        path, _, name = item.nodeid.partition("::")
        slow_test = f"{path.rsplit('/', 1)[-1]}::{name}" in SLOW_TESTS
        if module in SLOW_MODULES or slow_test or any(name in item.nodeid for name in LARGE_EXAMPLES):
            item.add_marker(pytest.mark.slow)


# Every test renders with these planted secrets; the secret tests grep every output for them.
SWITCH_PASSWORD_CANARY = "canary-Switch-Pw-7e41"
SNMP_CANARY = "canary-Snmp-Community-0b9c"
SALT_KEY_CANARY = "canary-Salt-Key-5d02"
os.environ.setdefault("GPUFABRIC_SALT_KEY", SALT_KEY_CANARY)
os.environ.setdefault("GPUFABRIC_SWITCH_PASSWORD", SWITCH_PASSWORD_CANARY)
os.environ.setdefault("GPUFABRIC_SNMP_COMMUNITY", SNMP_CANARY)
# The tests' own vtysh commands (FRR's parser, the lab's running configs) keep no history in ~/.history_frr.
os.environ["VTYSH_HISTFILE"] = "/dev/null"


@pytest.fixture(autouse=True, scope="session")
def audit_log_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Pushes the tests run (in process or as commands) keep their audit trail in a temporary folder,
    never in the account's own (~/.local/state/gpufabric, or /var/log/gpufabric for root)."""
    before = os.environ.get("GPUFABRIC_AUDIT_LOG")
    os.environ["GPUFABRIC_AUDIT_LOG"] = str(tmp_path_factory.mktemp("audit") / "audit.jsonl")
    yield
    if before is None:
        os.environ.pop("GPUFABRIC_AUDIT_LOG", None)
    else:
        os.environ["GPUFABRIC_AUDIT_LOG"] = before


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("GPUFABRIC_DEBUG", None)
    env.update(extra)
    return env


def run(
    *args: str, cwd: Path = ROOT, check: bool = False, text: bool = True, **env: str
) -> subprocess.CompletedProcess:
    """Run one of the project's commands as a user would, with this venv's tools first on PATH."""
    return subprocess.run(list(args), capture_output=True, text=text, cwd=cwd, env=cli_env(**env), check=check)


@pytest.fixture(scope="session")
def default_plan() -> Plan:
    return plan_doc(default_doc(), "inventory/fabric.yml")


# -- what many tests read of the same shipped intent, made once ------------------------------------------
# The per-example tests of a dozen files plan the same intents (the 32k fabric: seconds each time), and
# two of them run `nornir render` on each. A plan is made once per test process (an xdist worker is one)
# and shared: the tests read it and never change it. A rendering through the CLI is made once per run, by
# the first worker that asks; the others wait on its lock and read its folder and output. It lives under
# the run's temporary folder, so every run renders anew from the code under test.


@functools.cache
def _plan_of(resolved: str) -> Plan:
    return build_plan(load_intent(resolved))


def example_plan(path: Path | str) -> Plan:
    """The plan of a shipped intent (inventory/...), made once per test process. Shared: never change it."""
    return _plan_of(str(Path(path).resolve()))


@dataclass(frozen=True)
class Rendering:
    """What `nornir render INTENT -o FOLDER` wrote and printed, run as a user runs it (with the planted
    switch password and SNMP community). The folder is shared: read it, never write into it."""

    folder: Path
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def cli_rendering(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Rendering]:
    base = tmp_path_factory.getbasetemp()
    # An xdist worker's folder is one of the run's (<run>/popen-gwN): the run's own is shared by all.
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "cli-renderings"
    shared.mkdir(exist_ok=True)

    def rendering(path: Path) -> Rendering:
        key = str(Path(path).resolve().relative_to(ROOT)).replace("/", "--")
        record = shared / f"{key}.json"
        with open(shared / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the lock file closes
            if not record.exists():
                folder = shared / key
                secrets = {"GPUFABRIC_SWITCH_PASSWORD": SWITCH_PASSWORD_CANARY, "GPUFABRIC_SNMP_COMMUNITY": SNMP_CANARY}
                done = run("nornir", "render", str(path), "-o", str(folder), **secrets)
                made = {"folder": str(folder), "returncode": done.returncode, "stdout": done.stdout}
                record.with_suffix(".new").write_text(json.dumps(made | {"stderr": done.stderr}))
                record.with_suffix(".new").replace(record)
        found = json.loads(record.read_text())
        return Rendering(Path(found["folder"]), found["returncode"], found["stdout"], found["stderr"])

    return rendering
