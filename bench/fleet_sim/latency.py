"""How long each simulated operation takes on a switch, in seconds, before `--latency-scale`.

No vendor publishes these timings, so each figure is an assumption, stated with what it rests on;
`--latency-scale` (or a measured table) replaces them without touching the simulator. The figures
matter to the rollout benchmark in one way only: the plan's lower bound is its number of waves times
the commit-check-confirm time these give, and the controller is measured against that bound.

| operation (Cumulus 5.x)             | s    | basis (no vendor figure: assumptions) |
|-------------------------------------|------|----------------------------------------|
| any command (SSH exec channel)      | 0.05 | measured: about 50 ms on an idle lab switch (FRR in a network |
|                                     |      | namespace, docs/benchmarks.md); a switch CPU is no faster |
| `nv config detach`                  | 0.5  | the `nv` CLI is a Python client of the nvued REST service |
|                                     |      | (NVIDIA's NVUE API guide): 0.5-1 s a call assumed |
| `nv config replace FILE`            | 1.0  | as above, plus checking the file against NVUE's object model |
| `nv config diff`                    | 1.0  | as above |
| `nv config show -r applied`         | 1.0  | as above |
| `nv config apply` (timer or not)    | 8.0  | NVUE rewrites and reloads what the change touches (FRR, |
|                                     |      | ifupdown2, switchd): a full replace, 64 ports, 100+ sessions |
| `--confirm-yes`, `--confirm-no`     | 1.0  | a CLI call (`--confirm-no` reloads the previous revision) |
| `nv config apply --confirm-status`  | 0.5  | a CLI call |
| `vtysh -c 'show ... json'`          | 0.1  | vtysh reaching the FRR daemons, JSON for 100+ peers |
| `ip -j link show`, files, `cat`     | 0    | system calls: only the exec channel's 0.05 s |

| operation (EOS, eAPI)                 | s    | basis (assumptions) |
|---------------------------------------|------|---------------------|
| a `show` command (JSON)               | 0.1  | EOS's CLI agent answering eAPI |
| `show session-config named X diffs`   | 0.5  | the session compared with running |
| `configure session X commit timer`, `configure replace` | 3.0 | ConfigAgent applying a full replace |
| `configure session X commit` (confirm)| 0.5  | the timer cancelled, the session kept |
| anything else (config lines, `copy`)  | 0    | plus the HTTPS request itself, measured (not simulated) |
"""

from __future__ import annotations

EXEC = "exec"
NV_DETACH = "nv config detach"
NV_REPLACE = "nv config replace"
NV_DIFF = "nv config diff"
NV_SHOW = "nv config show"
NV_APPLY = "nv config apply"
NV_CONFIRM = "nv config apply --confirm-yes|no"
NV_STATUS = "nv config apply --confirm-status"
VTYSH = "vtysh"
EOS_SHOW = "eos show"
EOS_DIFF = "eos session diff"
EOS_COMMIT = "eos commit"
EOS_CONFIRM = "eos confirm"

LATENCY: dict[str, float] = {
    EXEC: 0.05,
    NV_DETACH: 0.5,
    NV_REPLACE: 1.0,
    NV_DIFF: 1.0,
    NV_SHOW: 1.0,
    NV_APPLY: 8.0,
    NV_CONFIRM: 1.0,
    NV_STATUS: 0.5,
    VTYSH: 0.1,
    EOS_SHOW: 0.1,
    EOS_DIFF: 0.5,
    EOS_COMMIT: 3.0,
    EOS_CONFIRM: 0.5,
}


def commit_check_confirm(settle: float, scale: float = 1.0, platform: str = "cumulus") -> float:
    """The least time one switch's change can take, commit to confirm, by these figures: stage the
    candidate, diff it, commit it with the timer, hold the checks `settle` seconds, confirm (plus four
    exec channels or HTTPS requests). Every wave of a rollout takes at least this, however many
    switches it holds."""
    if platform == "eos":
        device = LATENCY[EOS_DIFF] + LATENCY[EOS_COMMIT] + LATENCY[EOS_CONFIRM]
    else:
        device = LATENCY[NV_REPLACE] + LATENCY[NV_DIFF] + LATENCY[NV_APPLY] + LATENCY[NV_CONFIRM]
    return (device + 4 * LATENCY[EXEC]) * scale + settle
