"""Alertmanager's configuration judged by amtool, and the real Alertmanager (Debian's
prometheus-alertmanager, unpacked by scripts/test.sh into .cache/alertmanager). The real Alertmanager
notifying the receiver: test_remediate_alertmanager_live.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpufabric.remediate.alertmanager import AlertmanagerConfigError, alertmanager_yaml
from tests.conftest import ROOT

CACHED = ROOT / ".cache" / "alertmanager" / "usr" / "bin"


def _tool(name: str, cached: str) -> str:
    found = shutil.which(name) or (str(CACHED / cached) if (CACHED / cached).exists() else None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing: scripts/test.sh unpacks Debian's prometheus-alertmanager")
        pytest.skip(f"{name} is not installed (scripts/test.sh unpacks Debian's prometheus-alertmanager)")
    return found


def test_amtool_reads_the_configuration(tmp_path: Path):
    amtool = _tool("amtool", "amtool")
    config = tmp_path / "alertmanager.yml"
    config.write_text(alertmanager_yaml("http://127.0.0.1:9095/webhook", fabric="lab"))
    done = subprocess.run(
        [amtool, "check-config", str(config)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout and "2 receivers" in done.stdout
    routed = subprocess.run(
        [amtool, "config", "routes", "test", "--config.file", str(config), "alertname=GpufabricLinkDown"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert routed.stdout.strip() == "gpufabric-remediate", routed.stdout + routed.stderr
    busy = subprocess.run(
        [amtool, "config", "routes", "test", "--config.file", str(config), "alertname=GpufabricEcnSurge"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert busy.stdout.strip() == "nobody"


def test_a_webhook_that_is_no_url_is_refused():
    with pytest.raises(AlertmanagerConfigError):
        alertmanager_yaml("http://x/\n  - url: http://evil/")


def test_amtool_reads_the_webhook_s_token_and_ca(tmp_path: Path):
    amtool = _tool("amtool", "amtool")
    config = tmp_path / "alertmanager.yml"
    text = alertmanager_yaml(
        "https://127.0.0.1:9095/webhook", token_file="/etc/alertmanager/remediate.token",
        ca_file="/etc/alertmanager/remediate-ca.pem",
    )  # fmt: skip
    config.write_text(text)
    hook = yaml.safe_load(text)["receivers"][1]["webhook_configs"][0]
    assert hook["http_config"] == {
        "authorization": {"type": "Bearer", "credentials_file": "/etc/alertmanager/remediate.token"},
        "tls_config": {"ca_file": "/etc/alertmanager/remediate-ca.pem"},
    }
    done = subprocess.run(
        [amtool, "check-config", str(config)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr
    # The same http_config with a typo Alertmanager does not know is refused by amtool: it reads the block.
    config.write_text(text.replace("credentials_file:", "credential_file:"))
    wrong = subprocess.run(
        [amtool, "check-config", str(config)], capture_output=True, text=True, timeout=120, check=False
    )
    assert wrong.returncode != 0 and "credential_file" in wrong.stdout + wrong.stderr


@pytest.mark.parametrize(
    ("webhook", "token_file", "ca_file", "said"),
    [
        ("https://127.0.0.1:9095/webhook", "token", None, "not an absolute path"),
        ("https://127.0.0.1:9095/webhook", "/etc/t\nx: y", None, "not an absolute path"),
        ("http://127.0.0.1:9095/webhook", None, "/etc/ca.pem", "must be https://"),
    ],
)
def test_a_token_or_ca_path_that_cannot_go_into_the_configuration_is_refused(webhook, token_file, ca_file, said):
    with pytest.raises(AlertmanagerConfigError, match=said):
        alertmanager_yaml(webhook, token_file=token_file, ca_file=ca_file)
