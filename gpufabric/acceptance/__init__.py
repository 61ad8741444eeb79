"""Acceptance tests of a RoCE GPU cluster, derived from the plan: what to run, what to expect, how to judge."""
