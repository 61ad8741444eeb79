"""EOS eAPI and NX-API logins check who answers before the password travels.

Proof from software nobody here wrote: a real TLS server (Python's ssl + http.server) on a loopback
address, with a certificate made in the test. It records the headers of every request: with no CA and no
recorded fingerprint the driver refuses and the server never sees an Authorization header; with the right
CA or the right fingerprint the login goes through; a changed certificate is refused naming both
fingerprints. The JSON it answers is a test double of eAPI / NX-API; the TLS is real.
"""

from __future__ import annotations

import random

import pytest
from napalm.base.exceptions import ConnectionException
from tls_server import TlsServer, make_pki

from gpufabric.drivers.tls_pins import TlsTrustError, fingerprint, read_pins
from gpufabric.nos.eos.driver import GpufabricEOSDriver
from gpufabric.nos.nxos.driver import GpufabricNXOSDriver

DRIVERS = {"eos": GpufabricEOSDriver, "nxos": GpufabricNXOSDriver}
PASSWORD = "fabric-secret-7f3a"


@pytest.fixture
def address() -> str:
    return f"127.0.0.{random.randint(2, 250)}"


def login(kind: str, server: TlsServer, **args) -> object:
    driver = DRIVERS[kind](server.address, "admin", PASSWORD, timeout=30, optional_args={"port": server.port, **args})
    driver.open()
    return driver


def authorized(server: TlsServer) -> list[str]:
    return [h["Authorization"] for h in server.seen if "Authorization" in h]


@pytest.mark.parametrize("kind", ["eos", "nxos"])
def test_an_unknown_certificate_is_refused_and_no_password_is_sent(tmp_path, address, kind):
    pki = make_pki(tmp_path, address)
    pins = tmp_path / "known_tls_hosts"
    with TlsServer(pki, address) as server, pytest.raises(TlsTrustError) as refused:
        login(kind, server, tls_known_hosts=str(pins))
    message = str(refused.value)
    assert address in message and fingerprint(pki.der) in message and "--accept-new" in message
    assert server.seen == [] and authorized(server) == []  # not a request, not a header
    assert not pins.exists()


@pytest.mark.parametrize("kind", ["eos", "nxos"])
def test_the_right_ca_lets_the_login_through(tmp_path, address, kind):
    pki = make_pki(tmp_path, address)
    with TlsServer(pki, address) as server:
        login(kind, server, tls_ca_file=str(pki.ca_file))
    assert len(authorized(server)) >= 1 and all(a.startswith("Basic ") for a in authorized(server))


@pytest.mark.parametrize("kind", ["eos", "nxos"])
def test_another_ca_is_refused_before_the_login(tmp_path, address, kind):
    pki, other = make_pki(tmp_path, address, "a"), make_pki(tmp_path, address, "b")
    with TlsServer(pki, address) as server, pytest.raises(TlsTrustError, match="does not verify against"):
        login(kind, server, tls_ca_file=str(other.ca_file))
    assert server.seen == []


@pytest.mark.parametrize("kind", ["eos", "nxos"])
def test_a_recorded_fingerprint_lets_the_login_through(tmp_path, address, kind):
    pki = make_pki(tmp_path, address)
    pins = tmp_path / "known_tls_hosts"
    with TlsServer(pki, address) as server:
        pins.write_text(f"[{address}]:{server.port} {fingerprint(pki.der)}\n")
        login(kind, server, tls_known_hosts=str(pins))
    assert len(authorized(server)) >= 1


@pytest.mark.parametrize("kind", ["eos", pytest.param("nxos", marks=pytest.mark.slow)])
def test_accept_new_records_the_first_certificate_and_refuses_a_changed_one(tmp_path, address, kind):
    first, second = make_pki(tmp_path, address, "a"), make_pki(tmp_path, address, "b")
    pins = tmp_path / "new-dir" / "known_tls_hosts"
    with TlsServer(first, address) as server:
        login(kind, server, tls_known_hosts=str(pins), accept_new=True)
        port = server.port
    assert read_pins(str(pins)) == {f"[{address}]:{port}": fingerprint(first.der)}
    assert pins.stat().st_mode & 0o077 == 0
    # Same address and port, another certificate: refused even with --accept-new, naming both fingerprints.
    pins.write_text(pins.read_text().replace(f":{port} ", ":PORT "))
    with TlsServer(second, address) as server:
        pins.write_text(pins.read_text().replace(":PORT ", f":{server.port} "))
        with pytest.raises(TlsTrustError) as refused:
            login(kind, server, tls_known_hosts=str(pins), accept_new=True)
    message = str(refused.value)
    assert address in message and fingerprint(first.der) in message and fingerprint(second.der) in message
    assert server.seen == []


@pytest.mark.parametrize(("kind", "arg"), [("eos", "transport"), ("nxos", "transport")])
def test_plain_http_is_refused(kind, arg):
    with pytest.raises(Exception, match="refused"):
        DRIVERS[kind]("127.0.0.9", "admin", PASSWORD, optional_args={arg: "http"})


@pytest.mark.parametrize("kind", ["eos", "nxos"])
def test_the_push_connection_refuses_an_unverified_switch_before_the_password(tmp_path, address, kind, monkeypatch):
    """The connection push and validate open (nornir_napalm's, through `access`), not only the driver class:
    with NAPALM's own eos/nxos drivers the server received the password."""
    from nornir.core import Nornir
    from nornir.core.inventory import Defaults, Groups, Host, Hosts, Inventory
    from nornir.core.plugins.connections import ConnectionPluginRegister

    from gpufabric.fleet import access as access_mod

    monkeypatch.setitem(ConnectionPluginRegister.available, "napalm", access_mod.RevealingNapalm)
    pki = make_pki(tmp_path, address)
    login_ = access_mod.Access(
        False,
        "admin",
        PASSWORD,
        {"known_hosts": str(tmp_path / "known_hosts"), "tls_known_hosts": str(tmp_path / "known_tls_hosts")},
    )
    with TlsServer(pki, address) as server:
        hosts = Hosts({"sw1": Host(name="sw1", hostname=address, port=server.port, platform=kind)})
        inventory = Inventory(hosts=hosts, groups=Groups(), defaults=Defaults())
        access_mod.apply(inventory, login_, timeout=30)
        nr = Nornir(inventory=inventory)
        with pytest.raises(TlsTrustError, match="not trusted"):
            nr.inventory.hosts["sw1"].get_connection("napalm", nr.config)
    assert server.seen == [] and authorized(server) == []


def test_the_tls_fingerprints_live_beside_known_hosts_unless_named(tmp_path, monkeypatch):
    from conftest import default_doc, plan_doc

    from gpufabric.fleet.access import env_access

    intent = plan_doc(default_doc()).intent
    ref = intent.credentials.switches.password
    if ref is not None and ref.env:
        monkeypatch.setenv(ref.env, PASSWORD)
    beside = env_access(intent, known_hosts=tmp_path / "ssh" / "known_hosts").optional_args
    assert beside["tls_known_hosts"] == str(tmp_path / "ssh" / "known_tls_hosts") and "tls_ca_file" not in beside
    named = env_access(intent, ca_file=tmp_path / "ca.pem", tls_known_hosts=tmp_path / "pins").optional_args
    assert named["tls_ca_file"] == str(tmp_path / "ca.pem") and named["tls_known_hosts"] == str(tmp_path / "pins")


def test_a_refused_eapi_connection_names_the_switch(address):
    # Nothing listens there: the reason names the switch instead of pyeapi's bare error.
    driver = GpufabricEOSDriver(address, "admin", PASSWORD, timeout=2, optional_args={"port": 9})
    with pytest.raises(ConnectionException, match=f"{address}: cannot log in to eAPI"):
        driver.open()


@pytest.mark.parametrize("kind", ["eos", "nxos"])
def test_a_nornir_script_over_gpufabric_s_inventory_opens_the_verified_driver(tmp_path, address, kind, monkeypatch):
    """A user's own Nornir script: InitNornir over the GpufabricInventory plugin and nornir_napalm's stock
    `napalm` connection and `napalm_get`. The inventory's EOS and NX-OS hosts open gpufabric's drivers, so an
    unverified switch is refused before the password; with the stock `eos`/`nxos` platform NAPALM's own
    driver opened and the server received the password."""
    import napalm
    from conftest import ROOT
    from nornir import InitNornir
    from nornir.core.plugins.connections import ConnectionPluginRegister
    from nornir_napalm.plugins.connections import Napalm
    from nornir_napalm.plugins.tasks import napalm_get

    monkeypatch.setitem(ConnectionPluginRegister.available, "napalm", Napalm)  # the plugin a script of one's own has
    monkeypatch.setenv("GPUFABRIC_SWITCH_PASSWORD", PASSWORD)
    monkeypatch.chdir(tmp_path)
    nr = InitNornir(
        inventory={
            "plugin": "GpufabricInventory",
            "options": {"intent": str(ROOT / "inventory/examples/multi-vendor.yml")},
        },
        runner={"plugin": "serial"},
        logging={"enabled": False},
    )
    host = next(h for h in nr.inventory.hosts.values() if h.platform == kind)  # the OS's name stays for tasks
    pki = make_pki(tmp_path, address)
    with TlsServer(pki, address) as server:
        host.hostname, host.port = address, server.port  # the plan's management address, moved to loopback
        result = nr.filter(name=host.name).run(task=napalm_get, getters=["facts"])
    assert server.seen == [] and authorized(server) == []  # not a request, not the password
    assert result[host.name].failed and isinstance(result[host.name].exception, TlsTrustError)
    chosen = host.get_connection_parameters("napalm").platform
    assert chosen == f"gpufabric_{kind}" and napalm.get_network_driver(chosen) is DRIVERS[kind]
