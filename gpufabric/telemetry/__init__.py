"""Fabric telemetry from the plan: counters read through the drivers, a Prometheus exporter labelled
with the plan (plane, rail, unit, leaf, peer), alert rules and a Grafana dashboard."""
