"""The demo's host read-back fact, taken from what site.yml printed (it ends with playbooks/validate.yml).

The recorded output is ansible-playbook's own (tests/recorded/ansible); a fact that counts the wrong
hosts, or passes a host that a setting failed on, fails here.
"""

from __future__ import annotations

import yaml
from conftest import INVENTORY, ROOT

from gpufabric.demo.flow import READ_BACK_TASK, host_validation
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

RECORDED = ROOT / "tests" / "recorded" / "ansible"
PLAN = build_plan(load_intent(str(INVENTORY / "fabric.yml")))
HOSTS = sorted(s.name for s in PLAN.servers if s.nics)  # every server with data NICs, storage ones too


def test_the_read_back_task_is_the_one_validate_yml_ends_with():
    *_, last = yaml.safe_load((ROOT / "playbooks" / "validate.yml").read_text())
    assert last["hosts"] == "servers"
    assert last["tasks"][-1]["name"] == READ_BACK_TASK
    # site.yml from the clone is playbooks/site.yml (the collection's gpufabric.cluster.site), which ends with it.
    shim = yaml.safe_load((ROOT / "site.yml").read_text())
    assert shim[-1]["ansible.builtin.import_playbook"] == "playbooks/site.yml"
    site = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    assert site[-1] == {"name": site[-1]["name"], "ansible.builtin.import_playbook": "validate.yml"}


def test_every_host_read_back_equal_passes():
    fact = host_validation((RECORDED / "site-read-back.txt").read_text(), PLAN)
    assert fact.passed, fact
    assert fact.observed == f"{len(HOSTS)} hosts, 0 failed"
    assert len(HOSTS) == 6  # the GPU hosts and the storage hosts


def test_a_host_with_a_setting_off_the_plan_fails_the_fact():
    fact = host_validation((RECORDED / "validate-mtu-off.txt").read_text(), PLAN)
    assert not fact.passed
    assert fact.observed == f"{len(HOSTS) - 1} hosts, 1 failed"


def test_a_site_yml_that_never_reached_the_read_back_fails_the_fact():
    text = (RECORDED / "site-read-back.txt").read_text()
    fact = host_validation(text.replace(f"TASK [{READ_BACK_TASK}]", "TASK [Something else]"), PLAN)
    assert not fact.passed
    assert fact.observed == "0 hosts, 0 failed"
