"""The exact GPU stage: where a plan on hosts of several GPUs stays above its bound after every other strategy, each
isolation group's MPS tasks packed on the fewest GPUs the arc-flow LP's rounding finds (``core.arc_flow``), and the
hosts packed again from those GPUs. Where a group still has more GPUs than its bound, HiGHS's MILP over memory and MPS
clients together looks for a packing on as many GPUs as the bound (``core.gpu_milp``, small groups only): the arc-flow
model leaves the clients out. Where the GPUs in hand already fill no more hosts than the bound, the staged plan's
ways that do are taken as they are, fewest GPUs first. Either way, where the GPUs' slots set the floor and first fit
needs more hosts, they are balanced onto the hosts they fill and repaired (``balanced``), on one way at most.

On one GPU a host the host-level LP's patterns are already GPUs with the host's CPU and memory, so this is for hosts of
four and eight GPUs, where one GPU over a multiple of eight is one host more (docs/planning.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .balanced import pack_hosts_balanced, pack_hosts_scaled
from .gpus import Item, Way, lp_solution, milp_solution, pack_gpus_lp, way_gpus
from .hosts import Host, Unit, eni_room, pack_hosts, plan_size, slots_floor
from .model import CapacityInput

SCALED_STEPS = 4  # past the LP's exact limits, the host counts the GPUs are balanced onto, from the bound to the gap


@dataclass(frozen=True)
class Stage:
    """One isolation group's GPU stage: its MPS tasks, the cutting-stock LP's bound on their GPUs (0 where it was not
    run; the GPUs' floor where a fill met it and the LP was not needed), and the ways the staged plan filled them."""

    items: list[Item]
    lp_bound: int
    ways: list[Way]


@dataclass(frozen=True)
class Staged:
    """What the staged plan made of a partition, kept for the exact GPU stage: the groups' stages, the units that are
    not MPS GPUs (whole-GPU tasks, tasks without a GPU), and each service's network interfaces a task."""

    stages: list[Stage]
    others: list[Unit]
    enis: dict[str, int]


def exact_gpus(
    capacity: CapacityInput, staged: Staged, best: list[Host], gpu_bound: int, host_bound: int, gap: int = 0
) -> tuple[list[Host], int]:
    """``best``, or the hosts packed from the GPU stage where they are fewer; and the GPU bound with the arc-flow LP's.
    On hosts of more than one GPU only. Where the fewest GPUs any way used would fill more hosts than ``host_bound``,
    each group above its LP bound is packed by the arc-flow model's GPUs (groups at it keep their last way); where they
    fit the bound's hosts, each group's way of fewest GPUs, then each of the staged plan's strategies that fits too,
    fewest GPUs first, until one meets the bound. Then the hosts (``_hosts``), the repair on the first way that asks
    for it alone. ``gap``: past the host-level LP's exact limits, the most hosts a plan may have and spare the LP
    (``packing.host_lp_runs``); where the hosts are more, the first way's GPUs balanced (``pack_hosts_scaled``) onto
    SCALED_STEPS counts from the bound to it, the fewest first, the first that the search packs kept."""
    gpus = capacity.gpus_per_instance
    if gpus == 1 or not staged.stages:
        return best, gpu_bound
    others = sum(len(u.gpus) * u.count for u in staged.others)
    fewest = [min(stage.ways, key=way_gpus) for stage in staged.stages]
    if math.ceil((sum(map(way_gpus, fewest)) + others) / gpus) <= host_bound:
        # The GPUs in hand fit the bound's hosts: the way of fewest GPUs, then the staged plan's i-th ways that fit
        # too, fewest GPUs first (fewer GPUs may leave the CPU or memory harder to spread: tuning seed 39 at 10,000
        # tasks, whose LP-guided way of 4,241 GPUs packs on 621 hosts, where the exact fill's 4,250 balance onto the
        # bound's 532)
        tried = [fewest]
        for i in range(max(len(stage.ways) for stage in staged.stages)):
            ways = [stage.ways[min(i, len(stage.ways) - 1)] for stage in staged.stages]
            if ways not in tried and math.ceil((sum(map(way_gpus, ways)) + others) / gpus) <= host_bound:
                tried.append(ways)
        tried.sort(key=lambda ways: sum(map(way_gpus, ways)))
    else:
        chosen, gpu_bound = _exact_ways(capacity, staged, gpu_bound)
        tried = [chosen]
    repair = True  # the balanced repair, the costly step (up to BALANCE_WORK), is tried on one way at most
    for chosen in tried:
        units = gpu_units(chosen, staged.enis)
        if any(u.enis > eni_room(capacity) for u in units):
            continue  # a GPU with more awsvpc tasks than a host has interfaces for
        hosts, repaired = _hosts(units + staged.others, capacity, host_bound, repair)
        repair = repair and not repaired
        if plan_size(hosts) < plan_size(best):
            best = hosts
        if plan_size(best)[0] <= host_bound:
            break
    if plan_size(best)[0] > gap > 0:
        best = balanced_within(gpu_units(tried[0], staged.enis) + staged.others, capacity, best, host_bound, gap)
    return best, gpu_bound


def balanced_within(units: list[Unit], capacity: CapacityInput, best: list[Host], bound: int, gap: int) -> list[Host]:
    """``units`` balanced (``pack_hosts_scaled``) onto SCALED_STEPS host counts from ``bound`` to ``gap``, the fewest
    first (the search packs onto as many hosts as it is given), the first packed kept where it beats ``best``."""
    if any(u.enis > eni_room(capacity) for u in units):
        return best  # a GPU with more awsvpc tasks than a host has interfaces for
    for count in sorted({bound + math.ceil(k * (gap - bound) / SCALED_STEPS) for k in range(1, SCALED_STEPS + 1)}):
        scaled = pack_hosts_scaled(units, capacity, count)
        if scaled is not None:
            return min(best, scaled, key=plan_size)
    return best


def _exact_ways(capacity: CapacityInput, staged: Staged, gpu_bound: int) -> tuple[list[Way], int]:
    """Each group's way: the arc-flow model's (or the MILP's, on as many GPUs as the bound) where its ways are above
    the LP's bound, else its last; and the GPU bound with the groups' bounds summed."""
    chosen: list[Way] = []
    bounds = 0  # the groups' bounds on their MPS GPUs, as the bound the caller has is (both hold; the larger is kept)
    for stage in staged.stages:
        way, bound = stage.ways[-1], stage.lp_bound
        if min(way_gpus(w) for w in stage.ways) > stage.lp_bound:
            exact = lp_solution(stage.items, capacity, exact=True)
            if exact is not None:
                bound = max(bound, exact.bound)
                packed = pack_gpus_lp(stage.items, capacity, exact) if exact.patterns else None
                way = packed if packed is not None else way
            filled = milp_solution(stage.items, capacity, bound) if way_gpus(way) > bound else None
            packed = pack_gpus_lp(stage.items, capacity, filled) if filled is not None else None
            way = packed if packed is not None and way_gpus(packed) < way_gpus(way) else way
        chosen.append(way)
        bounds += bound
    return chosen, max(gpu_bound, bounds)


def _hosts(units: list[Unit], capacity: CapacityInput, host_bound: int, repair: bool = True) -> tuple[list[Host], bool]:
    """The hosts of ``units``: first fit, and with ``repair``, where their GPU slots set the floor (``slots_floor``,
    with ``host_bound``) and first fit needs more hosts than that, the hosts they fill balanced and repaired
    (``balanced``), kept where it finds them; and whether the repair was tried."""
    hosts = pack_hosts(units, capacity)
    floor = slots_floor(units, capacity, host_bound)
    if not (repair and 0 < floor < plan_size(hosts)[0]):
        return hosts, False
    return pack_hosts_balanced(units, capacity, floor) or hosts, True


def gpu_units(ways: list[Way], enis: dict[str, int]) -> list[Unit]:
    """The GPUs of ``ways`` (one a group) as stage 2's units, each with the network interfaces its tasks take
    (``enis``: a task's, by service)."""
    counted = any(enis.values())  # most fleets' tasks take no interface of their own: nothing to sum
    return [
        Unit([load], cpu, mem, count, enis=sum(enis[name] * k for name, k in load.tasks) if counted else 0)
        for way in ways
        for load, cpu, mem, count in way
    ]
