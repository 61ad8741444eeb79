"""What NAPALM and Nornir find under gpufabric's names: each platform's own driver (for EOS and NX-OS the
ones that verify the switch's certificate, never NAPALM's, which trust any), and the safe connection plugin."""

from __future__ import annotations

import tomllib

import napalm
import pytest
from conftest import ROOT
from napalm.eos import EOSDriver
from napalm.nxos import NXOSDriver

from gpufabric.drivers.registry import network_driver
from gpufabric.fleet.access import RevealingNapalm
from gpufabric.platforms import all_platforms

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
BUILT_IN = ("cumulus", "eos", "frr", "nxos", "sonic")


@pytest.mark.parametrize("name", BUILT_IN)
def test_gpufabric_s_name_gives_the_driver_gpufabric_opens(name):
    (spec,) = [p for p in all_platforms() if p.facts.napalm_driver == name]
    found = napalm.get_network_driver(f"gpufabric_{name}")
    assert found is network_driver(spec.facts.napalm_driver)
    assert found.__module__ == f"gpufabric.nos.{name}.driver"
    assert f"napalm_gpufabric_{name}" in PYPROJECT["tool"]["setuptools"]["packages"]


def test_napalm_s_own_eos_and_nxos_stay_napalm_s_and_ours_verify_tls():
    """The reason for the names: NAPALM's `eos` and `nxos` are its own drivers; ours subclass them."""
    assert napalm.get_network_driver("eos") is EOSDriver
    assert napalm.get_network_driver("nxos") is NXOSDriver
    ours_eos, ours_nxos = napalm.get_network_driver("gpufabric_eos"), napalm.get_network_driver("gpufabric_nxos")
    assert issubclass(ours_eos, EOSDriver) and ours_eos is not EOSDriver
    assert issubclass(ours_nxos, NXOSDriver) and ours_nxos is not NXOSDriver


def test_the_safe_connection_plugin_is_an_entry_point_of_nornir():
    points = PYPROJECT["project"]["entry-points"]["nornir.plugins.connections"]
    assert points == {"gpufabric_napalm": "gpufabric.fleet.access:RevealingNapalm"}
    module, attribute = points["gpufabric_napalm"].split(":")
    assert getattr(__import__(module, fromlist=[attribute]), attribute) is RevealingNapalm


def test_the_name_nornir_hosts_open_is_the_driver_gpufabric_opens():
    """The Nornir inventory gives a host's `napalm` connection the platform's `napalm_name`: NAPALM must find
    gpufabric's own driver under it. EOS and NX-OS must have one (their `napalm_driver` is NAPALM's own)."""
    named = {p.facts.napalm_driver: p.facts.napalm_name for p in all_platforms() if p.facts.napalm_name}
    assert {"eos", "nxos"} <= set(named)
    for driver, name in named.items():
        assert napalm.get_network_driver(name) is network_driver(driver), name
