"""The slow-node screen's Slurm files, read by Debian's own slurmctld (the controller of test_slurmctld.py:
its own munged and slurmctld on 127.0.0.1, every file in a temporary folder, stopped by PID).

`sbatch --hold` has the controller parse the batch script's #SBATCH options and queue the job held
(no slurmd runs: nothing could start it anyway), `scontrol show job` shows what Slurm made of them,
and `scancel` removes it. Where `scrontab` is installed, the controller takes the scrontab entry and
its #SCRON options, `scrontab -l` shows the entry as Slurm stored it, and `scrontab -r` removes it
(none is installed on this machine: that part skips). The nodes are declared at 127.0.0.1,
where no slurmd answers.
"""

from __future__ import annotations

import shutil
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


def _files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str, Path, Path]:
    """The controller's nodes and topology, and the screen's batch script and scrontab entry."""
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
    return [s.name for s in plan.servers if "compute" in s.units], slurm.render(plan), script, cron


def test_slurmctld_takes_the_screens_batch_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, topology, script, _ = _files(tmp_path, monkeypatch)
    with controller(topology, nodes) as env:
        queued = _run(env, "sbatch", "--hold", "--parsable", script, cwd=tmp_path)
        assert queued.returncode == 0, queued.stdout + queued.stderr
        job = queued.stdout.strip().split(";")[0]
        shown = _run(env, "scontrol", "show", "job", job, cwd=tmp_path).stdout
        fields = dict(part.split("=", 1) for part in shown.split() if "=" in part)
        assert fields["JobName"] == "gpufabric-screen" and fields["ReqNodeList"] == "gpu[01-04]", shown
        assert fields["NumNodes"] == "4-4", shown  # --nodes=4: at least and at most 4
        assert fields["Dependency"].startswith("singleton"), shown
        assert fields["OverSubscribe"] == "NO", shown  # --exclusive
        assert _run(env, "scancel", job, cwd=tmp_path).returncode == 0


def test_slurmctld_takes_the_screens_scrontab_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("scrontab") is None:
        pytest.skip("scrontab is not installed on this machine")
    nodes, topology, script, cron = _files(tmp_path, monkeypatch)
    with controller(topology, nodes) as env:
        taken = _run(env, "scrontab", cron, cwd=tmp_path)
        assert taken.returncode == 0, taken.stdout + taken.stderr
        listed = _run(env, "scrontab", "-l", cwd=tmp_path)
        assert f"30 2 * * 6 bash {script}" in listed.stdout, listed.stdout + listed.stderr
        assert "#SCRON --nodelist=gpu01,gpu02,gpu03,gpu04" in listed.stdout
        assert _run(env, "scrontab", "-r", cwd=tmp_path).returncode == 0
