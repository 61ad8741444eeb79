"""The maintenance service's waits on the fabric, against switches that answer as the plan says they would.

A fake fabric (the default fabric's compute plane) answers NAPALM's route and counter getters: the
leaves route each remote loopback over their uplinks, through the drained spine or not as the test
decides after how many readings; the spine's fabric ports receive what the test says. The waits'
clock and sleep are the test's, so nothing here depends on how busy the machine is.
"""

from __future__ import annotations

from collections import defaultdict

from gpufabric.maintenance import wait
from gpufabric.plan.ecmp import expected_widths
from gpufabric.plan.model import ip
from tests.conftest import INVENTORY, example_plan

PLAN = example_plan(INVENTORY / "fabric.yml")
SPINE = "cmp-spine1"
WIDTHS = expected_widths(PLAN, "compute", {})
UPLINKS: dict[str, dict[str, str]] = defaultdict(dict)  # leaf -> {port: spine}
DOWNLINKS: dict[str, dict[str, str]] = defaultdict(dict)  # spine -> {port: leaf}
for link in PLAN.links():
    if link.kind == "fabric" and link.plane == "compute":
        UPLINKS[link.a][link.a_port] = link.b
        DOWNLINKS[link.b][link.b_port] = link.a
LOOPBACKS = {f"{ip(d.loopback)}/32": d.name for d in PLAN.devices() if d.loopback is not None}
HOSTS = wait.host_prefixes(PLAN)  # leaf loopback -> one of its servers' subnets, routed as the loopback is


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Fabric:
    """Every switch's answers. `drained_after`: readings of a leaf's routes before it stops using SPINE
    (None: never); `narrow_after`: readings before the restored widths come back; `rx_bps` on SPINE."""

    def __init__(
        self,
        drained_after: int | None = 0,
        rx_bps: float = 0.0,
        narrow_for: int = 0,
        spine: str = SPINE,
        hosts_lag: int = 0,
        announced: bool = True,
    ) -> None:
        self.announced = announced  # False: no leaf announces a server subnet (every server's port down)
        self.drained_after, self.rx_bps, self.narrow_for, self.spine = drained_after, rx_bps, narrow_for, spine
        self.hosts_lag = hosts_lag  # readings for which the servers' subnets still go as before the change
        self.reads: dict[str, int] = defaultdict(int)
        self.octets = 0

    def connect(self, target: wait.Reach) -> object:
        fabric = self

        class Conn:
            def get_route_to(self) -> dict[str, list[dict[str, object]]]:
                fabric.reads[target.name] += 1
                return fabric.routes(target.name)

            def get_interfaces_counters(self) -> dict[str, dict[str, int]]:
                fabric.octets += int(fabric.rx_bps / 8)  # a second apart (the test's monotonic clock)
                return {p: {"rx_octets": fabric.octets} for p in ("swp1", "swp2", "swp3", "swp4")}

            def maintenance_status(self) -> dict[str, object]:
                return {"drained": target.name == fabric.spine and fabric.drained_after is not None}

            def close(self) -> None:
                pass

        return Conn()

    def routes(self, name: str) -> dict[str, list[dict[str, object]]]:
        reads = self.reads[name]
        out = self._routes(name, reads)
        lagging = self._routes(name, reads - self.hosts_lag)  # what the servers' subnets still follow
        for loopback, hosts in HOSTS.items():
            if loopback in lagging and self.announced:
                out[hosts] = lagging[loopback]
        return out

    def _routes(self, name: str, reads: int) -> dict[str, list[dict[str, object]]]:
        drained = self.drained_after is not None and reads > self.drained_after
        narrow = self.narrow_for > 0 and reads <= self.narrow_for
        uplinks = UPLINKS.get(name, {})
        out = {}
        for prefix, width in WIDTHS.get(name, {}).items():
            owner = LOOPBACKS[prefix]
            if not uplinks:  # a spine: the leaf's own port
                ports = [p for p, far in DOWNLINKS[name].items() if far == owner]
            elif owner in uplinks.values():  # a spine's loopback: only through that spine
                ports = [p for p, far in uplinks.items() if far == owner]
            else:
                ports = list(uplinks)
            assert len(ports) == width, (name, prefix, ports, width)
            if drained and len(ports) > 1:
                ports = [p for p in ports if uplinks.get(p) != self.spine]
            if narrow:
                ports = ports[:1]
            out[prefix] = [{"protocol": "bgp", "selected_next_hop": True, "outgoing_interface": p} for p in ports]
        return out


def test_a_drain_waits_until_every_leaf_routes_around_the_spine(monkeypatch):
    monkeypatch.setattr(wait, "SAMPLE", 0.0)
    clock, fabric = Clock(), Fabric(drained_after=3)
    found = wait.wait_drained(
        PLAN, [SPINE], fabric.connect, {}, timeout=60, max_rate=1e6, clock=clock, sleep=clock.sleep
    )
    assert found.done and found.waiting_for == ()
    assert clock.now == 3 * wait.POLL  # three readings still held the spine, the fourth did not
    assert set(found.rates) == {f"{SPINE} swp{i}" for i in range(1, 5)}  # its four leaf-facing ports
    leaves = {n for n in fabric.reads if n.startswith("cmp-su")}
    assert leaves == {"cmp-su1-leaf1", "cmp-su1-leaf2", "cmp-su2-leaf1", "cmp-su2-leaf2"}


def test_a_drain_waits_for_the_servers_subnets_not_only_the_loopbacks(monkeypatch):
    """A leaf may route a remote leaf's loopback around the drained spine while its servers' subnets, the
    prefixes traffic goes to, still go through it (their updates not there yet): the wait holds until both
    have moved."""
    monkeypatch.setattr(wait, "SAMPLE", 0.0)
    clock, fabric = Clock(), Fabric(drained_after=1, hosts_lag=4)
    found = wait.wait_drained(
        PLAN, [SPINE], fabric.connect, {}, timeout=60, max_rate=1e6, clock=clock, sleep=clock.sleep
    )
    assert found.done
    assert clock.now == 5 * wait.POLL  # the loopbacks moved at the second reading, the subnets at the sixth
    compute_leaves = {lo for lo, name in LOOPBACKS.items() if name.startswith("cmp-su")}
    assert compute_leaves <= set(HOSTS) and len(compute_leaves) == 4  # one subnet per leaf
    held = Fabric(drained_after=1, hosts_lag=1000)
    slow = Clock()
    late = wait.wait_drained(PLAN, [SPINE], held.connect, {}, timeout=10, max_rate=1e6, clock=slow,
                             sleep=slow.sleep)  # fmt: skip
    assert not late.done and all("/31 via" in w for w in late.waiting_for), late.waiting_for


def test_a_subnet_no_leaf_announces_holds_neither_wait(monkeypatch):
    """A leaf announces a server subnet only while a server's port is up: where none is (servers off, a new
    unit not cabled yet), the waits go by the loopbacks, never wait for a route that cannot come."""
    monkeypatch.setattr(wait, "SAMPLE", 0.0)
    clock = Clock()
    found = wait.wait_drained(PLAN, [SPINE], Fabric(drained_after=2, announced=False).connect, {}, timeout=60,
                              max_rate=1e6, clock=clock, sleep=clock.sleep)  # fmt: skip
    assert found.done and clock.now == 2 * wait.POLL
    clock = Clock()
    back = wait.wait_restored(PLAN, [SPINE], Fabric(drained_after=None, narrow_for=2, announced=False).connect, {},
                              timeout=60, clock=clock, sleep=clock.sleep)  # fmt: skip
    assert back.done and clock.now == 2 * wait.POLL


def test_an_undrain_waits_for_the_servers_subnets_widths_too():
    clock = Clock()
    fabric = Fabric(drained_after=None, narrow_for=1, hosts_lag=3)
    found = wait.wait_restored(PLAN, [SPINE], fabric.connect, {}, timeout=60, clock=clock, sleep=clock.sleep)
    assert found.done and clock.now == 4 * wait.POLL


def test_a_leaf_that_keeps_the_spine_ends_the_wait_at_its_timeout_naming_it():
    clock, fabric = Clock(), Fabric(drained_after=None)
    found = wait.wait_drained(
        PLAN, [SPINE], fabric.connect, {}, timeout=10, max_rate=1e6, clock=clock, sleep=clock.sleep
    )
    assert not found.done and clock.now >= 10
    assert any(w.startswith("cmp-su1-leaf1: ") and "swp3" in w for w in found.waiting_for), found.waiting_for


def test_traffic_still_arriving_on_the_spine_holds_the_drain(monkeypatch):
    monkeypatch.setattr(wait, "SAMPLE", 0.0)
    monkeypatch.setattr(wait.time, "monotonic", iter(float(i) for i in range(1000)).__next__)
    clock, fabric = Clock(), Fabric(drained_after=0, rx_bps=50e6)
    found = wait.wait_drained(
        PLAN, [SPINE], fabric.connect, {}, timeout=5, max_rate=1e6, clock=clock, sleep=clock.sleep
    )
    assert not found.done
    assert found.waiting_for and all(w.startswith(f"{SPINE} swp") and "b/s" in w for w in found.waiting_for)


def test_a_drained_switch_whose_login_fails_is_waited_on_not_raised(monkeypatch):
    # A login that times out on a loaded switch (paramiko's "Authentication timeout") while its counters are
    # read: the wait goes on, naming it, and ends when a later login works; it never raises out of the drain.
    monkeypatch.setattr(wait, "SAMPLE", 0.0)
    clock, fabric = Clock(), Fabric(drained_after=0)
    failures = {"left": 2}

    def connect(target: wait.Reach) -> object:
        if target.name == SPINE and failures["left"]:
            failures["left"] -= 1
            raise ConnectionError(f"{target.address}: authentication failed for user admin")
        return fabric.connect(target)

    found = wait.wait_drained(PLAN, [SPINE], connect, {}, timeout=60, max_rate=1e6, clock=clock, sleep=clock.sleep)
    assert found.done and failures["left"] == 0
    assert clock.now == 2 * wait.POLL  # two rounds waited on the unreadable spine, the third read it
    assert set(found.rates) == {f"{SPINE} swp{i}" for i in range(1, 5)}


def test_a_drained_switch_never_readable_ends_the_wait_at_its_timeout_naming_it(monkeypatch):
    monkeypatch.setattr(wait, "SAMPLE", 0.0)
    clock, fabric = Clock(), Fabric(drained_after=0)

    def connect(target: wait.Reach) -> object:
        if target.name == SPINE:
            raise ConnectionError("authentication failed")
        return fabric.connect(target)

    found = wait.wait_drained(PLAN, [SPINE], connect, {}, timeout=10, max_rate=1e6, clock=clock, sleep=clock.sleep)
    assert not found.done and clock.now >= 10
    assert found.waiting_for == (f"{SPINE}: counters unreadable (ConnectionError)",)


def test_an_undrain_waits_until_the_planned_widths_are_back():
    clock, fabric = Clock(), Fabric(drained_after=None, narrow_for=2)
    found = wait.wait_restored(PLAN, [SPINE], fabric.connect, {}, timeout=60, clock=clock, sleep=clock.sleep)
    assert found.done and clock.now == 2 * wait.POLL
    short = Fabric(drained_after=None, narrow_for=100)
    other = Clock()
    late = wait.wait_restored(PLAN, [SPINE], short.connect, {}, timeout=5, clock=other, sleep=other.sleep)
    assert not late.done and any("1/2 paths" in w for w in late.waiting_for), late.waiting_for


def test_an_undrain_beside_a_spine_another_keeps_drained_expects_the_widths_without_it():
    """cmp-spine2 stays drained (someone else's): undraining cmp-spine1 cannot bring the leaves' two paths
    back, only the one through cmp-spine1; the wait asks for the widths without the spine kept drained."""
    other_spine = "cmp-spine2"
    kept = wait.drained_among(PLAN, wait.peers_of(PLAN, [SPINE]), Fabric(spine=other_spine).connect)
    assert kept == {other_spine}
    clock = Clock()
    found = wait.wait_restored(
        PLAN, [SPINE], Fabric(spine=other_spine).connect, {}, timeout=60, clock=clock, sleep=clock.sleep,
        kept_drained=kept,
    )  # fmt: skip
    assert found.done and clock.now == 0, found.waiting_for
    blind = Clock()
    waited = wait.wait_restored(
        PLAN, [SPINE], Fabric(spine=other_spine).connect, {}, timeout=5, clock=blind, sleep=blind.sleep
    )
    assert not waited.done and any("1/2 paths" in w for w in waited.waiting_for), waited.waiting_for


def test_the_leaves_facing_a_drained_spine_and_their_ports():
    assert wait.facing(PLAN, [SPINE]) == {
        "cmp-su1-leaf1": {"swp3"},
        "cmp-su1-leaf2": {"swp3"},
        "cmp-su2-leaf1": {"swp3"},
        "cmp-su2-leaf2": {"swp3"},
    }
    assert wait.still_held({"10.0.0.9/32": []}, ["10.0.0.9/32"], {"swp3"}) == ["10.0.0.9/32 unrouted"]


def test_a_multi_plane_wait_reads_the_drained_switch_s_plane_alone_and_finds_the_same_widths(monkeypatch):
    """The path vectors cost all pairs of a plane; a multi-plane fabric's planes never reach each other, so a
    wait around a plane-1 spine leaves plane 2 out of them, and its table is the one the whole plane gives."""
    plan = example_plan(INVENTORY / "examples/multiplane-b300.yml")
    spine = next(d.name for d in plan.devices() if d.plane == "compute" and d.role == "spine")
    part = plan.planes["compute"].plane_of[spine]
    drained = frozenset({spine})
    neighbours = sorted(wait.facing(plan, drained))
    hosts = wait.host_prefixes(plan)
    whole = expected_widths(plan, "compute", {}, without=drained)
    origins: list[int] = []
    real = wait.expected_widths

    def counted(plan_, plane, cap, processes=1, *, without=frozenset()):  # type: ignore[no-untyped-def]
        found = real(plan_, plane, cap, processes, without=without)
        origins.append(len({prefix for widths in found.values() for prefix in widths}))
        return found

    monkeypatch.setattr(wait, "expected_widths", counted)
    table = wait._widths(plan, neighbours, {}, drained, hosts)
    assert table.keys() == set(neighbours) and all(table.values())
    for n in neighbours:
        assert plan.planes["compute"].plane_of[n] == part
        assert table[n] == whole[n] | {hosts[lo]: w for lo, w in whole[n].items() if lo in hosts}, n
    in_plane = sum(1 for d in plan.devices() if plan.planes[d.plane].plane_of.get(d.name) == part)
    assert origins and max(origins) < in_plane  # no other plane's loopback was walked from
