"""Zero-touch provisioning of one lab switch through a real DHCP server, a real relay and HTTP.

What runs (docs/ztp.md, "In the lab"):
- the switch is emptied: its management address is removed (`lab up` gave it one) and its FRR has only
  the hostname `lab up` starts it with;
- its management cable is moved from the OOB bridge to the port the plan cables it to on its OOB switch
  (the OOB switch's namespace, the port named as planned), where ISC's `dhcrelay` adds option 82 with
  that port's name as circuit-id, as the OOB switch's relay agent would; the OOB switch routes the
  switch's traffic to the bridge (proxy ARP on both sides);
- Kea (`kea-dhcp4`) or dnsmasq on the bridge, with the configuration `gpufabric export ztp` wrote (only
  the lease file moved into the run's folder), and Python's http.server on the provisioning address
  serving the export's `http/` folder;
- on the switch (its network, host name and mount namespaces: the /etc overlay a push writes too) ISC's
  `dhclient` with a hook standing in for the OS's ZTP agent: it puts the leased address on the management
  port and, once, fetches the URL in option 67 and runs it with `sh`, as SONiC's dhclient hook does.

Every process is started here and stopped here by PID (`Provisioning.stop`); `lab down` removes the
namespaces, with the relay's port in them.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpufabric.errors import GpufabricError
from gpufabric.files import write_atomic
from gpufabric.fleet.lab.state import LabState
from gpufabric.fleet.lab.topology import BRIDGE, LabTopology
from gpufabric.inputs import InputError, MiB, open_input, read_text
from gpufabric.lab import netlink, processes
from gpufabric.lab.daemons import node_dir
from gpufabric.outputs import json_dumps

KEA = "/usr/sbin/kea-dhcp4"
DNSMASQ = "/usr/sbin/dnsmasq"
DHCRELAY = "/usr/sbin/dhcrelay"
DHCLIENT = "/sbin/dhclient"
SERVERS = ("kea", "dnsmasq")
READY = {"kea": "DHCP4_STARTED", "dnsmasq": "started, version"}  # what each logs once it serves
RELAY_READY = "Sending on   Socket/fallback"  # dhcrelay -d, once its interfaces are open: the last of its start lines
# The switch's ZTP agent keeps asking, as an OS's ZTP agent does until it is provisioned. dhclient's own defaults
# (dhclient.conf(5): no lease in `timeout` 60 s, then nothing for `retry` 5 minutes) would let one lost minute on
# a loaded machine cost five more, past any sensible bound; one DHCP exchange takes under 2 s here.
CLIENT_CONF = """request subnet-mask, routers, host-name, domain-name, bootfile-name;
initial-interval 1;
backoff-cutoff 4;
timeout 30;
retry 2;
"""
REQUIRED = {KEA: "kea-dhcp4-server", DNSMASQ: "dnsmasq-base", DHCRELAY: "isc-dhcp-relay", DHCLIENT: "isc-dhcp-client"}
# A loaded two-core machine starting FRR, a relay and a DHCP exchange: only a broken run waits this long. At a
# load average of 20 (the test suite's three lanes and a busy loop) one switch took longer than 120 s.
TIMEOUT = 300.0


class LabZtpError(GpufabricError):
    pass


class NotProvisionedError(LabZtpError):
    """The run started, and the switch did not come out of it provisioned: the run's finding."""


def missing_packages() -> list[str]:
    return sorted({pkg for path, pkg in REQUIRED.items() if not Path(path).exists()})


@dataclass
class Provisioning:
    """One switch provisioned in the lab: what ran, what it got, and how long it took."""

    device: str
    folder: Path  # the run's own folder: logs, leases, the hook
    pids: dict[str, int] = field(default_factory=dict)
    address: str | None = None  # what the switch's management port holds after DHCP
    bootfile: str | None = None  # the URL option 67 carried
    seconds: float = 0.0  # from the DHCP client's start to the provisioning script's end

    def stop(self) -> None:
        """Stop every process this run started (the DHCP client first, so it releases nothing into a dead server)."""
        order = ("dhclient", "dhcrelay", "dhcp-server", "http")
        processes.stop([self.pids[k] for k in order if k in self.pids])
        self.pids.clear()


def _hook(device: str, netns: str, folder: Path) -> str:
    """The switch's ZTP agent: dhclient's script (dhclient hands it no environment of its own but the lease's).
    FRR_NS is the switch's pathspace, which is its namespace's name: the lab's name for the switch."""
    q = shlex.quote
    done, log, url = folder / "provisioned", folder / "provision.log", folder / "bootfile"
    return f"""#!/bin/sh
# gpufabric lab: the ZTP agent of {device} (dhclient's script)
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH FRR_NS={q(netns)} VTYSH_HISTFILE=/dev/null
case "$reason" in
PREINIT) ip link set dev "$interface" up ;;
BOUND|RENEW|REBIND|REBOOT)
    len=$(python3 -c 'import ipaddress, sys; print(ipaddress.IPv4Network("0.0.0.0/" + sys.argv[1]).prefixlen)' \
        "$new_subnet_mask")
    ip -4 address replace "$new_ip_address/$len" dev "$interface"
    echo "$(date +%T) $reason: $new_ip_address/$len on $interface" >>{q(str(log))}
    if [ ! -e {q(str(done))} ] && [ -n "${{new_bootfile_name:-}}" ]; then
        printf '%s\\n' "$new_bootfile_name" > {q(str(url))}
        script=$(mktemp)
        if curl -fsS --connect-timeout 10 --retry 5 --retry-delay 1 -o "$script" "$new_bootfile_name" \\
                >>{q(str(log))} 2>&1 && echo "$(date +%T) fetched $new_bootfile_name" >>{q(str(log))} &&
            sh "$script" >>{q(str(log))} 2>&1; then
            echo "$(date +%T) applied" >>{q(str(log))}
            echo ok > {q(str(done))}
        else
            echo "failed: $?" > {q(str(done))}
        fi
        rm -f "$script"
    fi ;;
EXPIRE|FAIL|RELEASE|STOP) ip -4 address flush dev "$interface" ;;
esac
exit 0
"""


def _oob_port(topo: LabTopology, device: str) -> tuple[str, str]:
    """(OOB switch, its port) the plan cables the switch's management port to."""
    for link in topo.plan.planes["oob"].links:
        if link.kind == "mgmt" and link.a == device:
            return link.b, link.b_port
    raise LabZtpError(f"{device}: the plan cables its management port to no OOB switch")


def _server_config(export: Path, server: str, folder: Path) -> tuple[list[str], Path]:
    """The DHCP server's command line, from the export's configuration with its lease file in `folder`."""
    if server == "kea":
        config = json.loads(
            read_text(export / "dhcp" / "kea-dhcp4.json", what="the exported Kea configuration", max_bytes=64 * MiB)
        )
        config["Dhcp4"]["lease-database"]["name"] = str(folder / "kea-leases4.csv")
        path = folder / "kea-dhcp4.json"
        write_atomic(path, json_dumps(config, indent=2) + "\n")
        # Kea's PID and lock files in the run's folder, not the machine's /run/kea.
        return ["env", f"KEA_PIDFILE_DIR={folder}", f"KEA_LOCKFILE_DIR={folder}", KEA, "-c", str(path)], path
    text = read_text(export / "dhcp" / "dnsmasq.conf", what="the exported dnsmasq configuration", max_bytes=64 * MiB)
    path = folder / "dnsmasq.conf"
    write_atomic(path, text + f"dhcp-leasefile={folder / 'dnsmasq.leases'}\n")
    pid = f"--pid-file={folder / 'dnsmasq.pid'}"
    # As root: the lease file is in the run's own folder (0700), where dnsmasq's usual user could not write.
    flags = ["--keep-in-foreground", "--log-dhcp", "--log-facility=-", "--user=root", pid]
    return [DNSMASQ, *flags, "-C", str(path)], path


def provision(
    topo: LabTopology,
    state_dir: Path,
    export: Path,
    device: str,
    *,
    server: str = "kea",
    http: tuple[str, int],
    timeout: float = TIMEOUT,
) -> Provisioning:
    """Empty `device`, then let DHCP and HTTP provision it; returns once its script has run (or raises).
    The caller stops what ran with `Provisioning.stop()`, also after an error (`provision` stops it then)."""
    if server not in SERVERS:
        raise LabZtpError(f"no DHCP server {server!r}: one of {', '.join(SERVERS)}")
    state = LabState.load(state_dir)
    netns = topo.names.netns(device)
    if state is None or netns not in state.namespaces:
        raise LabZtpError(f"{device} is not a switch of lab {topo.names.name} in {state_dir} (no namespace {netns})")
    if missing := missing_packages():
        raise LabZtpError(f"the lab's ZTP run needs {', '.join(missing)}: apt-get install {' '.join(missing)}")
    sshd = state.pids.get(f"{netns}/sshd")
    if sshd is None or not processes.alive(sshd):
        raise LabZtpError(f"{device}: its sshd (whose namespaces are the switch's) is not running")
    folder = node_dir(state_dir, netns) / "ztp"
    folder.mkdir(mode=0o700, exist_ok=True)
    run = Provisioning(device, folder)
    try:
        _provision(topo, run, export=export, server=server, http=http, sshd=sshd, timeout=timeout)
    except BaseException:
        run.stop()
        raise
    return run


def _provision(
    topo: LabTopology,
    run: Provisioning,
    *,
    export: Path,
    server: str,
    http: tuple[str, int],
    sshd: int,
    timeout: float,
) -> None:
    device, folder = run.device, run.folder
    netns = topo.names.netns(device)  # the lab's names for the switch and its OOB switch (their own by default)
    attach = next(m for m in topo.mgmt if m.node == device)
    oob_switch, port = _oob_port(topo, device)
    oob_ns = topo.names.netns(oob_switch)
    oob_attach = next(m for m in topo.mgmt if m.node == oob_switch)
    oob_node = next(n for n in topo.nodes if n.name == oob_switch)
    if oob_node.mgmt_ip is None:
        raise LabZtpError(f"{oob_switch} has no management address to relay from")
    relay_ip = oob_node.mgmt_ip.split("/")[0]
    planned = next(n.mgmt_ip for n in topo.nodes if n.name == device)
    assert planned is not None
    planned_ip = planned.split("/")[0]
    # An empty switch: no address on its management port.
    netlink.run("ip", "-n", netns, "-4", "address", "flush", "dev", attach.node_end)
    # The management cable to its planned OOB port: the root end moves into the OOB switch, named as planned.
    if attach.root_end in netlink.links():
        netlink.run("ip", "link", "set", attach.root_end, "nomaster")
        netlink.run("ip", "link", "set", attach.root_end, "netns", oob_ns)
        netlink.run("ip", "-n", oob_ns, "link", "set", attach.root_end, "name", port)
    # This machine knew the switch's address on the bridge, at the switch's own MAC: reached now through the OOB
    # switch (proxy ARP), whose port the bridge does not hold. Kept, that entry sent the provisioning server's
    # answers where no port leads until it aged out (the script's download waited 45-70 s for its SYN-ACK).
    # A switch on a real OOB network was never on the server's segment: nothing to forget there.
    netlink.run("ip", "neigh", "flush", "to", planned_ip)
    relay = [
        f"link set {port} up",
        f"address replace {relay_ip}/32 dev {port}",  # the relay's giaddr: an address on the OOB subnet
        f"route replace {planned_ip}/32 dev {port}",
    ]
    netlink.batch(relay, oob_ns)
    for iface in (port, oob_attach.node_end):
        netlink.run("ip", "netns", "exec", oob_ns, "sysctl", "-qw", f"net.ipv4.conf.{iface}.proxy_arp=1")
    host, http_port = http
    command, _ = _server_config(export, server, folder)
    run.pids["dhcp-server"] = processes.spawn(command, folder / f"{server}.log")
    _wait_started(folder / f"{server}.log", READY[server], run.pids["dhcp-server"], timeout)
    run.pids["http"] = processes.spawn(
        ["python3", "-m", "http.server", "--bind", host, "--directory", str(export / "http"), str(http_port)],
        folder / "http.log",
    )
    run.pids["dhcrelay"] = processes.spawn(
        [
            "ip", "netns", "exec", oob_ns,
            DHCRELAY, "-4", "-d", "-a", "--no-pid", "-id", port, "-iu", oob_attach.node_end, host,
        ],
        folder / "dhcrelay.log",
    )  # fmt: skip
    # The relay too: a DISCOVER sent before it listens is lost, and the client backs off.
    _wait_started(folder / "dhcrelay.log", RELAY_READY, run.pids["dhcrelay"], timeout, what="the DHCP relay")
    _wait_listening(host, http_port, timeout)
    hook = folder / "ztp-agent.sh"
    write_atomic(hook, _hook(device, netns, folder), mode=0o700)
    conf = folder / "dhclient.conf"
    write_atomic(conf, CLIENT_CONF)
    started = time.monotonic()
    run.pids["dhclient"] = processes.spawn(
        [
            "nsenter", "-t", str(sshd), "-m", "-u", "-n",
            DHCLIENT, "-4", "-d", "-v", "-cf", str(conf), "-sf", str(hook),
            "-lf", str(folder / "dhclient.leases"), "-pf", str(folder / "dhclient.pid"), attach.node_end,
        ],
        folder / "dhclient.log",
    )  # fmt: skip
    done = folder / "provisioned"
    deadline = started + timeout
    while not done.exists():
        if time.monotonic() > deadline:
            raise NotProvisionedError(f"{device} was not provisioned in {timeout:.0f} s{_tails(folder, server)}")
        if not processes.alive(run.pids["dhclient"]):
            raise NotProvisionedError(f"{device}: the DHCP client stopped{_tails(folder, server)}")
        time.sleep(0.2)
    run.seconds = time.monotonic() - started
    result = read_text(done, what="the lab ZTP agent's result", max_bytes=4096).strip()
    if result != "ok":
        raise NotProvisionedError(f"{device}: its provisioning script {result}{_tails(folder, server)}")
    run.bootfile = read_text(folder / "bootfile", what="the URL option 67 carried", max_bytes=4096).strip()
    shown = netlink.run("ip", "-n", netns, "-4", "-o", "address", "show", "dev", attach.node_end).stdout.split()
    run.address = shown[shown.index("inet") + 1] if "inet" in shown else None


def _wait_started(log: Path, marker: str, pid: int, timeout: float, *, what: str = "the DHCP server") -> None:
    """Until `what` says it serves (its log's start line): a client asking before would wait out its own
    retransmission back-off, which is no part of provisioning."""
    deadline = time.monotonic() + timeout
    while marker not in read_text(log, what=f"the log of {what}", max_bytes=64 * MiB):
        if not processes.alive(pid):
            raise LabZtpError(f"{what} stopped:{_tail(log)}")
        if time.monotonic() > deadline:
            raise LabZtpError(f"{what} did not start in {timeout:.0f} s:{_tail(log)}")
        time.sleep(0.1)


LOGS = ("dhclient.log", "dhcrelay.log", "provision.log", "http.log")  # with the DHCP server's: what a run writes
TAIL_BYTES = 1500


def _tail(log: Path) -> str:
    """The last lines of `log`, indented, for an error: `lab down` removes the run's folder with the lab's state,
    so a failed run's reasons travel in its message. Our processes' logs, but read as any file: bounded, and
    nothing but printable text shown."""
    try:
        with open_input(log, what="a log of the ZTP run", follow_links=False) as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            raw = fh.read(TAIL_BYTES)
    except (InputError, OSError):
        shown = "not written" if not log.exists() else "not readable as a file"
        return f"\n  {log.name}: {shown}"
    text = "".join(c if c.isprintable() or c == "\n" else "?" for c in raw.decode("utf-8", "replace"))
    lines = text.splitlines()[1:] if size > TAIL_BYTES else text.splitlines()  # the first may be cut
    shown = "".join(f"\n    {line}" for line in lines if line.strip()) or "\n    (empty)"
    return f"\n  {log.name} ({log.parent}):{shown}"


def _tails(folder: Path, server: str) -> str:
    """Every log of the run, each's last lines (the DHCP server's first: it answers or it does not)."""
    return ":" + "".join(_tail(folder / name) for name in (f"{server}.log", *LOGS))


def _wait_listening(host: str, port: int, timeout: float) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise LabZtpError(f"the provisioning server's HTTP server on {host}:{port} did not start") from None
            time.sleep(0.1)


__all__ = ["BRIDGE", "SERVERS", "LabZtpError", "Provisioning", "missing_packages", "provision"]
