"""The rollout's steps on real (or lab, or simulated) switches: each a Nornir task of
nornir_tasks/lifecycle.py run on a batch's switches at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nornir.core import Nornir

from gpufabric.drivers.images import Installed
from gpufabric.fleet.expect import Expectation
from gpufabric.fleet.runner import run_per_host
from gpufabric.platforms import platform
from gpufabric.verify.running.checks import Planned
from nornir_tasks import lifecycle
from nornir_tasks.lifecycle import Back, Before, Image, Rebooted


@dataclass
class NornirSteps:
    nr: Nornir
    expects: Mapping[str, Expectation]  # the sessions and ports each switch must have back
    planned: Mapping[str, Planned | None]  # what validate holds each switch to (None: no validate checks)
    platforms: Mapping[str, str]  # switch -> platform name (its release reader)
    poll: float = 2.0
    settle: float = 2.0

    def _run(self, names: list[str], task: Any, **per_host: Mapping[str, Any]) -> dict[str, Any]:
        return run_per_host(self.nr, names, task, **{k: dict(v) for k, v in per_host.items()})

    def snapshot(self, names: list[str]) -> Mapping[str, Before | str]:
        return self._run(names, lifecycle.snapshot, expect=self.expects, planned=self.planned)

    def stage(self, names: list[str], image: Image) -> Mapping[str, str | None]:
        return self._run(names, lifecycle.stage_image, image=dict.fromkeys(names, image))

    def install(self, names: list[str], image: Image) -> Mapping[str, Installed | str]:
        return self._run(names, lifecycle.install_image, image=dict.fromkeys(names, image))

    def reboot(self, names: list[str], modes: Mapping[str, str]) -> Mapping[str, Rebooted | str]:
        return self._run(names, lifecycle.reboot, mode=modes)

    def wait_back(
        self, names: list[str], before: Mapping[str, Before], rebooted: Mapping[str, Rebooted], timeout: float
    ) -> Mapping[str, Back]:
        return self._run(
            names,
            lifecycle.wait_back,
            expect=self.expects,
            before=before,
            rebooted=rebooted,
            timeout=dict.fromkeys(names, timeout),
            poll=dict.fromkeys(names, self.poll),
            settle=dict.fromkeys(names, self.settle),
        )

    def findings(self, names: list[str]) -> Mapping[str, frozenset[tuple[str, str]] | str]:
        return self._run(names, lifecycle.findings, planned=self.planned)

    def keep(self, names: list[str], image: Image) -> Mapping[str, str | None]:
        return self._run(names, lifecycle.keep_image, image=dict.fromkeys(names, image))

    def boot_previous(self, names: list[str], previous: Mapping[str, str]) -> Mapping[str, Rebooted | str]:
        return self._run(names, lifecycle.boot_previous, previous=previous)

    def release_of(self, name: str, os_version: str) -> str | None:
        return platform(self.platforms[name]).running_release(os_version)
