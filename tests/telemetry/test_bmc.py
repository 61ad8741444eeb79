"""Servers' BMCs over Redfish: series read from OpenStack's sushy-tools emulator (a real Redfish service),
the failures it cannot show from a fake laid out as DMTF's mockups are (tests/telemetry/redfish_doubles.py),
and hostile answers, each a located error (the BMC, the URL path, the field) within its bounds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from gpufabric.hidden import Hidden
from gpufabric.telemetry.bmc import BmcTarget, read_bmc, samples
from gpufabric.telemetry.exporter import FabricCollector
from gpufabric.telemetry.redfish import Endpoint, Limits, RedfishError, Session
from tests.telemetry.redfish_doubles import (
    PASSWORD,
    SYSTEM_UUID,
    USER,
    Service,
    free_port,
    newer_model,
    older_model,
    slow_drip,
    sushy_emulator,
    sushy_emulator_path,
)

TARGET = BmcTarget("gpu001", "127.0.0.1", "r12", "17")
needs_emulator = pytest.mark.skipif(
    sushy_emulator_path() is None, reason="sushy-tools is not installed (the test extra: pip install -e .[test])"
)


def _endpoint(port: int, password: str = PASSWORD, *, scheme: str = "http", plain_http: bool = True) -> Endpoint:
    return Endpoint("gpu001", "127.0.0.1", port, scheme, USER, Hidden(password), plain_http=plain_http)


def _values(reading) -> dict[tuple[str, str], float]:
    """metric, and the part's id (psu, fan, sensor or system label) -> value."""
    out = {}
    for s in samples(reading):
        part = s.labels.get("psu") or s.labels.get("fan") or s.labels.get("sensor") or s.labels.get("system") or ""
        out[(s.metric, part)] = s.value
    return out


# -- the real emulator -------------------------------------------------------------------------------------


@needs_emulator
def test_series_from_the_sushy_emulator(tmp_path: Path):
    port = free_port()
    with sushy_emulator(tmp_path / "emu", "127.0.0.1", port):
        reading = read_bmc(TARGET, _endpoint(port))
        assert reading.error is None, reading.error
        got = _values(reading)
        # The emulator's system (its fake driver's, powered on) and its chassis' Thermal resource.
        assert got[("gpufabric_bmc_up", "")] == 1.0
        assert got[("gpufabric_bmc_health", SYSTEM_UUID)] == 0.0
        assert got[("gpufabric_bmc_power_on", SYSTEM_UUID)] == 1.0
        assert got[("gpufabric_bmc_temperature_celsius", "0")] == 41.0  # "CPU Temp"
        assert got[("gpufabric_bmc_temperature_critical_celsius", "0")] == 45.0
        assert got[("gpufabric_bmc_temperature_celsius", "1")] == 25.0  # "Chassis Intake Temp"
        assert got[("gpufabric_bmc_fan_rpm", "0")] == 2100.0 and got[("gpufabric_bmc_fan_health", "1")] == 0.0
        assert not any(m == "gpufabric_bmc_psu_health" for m, _ in got)  # the emulator has no Power resource
        assert reading.failures == [] and reading.warnings == []
        # The exporter serves the same with the plan's labels.
        collector = FabricCollector([], lambda t: None, bmcs=[(TARGET, _endpoint(port))], budget=20, deadline=20)
        registry = CollectorRegistry()
        registry.register(collector)
        text = generate_latest(registry).decode()
        labels = 'bmc="127.0.0.1",chassis="15693887-7984-9484-3272-842188918912",name="CPU Temp",node="gpu001"'
        assert f'gpufabric_bmc_temperature_celsius{{{labels},position="17",rack="r12",sensor="0"}} 41.0' in text
        assert 'gpufabric_bmc_up{bmc="127.0.0.1",node="gpu001",position="17",rack="r12"} 1.0' in text
        # A wrong password: the emulator refuses it, named, and the password is in no message.
        wrong = read_bmc(TARGET, _endpoint(port, "not-the-password"))
        assert wrong.error is not None
        assert str(wrong.error) == "BMC gpu001: GET /redfish/v1/Systems: HTTP 401 (the login was refused)"
        assert "not-the-password" not in json.dumps(wrong.as_dict())


@needs_emulator
def test_a_powered_off_server_reads_power_off(tmp_path: Path):
    port = free_port()
    with sushy_emulator(tmp_path / "emu", "127.0.0.1", port, power="Off"):
        got = _values(read_bmc(TARGET, _endpoint(port)))
    assert got[("gpufabric_bmc_power_on", SYSTEM_UUID)] == 0.0


# -- the failures the emulator cannot show: the DMTF-layout fake -------------------------------------------


def test_the_older_power_model_reports_the_failed_psu():
    with Service(older_model()) as bmc:
        reading = read_bmc(TARGET, _endpoint(bmc.port))
    assert reading.error is None, reading.error
    got = _values(reading)
    assert got[("gpufabric_bmc_psu_health", "0")] == 0.0 and got[("gpufabric_bmc_psu_health", "1")] == 2.0
    assert ("gpufabric_bmc_psu_health", "2") not in got  # an empty bay (State Absent) is no part
    assert got[("gpufabric_bmc_health", "437XR1138R2")] == 2.0  # DMTF's HealthRollup, not the system's own OK
    assert reading.failures == [
        "system 437XR1138R2: health rollup Critical",
        "psu 1U/1 (Power Supply Bay 2): Critical",
    ]


def test_the_newer_subsystems_are_read_and_preferred():
    with Service(newer_model()) as bmc:
        reading = read_bmc(TARGET, _endpoint(bmc.port))
        asked = [path for path, _ in bmc.seen]
    assert reading.error is None, reading.error
    got = _values(reading)
    assert got[("gpufabric_bmc_psu_health", "PSU0")] == 0.0 and got[("gpufabric_bmc_psu_health", "PSU1")] == 0.0
    assert got[("gpufabric_bmc_fan_health", "Fan2")] == 2.0 and got[("gpufabric_bmc_fan_rpm", "Fan1")] == 9000.0
    assert got[("gpufabric_bmc_temperature_celsius", "GPU0_Temp")] == 91.0
    assert got[("gpufabric_bmc_temperature_critical_celsius", "GPU0_Temp")] == 90.0
    assert got[("gpufabric_bmc_health", "System_0")] == 1.0
    assert "/redfish/v1/Chassis/HGX/Power" not in asked  # the older resource of a chassis with the newer one
    assert reading.failures == [
        "fan HGX/Fan2 (Fan 2): Critical",
        "temperature HGX/GPU0_Temp (GPU0 Temp): 91 C, critical at 90 C",
    ]
    assert reading.warnings == [
        "system System_0: health rollup Warning",
        "temperature HGX/GPU0_Temp (GPU0 Temp): Warning",
    ]


# -- hostile answers -----------------------------------------------------------------------------------------


def _hostile(path: str, page) -> dict:
    pages = older_model(psu2="OK")
    pages[path] = page
    return pages


POWER = "/redfish/v1/Chassis/1U/Power"
SYSTEM = "/redfish/v1/Systems/437XR1138R2"
HOSTILE = {
    "oversize": (
        _hostile(POWER, lambda h: (200, {}, b'{"Id": "' + b"x" * (2 << 20) + b'"}')),
        f"BMC gpu001: GET {POWER}: the answer is {(2 << 20) + 10} bytes, more than the 1048576 allowed",
    ),
    "oversize without a length": (
        _hostile(POWER, lambda h: (200, {"Content-Length": ""}, b"[" * 10 + b" " * (2 << 20))),
        f"BMC gpu001: GET {POWER}: the answer is more than the 1048576 bytes allowed",
    ),
    "deep JSON": (
        _hostile(POWER, lambda h: (200, {}, b'{"a": ' * 40 + b"1" + b"}" * 40)),
        f"BMC gpu001: GET {POWER}: the answer nests deeper than 32 levels",
    ),
    "a health of the wrong type": (
        _hostile(POWER, {"PowerSupplies": [{"MemberId": "0", "Status": {"Health": 2}}]}),
        f"BMC gpu001: GET {POWER}: PowerSupplies[0].Status.Health: a JSON int, not a str",
    ),
    "a health Redfish has no word for": (
        _hostile(POWER, {"PowerSupplies": [{"MemberId": "0", "Status": {"Health": "Broken"}}]}),
        f"BMC gpu001: GET {POWER}: PowerSupplies[0].Status.Health: 'Broken' is not a Redfish health (OK, Warning, "
        "Critical)",
    ),
    "a reading that is a string": (
        _hostile(
            "/redfish/v1/Chassis/1U/Thermal",
            {"Temperatures": [{"MemberId": "0", "ReadingCelsius": "hot", "Status": {"Health": "OK"}}]},
        ),
        "BMC gpu001: GET /redfish/v1/Chassis/1U/Thermal: Temperatures[0].ReadingCelsius: a JSON str, not a number",
    ),
    "members that are not a list": (
        _hostile("/redfish/v1/Systems", {"Members": {"@odata.id": SYSTEM}}),
        "BMC gpu001: GET /redfish/v1/Systems: Members: a JSON dict, not a list",
    ),
    "a link to another host": (
        _hostile("/redfish/v1/Systems", {"Members": [{"@odata.id": "http://203.0.113.9/redfish/v1/Systems/1"}]}),
        "BMC gpu001: GET /redfish/v1/Systems: Members[0].@odata.id: 'http://203.0.113.9/redfish/v1/Systems/1' "
        "is not a path of this Redfish service",
    ),
    "a path out of the service": (
        _hostile("/redfish/v1/Chassis", {"Members": [{"@odata.id": "/redfish/v1/../../etc/passwd"}]}),
        "BMC gpu001: GET /redfish/v1/../../etc/passwd: not a path of this Redfish service (/redfish/v1/...)",
    ),
    "not JSON": (
        _hostile(SYSTEM, lambda h: (200, {"Content-Type": "text/html"}, b"<html>login</html>")),
        f"BMC gpu001: GET {SYSTEM}: the answer is not JSON: Expecting value: line 1 column 1 (char 0)",
    ),
    "NaN": (
        _hostile(SYSTEM, lambda h: (200, {}, b'{"Id": "x", "PowerState": NaN}')),
        f"BMC gpu001: GET {SYSTEM}: the answer is not JSON: NaN is not a JSON number",
    ),
    "a list, not an object": (
        _hostile(SYSTEM, [1, 2]),
        f"BMC gpu001: GET {SYSTEM}: the answer is a JSON list, not an object",
    ),
    "a power state Redfish does not have": (
        _hostile(SYSTEM, {"Id": "437XR1138R2", "PowerState": "\x1b[2JOn"}),
        f"BMC gpu001: GET {SYSTEM}: PowerState: '\\x1b[2JOn' is not a Redfish PowerState",
    ),
    "a name that cannot be a label": (
        _hostile(POWER, {"PowerSupplies": [{"MemberId": 'PSU"}', "Status": {"Health": "OK"}}]}),
        f"BMC gpu001: GET {POWER}: PowerSupplies[0].MemberId: 'PSU\"}}' is not a name gpufabric can label a series "
        "with",
    ),
    "an error status": (
        _hostile(SYSTEM, lambda h: (500, {}, b"{}")),
        f"BMC gpu001: GET {SYSTEM}: HTTP 500",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_answer_is_a_located_error(case: str):
    pages, message = HOSTILE[case]
    with Service(pages) as bmc:
        reading = read_bmc(TARGET, _endpoint(bmc.port))
    assert reading.error is not None, case
    assert str(reading.error) == message
    assert samples(reading) == [samples(reading)[0]] and samples(reading)[0].value == 0.0  # bmc_up 0, nothing else


def test_a_redirect_to_another_origin_is_not_followed_and_the_login_does_not_go_there():
    with Service({}) as elsewhere:
        target = f"http://127.0.0.1:{elsewhere.port}/redfish/v1/Systems"
        pages = _hostile("/redfish/v1/Systems", lambda h: (302, {"Location": target}, b""))
        with Service(pages) as bmc:
            reading = read_bmc(TARGET, _endpoint(bmc.port))
        assert str(reading.error) == (
            f"BMC gpu001: GET /redfish/v1/Systems: redirected to another origin (http://127.0.0.1:{elsewhere.port}): "
            "not followed, the login would go there"
        )
        assert elsewhere.seen == []


def test_a_redirect_within_the_service_is_followed():
    pages = older_model()
    pages["/redfish/v1/Systems"] = lambda h: (301, {"Location": "/redfish/v1/Systems/"}, b"")
    pages["/redfish/v1/Systems/"] = older_model()["/redfish/v1/Systems"]
    with Service(pages) as bmc:
        reading = read_bmc(TARGET, _endpoint(bmc.port))
    assert reading.error is None and reading.systems[0].id == "437XR1138R2"


def test_a_slow_sender_is_cut_at_the_deadline():
    pages = _hostile(SYSTEM, slow_drip(0.05))
    limits = Limits(request_timeout=1.0, deadline=1.5)
    with Service(pages) as bmc:
        started = time.monotonic()
        reading = read_bmc(TARGET, _endpoint(bmc.port), limits)
        took = time.monotonic() - started
    assert str(reading.error) == f"BMC gpu001: GET {SYSTEM}: the read ran past its deadline (1.5 s)"
    assert took < 3.0


def test_a_silent_bmc_is_cut_at_the_request_timeout():
    pages = _hostile(SYSTEM, lambda h: (time.sleep(3), (200, {}, b"{}"))[1])
    with Service(pages) as bmc:
        started = time.monotonic()
        reading = read_bmc(TARGET, _endpoint(bmc.port), Limits(request_timeout=0.5, deadline=5))
        took = time.monotonic() - started
    assert str(reading.error) == f"BMC gpu001: GET {SYSTEM}: no answer within the time allowed"
    assert took < 2.0


def test_plain_http_is_refused_unless_the_operator_says_so():
    with Service(older_model()) as bmc:
        reading = read_bmc(TARGET, _endpoint(bmc.port, plain_http=False))
        assert bmc.seen == []  # nothing was sent, the login least of all
    assert str(reading.error) == (
        "BMC gpu001: GET /redfish/v1: the BMC is reached over plain http, which would carry the login in clear: "
        "refused (use https, or --plain-http for a lab)"
    )
    assert PASSWORD not in repr(_endpoint(1))


def test_https_checks_the_bmc_certificate(tmp_path: Path):
    """A BMC whose certificate the CA bundle does not vouch for is refused before the login is sent."""
    import ssl

    from tests.tls_server import make_pki

    pki = make_pki(tmp_path, "127.0.0.1")
    with Service(older_model()) as bmc:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki.cert_file, pki.key_file)
        bmc.server.socket = context.wrap_socket(bmc.server.socket, server_side=True)
        trusted = Endpoint("gpu001", "127.0.0.1", bmc.port, "https", USER, Hidden(PASSWORD), str(pki.ca_file))
        good = read_bmc(TARGET, trusted)
        asked = len(bmc.seen)
        untrusted = read_bmc(TARGET, Endpoint("gpu001", "127.0.0.1", bmc.port, "https", USER, Hidden(PASSWORD)))
        assert len(bmc.seen) == asked  # the refused handshake carried no request, and so no login
    assert good.error is None and [p.id for p in good.parts if p.kind == "psu"] == ["0", "1"]
    assert str(untrusted.error).startswith("BMC gpu001: GET /redfish/v1/: the BMC's certificate is not trusted")


def test_too_many_members_are_refused():
    pages = _hostile("/redfish/v1/Chassis", {"Members": [{"@odata.id": f"/redfish/v1/Chassis/{i}"} for i in range(65)]})
    with Service(pages) as bmc:
        reading = read_bmc(TARGET, _endpoint(bmc.port))
    assert str(reading.error) == "BMC gpu001: GET /redfish/v1/Chassis: Members: 65 members, more than the 64 allowed"


def test_the_session_refuses_a_path_it_was_not_given_by_the_service():
    session = Session(_endpoint(1))
    with pytest.raises(RedfishError, match="not a path of this Redfish service"):
        session.get("http://elsewhere/redfish/v1")
