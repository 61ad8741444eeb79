"""The intent's `scheduler:` section: which schedulers are reached and how, and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufabric.intent.errors import IntentError
from gpufabric.scheduler import Reach, job_wait, schedulers
from gpufabric.scheduler.kubernetes import Kubernetes
from gpufabric.scheduler.slurm import Slurm
from tests.conftest import INVENTORY, plan_text

BASE = (INVENTORY / "fabric.yml").read_text()


def with_scheduler(block: str):
    return plan_text(BASE + "\nscheduler:\n" + block, "fabric.yml")


def test_no_section_reaches_no_scheduler():
    plan = plan_text(BASE, "fabric.yml")
    assert schedulers(plan) == []
    assert job_wait(plan) == 3600


def test_both_schedulers_from_the_intent():
    plan = with_scheduler(
        "  job_wait: 900\n"
        "  slurm: {conf: /etc/slurm/slurm.conf}\n"
        "  kubernetes: {api: 'https://k8s.example:6443', token: {env: K8S_TOKEN}, ca_file: /etc/k8s/ca.crt}\n"
    )
    slurm, k8s = schedulers(plan)
    assert isinstance(slurm, Slurm) and slurm.conf == Path("/etc/slurm/slurm.conf")
    assert isinstance(k8s, Kubernetes) and k8s.api == "https://k8s.example:6443" and k8s.token_env == "K8S_TOKEN"
    assert k8s.resources == {"nvidia.com/compute_rail1", "nvidia.com/compute_rail2"}
    assert job_wait(plan) == 900
    assert job_wait(plan, Reach(job_wait=5)) == 5


def test_the_command_line_overrides_and_turns_off():
    plan = with_scheduler("  slurm: {conf: /etc/slurm/slurm.conf}\n")
    (slurm,) = schedulers(plan, Reach(slurm_conf=Path("/tmp/other.conf")))
    assert isinstance(slurm, Slurm) and slurm.conf == Path("/tmp/other.conf")
    assert schedulers(plan, Reach(slurm=False)) == []
    (k8s,) = schedulers(plan_text(BASE, "fabric.yml"), Reach(k8s_api="http://127.0.0.1:8080", k8s_token_env="T"))
    assert isinstance(k8s, Kubernetes) and k8s.token_env == "T"


@pytest.mark.parametrize(
    "block,words",
    [
        ("  kubernetes: {api: 'http://k8s.example:6443'}\n", "scheduler.kubernetes.api"),
        ("  kubernetes: {api: 'https://k8s.example:6443', token: {vault: K8S}}\n", "environment variable"),
        ("  kubernetes: {api: 'https://k8s.example:6443', token: 'abc123'}\n", "never written"),
        ("  slurm: {conf: relative/slurm.conf}\n", "scheduler.slurm.conf"),
        ("  job_wait: -1\n", "scheduler.job_wait"),
        ("  job_wait: '60'\n", "scheduler.job_wait"),
        ("  slurmm: {}\n", "slurmm"),
    ],
)
def test_a_bad_section_is_a_located_error(block, words):
    with pytest.raises(IntentError) as caught:
        with_scheduler(block)
    text = caught.value.render()
    assert words in text and "abc123" not in text
