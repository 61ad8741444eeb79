"""OpenSM's files rendered from the plan plus a discovery (the real ibnetdiscover output recorded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufabric.ib import discovery, opensm, topology
from gpufabric.ib.design import IbDesign
from gpufabric.ib.errors import IbError
from gpufabric.ib.planner import plan_fabric

RECORDED = Path(__file__).parents[1] / "recorded" / "ib" / "mini.ibnetdiscover"
MINI = IbDesign("mini", su_count=2, nodes_per_su=4, rails=2, fabric_manager_ports=2, fabric_manager_ports_per_host=1)
TENANT = opensm.Partition("tenant-a", 0x0101, ("dgx001", "dgx002"), sl=2)
SETTINGS = opensm.SmSettings(partitions=(TENANT,))
DIR = Path("/srv/sm")


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    fabric = plan_fabric(MINI)
    found = discovery.discover(fabric, topology.parse(RECORDED.read_text()))
    return opensm.render(fabric, found, SETTINGS, DIR)


def _conf(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_opensm_conf_binds_the_primary_sm_port_with_its_priority_and_engine(files: dict[str, str]) -> None:
    conf = _conf(files["opensm.conf"])
    # ufm1 mlx5_0's port GUID in the recorded fabric (its node GUID is 0x10001c, port 1 is +1).
    assert conf["guid"] == "0x000000000010001d"
    assert conf["sm_priority"] == "15"
    assert conf["routing_engine"] == "updn"  # the default (docs/infiniband.md, "Routing engine")
    assert conf["qos"] == "TRUE"
    assert conf["qos_ca_sl2vl"] == "0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7"
    assert conf["lmc"] == "0"


def test_every_file_opensm_reads_or_writes_is_in_its_own_folder(files: dict[str, str]) -> None:
    conf = _conf(files["opensm.conf"])
    paths = {k: v for k, v in conf.items() if v.startswith("/")}
    assert set(paths) >= {"log_file", "partition_config_file", "qos_policy_file", "root_guid_file", "dump_files_dir"}
    assert all(v == str(DIR) or v.startswith(f"{DIR}/") for v in paths.values())


def test_standby_gets_its_own_port_and_a_lower_priority() -> None:
    fabric = plan_fabric(MINI)
    found = discovery.discover(fabric, topology.parse(RECORDED.read_text()))
    conf = _conf(opensm.render(fabric, found, SETTINGS, DIR, role="standby")["opensm.conf"])
    assert (conf["guid"], conf["sm_priority"]) == (f"0x{found.nodes['ufm2 mlx5_0'].port:016x}", "14")


def test_without_tenants_every_adapter_is_a_full_member_of_the_default_partition() -> None:
    """Limited with no tenant partition, no two adapters could talk: one cluster, one full default."""
    fabric = plan_fabric(MINI)
    found = discovery.discover(fabric, topology.parse(RECORDED.read_text()))
    text = opensm.render(fabric, found, opensm.SmSettings(), DIR)["partitions.conf"]
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == ["Default=0x7fff, ipoib, mtu=5, defmember=full : ALL, ALL_SWITCHES=full, SELF=full ;"]


def test_default_partition_is_limited_and_the_tenant_has_its_hosts_ports_full(files: dict[str, str]) -> None:
    lines = [line for line in files["partitions.conf"].splitlines() if not line.startswith("#")]
    assert lines[0] == (
        "Default=0x7fff, ipoib, mtu=5, defmember=limited : ALL_CAS=limited, ALL_SWITCHES=full, SELF=full,"
        " 0x000000000010001d=full, 0x000000000010001f=full ;"
    )
    # dgx001 and dgx002, both rails, a host per line: port GUIDs from the recorded ibnetdiscover output.
    assert lines[1:4] == [
        "tenant-a=0x0101, ipoib, mtu=5, defmember=full :",
        "    0x0000000000100001=full, 0x0000000000100003=full,",
        "    0x0000000000100005=full, 0x0000000000100007=full ;",
    ]


def test_qos_policy_puts_the_tenant_on_its_service_level(files: dict[str, str]) -> None:
    assert files["qos-policy.conf"] == "qos-ulps\n    default : 0\n    any, pkey 0x0101 : 2\nend-qos-ulps\n"


def test_guid_files_and_name_map(files: dict[str, str]) -> None:
    assert files["root-guids.conf"] == "0x0000000000200004\n"  # spine01
    cn = files["cn-guids.conf"].split()
    assert len(cn) == 14 and "0x000000000010001d" not in cn  # compute adapters only, not the UFM ports
    assert '0x0000000000200003 "su2-leaf2"' in files["node-name-map"].splitlines()


@pytest.mark.parametrize(
    ("partitions", "says"),
    [
        ((opensm.Partition("a", 0x7FFF, ("dgx001",)),), "PKey 0x7fff out of range"),
        ((opensm.Partition("a", 0x8001, ("dgx001",)),), "PKey 0x8001 out of range"),
        ((opensm.Partition("a", 0x10, ("dgx001",)), opensm.Partition("b", 0x10, ("dgx002",))), "already used by a"),
        ((opensm.Partition("a", 0x10, ()),), "no members"),
        ((opensm.Partition("a", 0x10, ("dgx999",)),), "unplanned hosts dgx999"),
        ((opensm.Partition("a", 0x10, ("dgx001",), sl=16),), "service level 16"),
    ],
)
def test_bad_partitions_are_refused_with_where_and_fix(partitions: tuple[opensm.Partition, ...], says: str) -> None:
    fabric = plan_fabric(MINI)
    with pytest.raises(IbError) as err:
        opensm.check(fabric, opensm.SmSettings(partitions=partitions))
    assert any(says in p.message and p.where.startswith("partitions[") and p.fix for p in err.value.problems)


def test_sl2vl_must_map_sixteen_levels_below_max_vls() -> None:
    with pytest.raises(IbError, match="give 16 VLs"):
        opensm.check(plan_fabric(MINI), opensm.SmSettings(sl2vl=(0,) * 15))
