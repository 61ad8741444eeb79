"""The slow-node screen's Slurm files, read by Debian's own slurmctld (the controller of test_slurmctld.py:
its own munged and slurmctld on 127.0.0.1, every file in a temporary folder, stopped by PID).

`sbatch --test-only` has the controller parse the batch script's #SBATCH options and place the job (it
queues nothing); `scrontab` has it take the scrontab entry and its #SCRON options, and `scrontab -l`
shows the entry as Slurm stored it, then `scrontab -r` removes it. No job runs: the nodes have no slurmd.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import test_slurmctld
from test_slurmctld import _need, controller

from gpufabric.acceptance import slurm as screen_slurm
from gpufabric.acceptance.suite import screen_suite
from gpufabric.export import slurm
from tests.conftest import INVENTORY, plan_text

pytestmark = [pytest.mark.lab, pytest.mark.beside_lab, pytest.mark.root]


def _run(env: dict[str, str], *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


def test_slurmctld_takes_the_screens_script_and_scrontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _need()
    plain = test_slurmctld._slurm_conf

    # scrontab is off unless the controller enables it; the nodes answer at an address (no slurmd runs there).
    def conf(folder: Path, nodes: list[str], ports: list[int]) -> str:
        text = plain(folder, nodes, ports).replace("State=FUTURE", "NodeAddr=127.0.0.1 State=UNKNOWN")
        return text + "ScronParameters=enable\n"

    monkeypatch.setattr(test_slurmctld, "_slurm_conf", conf)
    plan = plan_text((INVENTORY / "fabric.yml").read_text(), "fabric.yml")
    suite = screen_suite(plan)
    script = tmp_path / "screen.sbatch"
    script.write_text(screen_slurm.screen_script(suite))
    cron = tmp_path / "screen.scrontab"
    cron.write_text(screen_slurm.screen_scrontab(suite, "30 2 * * 6", str(script)))
    nodes = [s.name for s in plan.servers if "compute" in s.units]
    with controller(slurm.render(plan), nodes) as env:
        placed = _run(env, "sbatch", "--test-only", script, cwd=tmp_path)
        said = placed.stdout + placed.stderr
        # --test-only: "Job <id> to start at <time> using <n> processors on nodes <list> in partition all".
        assert placed.returncode == 0 and "to start at" in said, said
        assert "gpu[01-04]" in said, said
        taken = _run(env, "scrontab", cron, cwd=tmp_path)
        assert taken.returncode == 0, taken.stdout + taken.stderr
        listed = _run(env, "scrontab", "-l", cwd=tmp_path)
        assert f"30 2 * * 6 bash {script}" in listed.stdout, listed.stdout + listed.stderr
        assert "#SCRON --nodelist=gpu01,gpu02,gpu03,gpu04" in listed.stdout
        assert _run(env, "scrontab", "-r", cwd=tmp_path).returncode == 0
