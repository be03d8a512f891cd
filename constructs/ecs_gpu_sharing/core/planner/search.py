"""An exact depth-first search for small fleets: fewer hosts than the staged plan, where they exist."""

from __future__ import annotations

from ..mps import MAX_CLIENTS_PER_GPU
from .ffd import normalized
from .hosts import Host, eni_room
from .model import CapacityInput, GpuLoad, ServiceInput

SEARCH_TASKS = 40  # fleets of at most this many tasks (one isolation group, no whole GPUs) get the exact search
SEARCH_STEPS = 20_000  # placements the search tries before it gives up (the plan found so far stands)


def search_hosts(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], hosts: int
) -> list[Host] | None:
    """A placement of a small fleet's tasks on at most ``hosts`` hosts, by depth-first search with symmetry cuts
    (identical tasks go in order; of the idle GPUs of a host only the first is tried; a new host is one choice), or
    ``None`` when there is none or the search ran out of steps. Where host CPU, host memory and GPU memory all bind,
    first-fit in any order can miss a packing a person would see (two tasks that only fit together)."""
    pairs = [(s, n) for group in groups for s, n in group if n]
    if not _worth_searching(capacity, groups, pairs, hosts):
        return None
    tasks = sorted((s for s, n in pairs for _ in range(n)), key=lambda s: (-max(normalized(s, capacity)), s.name))
    g = capacity.gpus_per_instance
    cpu: list[int] = []
    mem: list[int] = []
    eni: list[int] = []  # per host: the awsvpc tasks it still takes
    room: list[list[int]] = []  # per host, per GPU: memory left
    clients: list[list[int]] = []
    held: list[list[dict[str, int]]] = []  # per host, per GPU: tasks by service
    without: list[dict[str, int]] = []
    steps = 0

    def place(i: int, last: tuple[int, int]) -> bool:
        nonlocal steps
        if i == len(tasks):
            return True
        steps += 1
        if steps > SEARCH_STEPS:
            return False
        s = tasks[i]
        start = last if i and tasks[i - 1] is s else (0, -1)  # identical tasks: no earlier place than the last one
        for h in range(start[0], len(cpu)):
            if cpu[h] < s.cpu_units or mem[h] < s.memory_mib or eni[h] < s.network_interfaces:
                continue
            slots = [-1] if not s.clients else range(g)
            tried_idle = False
            for gpu in slots:
                if (h, gpu) < start:
                    continue
                if gpu >= 0:
                    if room[h][gpu] < s.task_gpu_budget_mib or clients[h][gpu] < s.clients:
                        continue
                    if not held[h][gpu]:
                        if tried_idle:
                            continue
                        tried_idle = True
                if _put(h, gpu, s, 1) and place(i + 1, (h, gpu)):
                    return True
                _put(h, gpu, s, -1)
                if steps > SEARCH_STEPS:
                    return False
        if len(cpu) < hosts:
            cpu.append(capacity.host_cpu_units)
            mem.append(capacity.host_memory_mib)
            eni.append(eni_room(capacity))
            room.append([capacity.usable_gpu_memory_mib] * g)
            clients.append([MAX_CLIENTS_PER_GPU] * g)
            held.append([{} for _ in range(g)])
            without.append({})
            h = len(cpu) - 1
            if _put(h, 0 if s.clients else -1, s, 1) and place(i + 1, (h, 0 if s.clients else -1)):
                return True
            for column in (cpu, mem, eni, room, clients, held, without):
                column.pop()
        return False

    def _put(h: int, gpu: int, s: ServiceInput, k: int) -> bool:
        cpu[h] -= s.cpu_units * k
        mem[h] -= s.memory_mib * k
        eni[h] -= s.network_interfaces * k
        where = without[h] if gpu < 0 else held[h][gpu]
        where[s.name] = where.get(s.name, 0) + k
        if not where[s.name]:
            del where[s.name]
        if gpu >= 0:
            room[h][gpu] -= s.task_gpu_budget_mib * k
            clients[h][gpu] -= s.clients * k
        return True

    if not place(0, (0, -1)):
        return None
    return _as_hosts(capacity, cpu, mem, eni, room, clients, held, without)


def _worth_searching(
    capacity: CapacityInput,
    groups: list[list[tuple[ServiceInput, int]]],
    pairs: list[tuple[ServiceInput, int]],
    hosts: int,
) -> bool:
    """A small fleet of one isolation group and no whole GPUs, whose CPU, memory and GPU memory the hosts could
    hold: else there is nothing to search."""
    if hosts < 1 or len(groups) != 1 or sum(n for _, n in pairs) > SEARCH_TASKS or any(s.whole_gpus for s, _ in pairs):
        return False
    if sum(s.cpu_units * n for s, n in pairs) > hosts * capacity.host_cpu_units:
        return False
    if sum(s.memory_mib * n for s, n in pairs) > hosts * capacity.host_memory_mib:
        return False
    gpus_held = hosts * capacity.gpus_per_instance
    return sum(s.task_gpu_budget_mib * n for s, n in pairs) <= gpus_held * capacity.usable_gpu_memory_mib


def _as_hosts(
    capacity: CapacityInput,
    cpu: list[int],
    mem: list[int],
    eni: list[int],
    room: list[list[int]],
    clients: list[list[int]],
    held: list[list[dict[str, int]]],
    without: list[dict[str, int]],
) -> list[Host]:
    """The search's hosts (what each has left, per host and GPU), identical ones counted together."""
    out: dict[tuple[object, ...], Host] = {}
    for h in range(len(cpu)):
        loads = [
            GpuLoad(
                tasks=tuple(sorted(held[h][gpu].items())),
                used_gpu_memory_mib=capacity.usable_gpu_memory_mib - room[h][gpu],
                clients=MAX_CLIENTS_PER_GPU - clients[h][gpu],
            )
            for gpu in range(capacity.gpus_per_instance)
            if held[h][gpu]
        ]
        used_cpu, used_mem = capacity.host_cpu_units - cpu[h], capacity.host_memory_mib - mem[h]
        key = (tuple(loads), used_cpu, used_mem, tuple(sorted(without[h].items())))
        if key in out:
            out[key].count += 1
        else:
            out[key] = Host(1, loads, used_cpu, used_mem, dict(without[h]), eni_room(capacity) - eni[h])
    return list(out.values())
