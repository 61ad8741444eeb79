"""The fleet: which switches a command works on and how it reaches them, decided in one place.

`target.open_fleet` (and `target.reach` for commands that need only the plan and the login) decide
the target, the lab or the real switches, and open it: the plan, the login, the driver, and a
Nornir over the selected switches with the per-host runner of `runner`. `context` builds each
switch's configuration context once per command; `candidates` and `expect` read it. The Nornir
inventory plugin (`GpufabricInventory`) is `inventory`.
"""
