"""The MaxSize a capacity is given where none is stated, and the hosts a roll keeps in service. Pure Python."""

from __future__ import annotations

from ..headroom import with_headroom
from .model import Context


def roll_in_service(min_instances: int, max_instances: int) -> int:
    """The hosts a rolling replacement keeps in service (MinInstancesInService): every ``min_instances`` host, unless
    that is not below MaxSize. CloudFormation needs it below MaxSize ("UpdatePolicy attribute",
    AutoScalingRollingUpdate: "This value must be less than the MaxSize of the Auto Scaling group"), to launch a
    replacement beside them."""
    return max(0, min(min_instances, max_instances - 1))


def derived_max_instances(surge_instances: int, min_instances: int) -> int:
    """max_instances when none is given: the deployment surge's instances, at least one, and above ``min_instances``
    when there is a minimum, so a host roll keeps every minimum host in service (``roll_in_service``)."""
    return max(surge_instances, min_instances + 1 if min_instances else 1)


def derived_max(ctx: Context, name: str) -> int:
    """The max_instances the plan derives for capacity ``name`` where none is given: the larger of the surge's packing
    and what ECS's own placement needs at the peak of a fleet-wide rollout (``core.placement``), with the headroom
    for arrival orders its replays did not draw."""
    placed = ctx.placement.get(name)
    surge = ctx.surge.capacity(name).instance_count
    need = with_headroom(placed.needed) if placed else 0
    return derived_max_instances(max(surge, need), ctx.capacities[name].min_instances)
