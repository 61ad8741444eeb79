"""validate's task on a converged plane's EOS leaf, with a stand-in connection answering in NAPALM's forms:
its carried planes are read from the running configuration and each VRF session from `get_bgp_neighbors`
(or a driver's lighter `get_bgp_sessions`).
(The lab cannot run VRFs on this kernel: these answers are synthesised from the plan and the rendered text.)"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.validate.planned import planned
from nornir_tasks.validate import validate_device
from tests.conftest import INVENTORY, example_plan

EXAMPLE = INVENTORY / "examples" / "converged-inband.yml"


class _Conn:
    def __init__(self, running: str, neighbors: dict[str, Any]) -> None:
        self.running, self.neighbors = running, neighbors

    def get_config(self, retrieve: str = "all") -> dict[str, str]:
        return {"running": self.running, "startup": "", "candidate": ""}

    def get_os_version(self) -> str:
        return "4.33.1F"

    def get_route_to(self) -> dict[str, Any]:
        return {}

    def get_bgp_neighbors(self) -> dict[str, Any]:
        return self.neighbors

    def get_lldp_neighbors(self) -> dict[str, Any]:
        return {}

    def get_interfaces(self) -> dict[str, Any]:
        return {}


class _LightConn(_Conn):
    """A driver with the lighter session and port getters (a Linux switch's): the full ones must not be asked."""

    def get_bgp_neighbors(self) -> dict[str, Any]:
        raise AssertionError("the full BGP getter (a vtysh more) was asked for the sessions' state and ASN")

    def get_bgp_sessions(self) -> dict[str, Any]:
        return self.neighbors

    def get_interfaces(self) -> dict[str, Any]:
        raise AssertionError("the full interface getter (a vtysh more) was asked for the ports' state and MTU")

    def get_port_states(self) -> dict[str, Any]:
        return {}


def _task(conn: _Conn) -> Any:
    host = SimpleNamespace(name="ns-leaf1a", get_connection=lambda *_: conn, close_connection=lambda *_: None)
    return SimpleNamespace(host=host, nornir=SimpleNamespace(config=None))


def _run(down: str | None = None, conn: type[_Conn] = _Conn) -> list[Any]:
    plan = example_plan(EXAMPLE)
    index = LinkIndex(plan)
    device = plan.device("ns-leaf1a")
    ctx = build(plan, device, index)
    running = render_context(ctx)["ns-leaf1a.cfg"]
    p = planned(plan, index, ["ns-leaf1a"], "business")["ns-leaf1a"]
    assert p.carried_sessions and p.reads_running
    answer: dict[str, Any] = {"global": {"peers": {}}}
    for n in ctx.neighbors:
        answer["global"]["peers"][n.key] = {"is_up": True, "remote_as": n.remote_asn}
    for vrf, s in p.carried_sessions:
        answer.setdefault(vrf, {"peers": {}})["peers"][s.key] = {"is_up": s.key != down, "remote_as": s.remote_asn}
    return validate_device(_task(conn(running, answer)), p, None).result


def test_validate_reads_every_carried_plane_back_from_the_switch():
    results = _run()
    carried = [r for r in results if r.check.startswith("carried-")]
    by_check: dict[str, int] = {}
    for r in carried:
        by_check[r.check] = by_check.get(r.check, 0) + 1
    # 8 host and 6 fabric subinterfaces per VRF, 6 sessions per VRF (configured, and established), 4 classes'
    # DSCP values, 3 of them with a share
    assert by_check == {
        "carried-port": 28,
        "carried-bgp": 12,
        "carried-bgp-session": 12,
        "carried-class": 4,
        "carried-share": 3,
    }
    assert all(r.ok for r in carried), [r for r in carried if not r.ok]


def test_a_carried_session_down_fails_validate():
    plan = example_plan(EXAMPLE)
    p = planned(plan, LinkIndex(plan), ["ns-leaf1a"], "business")["ns-leaf1a"]
    assert p.carried_sessions
    vrf, first = p.carried_sessions[0]
    key = first.key
    failed = [r for r in _run(down=key) if not r.ok and r.check.startswith("carried-")]
    assert [(r.check, r.item.split(" (")[0]) for r in failed] == [("carried-bgp-session", f"vrf {vrf} {key}")]


def test_a_driver_s_lighter_getters_are_read_and_a_session_down_still_fails():
    plan = example_plan(EXAMPLE)
    p = planned(plan, LinkIndex(plan), ["ns-leaf1a"], "business")["ns-leaf1a"]
    vrf, first = p.carried_sessions[0]
    assert all(r.ok for r in _run(conn=_LightConn) if r.check.startswith("carried-bgp"))
    failed = [r for r in _run(down=first.key, conn=_LightConn) if not r.ok and r.check.startswith("carried-")]
    assert [(r.check, r.item.split(" (")[0]) for r in failed] == [("carried-bgp-session", f"vrf {vrf} {first.key}")]
