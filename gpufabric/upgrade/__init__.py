"""Rolling restarts and upgrades of switches, one failure domain at a time: `restart(...)` and `upgrade(...)`
in `service`, the rollout itself in `roll` (against the `Steps` and `Drainer` it is given)."""
