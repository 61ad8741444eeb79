"""How the real dnsmasq matches the serials `export ztp` writes (`dhcp-match=set:<switch>,61,"<serial>"`), shown
with a DHCP exchange: dnsmasq 2.90 from Debian serving the exported dnsmasq.conf on one end of a veth pair in a
network namespace made here, and a client on the other end that sends one DHCPDISCOVER with a chosen client
identifier (option 61) and reads the offer.

dnsmasq(8) says of `--dhcp-match` that a string value is matched as a substring, and so it does: a client whose
identifier holds a recorded serial anywhere is offered that switch's address. That is why the export refuses two
serials of which one is part of the other (tests/export/test_ztp_export.py), and what docs/ztp.md says of a
client outside the plan. Root only (network namespaces); the namespace and its veth carry this run's own name
and are removed at the end.
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import INVENTORY, run_in_process

from gpufabric.export import ztp
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.plan.model import ip

DNSMASQ = shutil.which("dnsmasq") or "/usr/sbin/dnsmasq"
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(not os.path.exists(DNSMASQ), reason="dnsmasq (dnsmasq-base) is not installed"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 is not installed"),
]
ENV = {"GPUFABRIC_SWITCH_PASSWORD": "ztp-test-password", "GPUFABRIC_SALT_KEY": "ztp-test-salt",
       "GPUFABRIC_SNMP_COMMUNITY": "ztp-canary-community"}  # fmt: skip
SERIAL, SWITCH = "ABC1", "oob-mgmt1"  # the OOB switch: known by its serial alone (no planned cable reaches it)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """dnsmasq serving the exported configuration in a namespace of its own: (namespace, client interface, log)."""
    tag = f"{os.getpid() % 10000:04d}{random.randint(0, 999):03d}"
    ns, server_if, client_if = f"gf-ztpserial-{tag}", f"gfz{tag}s", f"gfz{tag}c"
    doc = copy.deepcopy(yaml.safe_load((INVENTORY / "fabric.yml").read_text()))
    doc["planes"]["oob"]["ztp"] = {"interface": server_if, "serials": {SWITCH: SERIAL}}
    intent = tmp_path / "ztp.yml"
    intent.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "out"
    done = run_in_process("gpufabric", "export", "ztp", str(intent), "-o", str(out), **ENV)
    assert done.returncode == 0, done.stderr
    gateway = str(build_plan(load_intent(str(intent))).intent.planes.oob.gateway_address)  # the server's address
    log = tmp_path / "dnsmasq.log"
    _ip("netns", "add", ns)
    dnsmasq = None
    try:
        _ip("-n", ns, "link", "add", server_if, "type", "veth", "peer", "name", client_if)
        _ip("-n", ns, "addr", "add", f"{gateway}/24", "dev", server_if)
        for link in ("lo", server_if, client_if):
            _ip("-n", ns, "link", "set", link, "up")
        dnsmasq = subprocess.Popen(  # -k: in the foreground, so it is stopped by its own PID
            ["ip", "netns", "exec", ns, DNSMASQ, "-k", "-C", str(out / ztp.DNSMASQ), f"--log-facility={log}",
             "--log-dhcp", f"--dhcp-leasefile={tmp_path / 'leases'}", f"--pid-file={tmp_path / 'dnsmasq.pid'}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while "sockets bound exclusively to interface" not in (log.read_text() if log.exists() else ""):
            assert dnsmasq.poll() is None, dnsmasq.communicate()[0]
            assert time.monotonic() < deadline, "dnsmasq did not start within 20 s"
            time.sleep(0.1)
        yield ns, client_if, log
    finally:
        if dnsmasq is not None and dnsmasq.poll() is None:
            dnsmasq.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                dnsmasq.wait(10)
            if dnsmasq.poll() is None:
                dnsmasq.kill()
                dnsmasq.wait(10)
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True, check=False, timeout=30)


# One DHCPDISCOVER (RFC 2131) with the broadcast flag, sent as a DHCP client sends it (a raw Ethernet frame from
# 0.0.0.0, as the client has no address yet), and the offered address and host name (option 12) read back; run
# inside the namespace by this file's own interpreter.
CLIENT = r"""
import os, random, socket, struct, sys, time
iface, ident = sys.argv[1], bytes.fromhex(sys.argv[2])
mac = bytes([2, 0x66, *os.urandom(4)])
xid = random.getrandbits(32)
dhcp = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1, 1, 6, 0, xid, 0, 0x8000, bytes(4), bytes(4), bytes(4), bytes(4),
                   mac + bytes(10), bytes(64), bytes(128))
dhcp += bytes([99, 130, 83, 99, 53, 1, 1, 61, len(ident)]) + ident + bytes([55, 2, 1, 12, 255])
udp = struct.pack("!HHHH", 68, 67, 8 + len(dhcp), 0) + dhcp
head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, bytes(4), b"\xff" * 4)
total = sum(struct.unpack("!10H", head))
total = (total & 0xFFFF) + (total >> 16)
head = head[:10] + struct.pack("!H", ~((total & 0xFFFF) + (total >> 16)) & 0xFFFF) + head[12:]
frame = b"\xff" * 6 + mac + b"\x08\x00" + head + udp
with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800)) as s:
    s.bind((iface, 0))
    s.settimeout(1)
    for _ in range(3):
        s.send(frame)
        deadline = time.monotonic() + 2
        data = b""
        while time.monotonic() < deadline:
            try:
                got = s.recv(4096)
            except socket.timeout:
                continue
            ihl = (got[14] & 0x0F) * 4
            body = got[14 + ihl + 8 :]
            if got[23] == 17 and struct.unpack("!H", got[14 + ihl + 2 : 14 + ihl + 4])[0] == 68 and len(body) > 240 \
                    and struct.unpack("!I", body[4:8])[0] == xid:
                data = body
                break
        if not data:
            continue
        options, i, name = data[240:], 0, ""
        while i < len(options) and options[i] != 255:
            code, size = options[i], options[i + 1] if options[i] else 0
            if code == 12:
                name = options[i + 2 : i + 2 + size].decode()
            i += 2 + size if code else 1
        print(socket.inet_ntoa(data[16:20]), name)
        break
    else:
        print("no-offer")
"""


def _offer(ns: str, iface: str, client_id: bytes) -> str:
    done = subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-c", CLIENT, iface, client_id.hex()],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow  # runs a whole tool (the fast tier's budget): the whole suite runs it
def test_dnsmasq_matches_a_recorded_serial_anywhere_in_the_client_identifier(served):
    ns, client_if, log = served
    plan = build_plan(load_intent(str(INVENTORY / "fabric.yml")))
    expected = f"{ip(plan.device(SWITCH).mgmt_ip)} {SWITCH}"
    assert _offer(ns, client_if, SERIAL.encode()) == expected, log.read_text()[-2000:]
    assert _offer(ns, client_if, b"\x00" + SERIAL.encode()) == expected  # with the leading type byte 0
    assert _offer(ns, client_if, b"XYZ9") == "no-offer"  # a client the plan does not know gets nothing
    # Substring matching: an identifier that only holds the serial is offered the switch's identity too. Two
    # recorded serials ABC1 and XABC12 would give the second switch both tags: the export refuses them.
    assert _offer(ns, client_if, b"XABC12") == expected, log.read_text()[-2000:]
