"""Run the demo's steps as the user would type them, timed, with their output kept for the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.files import PRIVATE, write_atomic


@dataclass
class StepLog:
    name: str
    command: str
    seconds: float
    returncode: int


@dataclass
class Runner:
    project: Path  # the repository: site.yml, roles/, playbooks/
    build: Path
    say: Callable[[str], None]
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    steps: list[StepLog] = field(default_factory=list)
    _numbering: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _started: int = 0

    def run(self, name: str, args: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        with self._numbering:  # steps that run side by side keep the numbers they started with
            self._started += 1
            number = self._started
        self.say(f"[{number}] {name}: {' '.join(args)}")
        started = time.perf_counter()
        done = subprocess.run(
            args, cwd=self.project, env=self.env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
        )
        seconds = time.perf_counter() - started
        self.steps.append(StepLog(name, " ".join(args), round(seconds, 1), done.returncode))
        log = self.build / "demo-logs" / f"{number:02d}-{name.replace(' ', '-')}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        # Owner-only: a step's output may echo the lab login the demo hands its tools in the environment.
        write_atomic(log, done.stdout + "\n--- stderr ---\n" + done.stderr, PRIVATE)
        verdict = "ok" if done.returncode == 0 else f"exit {done.returncode}"
        self.say(f"    [{number}] {name}: {verdict} in {seconds:.1f} s (log: {log})")
        if check and done.returncode != 0:
            raise DemoStepError(name, done.returncode, log)
        return done

    def side_by_side(self, *branches: Callable[[], Any]) -> list[Any]:
        """Run independent branches at once (the switches' team and the hosts' team, say), each a sequence
        of steps; their results in the order given. The first branch that failed raises, after all ended."""
        with ThreadPoolExecutor(max_workers=len(branches)) as pool:
            futures = [pool.submit(branch) for branch in branches]
        return [f.result() for f in futures]

    def tool(self, name: str) -> str:
        """A console script installed beside this Python (gpufabric, nornir, ansible-playbook)."""
        return str(Path(sys.executable).parent / name)

    def json(self, name: str, args: list[str], *, check: bool = False) -> dict[str, Any]:
        done = self.run(name, args, check=check)
        try:
            data: dict[str, Any] = json.loads(done.stdout)
        except json.JSONDecodeError:
            raise DemoStepError(name, done.returncode, self.build / "demo-logs") from None
        return data


class DemoStepError(GpufabricError):
    def __init__(self, step: str, returncode: int, log: Path) -> None:
        super().__init__(f"step '{step}' failed (exit {returncode}); its output is in {log}")
