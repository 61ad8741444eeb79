"""Optics and link-quality readers, on outputs of the software that prints them.

Linux: the real ethtool (Debian's) decodes module memory these tests write byte by byte to the
published layouts (SFF-8636 for QSFP, SFF-8472 for SFP, CMIS for OSFP); a preloaded stand-in
(tests/ethtool_module_shim.c) only hands ethtool those bytes where the kernel and a module would.
EOS and NX-OS: documents in the switches' output formats, read by gpufabric and by NAPALM's own
`get_optics` getters, which must agree.
"""

from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from gpufabric.drivers.transport import Output
from gpufabric.nos.eos.telemetry import parse_transceivers as eos_transceivers
from gpufabric.nos.nxos.telemetry import parse_transceivers as nxos_transceivers
from gpufabric.telemetry.link_quality import read_link_quality
from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.optics import Optics, parse_fec, parse_module, parse_phy_counters, samples
from gpufabric.telemetry.read import read_host
from gpufabric.telemetry.targets import NicTarget

SHIM = Path(__file__).resolve().parents[1] / "ethtool_module_shim.c"
SFF_8472, SFF_8636 = 2, 3  # the kernel's ETH_MODULE_SFF_* module types


@pytest.fixture(scope="module")
def ethtool(tmp_path_factory) -> dict[str, str]:
    """The environment that runs the real ethtool against a module file: its path and the shim's."""
    found, cc = shutil.which("ethtool") or "/usr/sbin/ethtool", shutil.which("gcc") or shutil.which("cc")
    if not os.path.exists(found) or cc is None:
        if os.environ.get("CI"):
            pytest.fail("ethtool or a C compiler is missing: scripts/test.sh installs Debian's ethtool")
        pytest.skip("needs Debian's ethtool and a C compiler (scripts/test.sh installs ethtool)")
    lib = tmp_path_factory.mktemp("shim") / "ethtool_module_shim.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(lib), str(SHIM), "-ldl"], check=True)
    return {"ETHTOOL": found, "LD_PRELOAD": str(lib)}


def _module_text(ethtool: dict[str, str], tmp_path: Path, data: bytes, kind: int) -> str:
    path = tmp_path / "module.bin"
    path.write_bytes(data)
    env = {"PATH": os.environ.get("PATH", ""), "LD_PRELOAD": ethtool["LD_PRELOAD"], "EEPROM_FILE": str(path)}
    done = subprocess.run(
        [ethtool["ETHTOOL"], "-m", "swp1"],
        env={**env, "EEPROM_TYPE": str(kind)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- module memory, as the standards lay it out -------------------------------------------------------


def _mw(value: float) -> int:
    return round(value * 10_000)  # 0.1 uW units


def qsfp(temp: float, lanes: list[tuple[float, float, float]], thresholds: bool = True) -> bytes:
    """SFF-8636: lower page (temperature at 22, rx power 34, bias 42, tx power 50: four lanes each), upper
    page 00h (identifier, power monitoring types at 220), and page 03h's thresholds at 512 when paged."""
    data = bytearray(640 if thresholds else 256)
    data[0] = data[128] = 0x11  # QSFP28
    data[2] = 0 if thresholds else 0x04  # flat memory: no page 03h
    struct.pack_into(">h", data, 22, round(temp * 256))
    for i, (rx, tx, bias) in enumerate(lanes):
        struct.pack_into(">H", data, 34 + 2 * i, _mw(rx))
        struct.pack_into(">H", data, 42 + 2 * i, round(bias * 500))  # 2 uA units
        struct.pack_into(">H", data, 50 + 2 * i, _mw(tx))
    data[220] = 0x0C  # rx power is an average; tx power is monitored
    if thresholds:
        page3 = 512 - 128  # page 03h's offset 128 is the file's 512
        struct.pack_into(">hhhh", data, page3 + 128, 75 * 256, -5 * 256, 70 * 256, 0)  # temperature
        struct.pack_into(">HHHH", data, page3 + 176, _mw(3.0), _mw(0.04), _mw(2.0), _mw(0.08))  # rx power
    return bytes(data)


def sfp(temp: float, rx: float, tx: float, bias: float) -> bytes:
    """SFF-8472: A0h (identifier, diagnostics type at 92, alarms implemented at 93), then A2h at 256
    (thresholds at 0-39, readings at 96-105)."""
    data = bytearray(512)
    data[0], data[92], data[93] = 0x03, 0x68, 0x80
    a2 = 256
    struct.pack_into(">hhhh", data, a2, 80 * 256, -10 * 256, 75 * 256, -5 * 256)
    struct.pack_into(">HHHH", data, a2 + 32, _mw(2.0), _mw(0.03), _mw(1.5), _mw(0.06))
    struct.pack_into(">hHHHH", data, a2 + 96, round(temp * 256), 33000, round(bias * 500), _mw(tx), _mw(rx))
    return bytes(data)


def osfp(temp: float) -> bytes:
    """CMIS: the lower page's module temperature at 14 (per-lane monitors live on page 11h)."""
    data = bytearray(256)
    data[0] = data[128] = 0x19  # OSFP
    data[1] = 0x50  # CMIS 5.0
    struct.pack_into(">hH", data, 14, round(temp * 256), 33100)
    return bytes(data)


def _dbm(mw: float) -> float:
    return -math.inf if mw == 0 else 10 * math.log10(_mw(mw) / 10_000)


# -- Linux: the real ethtool ---------------------------------------------------------------------------

LANES = [(0.8, 1.0, 6.5), (0.5, 0.9, 6.6), (0.02, 0.95, 6.7), (0.0, 1.1, 6.8)]  # rx mW, tx mW, bias mA


def test_a_qsfp_module_reads_back_lane_by_lane_with_its_own_thresholds(ethtool, tmp_path):
    found = parse_module(_module_text(ethtool, tmp_path, qsfp(41.5, LANES), SFF_8636))
    assert found.temperature_c == 41.5
    assert sorted(found.lanes) == [1, 2, 3, 4]
    for n, (rx, tx, bias) in enumerate(LANES, start=1):
        lane = found.lanes[n]
        assert lane.rx_dbm == pytest.approx(_dbm(rx), abs=0.006)
        assert lane.tx_dbm == pytest.approx(_dbm(tx), abs=0.006)
        assert lane.bias_ma == pytest.approx(bias, abs=0.001)
    assert found.lanes[4].rx_dbm == -math.inf  # no light at all
    assert found.rx_low_warning_dbm == pytest.approx(_dbm(0.08), abs=0.006)
    assert found.rx_low_alarm_dbm == pytest.approx(_dbm(0.04), abs=0.006)
    assert (found.temperature_high_warning_c, found.temperature_high_alarm_c) == (70.0, 75.0)


def test_a_module_with_no_thresholds_gives_none_not_zero(ethtool, tmp_path):
    found = parse_module(_module_text(ethtool, tmp_path, qsfp(30.0, LANES, thresholds=False), SFF_8636))
    assert found.temperature_c == 30.0 and found.lanes[1].rx_dbm == pytest.approx(_dbm(0.8), abs=0.006)
    assert found.rx_low_warning_dbm is None and found.temperature_high_warning_c is None
    names = {metric for metric, _, _ in samples(found)}
    assert "gpufabric_optics_rx_power_low_warning_dbm" not in names  # the alert falls back to its floor


def test_an_sfp_module_is_one_lane(ethtool, tmp_path):
    found = parse_module(_module_text(ethtool, tmp_path, sfp(36.75, rx=0.42, tx=0.5, bias=6.0), SFF_8472))
    assert found.temperature_c == 36.75 and list(found.lanes) == [1]
    assert found.lanes[1].rx_dbm == pytest.approx(_dbm(0.42), abs=0.006)
    assert found.lanes[1].tx_dbm == pytest.approx(_dbm(0.5), abs=0.006)
    assert found.lanes[1].bias_ma == 6.0
    assert found.rx_low_warning_dbm == pytest.approx(_dbm(0.06), abs=0.006)
    assert found.temperature_high_warning_c == 75.0


def test_an_osfp_module_gives_its_temperature(ethtool, tmp_path):
    found = parse_module(_module_text(ethtool, tmp_path, osfp(38.25), SFF_8636))
    assert found.temperature_c == 38.25 and found.lanes == {}


class _Here:
    """A switch's shell that is this machine's, with the real ethtool reading the test's module file."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.sent = env, list[str]()

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append(command)
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=self.env, check=False)
        return Output(done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        pass


def test_a_linux_switch_reads_every_port_in_one_command(ethtool, tmp_path):
    from gpufabric.drivers.linux_switch import LinuxSwitchDriver

    (tmp_path / "module.bin").write_bytes(qsfp(44.0, LANES))
    path = f"{Path(ethtool['ETHTOOL']).parent}:{os.environ.get('PATH', '')}"
    env = {"PATH": path, "LD_PRELOAD": ethtool["LD_PRELOAD"], "EEPROM_TYPE": "3"}
    here = _Here({**env, "EEPROM_FILE": str(tmp_path / "module.bin")})
    switch = LinuxSwitchDriver("192.0.2.1", "u", "p", optional_args={"transport": here})
    switch.open()
    found = read_link_quality(switch, "cumulus", ["swp1", "swp2", "bad;name"])
    assert len(here.sent) == 1 and "bad;name" not in here.sent[0]  # a name a shell would read is never sent
    assert found is not None and sorted(found) == ["swp1", "swp2"]
    assert found["swp1"].temperature_c == 44.0 and found["swp2"].lanes[4].rx_dbm == -math.inf
    assert found["swp1"].fec_corrected is None  # this ethtool's FEC request failed: nothing is claimed


# -- Linux: FEC statistics and ConnectX's PHY counters -------------------------------------------------

# `ethtool -I --show-fec`, as ethtool prints the kernel's FEC statistics (totals, then per lane).
SHOW_FEC = """FEC parameters for eth2:
Supported/Configured FEC encodings: Auto RS
Active FEC encoding: RS
Statistics:
  corrected_blocks: 256
    Lane 0: 255
    Lane 1: 1
  uncorrectable_blocks: 145
    Lane 0: 128
    Lane 1: 17
"""


def test_fec_statistics_are_the_totals_not_the_lanes_again():
    found = parse_fec(SHOW_FEC)
    assert (found.fec_corrected, found.fec_uncorrected, found.corrected_bits) == (256, 145, None)
    assert parse_fec("FEC parameters for eth2:\nActive FEC encoding: RS\n").fec_corrected is None


def test_connectx_phy_counters_give_the_bit_error_rates_parts():
    text = (
        "NIC statistics:\n     rx_bits_phy: 917549568000\n     rx_corrected_bits_phy: 43\n"
        "     rx_pcs_symbol_err_phy: 0\n"
    )
    found = parse_phy_counters(text)
    assert (found.received_bits, found.corrected_bits, found.symbol_errors) == (917549568000, 43, 0)
    older = parse_phy_counters("NIC statistics:\n     rx_symbol_errors_phy: 7\n")
    assert older.symbol_errors == 7


def test_a_server_nic_is_labelled_as_one_cable_end(ethtool, tmp_path):
    module = _module_text(ethtool, tmp_path, qsfp(51.0, LANES), SFF_8636)
    stats = "NIC statistics:\n     rx_bits_phy: 1000\n     rx_corrected_bits_phy: 3\n     rx_prio3_pause: 9\n"
    output = (
        f"@@port eth2\n{stats}@@module eth2\n{module}@@fec eth2\n{SHOW_FEC}@@speed eth2\n400000\n"
        "@@rdma\n@@netdev\n@@links\n[]\n"
    )
    nic = NicTarget("compute", "gpu001", "eth2", "1", "leaf1")
    found = {(s.metric, s.labels.get("lane")): s for s in read_host(output, [nic])}
    end = {"plane": "compute", "device": "gpu001", "role": "server", "port": "eth2", "peer": "leaf1", "rail": "1"}
    assert found[("gpufabric_optics_temperature_celsius", None)].labels == end
    assert found[("gpufabric_optics_temperature_celsius", None)].value == 51.0
    assert found[("gpufabric_optics_rx_power_dbm", "4")].value == -math.inf
    assert found[("gpufabric_fec_uncorrected_codewords_total", None)].value == 145
    assert found[("gpufabric_phy_received_bits_total", None)].value == 1000
    assert found[("gpufabric_link_speed_bits_per_second", None)].value == 400e9
    assert found[("gpufabric_nic_pause_frames_total", None)].value == 9  # the RoCE counters stay as they were
    for s in found.values():
        assert s.metric in METRICS and set(s.labels) == set(METRICS[s.metric].labels), s


# -- EOS and NX-OS: their documents, read by gpufabric and by NAPALM ---------------------------------------

EOS_TRANSCEIVERS = {
    "interfaces": {
        "Ethernet1/1": {
            "vendorSn": "XYZ1234",
            "mediaType": "400GBASE-DR4",
            "narrowBand": False,
            "updateTime": 1732435200.0,
            "temperature": 38.1,
            "voltage": 3.29,
            "txBias": 7.42,
            "txPower": 1.12,
            "rxPower": -2.35,
        },
        "Ethernet2/1": {"vendorSn": "", "mediaType": "400GBASE-CR8", "updateTime": 1732435200.0},
    }
}


def test_eos_transceivers_agree_with_napalms_getter():
    from napalm.eos.eos import EOSDriver

    ours = eos_transceivers(EOS_TRANSCEIVERS)
    napalm = EOSDriver("192.0.2.1", "u", "p")
    napalm._run_commands = lambda commands, encoding="json": [EOS_TRANSCEIVERS]  # type: ignore[method-assign]
    theirs = napalm.get_optics()["Ethernet1/1"]["physical_channels"]["channel"][0]["state"]
    lane = ours["Ethernet1/1"].lanes[1]
    assert lane.rx_dbm == theirs["input_power"]["instant"] == -2.35
    assert lane.tx_dbm == theirs["output_power"]["instant"]
    assert lane.bias_ma == theirs["laser_bias_current"]["instant"]
    assert ours["Ethernet1/1"].temperature_c == 38.1
    assert ours["Ethernet2/1"].is_empty()  # a copper cable has no diagnostics: no sample, not a zero
    assert samples(ours["Ethernet2/1"]) == []


NXOS_TRANSCEIVERS = """Ethernet1/1
    transceiver is present
    type is QSFP-100G-SR4
    name is CISCO-AVAGO
    part number is AFBR-89CDDZ-CS1
    revision is 01
    serial number is AVF2222ABCD
    nominal bitrate is 25500 MBit/sec
    Link length supported for 50/125um OM3 fiber is 70 m
    cisco id is 17
    cisco extended id number is 220

Lane Number:1 Network Lane
           SFP Detail Diagnostics Information (internal calibration)
  ----------------------------------------------------------------------------
                Current              Alarms                  Warnings
                Measurement     High        Low         High          Low
  ----------------------------------------------------------------------------
  Temperature   32.52 C        75.00 C     -5.00 C     70.00 C        0.00 C
  Voltage        3.29 V         3.63 V      2.97 V      3.46 V        3.13 V
  Current        6.61 mA       10.50 mA     2.50 mA    10.00 mA       3.00 mA
  Tx Power      -0.74 dBm       5.39 dBm  -12.30 dBm    2.39 dBm     -8.30 dBm
  Rx Power      -1.22 dBm       5.39 dBm  -14.30 dBm    2.39 dBm    -10.30 dBm
  Transmit Fault Count = 0
  ----------------------------------------------------------------------------
  Note: ++  high-alarm; +  high-warning; --  low-alarm; -  low-warning

Lane Number:2 Network Lane
           SFP Detail Diagnostics Information (internal calibration)
  ----------------------------------------------------------------------------
                Current              Alarms                  Warnings
                Measurement     High        Low         High          Low
  ----------------------------------------------------------------------------
  Temperature   32.52 C        75.00 C     -5.00 C     70.00 C        0.00 C
  Voltage        3.29 V         3.63 V      2.97 V      3.46 V        3.13 V
  Current        6.58 mA       10.50 mA     2.50 mA    10.00 mA       3.00 mA
  Tx Power      -0.81 dBm       5.39 dBm  -12.30 dBm    2.39 dBm     -8.30 dBm
  Rx Power     -15.01 dBm --    5.39 dBm  -14.30 dBm    2.39 dBm    -10.30 dBm
  Transmit Fault Count = 0
  ----------------------------------------------------------------------------
  Note: ++  high-alarm; +  high-warning; --  low-alarm; -  low-warning

Ethernet1/2
    transceiver is not present

"""


def test_nxos_transceivers_agree_with_napalms_getter():
    from napalm.nxos_ssh.nxos_ssh import NXOSSSHDriver

    ours = nxos_transceivers(NXOS_TRANSCEIVERS)
    napalm = NXOSSSHDriver("192.0.2.1", "u", "p")
    napalm._send_command = lambda command, raw_text=False, cmd_verify=True: NXOS_TRANSCEIVERS  # type: ignore[method-assign]
    theirs = napalm.get_optics()
    assert sorted(ours) == sorted(theirs) == ["Ethernet1/1"]  # no transceiver, no reading
    state = theirs["Ethernet1/1"]["physical_channels"]["channel"][0]["state"]
    first = ours["Ethernet1/1"].lanes[1]
    assert first.rx_dbm == state["input_power"]["instant"] == -1.22
    assert first.tx_dbm == state["output_power"]["instant"]
    assert first.bias_ma == state["laser_bias_current"]["instant"]
    second = ours["Ethernet1/1"].lanes[2]
    assert (second.rx_dbm, second.tx_dbm, second.bias_ma) == (-15.01, -0.81, 6.58)  # the flag is not a value
    assert ours["Ethernet1/1"].rx_low_warning_dbm == -10.30 and ours["Ethernet1/1"].rx_low_alarm_dbm == -14.30
    assert ours["Ethernet1/1"].temperature_high_warning_c == 70.0 and ours["Ethernet1/1"].temperature_c == 32.52


def test_an_empty_reading_is_empty():
    assert Optics().is_empty() and samples(Optics()) == []
