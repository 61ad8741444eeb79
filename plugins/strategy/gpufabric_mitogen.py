"""Ansible's linear strategy run through Mitogen: one persistent Python interpreter per host, over
the same SSH connection, runs every task's module, where Ansible alone copies the module and starts
a new interpreter on the host for each task. The play runs as with `linear`; what changes is the
cost per task, which bounds site.yml on a few hosts: on the lab's six hosts a second site.yml took
95 s with `linear` and 63 s with this strategy.

Mitogen's CPU pinning is switched off. With fewer than four CPUs it pins its multiplexer to the first
and the controller, every worker and every SSH client to the second, so on this project's 2-CPU
machines the workers of a task queued on one CPU while the other idled: a second site.yml on the lab's
six hosts took 30 s pinned and 19 s with the kernel placing the processes. GPUFABRIC_MITOGEN_AFFINITY=1
keeps Mitogen's pinning.

Selected in ansible.cfg (`strategy = gpufabric_mitogen`); ANSIBLE_STRATEGY=linear goes back to
Ansible's own for a run. Without Mitogen installed this is plain `linear`.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpufabric_mitogen
short_description: Ansible's linear strategy, each host's modules run by one persistent interpreter (Mitogen)
description:
  - Runs the play as the C(linear) strategy does, through Mitogen's connection multiplexer, so each host keeps
    one Python interpreter for the whole run instead of starting one per task.
  - Mitogen's CPU pinning is off unless the environment variable E(GPUFABRIC_MITOGEN_AFFINITY) is C(1).
  - Without Mitogen installed (C(pip install mitogen)), this is Ansible's own C(linear).
author:
  - gpufabric maintainers (@gpufabric)
"""

import os

try:
    import ansible_mitogen.loaders  # sets up Ansible's plugin loaders the way Mitogen's mixin expects
    import ansible_mitogen.strategy
except ImportError:  # Mitogen is not installed: Ansible's own linear strategy
    from ansible.plugins.strategy.linear import StrategyModule  # what Ansible loads from this file

    __all__ = ["StrategyModule"]
else:
    import ansible_mitogen.affinity

    if os.environ.get("GPUFABRIC_MITOGEN_AFFINITY") != "1":
        # The base policy's assignments do nothing; Mitogen reads the module attribute at each one.
        ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()
    _Linear = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)

    class StrategyModule(ansible_mitogen.strategy.StrategyMixin, _Linear):  # type: ignore[misc,valid-type,no-redef]
        """`linear`, with Mitogen's connection multiplexer in front of it."""
