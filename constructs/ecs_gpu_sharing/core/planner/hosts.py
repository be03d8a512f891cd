"""Stage 2: GPU contents, whole-GPU tasks and GPU-less tasks onto hosts; the instance lower bounds."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..mps import MAX_CLIENTS_PER_GPU
from ..shape import TaskShape
from .gpus import bin_lower_bound, mps_floor
from .model import CapacityInput, GpuLoad, ServiceInput, Tasks

UNLIMITED = 1 << 62
# The long scans (first-fit's open GPUs and hosts, the host packing's groups) read in chunks of 2**CHUNK_SHIFT,
# skipping a chunk whose kept bounds rule out what is being placed.
CHUNK_SHIFT = 5
CHUNK = 1 << CHUNK_SHIFT
CHUNK_MASK = CHUNK - 1


def eni_room(capacity: CapacityInput) -> int:
    """The awsvpc tasks one host takes (its network interfaces less its own); unlimited where not known."""
    return capacity.task_network_interfaces or UNLIMITED


@dataclass
class Unit:
    """Stage 2's item: something that takes GPU slots, CPU and memory on one host, ``count`` times."""

    gpus: list[GpuLoad]  # the GPU slots it takes (empty for a task without a GPU)
    cpu: int
    mem: int
    count: int
    without_gpu: Tasks = ()
    enis: int = 0  # the network interfaces its awsvpc tasks take


@dataclass
class Host:
    count: int
    gpus: list[GpuLoad]
    cpu: int = 0
    mem: int = 0
    without_gpu: dict[str, int] = field(default_factory=dict)
    enis: int = 0


def _copies(host: Host, unit: Unit, cap: CapacityInput) -> int:
    """How many copies of ``unit`` one host of ``host``'s kind still takes."""
    k = (cap.gpus_per_instance - len(host.gpus)) // len(unit.gpus) if unit.gpus else unit.count
    if unit.cpu:
        k = min(k, (cap.host_cpu_units - host.cpu) // unit.cpu)
    if unit.mem:
        k = min(k, (cap.host_memory_mib - host.mem) // unit.mem)
    if unit.enis:
        k = min(k, (eni_room(cap) - host.enis) // unit.enis)
    return max(k, 0)


def other_units(pairs: Iterable[tuple[ServiceInput, int]]) -> list[Unit]:
    """Stage 2's units of the tasks that are not MPS tasks: each whole-GPU task, as a unit of its GPUs, and each task
    without a GPU, as a unit of its own; each as many as its count."""
    units = []
    for s, n in pairs:
        if n and s.whole_gpus:
            load = GpuLoad(tasks=((s.name, 1),), whole=True)
            units.append(Unit([load] * s.whole_gpus, s.cpu_units, s.memory_mib, n, enis=s.network_interfaces))
        elif n and not s.clients:
            units.append(Unit([], s.cpu_units, s.memory_mib, n, without_gpu=((s.name, 1),), enis=s.network_interfaces))
    return units


def _add(host: Host, unit: Unit, k: int) -> None:
    host.gpus.extend(unit.gpus * k)
    host.cpu += unit.cpu * k
    host.mem += unit.mem * k
    host.enis += unit.enis * k
    for name, n in unit.without_gpu:
        host.without_gpu[name] = host.without_gpu.get(name, 0) + n * k


def largest_share(u: Unit, cap: CapacityInput) -> float:
    """The largest share of a host one copy of ``u`` takes: of its GPU slots, CPU, memory or network interfaces."""
    return max(
        len(u.gpus) / cap.gpus_per_instance,
        u.cpu / cap.host_cpu_units,
        u.mem / cap.host_memory_mib,
        u.enis / eni_room(cap),
    )


def pack_hosts(units: list[Unit], cap: CapacityInput) -> list[Host]:
    """Stage 2: first-fit decreasing onto hosts, in groups of identical hosts."""
    hosts: list[Host] = []
    g = cap.gpus_per_instance

    def weight(u: Unit) -> tuple[float, int]:
        return (largest_share(u, cap), u.cpu + u.mem)

    slots, cpu_cap, mem_cap, eni_cap = g, cap.host_cpu_units, cap.host_memory_mib, eni_room(cap)
    # Per chunk of CHUNK groups (by position): what its groups had left when last read (GPU slots, CPU, memory,
    # interfaces), only those no other group of the chunk had as much of everything (the Pareto front). What a group
    # has left only shrinks, so a chunk none of whose front holds a unit is skipped unread. A split moves the
    # positions after it: see _shifted.
    bounds: dict[int, list[tuple[int, int, int, int]]] = {}

    def first_open(at: int, need: tuple[int, int, int, int]) -> int:
        """The first group from ``at`` in its chunk with room for one copy of a unit needing ``need``; else -1, and
        the front of what the chunk's groups have left is kept."""
        per_gpu, cpu, mem, enis = need
        lefts = []
        for i in range(at, at + CHUNK):
            host = hosts[i]
            l0, l1, l2, l3 = slots - len(host.gpus), cpu_cap - host.cpu, mem_cap - host.mem, eni_cap - host.enis
            if l0 >= per_gpu and l1 >= cpu and l2 >= mem and l3 >= enis:
                return i
            lefts.append((l0, l1, l2, l3))
        bounds[at >> CHUNK_SHIFT] = _front(lefts)
        return -1

    for unit in sorted(units, key=weight, reverse=True):
        n = unit.count
        at = 0
        per_gpu, cpu, mem, enis = need = len(unit.gpus), unit.cpu, unit.mem, unit.enis
        while n and at < len(hosts):
            if not at & CHUNK_MASK and at + CHUNK <= len(hosts):
                front = bounds.get(at >> CHUNK_SHIFT)
                if front is not None:
                    for p in front:
                        if p[0] >= per_gpu and p[1] >= cpu and p[2] >= mem and p[3] >= enis:
                            break
                    else:  # nothing in the chunk holds the unit
                        at += CHUNK
                        continue
                found = first_open(at, need)
                if found < 0:
                    at += CHUNK
                    continue
                at = found
            host = hosts[at]
            # _copies, written out with comparisons, not min(): this runs once per unit and host group visited
            k = (slots - len(host.gpus)) // per_gpu if per_gpu else unit.count
            if cpu and (room := (cpu_cap - host.cpu) // cpu) < k:
                k = room
            if mem and (room := (mem_cap - host.mem) // mem) < k:
                k = room
            if enis and (room := (eni_cap - host.enis) // enis) < k:
                k = room
            if k <= 0:
                # On to the next group of this chunk with room for a copy, by the test first_open makes (most groups
                # a chunk holds after the one a unit went to have none); a chunk's first group is read by its front.
                at += 1
                end = min((at + CHUNK_MASK) & ~CHUNK_MASK, len(hosts))
                while at < end:
                    host = hosts[at]
                    if (
                        len(host.gpus) <= slots - per_gpu
                        and cpu_cap - host.cpu >= cpu
                        and mem_cap - host.mem >= mem
                        and eni_cap - host.enis >= enis
                    ):
                        break
                    at += 1
                continue
            full = n // k
            if full >= host.count:
                _add(host, unit, k)
                n -= k * host.count
                at += 1
                continue
            # Split the group: ``full`` hosts take k copies, one takes the rest, the others stay as they were.
            rest = n - full * k
            split = []
            for count, copies in ((full, k), (1 if rest else 0, rest)):
                if count:
                    twin = Host(count, list(host.gpus), host.cpu, host.mem, dict(host.without_gpu), host.enis)
                    _add(twin, unit, copies)
                    split.append(twin)
            host.count -= full + (1 if rest else 0)
            hosts[at : at + (0 if host.count else 1)] = split  # a group the split took whole is replaced
            bounds = _shifted(bounds, at, len(split), len(split) - (0 if host.count else 1))
            n = 0
        if n:
            per_host = _copies(Host(1, []), unit, cap)
            full, rest = divmod(n, per_host)
            for count, copies in ((full, per_host), (1 if rest else 0, rest)):
                if count:
                    group = Host(count, [])
                    _add(group, unit, copies)
                    hosts.append(group)
    return hosts


EVEN_COPIES = 5000  # copies of units at most that pack_hosts_even places (one numpy pass over the hosts each)


def units_floor(units: Sequence[Unit], cap: CapacityInput) -> tuple[int, int]:
    """The hosts ``units``' GPU slots fill, and the fewest hosts they could fill: their GPU slots, CPU, memory and
    network interfaces, each summed."""
    sums = [
        (sum(len(u.gpus) * u.count for u in units), cap.gpus_per_instance),
        (sum(u.cpu * u.count for u in units), cap.host_cpu_units),
        (sum(u.mem * u.count for u in units), cap.host_memory_mib),
        (sum(u.enis * u.count for u in units), eni_room(cap)),
    ]
    floors = [math.ceil(total / room) for total, room in sums]
    return floors[0], max(floors)


def slots_floor(units: Sequence[Unit], cap: CapacityInput, known: int = 0) -> int:
    """The hosts ``units``' GPU slots fill, where those set the floor: their CPU, memory and interfaces fill no more
    hosts, nor does the bound ``known`` say more; else 0. Where the slots set it, stage 2 packs onto that many hosts
    (``pack_hosts_even``, ``balanced.pack_hosts_balanced``); where CPU or memory did, those found no plan on every fleet
    measured (docs/planning.md)."""
    filled, floor = units_floor(units, cap)
    return filled if filled == max(floor, known) else 0


def pack_hosts_even(units: Sequence[Unit], cap: CapacityInput, count: int) -> list[Host] | None:
    """Stage 2 onto ``count`` hosts, or None where a copy fits none of them. Each copy of a unit, the largest share of
    a host first, goes to the host it fits where the dot product of the host's load and the copy's needs (each as a
    share of a host) is least: a host full of memory-heavy GPUs takes CPU-heavy ones next. First-fit decreasing
    (``pack_hosts``) fills one host before the next, so where the GPU slots fill the hosts exactly it puts the
    memory-heaviest GPUs together and leaves GPUs over for another host (held-out 6012 at 1,000 tasks: 32 hosts
    from 240 GPUs that fill 30; docs/planning.md). The planner asks for it where the GPU slots set the floor
    (``units_floor``): where CPU or memory did, it found no plan on every fleet measured, after 0.1-0.3 s."""
    import numpy as np

    if sum(u.count for u in units) > EVEN_COPIES:
        return None
    room = np.array([cap.gpus_per_instance, cap.host_cpu_units, cap.host_memory_mib, eni_room(cap)], dtype=float)
    scale = np.where(room >= UNLIMITED, 0.0, 1.0 / room)  # interfaces not known: they take no share

    def needs(u: Unit) -> np.ndarray:
        return np.array([len(u.gpus), u.cpu, u.mem, u.enis], dtype=float)

    load = np.zeros((count, 4))
    # Each resource's loads kept apart too, for the fit: numpy's ``all`` over a row of four took most of a copy's step
    columns = [np.zeros(count) for _ in range(4)]
    held: list[list[Unit]] = [[] for _ in range(count)]
    for unit in sorted(units, key=lambda u: (float((needs(u) * scale).max()), u.cpu + u.mem), reverse=True):
        need = needs(unit)
        weight = need * scale * scale
        for _ in range(unit.count):
            fits = columns[0] + need[0] <= room[0]
            for r in range(1, 4):
                fits &= columns[r] + need[r] <= room[r]
            if not fits.any():
                return None
            at = int(np.argmin(np.where(fits, load @ weight, np.inf)))
            load[at] += need
            for r in range(4):
                columns[r][at] += need[r]
            held[at].append(unit)
    singles = []
    for on_host in held:
        host = Host(1, [])
        for unit in on_host:
            _add(host, unit, 1)
        singles.append(host)
    return grouped(singles)


def grouped(singles: Sequence[Host]) -> list[Host]:
    """Hosts of one copy each as groups of identical hosts (empty ones left out): hosts alike but for their GPUs'
    order are one group."""
    groups: dict[tuple[object, ...], Host] = {}
    for host in singles:
        if not host.gpus and not host.without_gpu:
            continue
        host.gpus.sort(key=lambda g: (g.whole, g.tasks))
        key = (tuple(host.gpus), tuple(sorted(host.without_gpu.items())))
        if key in groups:
            groups[key].count += 1
        else:
            groups[key] = host
    return list(groups.values())


def _front(lefts: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """The figures of ``lefts`` that no other one is at least as large as in every place (each kept once)."""
    front: list[tuple[int, int, int, int]] = []
    for p in sorted(set(lefts), reverse=True):  # one sorted before p has at least its first figure
        _, p1, p2, p3 = p
        for q in front:
            if q[1] >= p1 and q[2] >= p2 and q[3] >= p3:
                break
        else:
            front.append(p)
    return front


def _shifted(
    bounds: dict[int, list[tuple[int, int, int, int]]], at: int, made: int, shift: int
) -> dict[int, list[tuple[int, int, int, int]]]:
    """The chunks' fronts once ``made`` new groups stand at ``at`` and the groups after them have moved ``shift``
    places on. Each new group is the group split there with copies added, so it has less left than that group had.
    The chunk at ``at`` then holds its own groups and new ones, so its front still bounds it; where no group moved (one
    group of one host replaced by its twin: 73% of the splits on held-out 1004 at 40,000 tasks) nothing changes. A
    later chunk holding a new group has none; one after holds groups of the chunks they came from, so the front of
    those chunks' fronts still bounds it (a chunk with none gives none). Chunks before ``at`` are unchanged."""
    if not shift:
        return bounds
    first = at >> CHUNK_SHIFT
    last = (at + made - 1) >> CHUNK_SHIFT  # the last chunk holding a new group
    kept = {c: b for c, b in bounds.items() if c <= first}
    for c in sorted(bounds):
        if c <= last:
            continue
        low, high = (c * CHUNK - shift) >> CHUNK_SHIFT, (c * CHUNK + CHUNK - 1 - shift) >> CHUNK_SHIFT
        if all(k in bounds for k in range(low, high + 1)):
            kept[c] = bounds[low] if low == high else _front([p for k in range(low, high + 1) for p in bounds[k]])
    return kept


def scale(counts: Sequence[int], most: int, rest: float) -> int:
    """How many times over a fleet scaled down is copied (``dealt``'s tasks over its hosts, ``pack_hosts_scaled``'s
    GPUs): ``most``, lowered until what the counts leave modulo it, packed apart in a mix unlike the fleet's, is
    ``rest`` of all of them or less; at least 1."""
    total, times = sum(counts), max(most, 1)
    while times > 1 and sum(n % times for n in counts) > rest * total:
        times -= 1
    return times


def plan_size(hosts: list[Host]) -> tuple[int, int]:
    """Instances, then busy GPUs: what a better plan has fewer of."""
    return sum(h.count for h in hosts), sum(h.count * len(h.gpus) for h in hosts)


def may_beat(units: Sequence[Unit], cap: CapacityInput, best: list[Host] | None) -> bool:
    """Whether some packing of ``units`` onto hosts may be smaller than ``best`` (``plan_size``): it takes no fewer
    hosts than their floor (``units_floor``), and its busy GPUs are theirs."""
    if best is None:
        return True
    return (units_floor(units, cap)[1], sum(len(u.gpus) * u.count for u in units)) < plan_size(best)


def lower_bounds(
    capacity: CapacityInput, tasks: Sequence[tuple[ServiceInput, int]], lp_bound: int = 0
) -> tuple[int, int]:
    """Lower bounds on the GPUs and on the instances these (placeable) tasks need (``lp_bound``: the cutting-stock
    LP's bound on the MPS tasks' GPUs, when it was computed)."""
    mps = [(s, n) for s, n in tasks if s.clients]
    whole = sum(s.whole_gpus * n for s, n in tasks if s.whole_gpus)
    sizes: dict[int, int] = {}
    for s, n in mps:
        sizes[s.task_gpu_budget_mib] = sizes.get(s.task_gpu_budget_mib, 0) + n
    clients = sum(s.clients * n for s, n in mps)
    gpu_lb = whole + max(mps_floor(sizes, clients, capacity), lp_bound)
    # Each host is a bin of CPU units and a bin of memory: Martello and Toth's L2 on each (it counts the tasks too
    # large to share a host with each other, which a sum over hosts does not).
    cpu_sizes: dict[int, int] = {}
    mem_sizes: dict[int, int] = {}
    for s, n in tasks:
        if s.cpu_units:
            cpu_sizes[s.cpu_units] = cpu_sizes.get(s.cpu_units, 0) + n
        if s.memory_mib:
            mem_sizes[s.memory_mib] = mem_sizes.get(s.memory_mib, 0) + n
    host_lb = max(
        math.ceil(gpu_lb / capacity.gpus_per_instance),
        bin_lower_bound(cpu_sizes, capacity.host_cpu_units),
        bin_lower_bound(mem_sizes, capacity.host_memory_mib),
        math.ceil(sum(s.network_interfaces * n for s, n in tasks) / eni_room(capacity)),
    )
    shapes = {s.shape for s, n in tasks if n}
    if len(shapes) == 1:
        # One task shape: no host holds more than per_host of them, so the count over it is a bound too.
        (shape,) = shapes
        per_host = tasks_per_host(shape, capacity)
        host_lb = max(host_lb, math.ceil(sum(n for _, n in tasks) / per_host))
    return gpu_lb, host_lb


def tasks_per_host(shape: TaskShape, cap: CapacityInput) -> int:
    """The most tasks of one shape that one host takes."""
    if shape.whole_gpus:
        k = cap.gpus_per_instance // shape.whole_gpus
    elif shape.gpu_budgets_mib:
        per_gpu = min(cap.usable_gpu_memory_mib // shape.task_gpu_budget_mib, MAX_CLIENTS_PER_GPU // shape.clients)
        k = per_gpu * cap.gpus_per_instance
    else:
        k = 1 << 62
    if shape.cpu_units:
        k = min(k, cap.host_cpu_units // shape.cpu_units)
    if shape.memory_mib:
        k = min(k, cap.host_memory_mib // shape.memory_mib)
    if shape.network_interfaces:
        k = min(k, eni_room(cap) // shape.network_interfaces)
    return max(k, 1)
