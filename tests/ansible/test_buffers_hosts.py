"""The host side of the lossless contract (roles/roce_qos): link-level pause off where PFC is on, and DCQCN
settings written only where named, each name one shell word."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from tests.conftest import ROOT

TEMPLATE = ROOT / "roles" / "roce_qos" / "templates" / "roce-qos.sh.j2"
BASE = {
    "ansible_managed": "test",
    "roce_qos_dscp": 26,
    "roce_qos_priority": 3,
    "roce_qos_cnp_dscp": 48,
    "roce_qos_cnp_priority": 6,
    "roce_qos_tos": 106,
    "roce_qos_unit": "u",
    "roce_qos_script": "s",
    "roce_qos_devices": {"eth1": {"hca": "mlx5_0"}},
}


def _script(**overrides: object) -> str:
    source = trust_as_template(TEMPLATE.read_text())
    return str(Templar(loader=DataLoader(), variables={**BASE, **overrides}).template(source))


def test_lossless_turns_link_level_pause_off_and_lossy_leaves_it():
    assert 'ethtool -A "$nic" rx off tx off' in _script(roce_qos_lossless=True)
    assert "ethtool -A" not in _script(roce_qos_lossless=False)
    assert "ethtool -A" not in _script(roce_qos_lossless=True, roce_qos_global_pause_off=False)


def test_pfc_is_on_the_roce_priority_only():
    assert 'PFC="0,0,0,1,0,0,0,0"' in _script(roce_qos_lossless=True)


def test_dcqcn_settings_are_written_only_where_named(tmp_path: Path):
    assert "roce_rp/rpg_min_rate" not in _script(roce_qos_lossless=True)
    text = _script(roce_qos_lossless=True, roce_qos_dcqcn={"roce_np/min_time_between_cnps": 4})
    assert 'echo 4 > "$ecn/"roce_np/min_time_between_cnps' in text
    pwned = tmp_path / "pwned"
    hostile = _script(roce_qos_lossless=True, roce_qos_dcqcn={f"roce_np/x;touch {pwned}": 1})
    script = tmp_path / "s.sh"
    script.write_text(hostile)
    subprocess.run(["sh", "-n", str(script)], check=True)  # still a well-formed script
    assert f"'roce_np/x;touch {pwned}'" in hostile  # one quoted word, never a command
