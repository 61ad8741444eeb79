"""Benchmarks that print tables (run from the repository root as `python -m bench.<name>`), the simulators
they measure against (`bench.fleet_sim`, `bench.telemetry_sim`), and apart from them the profiling
experiments (`bench.profiling`) and the plot of the scaling curve (`bench.plot`)."""
