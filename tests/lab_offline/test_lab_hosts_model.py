"""Host containers without booting them: the mirror read from apt sources, the specs made from the plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufabric.intent import load_intent
from gpufabric.lab.hosts.apt_mirror import MirrorError, debian_mirror
from gpufabric.lab.hosts.from_plan import UnknownHostError, standin_specs
from gpufabric.lab.hosts.rootfs import image_path
from gpufabric.plan import build_plan

ROOT = Path(__file__).resolve().parents[2]


def _apt(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_mirror_from_deb822_skips_security_and_disabled_entries(tmp_path):
    apt = _apt(
        tmp_path,
        {
            "sources.list.d/a-off.sources": "Types: deb\nURIs: http://off.invalid/debian\nSuites: bookworm\n"
            "Components: main\nEnabled: no\n",
            "sources.list.d/debian.sources": "Types: deb\n# a comment\nURIs: http://mirror.invalid:8080/debian/\n"
            "Suites: bookworm bookworm-updates\nComponents: main contrib\n\n"
            "Types: deb\nURIs: http://security.invalid/debian-security\nSuites: bookworm-security\nComponents: main\n",
        },
    )
    m = debian_mirror("bookworm", apt)
    assert (m.url, m.host, m.port) == ("http://mirror.invalid:8080/debian", "mirror.invalid", 8080)


def test_mirror_from_one_line_sources_with_options(tmp_path):
    apt = _apt(
        tmp_path,
        {
            "sources.list": "# deb http://old.invalid/debian bookworm main\n"
            "deb [signed-by=/k.gpg arch=amd64] https://one.invalid/debian bookworm main\n"
        },
    )
    m = debian_mirror("bookworm", apt)
    assert (m.url, m.port) == ("https://one.invalid/debian", 443)


def test_no_mirror_for_the_release_says_where_it_looked(tmp_path):
    apt = _apt(tmp_path, {"sources.list": "deb http://x.invalid/debian bullseye main\n"})
    with pytest.raises(MirrorError, match="no http\\(s\\) apt source for 'bookworm main'"):
        debian_mirror("bookworm", apt)


def test_image_key_changes_with_the_package_list_and_mirror(tmp_path):
    apt = _apt(tmp_path, {"sources.list": "deb http://x.invalid/debian bookworm main\n"})
    m = debian_mirror("bookworm", apt)
    base = image_path(m, ("a", "b"), tmp_path)
    assert image_path(m, ("b", "a"), tmp_path) == base  # order does not matter
    assert image_path(m, ("a", "b", "c"), tmp_path) != base
    other = debian_mirror("bookworm", _apt(tmp_path / "o", {"sources.list": "deb http://y.invalid/d bookworm main\n"}))
    assert image_path(other, ("a", "b"), tmp_path) != base


def test_standin_specs_give_each_nic_its_planned_gateway_and_mtu():
    plan = build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))
    specs = standin_specs(plan, ["gpu01", "gpu02"], "mol-fabric", "172.31.254.1/24")
    assert [(s.name, s.mgmt_address, s.mgmt_interface) for s in specs] == [
        ("gpu01", "172.31.254.2/24", "eth0"),
        ("gpu02", "172.31.254.3/24", "eth0"),
    ]
    gpu01 = {n.interface: n for n in specs[0].nics}
    assert gpu01["eth1"].peer_address == "10.10.0.0/31"
    assert gpu01["eth1"].peer_mtu == 9216
    assert {n.peer_netns for s in specs for n in s.nics} == {"mol-fabric"}
    ports = [n.peer_port for s in specs for n in s.nics]
    assert len(ports) == len(set(ports)) and all(len(p) <= 15 for p in ports)
    assert (specs[0].netns, specs[0].root_port) == ("h-gpu01", "vh-gpu01")  # the lab's names


def test_a_prefix_names_hosts_apart_from_the_labs():
    plan = build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))
    specs = standin_specs(plan, ["gpu01"], "mol-fabric", "172.31.254.1/24", prefix="m-")
    assert (specs[0].netns, specs[0].root_port) == ("m-gpu01", "vm-gpu01")


def test_unknown_host_is_named():
    plan = build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))
    with pytest.raises(UnknownHostError, match="no server named gpu99"):
        standin_specs(plan, ["gpu99"], "r", "172.31.254.1/24")


def test_a_new_image_prunes_older_ones_but_not_one_a_container_stands_on(tmp_path):
    from gpufabric.lab.hosts.rootfs import _prune

    for key in ("new", "old", "busy"):
        (tmp_path / f"debian-bookworm-{key}.tar.zst").write_bytes(b"x")
        (tmp_path / f"debian-bookworm-{key}.root" / "etc").mkdir(parents=True)
    mountinfo = tmp_path / "mountinfo"
    busy = tmp_path / "debian-bookworm-busy.root"
    mountinfo.write_text(f"1 2 0:3 / /var/lib/x rw - overlay overlay rw,lowerdir={busy}\n")
    _prune(tmp_path, keep=tmp_path / "debian-bookworm-new.tar.zst", mountinfo=mountinfo)
    left = sorted(p.name for p in tmp_path.glob("debian-*"))
    assert left == [
        "debian-bookworm-busy.root",
        "debian-bookworm-busy.tar.zst",
        "debian-bookworm-new.root",
        "debian-bookworm-new.tar.zst",
    ]


def test_the_image_gets_debian_container_settings_for_apt_and_dpkg(tmp_path):
    from gpufabric.lab.hosts.rootfs import _container_conventions

    (tmp_path / "etc/apt/apt.conf.d").mkdir(parents=True)
    (tmp_path / "etc/dpkg/dpkg.cfg.d").mkdir(parents=True)
    _container_conventions(tmp_path)
    assert (tmp_path / "etc/apt/apt.conf.d/90gpufabric-container").read_text() == 'Acquire::Languages "none";\n'
    assert (tmp_path / "etc/dpkg/dpkg.cfg.d/90gpufabric-container").read_text() == "force-unsafe-io\n"
