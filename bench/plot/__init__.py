"""Drawings made from the benchmarks' JSON rows."""
