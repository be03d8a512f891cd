"""The host-level LP's view of a capacity's services (its items and host) and of the planner's hosts (its patterns),
and its patterns as the planner's hosts again."""

from __future__ import annotations

from collections.abc import Sequence

from .. import host_lp
from .hosts import Host, eni_room
from .model import CapacityInput, GpuLoad, ServiceInput


def lp_problem(
    capacity: CapacityInput, pairs: Sequence[tuple[ServiceInput, int]]
) -> tuple[list[host_lp.Item], host_lp.HostSpec]:
    """The host-level LP's view of ``pairs`` (service, tasks to place) on ``capacity``."""
    items = [
        host_lp.Item(
            name=s.name,
            group=s.isolation_group,
            size=s.task_gpu_budget_mib if s.clients and not s.whole_gpus else 0,
            clients=s.clients,
            whole=s.whole_gpus,
            cpu=s.cpu_units,
            mem=s.memory_mib,
            enis=s.network_interfaces,
            demand=n,
        )
        for s, n in pairs
    ]
    spec = host_lp.HostSpec(
        capacity.gpus_per_instance,
        capacity.usable_gpu_memory_mib,
        capacity.host_cpu_units,
        capacity.host_memory_mib,
        eni_room(capacity),
    )
    return items, spec


def as_pattern(host: Host, index: dict[str, int], items: Sequence[host_lp.Item]) -> host_lp.Pattern:
    """One of the planner's hosts as the LP's pattern (a whole-GPU task is on each of its GPUs, counted once)."""
    counts = [0] * len(items)
    gpus = []
    for load in host.gpus:
        tasks = tuple(sorted((index[name], k) for name, k in load.tasks))
        if tasks:
            gpus.append((tasks, load.whole))
        for i, k in tasks:
            counts[i] += k
    for i, it in enumerate(items):
        if it.whole:
            counts[i] //= it.whole
    no_gpu = tuple(sorted((index[name], k) for name, k in host.without_gpu.items()))
    for i, k in no_gpu:
        counts[i] += k
    return host_lp.Pattern(tuple(counts), tuple(gpus), no_gpu)


def lp_hosts(patterns: Sequence[tuple[host_lp.Pattern, int]], pairs: Sequence[tuple[ServiceInput, int]]) -> list[Host]:
    """The LP's patterns, each as its count of identical hosts. Each service's figures are read once, not once a
    pattern: where every host is dealt one by one (``dealt``, where the LP then runs), each is a pattern of its own."""
    names = [s.name for s, _ in pairs]
    budget = [s.task_gpu_budget_mib for s, _ in pairs]
    clients = [s.clients for s, _ in pairs]
    cpu = [s.cpu_units for s, _ in pairs]
    mem = [s.memory_mib for s, _ in pairs]
    enis = [s.network_interfaces for s, _ in pairs]
    hosts = []
    for p, count in patterns:
        gpus = []
        for tasks, whole in p.gpus:
            named = tuple(sorted((names[i], k) for i, k in tasks))
            if whole:
                gpus.append(GpuLoad(tasks=named, whole=True))
            else:
                used = sum(budget[i] * k for i, k in tasks)
                gpus.append(
                    GpuLoad(tasks=named, used_gpu_memory_mib=used, clients=sum(clients[i] * k for i, k in tasks))
                )
        held = p.held  # a host holds a few of a fleet's services
        hosts.append(
            Host(
                count,
                gpus,
                cpu=sum(cpu[i] * a for i, a in held),
                mem=sum(mem[i] * a for i, a in held),
                without_gpu={names[i]: k for i, k in p.no_gpu},
                enis=sum(enis[i] * a for i, a in held),
            )
        )
    return hosts
