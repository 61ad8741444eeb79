"""The local lab: the plan's switches as network namespaces running FRR, sshd and lldpd."""
