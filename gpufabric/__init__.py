"""gpufabric: one description of a GPU cluster's networks, expanded into everything needed to bring them up."""

__version__ = "0.1.0"
