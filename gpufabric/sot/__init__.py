"""The source of truth: the plan written into Nautobot (`sot push`), and the physical facts read back (`sot pull`)."""
