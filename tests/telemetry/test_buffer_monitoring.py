"""Every alert that reads a buffer figure has, on each switch whose figure it reads, a rendered line that turns
the figure on.

The buffer telemetry reads each OS's own feature (gpufabric/nos/<os>/telemetry.py), and most of those record
nothing unless the configuration enables them: EOS's LANZ (`queue-monitor length`), NX-OS's micro-burst
detection (`burst-detect` under the lossless queue's queuing class), SONiC's watermark flex counters
(FLEX_COUNTER_TABLE). A switch without the line answers nothing, or 0, and the alert can never fire. Here the
switches the exporter reads buffers of (the plan's telemetry targets with lossless queues) are rendered, and
each platform's enabling line is looked for where the OS reads it; where a vendor model reads the line
(pyavd for EOS, SONiC's YANG for FLEX_COUNTER_TABLE) the model renders or accepts it too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.nos.eos import judge as avd
from gpufabric.plan.model import Plan
from gpufabric.platforms import all_platforms
from gpufabric.platforms.spec import Platform
from gpufabric.telemetry.health_rules import health_groups
from gpufabric.telemetry.targets import SwitchTarget, switch_targets
from tests.conftest import INVENTORY, example_plan
from tests.vendor_variants import converged, variants

BUFFER_FIGURES = ("gpufabric_queue_buffer_bytes", "gpufabric_queue_buffer_watermark_bytes")


def _buffer_alerts() -> list[dict[str, object]]:
    rules = [r for g in health_groups() for r in g["rules"]]  # type: ignore[attr-defined]
    return [r for r in rules if any(re.search(rf"\b{m}\b", str(r["expr"])) for m in BUFFER_FIGURES)]


def _files(plan: Plan, device: str) -> dict[str, str]:
    d = next(x for x in plan.devices() if x.name == device)
    return render_context(build(plan, d, LinkIndex(plan)))


# -- what turns each platform's figure on, where the OS reads it ----------------------------------------------


def _eos(files: dict[str, str], t: SwitchTarget) -> list[str]:
    """LANZ on: the top-level `queue-monitor length`, the line pyavd renders for queue_monitor_length.enabled."""
    text = files[f"{t.device}.cfg"]
    arista = avd.blocks(avd.render({"queue_monitor_length": {"enabled": True}}).text)
    assert "queue-monitor length" in arista  # the line is AVD's for LANZ on
    blocks = avd.blocks(text)
    if "queue-monitor length" not in blocks or "no queue-monitor length" in blocks:
        return ["no `queue-monitor length` (LANZ off: `show queue-monitor length` has no records)"]
    return []


_POLICY = re.compile(r"^  service-policy type queuing output (\S+)$", re.M)


def _nxos(files: dict[str, str], t: SwitchTarget) -> list[str]:
    """Micro-burst detection on each lossless queue's class of the egress queuing policy `system qos` applies,
    rising at or below the ECN maximum (a burst past it, which the alert is about, is recorded)."""
    text = files[f"{t.device}.cfg"]
    system = text.split("\nsystem qos\n", 1)[1].split("\n!", 1)[0] if "\nsystem qos\n" in text else ""
    applied = _POLICY.search(system)
    if applied is None:
        return ["no egress queuing policy under `system qos`"]
    policy = text.split(f"\npolicy-map type queuing {applied[1]}\n", 1)[1].split("\n!", 1)[0]
    problems = []
    for queue in t.lossless_queues:
        body = policy.split(f"  class type queuing c-out-8q-q{queue}\n", 1)
        cls = re.split(r"\n  \S", body[1], maxsplit=1)[0] if len(body) == 2 else ""
        m = re.search(r"^    burst-detect rise-threshold (\d+) bytes fall-threshold (\d+) bytes$", cls, re.M)
        if m is None:
            problems.append(f"queue {queue}: no burst-detect in c-out-8q-q{queue} of {applied[1]}")
        elif not (0 < int(m[2]) <= int(m[1]) <= (t.ecn_max_bytes or 0)):
            problems.append(f"queue {queue}: burst-detect {m[1]}/{m[2]} bytes, not rising at or below the ECN maximum")
    return problems


def _sonic(files: dict[str, str], t: SwitchTarget) -> list[str]:
    """The queue and priority-group watermark flex counter groups polling (the two tables the reader prints)."""
    table = json.loads(files[f"{t.device}.config_db.json"]).get("FLEX_COUNTER_TABLE", {})
    return [
        f"FLEX_COUNTER_TABLE|{group} is {table.get(group)!r}, not polling"
        for group in ("QUEUE_WATERMARK", "PG_WATERMARK")
        if table.get(group, {}).get("FLEX_COUNTER_STATUS") != "enable"
    ]


def _cumulus(files: dict[str, str], t: SwitchTarget) -> list[str]:
    """Nothing to turn on: `nv show interface <port> qos buffer` prints the ASIC's buffer statistics (current and
    maximum usage), which Cumulus Linux keeps without configuration (NVUE Command Reference, Show Commands,
    QoS). NVUE's histograms (`interface <port> telemetry histogram`) are another figure, which no reader reads."""
    return []


ENABLES: dict[str, Callable[[dict[str, str], SwitchTarget], list[str]]] = {
    "eos": _eos,
    "nxos": _nxos,
    "sonic": _sonic,
    "cumulus": _cumulus,
}


def _reads_buffers(spec: Platform) -> bool:
    return type(spec).read_buffers is not Platform.read_buffers


def _plans() -> dict[str, Plan]:
    examples = {p: example_plan(INVENTORY / "examples" / f"{p}.yml") for p in ("multi-vendor", "sonic")}
    return examples | variants("eos") | variants("nxos") | converged("nxos") | converged("eos")


PLANS = _plans()


def test_the_queue_deep_alert_reads_buffer_figures():
    assert [r["alert"] for r in _buffer_alerts()] == ["GpufabricLosslessQueueDeep"]


def test_every_platform_with_a_buffer_reader_says_what_turns_it_on():
    assert {s.name for s in all_platforms() if _reads_buffers(s)} == set(ENABLES)


@pytest.mark.parametrize("alert", [r["alert"] for r in _buffer_alerts()])
def test_each_switch_an_alert_reads_renders_the_line_that_turns_its_figure_on(alert):
    problems: dict[str, list[str]] = {}
    seen: set[str] = set()
    for name, plan in PLANS.items():
        for t in switch_targets(plan):
            if not t.lossless_queues or not _reads_buffers(_spec(t.platform)):
                continue
            seen.add(t.platform)
            found = ENABLES[t.platform](_files(plan, t.device), t)
            if found:
                problems[f"{name}/{t.device} ({t.platform})"] = found
    assert seen == set(ENABLES)  # every platform with a reader is rendered on a lossless plane here
    assert problems == {}


def _spec(name: str) -> Platform:
    return next(s for s in all_platforms() if s.name == name)


def _target(plan: Plan, platform: str) -> SwitchTarget:
    return next(t for t in switch_targets(plan) if t.platform == platform and t.lossless_queues)


def test_a_switch_without_the_lines_is_caught():
    """Each check fails on a configuration that lacks (or breaks) its line."""
    eos = _target(PLANS["all-eos-originate"], "eos")
    files = _files(PLANS["all-eos-originate"], eos.device)
    cfg = f"{eos.device}.cfg"
    assert _eos(files, eos) == []
    assert _eos({cfg: files[cfg].replace("\nqueue-monitor length\n", "\n")}, eos)

    nx = _target(PLANS["all-nxos-originate"], "nxos")
    files = _files(PLANS["all-nxos-originate"], nx.device)
    cfg = f"{nx.device}.cfg"
    assert _nxos(files, nx) == []
    stripped = re.sub(r"\n    burst-detect [^\n]*", "", files[cfg])
    assert _nxos({cfg: stripped}, nx)
    too_high = re.sub(r"rise-threshold \d+", f"rise-threshold {(nx.ecn_max_bytes or 0) + 1}", files[cfg])
    assert _nxos({cfg: too_high}, nx)

    sonic = _target(PLANS["sonic"], "sonic")
    files = _files(PLANS["sonic"], sonic.device)
    assert _sonic(files, sonic) == []
    db = f"{sonic.device}.config_db.json"
    doc = json.loads(files[db])
    doc["FLEX_COUNTER_TABLE"]["PG_WATERMARK"]["FLEX_COUNTER_STATUS"] = "disable"
    assert _sonic({db: json.dumps(doc)}, sonic) == [
        "FLEX_COUNTER_TABLE|PG_WATERMARK is {'FLEX_COUNTER_STATUS': 'disable'}, not polling"
    ]


def test_sonic_s_models_accept_the_watermark_rows_and_refuse_a_wrong_status():
    """sonic-flex_counter.yang judges the rows: the rendered ones pass, a status outside enable/disable and a
    group the model lacks are refused."""
    from tests.nos.sonic.test_sonic_yang import _judge_available

    _judge_available()
    from gpufabric.nos.sonic.yang import ConfigDbError, validate
    from tests.conftest import SONIC_YANG

    sonic = _target(PLANS["sonic"], "sonic")
    doc = json.loads(_files(PLANS["sonic"], sonic.device)[f"{sonic.device}.config_db.json"])
    assert set(doc["FLEX_COUNTER_TABLE"]) == {"QUEUE_WATERMARK", "PG_WATERMARK", "BUFFER_POOL_WATERMARK"}
    validate(SONIC_YANG, doc)
    for group, status in (("QUEUE_WATERMARK", "on"), ("QUEUE_WATERMARKS", "enable")):
        bad = json.loads(json.dumps(doc))
        bad["FLEX_COUNTER_TABLE"][group] = {"FLEX_COUNTER_STATUS": status}
        with pytest.raises(ConfigDbError):
            validate(SONIC_YANG, bad)
