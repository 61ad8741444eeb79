"""The lab's ZTP run, offline: what a failed run says (its logs' last lines, since `lab down` removes its folder),
and the DHCP client's settings that keep one lost exchange from costing dhclient's five-minute retry."""

from __future__ import annotations

import re

from gpufabric.lab import ztp


def _folder(tmp_path, **logs):
    for name, text in logs.items():
        (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return tmp_path


def test_a_failed_run_carries_each_logs_last_lines_server_first(tmp_path):
    folder = _folder(
        tmp_path,
        **{
            "kea.log": "DHCP4_STARTED\nDHCP4_PACKET_DROP no subnet\n",
            "dhclient.log": "DHCPDISCOVER on eth0 to 255.255.255.255 port 67 interval 3\n",
            "dhcrelay.log": "Sending on   Socket/fallback\n",
        },
    )
    text = ztp._tails(folder, "kea")
    names = re.findall(r"^  (\S+?)(?: \(|:)", text, re.M)
    assert names == ["kea.log", "dhclient.log", "dhcrelay.log", "provision.log", "http.log"]
    assert "    DHCP4_PACKET_DROP no subnet" in text and "interval 3" in text
    assert "provision.log: not written" in text  # no script ran: said, not skipped


def test_a_long_log_shows_only_its_end_whole_lines_and_printable(tmp_path):
    body = "".join(f"line {i:05d}\n" for i in range(10_000)) + "last \x1b[31mred\x07\n"
    folder = _folder(tmp_path, **{"dhclient.log": body})
    text = ztp._tail(folder / "dhclient.log")
    assert len(text) < 2 * ztp.TAIL_BYTES  # the indent aside
    assert "line 09999" in text and "line 00000" not in text
    assert "\x1b" not in text and "\x07" not in text and "last ?[31mred?" in text
    shown = [line.strip() for line in text.splitlines()[2:]]
    assert all(re.fullmatch(r"line \d{5}", line) for line in shown[:-1]), shown[:3]  # no cut first line


def test_the_client_asks_again_within_seconds_not_dhclients_five_minutes():
    settings = dict(re.findall(r"^(\S+(?:-\S+)?) (\d+);$", ztp.CLIENT_CONF, re.M))
    assert int(settings["retry"]) <= 5 and int(settings["timeout"]) <= 60 and int(settings["backoff-cutoff"]) <= 5
    assert "bootfile-name" in ztp.CLIENT_CONF
