"""Exports of the plan: one module per kind with a `render(plan) -> str`; registry.py names them.

Kept empty so that one exporter (`plan --json` needs only plan_json) loads without the others.
"""
