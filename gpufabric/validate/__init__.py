"""`nornir validate`: read-only proof that the running network equals the plan."""
