"""Tasks without a GPU as fillers: a plan's GPUs and those tasks balanced onto a few host counts above the bound.

A service that asks for no GPU (a tokenizer, a gateway) runs on the GPU hosts beside the MPS tasks: the construct
road allows it, with a ``TaskTakesNoGpu`` warning. Its tasks take CPU and memory only, each a small share of a host,
so where host CPU or memory binds they can fill what each host's GPUs leave, and the hosts they take alone can each
hold the fleet's mix of CPU-heavy and memory-heavy ones. First fit packs like with like: every copy of one service's
tasks onto the same hosts, which run out of CPU with memory idle, or the reverse. On ``shaped_fleets.py gpuless``
(tuning seeds 400-411, hosts of four and eight GPUs) first fit is 4-10% above the bound at 10,000 tasks and 7-20% at
100,000; the same GPUs and tasks balanced (``balanced.pack_hosts_scaled``) are 0.2-1.7% above it, in 0.05-0.6 s
(docs/planning.md).

Hosts of one GPU are left out: there a GPU's contents choose its host, and what the GPU stage put together is what
binds (the same seeds: no balance found within 2% of the bound, after up to 1.6 s of searching).
"""

from __future__ import annotations

from collections.abc import Sequence

from .exact_gpus import balanced_within
from .hosts import Host, Unit, other_units, plan_size
from .model import CapacityInput, GpuLoad, ServiceInput


def with_fillers(
    capacity: CapacityInput, pairs: Sequence[tuple[ServiceInput, int]], best: list[Host], bound: int, gap: int
) -> list[Host]:
    """``best``, or the same GPUs and tasks balanced onto fewer hosts where the search finds them: on hosts of several
    GPUs, where some of ``pairs`` (a host partition's services and task counts, as ``best`` places them) take no GPU
    and ``best`` has more hosts than ``bound``. The host counts tried are ``exact_gpus.balanced_within``'s, from
    ``bound`` to ``gap`` (the planner's: the host-level LP's gap above the bound), below ``best``'s."""
    if capacity.gpus_per_instance == 1 or not any(n and not s.shape.uses_gpu for s, n in pairs):
        return best
    gap = min(gap, plan_size(best)[0] - 1)
    if gap <= bound:
        return best
    return balanced_within(_units(best, pairs), capacity, best, bound, gap)


def _units(best: list[Host], pairs: Sequence[tuple[ServiceInput, int]]) -> list[Unit]:
    """Stage 2's units of the plan ``best``: each kind of MPS GPU it fills, as many as it has; each whole-GPU task
    and each task without a GPU, from ``pairs``."""
    by_name = {s.name: s for s, _ in pairs}
    loads: dict[GpuLoad, int] = {}
    for host in best:
        for load in host.gpus:
            if load.tasks and not load.whole:
                loads[load] = loads.get(load, 0) + host.count
    units = []
    for load, count in loads.items():
        cpu = mem = enis = 0
        for name, k in load.tasks:
            s = by_name[name]
            cpu, mem, enis = cpu + s.cpu_units * k, mem + s.memory_mib * k, enis + s.network_interfaces * k
        units.append(Unit([load], cpu, mem, count, enis=enis))
    return units + other_units(pairs)
