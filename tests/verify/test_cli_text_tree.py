"""The indented-configuration reader the EOS, NX-OS, FRR and SONiC readers share: blocks by indentation,
line numbers of the file (blank lines counted, belonging to no block), nested blocks, anchored searches."""

from __future__ import annotations

from gpufabric.verify.cli_text import children, line, parse, sections

TEXT = """\
hostname leaf1
!
interface Ethernet1
   mtu 9214

   ip address 10.0.0.1/31
router bgp 65001
   neighbor 10.0.0.0 remote-as 65100
   address-family ipv4 unicast
      maximum-paths 64
   !
 bfd
interface Ethernet2
"""


def test_blocks_follow_indentation_and_lines_are_the_file_s():
    conf = parse(TEXT.splitlines())
    ((eth1, _), (eth2, _)) = sections(conf, r"^interface (\S+)")
    assert [c.text.strip() for c in eth1.children] == ["mtu 9214", "ip address 10.0.0.1/31"]
    assert [line(c) for c in eth1.children] == [4, 6]  # the blank line 5 is counted, and ends nothing
    assert eth2.children == [] and line(eth2) == 13
    ((bgp, m),) = sections(conf, r"^router bgp (\d+)$")
    assert m.group(1) == "65001"
    assert [c.text.strip() for c in bgp.children] == [
        "neighbor 10.0.0.0 remote-as 65100", "address-family ipv4 unicast", "!", "bfd"
    ]  # fmt: skip
    assert [cm.group(1) for _, cm in children(bgp, r"maximum-paths (\d+)")] == []  # not a direct child
    assert [cm.group(1) for _, cm in children(bgp, r"maximum-paths (\d+)", deep=True)] == ["64"]


def test_searches_are_anchored_by_their_pattern_and_see_every_depth():
    conf = parse(TEXT.splitlines())
    assert [o.text for o in conf.find_objects(r"mtu")] == ["   mtu 9214"]
    assert conf.find_objects(r"^mtu") == []
    assert [o.linenum for o in conf.find_objects(r"^\S")] == [0, 1, 2, 6, 12]
