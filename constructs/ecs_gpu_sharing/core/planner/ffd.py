"""First-fit decreasing over every task, task by task: the reference the staged plan must not lose to."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..mps import MAX_CLIENTS_PER_GPU
from .hosts import Host, eni_room
from .model import CapacityInput, GpuLoad, ServiceInput

PRUNE_EVERY = 8  # services between two prunings of first-fit's open GPUs when the smallest task to come stays the same
FFD_ALWAYS_TASKS = 20_000  # up to this many tasks FFD always runs beside the staged plan


@dataclass
class _OpenGpu:
    host: int  # index of its host
    group: str | None  # the isolation group it holds (None while idle)
    room: int
    clients: int
    tasks: dict[str, int] = field(default_factory=dict)
    whole: bool = False


# FFD's orders: by GPU budget first (where GPU memory binds), or by the host resource that binds (host memory, CPU),
# so the largest items of the binding dimension go first, as first-fit decreasing needs.
FFD_ORDERS: dict[str, Callable[[ServiceInput], tuple[int, ...]]] = {
    "gpu": lambda s: (-s.whole_gpus, -s.task_gpu_budget_mib, -s.cpu_units, -s.memory_mib),
    "memory": lambda s: (-s.whole_gpus, -s.memory_mib, -s.task_gpu_budget_mib, -s.cpu_units),
    "cpu": lambda s: (-s.whole_gpus, -s.cpu_units, -s.task_gpu_budget_mib, -s.memory_mib),
}


def normalized(s: ServiceInput, capacity: CapacityInput) -> tuple[float, float, float]:
    """One task's share of a GPU's memory, a host's CPU and a host's memory."""
    return (
        s.task_gpu_budget_mib / capacity.usable_gpu_memory_mib,
        s.cpu_units / capacity.host_cpu_units,
        s.memory_mib / capacity.host_memory_mib,
    )


def ffd_hosts(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], ordering: str = "gpu"
) -> list[Host]:
    """First-fit decreasing, task by task, over GPUs and hosts together: each task (largest first: whole GPUs, GPU
    budget, CPU, memory) goes to the first GPU in opening order with its memory and clients and whose host still
    has its CPU and memory; else to an idle GPU of the first open host with room; else to a new host. Where host CPU
    or memory binds, this strands fewer hosts than filling GPUs first; the planner keeps whichever plan is smaller.
    Identical tasks are placed together (as many on a GPU as fit), so the work grows with services, not tasks."""
    g = capacity.gpus_per_instance
    cpu_left: list[int] = []
    mem_left: list[int] = []
    eni_left: list[int] = []  # per host, the awsvpc tasks it still takes
    idle: list[list[int]] = []  # per host, its idle GPUs (indexes into gpus)
    gpus: list[_OpenGpu] = []
    without: list[dict[str, int]] = []
    tasks = [(s, n, s.isolation_group) for group in groups for s, n in group if n]
    if ordering in FFD_ORDERS:
        sort_key = FFD_ORDERS[ordering]
        tasks.sort(key=lambda t: (*sort_key(t[0]), t[0].name))
    else:  # "dominant" (the largest share of any one resource) or "sum" (the shares added), largest first
        pick = max if ordering == "dominant" else sum
        tasks.sort(key=lambda t: (-t[0].whole_gpus, -pick(normalized(t[0], capacity)), t[0].name))
    open_mps: list[int] = []  # GPUs that may still take an MPS task, in opening order
    idle_hosts: list[int] = []  # hosts that had an idle GPU, in opening order
    # smallest[i]: the least GPU memory, clients, CPU and memory of any MPS task from the (i+1)-th service on.
    never = (1 << 62, 1 << 62, 1 << 62, 1 << 62)
    smallest = [never] * (len(tasks) + 1)
    for i in range(len(tasks) - 1, -1, -1):
        t = tasks[i][0]
        own = (t.task_gpu_budget_mib, t.clients, t.cpu_units, t.memory_mib) if t.clients and not t.whole_gpus else never
        smallest[i] = tuple(min(a, b) for a, b in zip(own, smallest[i + 1], strict=True))  # type: ignore[assignment]
    smallest = [*smallest[1:], never]
    position = 0
    pruned_for = never

    def new_host() -> int:
        h = len(cpu_left)
        if g:
            idle_hosts.append(h)
        cpu_left.append(capacity.host_cpu_units)
        mem_left.append(capacity.host_memory_mib)
        eni_left.append(eni_room(capacity))
        idle.append([])
        without.append({})
        for _ in range(g):
            idle[h].append(len(gpus))
            gpus.append(_OpenGpu(h, None, capacity.usable_gpu_memory_mib, MAX_CLIENTS_PER_GPU))
        return h

    def fits_host(h: int, s: ServiceInput, k: int = 1) -> bool:
        return (
            cpu_left[h] >= s.cpu_units * k
            and mem_left[h] >= s.memory_mib * k
            and eni_left[h] >= s.network_interfaces * k
        )

    def take_host(h: int, s: ServiceInput, k: int) -> None:
        cpu_left[h] -= s.cpu_units * k
        mem_left[h] -= s.memory_mib * k
        eni_left[h] -= s.network_interfaces * k

    def host_copies(h: int, s: ServiceInput) -> int:
        k = 1 << 62
        if s.cpu_units:
            k = min(k, cpu_left[h] // s.cpu_units)
        if s.memory_mib:
            k = min(k, mem_left[h] // s.memory_mib)
        if s.network_interfaces:
            k = min(k, eni_left[h] // s.network_interfaces)
        return k

    for s, n, group in tasks:
        if s.whole_gpus:
            h = 0
            while n:
                while h < len(cpu_left) and not (len(idle[h]) >= s.whole_gpus and fits_host(h, s)):
                    h += 1
                if h == len(cpu_left):
                    new_host()
                for _ in range(s.whole_gpus):
                    gpu = gpus[idle[h].pop(0)]
                    gpu.whole, gpu.group, gpu.tasks = True, group, {s.name: 1}
                take_host(h, s, 1)
                n -= 1
        elif not s.clients:
            h = 0
            while n:
                while h < len(cpu_left) and not fits_host(h, s):
                    h += 1
                if h == len(cpu_left):
                    new_host()
                k = min(n, host_copies(h, s))
                without[h][s.name] = without[h].get(s.name, 0) + k
                take_host(h, s, k)
                n -= k
        else:
            size, clients = s.task_gpu_budget_mib, s.clients
            need_cpu, need_mem, need_eni = s.cpu_units, s.memory_mib, s.network_interfaces
            at = 0
            scan = 0
            while n:
                placed = False
                while at < len(open_mps):
                    gpu = gpus[open_mps[at]]
                    h = gpu.host
                    if (
                        gpu.room >= size
                        and mem_left[h] >= need_mem
                        and cpu_left[h] >= need_cpu
                        and gpu.clients >= clients
                        and eni_left[h] >= need_eni
                        and gpu.group == group
                    ):
                        k = min(n, gpu.room // size, gpu.clients // clients, host_copies(gpu.host, s))
                        gpu.room -= k * size
                        gpu.clients -= k * clients
                        gpu.tasks[s.name] = gpu.tasks.get(s.name, 0) + k
                        take_host(gpu.host, s, k)
                        n -= k
                        placed = True
                        break
                    at += 1
                if placed:
                    continue
                # The first host with an idle GPU and room for s. A host passed over stays so for the rest of s's
                # tasks (its idle GPUs and its room only shrink), so the scan resumes where it stopped: linear in
                # hosts per service, not per GPU opened.
                while scan < len(idle_hosts) and not (idle[idle_hosts[scan]] and fits_host(idle_hosts[scan], s)):
                    scan += 1
                host = idle_hosts[scan] if scan < len(idle_hosts) else new_host()
                index = idle[host].pop(0)
                gpus[index].group = group
                open_mps.append(index)
                at = len(open_mps) - 1
        if len(open_mps) > 64 and (smallest[position] != pruned_for or position % PRUNE_EVERY == 0):
            # GPUs that cannot take the smallest task still to come (its memory, its clients, or its host's CPU or
            # memory) are skipped from now on. Pruning changes no placement, only what the scans look at: it runs when
            # the smallest task to come changes, and every PRUNE_EVERY services.
            pruned_for = smallest[position]
            size, clients, cpu, mem = smallest[position]
            open_mps = [
                i
                for i in open_mps
                if gpus[i].room >= size
                and gpus[i].clients >= clients
                and cpu_left[gpus[i].host] >= cpu
                and mem_left[gpus[i].host] >= mem
            ]
        if len(idle_hosts) > 64:
            # Hosts out of CPU or memory for the smallest MPS task still to come keep their idle GPUs idle.
            _, _, cpu, mem = smallest[position]
            idle_hosts = [h for h in idle_hosts if idle[h] and cpu_left[h] >= cpu and mem_left[h] >= mem]
        position += 1
    hosts: dict[tuple[Any, ...], Host] = {}
    per_host: list[list[GpuLoad]] = [[] for _ in cpu_left]
    for gpu in gpus:
        if gpu.tasks:
            order = tuple(sorted(gpu.tasks.items()))
            per_host[gpu.host].append(
                GpuLoad(
                    tasks=order,
                    used_gpu_memory_mib=0 if gpu.whole else capacity.usable_gpu_memory_mib - gpu.room,
                    clients=0 if gpu.whole else MAX_CLIENTS_PER_GPU - gpu.clients,
                    whole=gpu.whole,
                )
            )
    for h, loads in enumerate(per_host):
        cpu = capacity.host_cpu_units - cpu_left[h]
        mem = capacity.host_memory_mib - mem_left[h]
        enis = eni_room(capacity) - eni_left[h]
        key = (tuple(loads), cpu, mem, tuple(sorted(without[h].items())))
        if key in hosts:
            hosts[key].count += 1
        else:
            hosts[key] = Host(1, list(loads), cpu, mem, dict(without[h]), enis)
    return list(hosts.values())


def ffd_orders(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]]) -> list[str]:
    """FFD by GPU budget, and by each host resource: every order for a small fleet; past it, by each host resource whose
    total is within 25% of the binding one's (the order that sorts the binding dimension first packs it best)."""
    pairs = [(s, n) for group in groups for s, n in group]
    if sum(n for _, n in pairs) <= FFD_ALWAYS_TASKS:
        return ["gpu", "memory", "cpu", "dominant", "sum"]  # cheap here: every order, the best kept
    need = {  # hosts each resource alone needs
        "gpu": sum(s.task_gpu_budget_mib * n for s, n in pairs)
        / (capacity.usable_gpu_memory_mib * capacity.gpus_per_instance or 1),
        "cpu": sum(s.cpu_units * n for s, n in pairs) / capacity.host_cpu_units,
        "memory": sum(s.memory_mib * n for s, n in pairs) / capacity.host_memory_mib,
    }
    most = max(need.values())
    return ["gpu", *(o for o in ("memory", "cpu") if need[o] * 1.25 >= most)]


def ffd_may_help(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], staged: int) -> bool:
    """Whether to run FFD as well: always for up to FFD_ALWAYS_TASKS tasks (it is cheap there); for more, where host
    CPU or memory nearly binds (what stages 1 and 2 pack worst)."""
    pairs = [(s, n) for group in groups for s, n in group]
    if sum(n for _, n in pairs) <= FFD_ALWAYS_TASKS:
        return True
    cpu = math.ceil(sum(s.cpu_units * n for s, n in pairs) / capacity.host_cpu_units)
    mem = math.ceil(sum(s.memory_mib * n for s, n in pairs) / capacity.host_memory_mib)
    return max(cpu, mem) * 10 >= staged * 9
