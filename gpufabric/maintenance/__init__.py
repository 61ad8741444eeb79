"""The maintenance service: drain a switch before a change and put it back after, waiting on the fabric."""
