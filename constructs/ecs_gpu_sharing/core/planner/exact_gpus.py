"""The exact GPU stage: where a plan on hosts of several GPUs stays above its bound after every other strategy, and
its GPUs, not its hosts' CPU or memory, are what fill the hosts, each isolation group's MPS tasks packed on the fewest
GPUs the arc-flow LP's rounding finds (``core.arc_flow``), and the hosts packed again from those GPUs. Where a group
still has more GPUs than its bound, HiGHS's MILP over memory and MPS clients together looks for a packing on as many
GPUs as the bound (``core.gpu_milp``, small groups only): the arc-flow model leaves the clients out.

On one GPU a host the host-level LP's patterns are already GPUs with the host's CPU and memory, so this is for hosts of
four and eight GPUs, where one GPU over a multiple of eight is one host more (docs/planning.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .gpus import Item, Way, lp_solution, milp_solution, pack_gpus_lp
from .hosts import Host, Unit, eni_room, pack_hosts, plan_size
from .model import CapacityInput


@dataclass(frozen=True)
class Stage:
    """One isolation group's GPU stage: its MPS tasks, the cutting-stock LP's bound on their GPUs (0 where it was not
    run), and the ways the staged plan filled them."""

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
    capacity: CapacityInput, staged: Staged, best: list[Host], gpu_bound: int, host_bound: int
) -> tuple[list[Host], int]:
    """``best``, or the hosts packed from the exact GPU stage where they are fewer; and the GPU bound with the
    arc-flow LP's. Runs only where the GPUs could lower the hosts: more than one GPU a host, and the fewest GPUs any
    way used would fill more hosts than ``host_bound``. Groups already at the LP's bound keep their last way."""
    gpus = capacity.gpus_per_instance
    fewest = sum(min(way_gpus(way) for way in stage.ways) for stage in staged.stages)
    fewest += sum(len(u.gpus) * u.count for u in staged.others)
    if gpus == 1 or not staged.stages or math.ceil(fewest / gpus) <= host_bound:
        return best, gpu_bound
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
    gpu_bound = max(gpu_bound, bounds)
    units = gpu_units(chosen, staged.enis)
    if any(u.enis > eni_room(capacity) for u in units):
        return best, gpu_bound  # a GPU with more awsvpc tasks than a host has interfaces for
    hosts = pack_hosts(units + staged.others, capacity)
    return (hosts if plan_size(hosts) < plan_size(best) else best), gpu_bound


def gpu_units(ways: list[Way], enis: dict[str, int]) -> list[Unit]:
    """The GPUs of ``ways`` (one a group) as stage 2's units, each with the network interfaces its tasks take
    (``enis``: a task's, by service)."""
    return [
        Unit([load], cpu, mem, count, enis=sum(enis[name] * k for name, k in load.tasks))
        for way in ways
        for load, cpu, mem, count in way
    ]


def way_gpus(way: Way) -> int:
    """The GPUs a GPU stage's way fills."""
    return sum(count for _, _, _, count in way)
