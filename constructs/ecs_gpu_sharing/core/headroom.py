"""The margins a plan keeps over what its replays of ECS's placement need (``placement``). Pure Python.

Each is measured against replays the estimate did not draw (docs/placement.md): a scaled estimate's need against the
whole fleet replayed, and a derived MaxSize against arrival orders the replays did not take.
"""

from __future__ import annotations

from . import quotas

ESTIMATE_HEADROOM = 0.02  # a scaled estimate's need raised by this share: it fell up to 1.4% short to 10,000 tasks
FAR_TASKS = 10_000  # past this many tasks on a capacity, by FAR_HEADROOM: it fell up to 3.1% short at 100,000
FAR_HEADROOM = 0.04
ORDER_HEADROOM_PERCENT = 5  # a derived MaxSize over the need: orders the replays did not draw needed up to 4.5% more


def estimate_headroom(tasks: int) -> float:
    """The share a scaled estimate raises the need it finds by, on a capacity of ``tasks`` tasks (``placement``): each
    share's measurement is beside it above."""
    return ESTIMATE_HEADROOM if tasks <= FAR_TASKS else FAR_HEADROOM


def with_headroom(needed: int) -> int:
    """The need and ORDER_HEADROOM_PERCENT of it, rounded up, up to ECS's instances a cluster."""
    return max(needed, min(-(-needed * (100 + ORDER_HEADROOM_PERCENT) // 100), quotas.INSTANCES_PER_CLUSTER.number))
