"""A running switch judged against the plan: what its NAPALM getters and counters say, compared with
what the plan expects (validate's checks, run per switch by the Nornir task `nornir_tasks.validate`),
and the readers of the counters they judge (`ethtool -S` text, the lossless counters)."""
