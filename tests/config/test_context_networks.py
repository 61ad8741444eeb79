"""What a switch announces for its host links: each address's network, as Python's ipaddress computes it."""

from __future__ import annotations

import ipaddress

from hypothesis import given, settings
from hypothesis import strategies as st

from gpufabric.config.context import _network
from gpufabric.plan.model import ip


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 32))
def test_network_of_an_address_is_ipaddress_s(address, prefixlen):
    cidr = f"{ip(address)}/{prefixlen}"
    assert _network(cidr) == str(ipaddress.ip_interface(cidr).network)


def test_host_link_network_clears_the_host_bits():
    assert _network("10.128.0.5/31") == "10.128.0.4/31"
    assert _network("10.128.1.255/24") == "10.128.1.0/24"
    assert _network("10.128.1.7/32") == "10.128.1.7/32"
