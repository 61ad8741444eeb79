"""A simulator (a test double) of a fleet of switches, for measuring `nornir push` at scale.

Not a switch and not an emulator of one: it answers the commands gpufabric's drivers send, over the
transport those drivers use, with each switch's configuration and pending state kept in memory and
each operation delayed by a figure from `latency.LATENCY`. One asyncio process serves every switch,
each on an address of its own (`python -m bench.fleet_sim --help` from the repository root).

Simulated today: NVIDIA Cumulus Linux 5.x over SSH (NVUE's transactions, the confirm timer, vtysh,
lldpcli and iproute2 reads) and Arista EOS over eAPI on HTTPS (config sessions, the commit timer,
flash copies; a certificate per switch from a CA the run makes). Not yet: FRR over SSH (frr-reload),
NX-API; and no BGP session or LLDP neighbour is simulated (every configured port is up), so the
post-change checks hold nothing against a change and `validate` reports every session down.
"""
