"""The InfiniBand compute fabric in ibnetdiscover's topology format, with the planned names.

What ibsim reads to simulate the fabric, and what an operator diffs against `ibnetdiscover`'s
output of the live fabric (`gpufabric ib diff`). Without a discovery the node ids are the planned
names; `gpufabric ib export-topology FILE --discovery D` writes the GUIDs the fabric reported.
"""

from __future__ import annotations

from gpufabric.errors import GpufabricError
from gpufabric.ib import topology
from gpufabric.plan.model import Plan


class NotInfinibandError(ValueError, GpufabricError):
    """The intent's compute plane is Ethernet (or absent): there is no InfiniBand fabric to write."""


def render(plan: Plan) -> str:
    if plan.infiniband is None:
        raise NotInfinibandError("the compute plane is not InfiniBand")
    return topology.render(plan.infiniband.fabric)
