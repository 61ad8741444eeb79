"""Redfish services for the BMC tests, on loopback (or in a network namespace the test made):

- OpenStack's sushy-tools emulator (`sushy-emulator --fake`), a real Redfish service no one here wrote: a
  ComputerSystem with its health rollup and power state, a Chassis with the older `Thermal` resource
  (temperatures with thresholds, fans in RPM), behind HTTP basic authentication (its htpasswd file, bcrypt);
- a FAKE of our own, for what the emulator cannot show (its chassis has no power resource, and every health
  is OK): resources laid out as DMTF's Redfish mockups are (one JSON document per URL path), with property
  names from DMTF's Redfish schema, served from a dict; a failed power supply in the older `Power` model,
  a failed fan and a sensor past its critical threshold in the newer `PowerSubsystem` / `ThermalSubsystem`;
- the same fake, answering wrongly on purpose (hostile answers) and recording the logins it was sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SYSTEM_UUID = "27946b59-9e44-4fa7-8e91-f3527a1ef094"
USER, PASSWORD = "gpufabric", "bmc-secret-4711"


def sushy_emulator_path() -> str | None:
    """The emulator's script, beside the interpreter running the tests (the project's virtualenv)."""
    beside = Path(sys.executable).parent / "sushy-emulator"
    return str(beside) if beside.exists() else shutil.which("sushy-emulator")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _answers(host: str, port: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing answers on {host}:{port} within {timeout:g} s")


@contextlib.contextmanager
def sushy_emulator(folder: Path, host: str, port: int, power: str = "On") -> Iterator[subprocess.Popen[bytes]]:
    """sushy-tools' emulator with its fake driver and one system, logins checked against an htpasswd file;
    stopped (by its PID) on leaving."""
    import bcrypt  # sushy-tools' own dependency, for its htpasswd file

    script = sushy_emulator_path()
    assert script is not None, "sushy-emulator is not installed (pip install sushy-tools: the test extra)"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "htpasswd").write_text(f"{USER}:{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()}\n")
    systems = [{"uuid": SYSTEM_UUID, "name": "gpu001", "power_state": power, "nics": []}]
    (folder / "emulator.conf").write_text(
        f"SUSHY_EMULATOR_AUTH_FILE = {str(folder / 'htpasswd')!r}\n"
        "SUSHY_EMULATOR_FAKE_DRIVER = True\n"
        f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n"
        f"SUSHY_EMULATOR_STATE_DIR = {str(folder / 'state')!r}\n"
    )
    log = (folder / "emulator.log").open("wb")
    argv = [script, "--config", str(folder / "emulator.conf"), "-i", host, "-p", str(port)]
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _answers(host, port)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# -- the fake: DMTF mockup layout, one JSON document per path ----------------------------------------------


def _ref(path: str) -> dict[str, str]:
    return {"@odata.id": path}


def _status(health: str, state: str = "Enabled") -> dict[str, str]:
    return {"State": state, "Health": health}


def older_model(psu2: str = "Critical", rollup: str | None = None) -> dict[str, Any]:
    """A server whose chassis has the older Power and Thermal resources: PSU 2 failed (by default), and the
    system's health rollup saying so (unless `rollup` says otherwise)."""
    ch = "/redfish/v1/Chassis/1U"
    rollup = rollup or ("Critical" if psu2 == "Critical" else "OK")
    return {
        "/redfish/v1/": {
            "Id": "RootService",
            "Systems": _ref("/redfish/v1/Systems"),
            "Chassis": _ref("/redfish/v1/Chassis"),
        },
        "/redfish/v1/Systems": {"Members": [_ref("/redfish/v1/Systems/437XR1138R2")]},
        "/redfish/v1/Systems/437XR1138R2": {
            "Id": "437XR1138R2",
            "PowerState": "On",
            "Status": {"State": "Enabled", "Health": "OK", "HealthRollup": rollup},
        },
        "/redfish/v1/Chassis": {"Members": [_ref(ch)]},
        ch: {"Id": "1U", "Power": _ref(f"{ch}/Power"), "Thermal": _ref(f"{ch}/Thermal"), "Status": _status("OK")},
        f"{ch}/Power": {
            "Id": "Power",
            "PowerSupplies": [
                {"MemberId": "0", "Name": "Power Supply Bay 1", "Status": _status("OK")},
                {"MemberId": "1", "Name": "Power Supply Bay 2", "Status": _status(psu2)},
                {"MemberId": "2", "Name": "Power Supply Bay 3", "Status": {"State": "Absent"}},
            ],
        },
        f"{ch}/Thermal": {
            "Id": "Thermal",
            "Temperatures": [
                {
                    "MemberId": "0",
                    "Name": "CPU1 Temp",
                    "ReadingCelsius": 52,
                    "UpperThresholdCritical": 90,
                    "Status": _status("OK"),
                }
            ],
            "Fans": [
                {"MemberId": "0", "Name": "Fan1", "Reading": 8000, "ReadingUnits": "RPM", "Status": _status("OK")}
            ],
        },
    }


def newer_model() -> dict[str, Any]:
    """A server whose chassis has PowerSubsystem and ThermalSubsystem: fan 2 failed, the GPU sensor past its
    critical threshold (the BMC itself still says Warning), both PSUs OK."""
    ch = "/redfish/v1/Chassis/HGX"
    return {
        "/redfish/v1/": {"Systems": _ref("/redfish/v1/Systems"), "Chassis": _ref("/redfish/v1/Chassis")},
        "/redfish/v1/Systems": {"Members": [_ref("/redfish/v1/Systems/System_0")]},
        "/redfish/v1/Systems/System_0": {"Id": "System_0", "PowerState": "On", "Status": _status("Warning")},
        "/redfish/v1/Chassis": {"Members": [_ref(ch)]},
        ch: {
            "Id": "HGX",
            "PowerSubsystem": _ref(f"{ch}/PowerSubsystem"),
            "ThermalSubsystem": _ref(f"{ch}/ThermalSubsystem"),
            # The older links as well: a chassis offering both is read through the newer model.
            "Power": _ref(f"{ch}/Power"),
        },
        f"{ch}/Power": {"PowerSupplies": [{"MemberId": "0", "Status": _status("Critical")}]},
        f"{ch}/PowerSubsystem": {"PowerSupplies": _ref(f"{ch}/PowerSubsystem/PowerSupplies")},
        f"{ch}/PowerSubsystem/PowerSupplies": {
            "Members": [_ref(f"{ch}/PowerSubsystem/PowerSupplies/{i}") for i in ("PSU0", "PSU1")]
        },
        f"{ch}/PowerSubsystem/PowerSupplies/PSU0": {"Id": "PSU0", "Name": "PSU 0", "Status": _status("OK")},
        f"{ch}/PowerSubsystem/PowerSupplies/PSU1": {"Id": "PSU1", "Name": "PSU 1", "Status": _status("OK")},
        f"{ch}/ThermalSubsystem": {
            "Fans": _ref(f"{ch}/ThermalSubsystem/Fans"),
            "ThermalMetrics": _ref(f"{ch}/ThermalSubsystem/ThermalMetrics"),
        },
        f"{ch}/ThermalSubsystem/Fans": {"Members": [_ref(f"{ch}/ThermalSubsystem/Fans/{i}") for i in ("Fan1", "Fan2")]},
        f"{ch}/ThermalSubsystem/Fans/Fan1": {
            "Id": "Fan1",
            "Name": "Fan 1",
            "SpeedPercent": {"Reading": 60, "SpeedRPM": 9000},
            "Status": _status("OK"),
        },
        f"{ch}/ThermalSubsystem/Fans/Fan2": {"Id": "Fan2", "Name": "Fan 2", "Status": _status("Critical")},
        f"{ch}/ThermalSubsystem/ThermalMetrics": {
            "TemperatureReadingsCelsius": [
                {"DataSourceUri": f"{ch}/Sensors/GPU0_Temp", "DeviceName": "GPU0", "Reading": 91},
            ]
        },
        f"{ch}/Sensors/GPU0_Temp": {
            "Id": "GPU0_Temp",
            "Name": "GPU0 Temp",
            "Reading": 91,
            "ReadingType": "Temperature",
            "Thresholds": {"UpperCritical": {"Reading": 90}},
            "Status": _status("Warning"),
        },
    }


Answer = tuple[int, dict[str, str], bytes]  # status, headers, body


class Service:
    """The fake on a loopback port: `pages` by path (a dict is sent as JSON; a callable gives the whole
    answer); every request's path and Authorization header is recorded."""

    def __init__(self, pages: dict[str, Any], host: str = "127.0.0.1", port: int = 0) -> None:
        self.pages = pages
        self.seen: list[tuple[str, str | None]] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                service.seen.append((self.path, self.headers.get("Authorization")))
                page = service.pages.get(self.path)
                if page is None:
                    status, headers, body = 404, {}, b'{"error": "not found"}'
                elif callable(page):
                    status, headers, body = page(self)
                else:
                    status, headers, body = 200, {}, json.dumps(page).encode()
                if status == 0:
                    return  # the callable answered on its own
                self.send_response(status)
                headers = {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}
                for k, v in headers.items():
                    if v != "":
                        self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.host, self.port = host, int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Service:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def slow_drip(seconds: float) -> Callable[[BaseHTTPRequestHandler], Answer]:
    """An answer whose body comes a byte at a time, `seconds` apart: each read is quick, the whole is not."""

    def answer(handler: BaseHTTPRequestHandler) -> Answer:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        with contextlib.suppress(OSError):
            for ch in b'{"Id": "' + b"x" * 200:
                handler.wfile.write(bytes([ch]))
                handler.wfile.flush()
                time.sleep(seconds)
        return 0, {}, b""

    return answer


def main() -> None:
    """Serve a model as the fake at HOST PORT until stopped: `python -m tests.telemetry.redfish_doubles
    older|newer HOST PORT` (the CLI's test runs it inside its own network namespace)."""
    model = {"older": older_model, "newer": newer_model, "healthy": lambda: older_model(psu2="OK")}[sys.argv[1]]()
    with Service(model, sys.argv[2], int(sys.argv[3])):
        print("ready", flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
