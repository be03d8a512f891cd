"""ECS's own placement, as a model. Pure Python.

The planner proves that *a* packing of every task exists; ECS places task by task instead (docs/placement.md). This
module replays that over a capacity, so the plan can size MaxSize for what ECS will do and say how many instances a
team will really keep running.

Sources (Amazon ECS Developer Guide unless named):
- "Amazon ECS task placement strategies": ``binpack`` places on the instance with the least of the named resource
  (memory, cpu) that still fits; ``spread`` places evenly over the values of a field (``instanceId``, or an attribute
  such as ``attribute:ecs.availability-zone``); ``random`` at random; strategies apply in order, each breaking the
  previous one's ties.
- Amazon ECS API Reference, CreateService (the service scheduler): with no strategy, the scheduler balances the service
  over Availability Zones, then picks the instance with the fewest tasks of that service.
- "Amazon ECS cluster auto scaling": instances are launched for tasks that cannot be placed (PROVISIONING), up to the
  Auto Scaling group's MaxSize; scale-in removes only instances that run no task other than daemons.
- "Rolling update": with minimum healthy 100%, ECS starts new tasks up to maximum percent before it stops old ones.
- Amazon ECS API Reference, NvidiaMpsAllocation: ECS assigns "a GPU that has at least the specified amount of memory
  available"; which one, when several have room, is not stated.

Where AWS is silent the model takes the worst of the plausible rules: the GPU in a host (first-, best- or worst-fit),
ties between instances and the order tasks arrive in (seeded: deterministic), and a derived MaxSize adds headroom.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .headroom import estimate_headroom
from .replay import GPU_RULES, ORDERS, Outcome, blocked_services, replay

if TYPE_CHECKING:  # the planner's inputs carry this module's strategies, so it imports this module
    from .planner import CapacityInput, CapacityPlan, ServiceInput

ZONES = 2  # zones replayed where a capacity's subnets cannot be read (`plan` on a fleet file with a vpc_id)
LARGE_TASKS = 1_000  # past this many tasks on a capacity, the orders of LARGE_ORDERS only
LARGE_ORDERS = ("smallest-first", "host-memory-first", "interleaved")  # the shuffle of whole services never needed more
WHOLE_TASKS = 3_000  # capacities of up to this many tasks are replayed whole; past it, on a fleet scaled down
REPLAYED_TASKS = 1_000  # ... to this many (each service in proportion), the ratios applied to the full packing
# ... and the need so estimated raised by headroom.estimate_headroom
BLOCKED_TASKS = 20_000  # past WHOLE_TASKS, up to this many tasks the full fleet is placed for DeploymentCannotStart
SHUFFLES = 8  # samples of the shuffle of whole services up to LARGE_TASKS: its worst permutations need the most


@dataclass(frozen=True)
class CapacityPlacement:
    """What ECS's placement needs of a capacity, over every replay."""

    capacity: str
    needed: int  # the least MaxSize at which every replay places every task, steady and during the rollout
    expected_after_rollout: int  # instances ECS keeps after the rollouts and scale-in (the median replay)
    replays: int
    waiting_at_max: int  # the most tasks any replay leaves waiting at the given max_instances (0 when none given)
    blocked: tuple[str, ...]  # services whose own deployment cannot start one new task at the given max_instances
    scaled_from: int = 0  # the capacity's tasks when the replays ran on a scaled-down fleet (REPLAYED_TASKS), else 0


def _runs(tasks: int, gpus: int) -> list[tuple[str, str, int]]:
    """(GPU rule, arrival order, sample) of each replay; the shuffle of whole services SHUFFLES times."""
    rules = GPU_RULES if gpus > 1 else GPU_RULES[:1]  # one GPU a host: the rule cannot matter
    orders = ORDERS if tasks <= LARGE_TASKS else LARGE_ORDERS
    return [(r, o, k) for r in rules for o in orders for k in range(SHUFFLES if o == "shuffled" else 1)]


def place_capacity(
    cap: CapacityInput,
    services: Iterable[ServiceInput],
    packed: tuple[CapacityPlan, CapacityPlan] | None = None,
    replays: Sequence[Outcome] | None = None,
    scaled: tuple[int, int] | None = None,
) -> CapacityPlacement:
    """Replays ECS over the capacity's services: with no instance limit (how many ECS needs), and at the given
    ``max_instances`` (what waits there, and which service's own deployment cannot start). ``packed``: the plan of
    the capacity for the surge and for the steady fleet, when the caller has them (a large fleet's estimate scales
    them). ``replays``: the replays without an instance limit (``FreeReplays``, in their order), and ``scaled``:
    ``scaled_instances``'s answer, when the caller made them beside its plans (``rules.assess``)."""
    mine = _running(cap, services)
    total = sum(s.tasks for s in mine)
    found = replayed(cap, mine, replays)
    if total <= WHOLE_TASKS:
        return found
    return _scaled(cap, mine, total, packed, found, scaled_instances(cap, mine) if scaled is None else scaled)


def replayed(
    cap: CapacityInput, services: Iterable[ServiceInput], free: Sequence[Outcome] | None = None
) -> CapacityPlacement:
    """What ``place_capacity`` finds before it reads a plan: the replays of the whole fleet, or past WHOLE_TASKS those
    of the fleet scaled down to REPLAYED_TASKS (each service in proportion) with no instance limit (the same median,
    the same worst). ``free``: the replays without an instance limit (``FreeReplays``), where the caller has them."""
    mine = _running(cap, services)
    total = sum(s.tasks for s in mine)
    return _replayed(*_played(cap, mine, total), total, free)


def free_replay_count(cap: CapacityInput, services: Iterable[ServiceInput]) -> int:
    """How many replays without an instance limit ``replayed`` makes of the capacity (``FreeReplays``)."""
    return len(_runs(sum(s.tasks for s in _running(cap, services)), cap.gpus_per_instance))


class FreeReplays:
    """``replayed``'s replays without an instance limit, one at a time by its number in ``_runs``' order:
    ``rules.assess`` hands them to the processes beside its plans as each is free (``beside.Claims``). Made once a
    process, as the replays share the fleet they play (scaled down past WHOLE_TASKS)."""

    def __init__(self, cap: CapacityInput, services: Iterable[ServiceInput]) -> None:
        mine = _running(cap, services)
        total = sum(s.tasks for s in mine)
        self.played, self.fleet = _played(cap, mine, total)
        self.runs = _runs(total, cap.gpus_per_instance)

    def __call__(self, number: int) -> Outcome:
        rule, order, sample = self.runs[number]
        return replay(self.played, self.fleet, rule, order, 1 << 30, sample)


def _played(cap: CapacityInput, mine: list[ServiceInput], total: int) -> tuple[CapacityInput, list[ServiceInput]]:
    """The capacity and services ``replayed`` replays: as they are, or past WHOLE_TASKS scaled down, unbounded."""
    return (cap, mine) if total <= WHOLE_TASKS else (_unbounded(cap), _small(mine, total))


def scaled_instances(cap: CapacityInput, services: Iterable[ServiceInput]) -> tuple[int, int]:
    """The instances of the fleet ``replayed`` scales down past WHOLE_TASKS, packed for the surge and for the steady
    fleet: what ``_scaled``'s ratios divide by. Only the counts are read, so the plans stop at their lower bound on
    the hosts."""
    from .planner import plan  # here: the planner's inputs import this module's strategies

    mine = _running(cap, services)
    small, free = _small(mine, sum(s.tasks for s in mine)), _unbounded(cap)
    surge, steady = (plan([free], small, surge=k, host_lp=False, count_only=True) for k in (True, False))
    return surge.capacity(cap.name).instance_count, steady.capacity(cap.name).instance_count


def _running(cap: CapacityInput, services: Iterable[ServiceInput]) -> list[ServiceInput]:
    """The capacity's services that run tasks, by name (the order every replay of them takes)."""
    return sorted((s for s in services if s.capacity == cap.name and s.tasks), key=lambda s: s.name)


def _unbounded(cap: CapacityInput) -> CapacityInput:
    """The capacity without its instance limits: how many instances ECS would need, unbounded, from none."""
    return replace(cap, max_instances=None, min_instances=0)


def _small(services: Sequence[ServiceInput], total: int) -> list[ServiceInput]:
    return [replace(s, tasks=max(1, round(s.tasks * REPLAYED_TASKS / total))) for s in services]


def _replayed(
    cap: CapacityInput, mine: Sequence[ServiceInput], total: int, free: Sequence[Outcome] | None = None
) -> CapacityPlacement:
    runs = _runs(total, cap.gpus_per_instance)
    if free is None:
        free = [replay(cap, mine, rule, order, 1 << 30, sample) for rule, order, sample in runs]
    needed = max((o.peak for o in free), default=0)
    limit = cap.max_instances if mine else None  # at or above the need, a replay at it is the free one, not rerun:
    limited = [replay(cap, mine, r, o, limit, k) for r, o, k in runs] if limit is not None and limit < needed else []
    afters = sorted(o.after for o in limited or free)  # kept under the group's MaxSize, where one is given
    blocked = blocked_services(cap, mine, limit) if limit is not None else []
    return CapacityPlacement(
        cap.name,
        max(needed, cap.min_instances),
        afters[len(afters) // 2] if afters else cap.min_instances,
        len(runs),
        max((o.waiting for o in limited), default=0),
        tuple(blocked),
    )


def _scaled(
    cap: CapacityInput,
    services: Sequence[ServiceInput],
    total: int,
    packed: tuple[CapacityPlan, CapacityPlan] | None,
    found: CapacityPlacement,
    small: tuple[int, int],
) -> CapacityPlacement:
    """The replays on the fleet scaled down to ``REPLAYED_TASKS`` tasks (``found``), their ratios applied to the full
    packing: the full fleet's instances over the scaled fleet's (``small``: ``scaled_instances``). Both packings in a
    ratio are the planner's without the host-level LP: they stand in for a fleet's size in hosts, the same packer on
    both sides keeps the ratio fair, and the LP on a scaled fleet cost seconds."""
    from .planner import plan  # here: the planner's inputs import this module's strategies

    free = _unbounded(cap)
    full_surge, full_steady = packed or tuple(
        plan([free], list(services), surge=k).capacity(cap.name) for k in (True, False)
    )
    small_surge, small_steady = small
    raised = 1 + estimate_headroom(total)
    needed = math.ceil(full_surge.instances_without_lp * found.needed * raised / max(small_surge, 1))
    after = math.ceil(full_steady.instances_without_lp * found.expected_after_rollout / max(small_steady, 1))
    needed = max(needed, full_surge.instance_count, cap.min_instances)
    # Blocked only where the steady fleet fills the limit: the full fleet is placed below the need (0.3 s at 20,000).
    limit = cap.max_instances if cap.max_instances is not None and cap.max_instances < needed else None
    return CapacityPlacement(
        cap.name,
        needed,
        min(max(after, full_steady.instance_count, cap.min_instances), cap.max_instances or needed),
        found.replays,
        math.ceil((needed - limit) / needed * sum(s.surge_count() for s in services)) if limit is not None else 0,
        tuple(blocked_services(cap, services, limit)) if limit is not None and total <= BLOCKED_TASKS else (),
        scaled_from=total,
    )
