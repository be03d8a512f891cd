"""First-fit decreasing over every task, task by task: the reference the staged plan must not lose to."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..mps import MAX_CLIENTS_PER_GPU
from .hosts import CHUNK, CHUNK_MASK, CHUNK_SHIFT, Host, eni_room
from .model import CapacityInput, GpuLoad, ServiceInput

FFD_ALWAYS_TASKS = 20_000  # up to this many tasks FFD always runs beside the staged plan


@dataclass(slots=True)
class _OpenGpu:
    """One GPU of first-fit's hosts (host h's GPUs are gpus[h * gpus_per_instance:][:gpus_per_instance])."""

    group: str | None  # the isolation group it holds (None while idle)
    room: int
    clients: int
    tasks: dict[str, int] = field(default_factory=dict)
    whole: bool = False
    shared: bool = False  # one record for the same GPU of many hosts made alike: copied before it is changed


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
    tasks = [(s, n, s.isolation_group) for group in groups for s, n in group if n]
    if ordering in FFD_ORDERS:
        sort_key = FFD_ORDERS[ordering]
        tasks.sort(key=lambda t: (*sort_key(t[0]), t[0].name))
    else:  # "dominant" (the largest share of any one resource) or "sum" (the shares added), largest first
        pick = max if ordering == "dominant" else sum
        tasks.sort(key=lambda t: (-t[0].whole_gpus, -pick(normalized(t[0], capacity)), t[0].name))
    fill = _FirstFit(capacity)
    smallest = _smallest_to_come([s for s, _, _ in tasks])
    for position, (s, n, group) in enumerate(tasks):
        fill.coming = smallest[position]
        if s.whole_gpus:
            fill.place_whole(s, n, group)
        elif not s.clients:
            fill.place_without_gpu(s, n)
        else:
            fill.place_mps(s, n, group)
    return fill.hosts()


_NEVER = (1 << 62, 1 << 62, 1 << 62, 1 << 62)


def _smallest_to_come(services: list[ServiceInput]) -> list[tuple[int, int, int, int]]:
    """For each position, the least GPU memory, clients, CPU and memory of any MPS task after it."""
    smallest = [_NEVER] * (len(services) + 1)
    for i in range(len(services) - 1, -1, -1):
        t = services[i]
        own = (
            (t.task_gpu_budget_mib, t.clients, t.cpu_units, t.memory_mib) if t.clients and not t.whole_gpus else _NEVER
        )
        smallest[i] = (
            min(own[0], smallest[i + 1][0]),
            min(own[1], smallest[i + 1][1]),
            min(own[2], smallest[i + 1][2]),
            min(own[3], smallest[i + 1][3]),
        )
    return [*smallest[1:], _NEVER]


class _FirstFit:
    """First-fit's open hosts and GPUs (per host: CPU, memory and awsvpc tasks left, idle GPUs, GPU-less tasks)."""

    def __init__(self, capacity: CapacityInput) -> None:
        self.capacity = capacity
        self.cpu_left: list[int] = []
        self.mem_left: list[int] = []
        self.eni_left: list[int] = []  # per host, the awsvpc tasks it still takes
        self.idle: list[list[int]] = []  # per host, its idle GPUs (indexes into gpus)
        self.gpus: list[_OpenGpu] = []
        self.without: dict[int, dict[str, int]] = {}  # per host given GPU-less tasks: their counts
        self.no_idle: list[int] = []  # the idle GPUs of every host made full by add_filled: none, ever
        self.open_mps: list[int] = []  # GPUs opened for MPS tasks, in opening order
        self.idle_hosts: list[int] = []  # hosts that had an idle GPU, in opening order
        self.block: list[int] = []  # per host: the add_filled call that made it (-1: new_host)
        self.coming = _NEVER  # the least of each figure of the MPS tasks after the service being placed
        self.blocks = 0
        self.touched: set[int] = set()  # hosts given a task since they were made
        # Per chunk of CHUNK open GPUs (by position in open_mps, which only grows): the most GPU memory, host memory
        # and host CPU left on its GPUs when last read whole. Spent GPUs stay in the list; their chunks' bounds keep
        # the scans off them.
        self.chunk_bounds: dict[int, tuple[int, int, int]] = {}
        self.host_bounds: dict[int, tuple[int, int]] = {}  # the same for idle_hosts: host memory and CPU
        self.span_bounds: dict[int, tuple[int, int, int]] = {}  # per CHUNK chunks of open GPUs: their bounds' most

    def new_host(self) -> int:
        cap, h = self.capacity, len(self.cpu_left)
        if cap.gpus_per_instance:
            self.idle_hosts.append(h)
        self.cpu_left.append(cap.host_cpu_units)
        self.mem_left.append(cap.host_memory_mib)
        self.eni_left.append(eni_room(cap))
        self.idle.append([])
        self.block.append(-1)
        for _ in range(cap.gpus_per_instance):
            self.idle[h].append(len(self.gpus))
            self.gpus.append(_OpenGpu(None, cap.usable_gpu_memory_mib, MAX_CLIENTS_PER_GPU))
        return h

    def fits_host(self, h: int, s: ServiceInput, k: int = 1) -> bool:
        return (
            self.cpu_left[h] >= s.cpu_units * k
            and self.mem_left[h] >= s.memory_mib * k
            and self.eni_left[h] >= s.network_interfaces * k
        )

    def take_host(self, h: int, s: ServiceInput, k: int) -> None:
        self.cpu_left[h] -= s.cpu_units * k
        self.mem_left[h] -= s.memory_mib * k
        self.eni_left[h] -= s.network_interfaces * k

    def host_copies(self, h: int, s: ServiceInput) -> int:
        k = 1 << 62
        if s.cpu_units:
            k = min(k, self.cpu_left[h] // s.cpu_units)
        if s.memory_mib:
            k = min(k, self.mem_left[h] // s.memory_mib)
        if s.network_interfaces:
            k = min(k, self.eni_left[h] // s.network_interfaces)
        return k

    def place_whole(self, s: ServiceInput, n: int, group: str | None) -> None:
        h = 0
        while n:
            while h < len(self.cpu_left) and not (len(self.idle[h]) >= s.whole_gpus and self.fits_host(h, s)):
                h += 1
            if h == len(self.cpu_left):
                # From here on every task goes to new hosts, each taking as many as it holds: the full ones at once.
                per_host = self.whole_per_host(s)
                if n // per_host > 1:
                    self.add_whole(s, group, per_host, n // per_host)
                    n -= n // per_host * per_host
                    h = len(self.cpu_left)
                    continue
                self.new_host()
            self.touched.add(h)
            for _ in range(s.whole_gpus):
                gpu = self.own(self.idle[h].pop(0))
                gpu.whole, gpu.group, gpu.tasks = True, group, {s.name: 1}
            self.take_host(h, s, 1)
            n -= 1

    def whole_per_host(self, s: ServiceInput) -> int:
        """The whole-GPU tasks of ``s`` one new host takes: place_whole puts them there one by one until it is full."""
        cap = self.capacity
        k = cap.gpus_per_instance // s.whole_gpus
        if s.cpu_units:
            k = min(k, cap.host_cpu_units // s.cpu_units)
        if s.memory_mib:
            k = min(k, cap.host_memory_mib // s.memory_mib)
        if s.network_interfaces:
            k = min(k, eni_room(cap) // s.network_interfaces)
        return max(k, 1)

    def add_whole(self, s: ServiceInput, group: str | None, per_host: int, copies: int) -> None:
        """``copies`` new hosts, each with ``per_host`` tasks of ``s`` on its first GPUs, whole: the state place_whole
        leaves. Their GPUs are one set of records, shared until a host's is changed (own); a host with no idle GPU
        left is not among idle_hosts (nothing can open a GPU there)."""
        cap = self.capacity
        gpus_per, used = cap.gpus_per_instance, per_host * s.whole_gpus
        hosts = range(len(self.cpu_left), len(self.cpu_left) + copies)
        self.block.extend([self.blocks] * copies)
        self.blocks += 1
        self.cpu_left.extend([cap.host_cpu_units - per_host * s.cpu_units] * copies)
        self.mem_left.extend([cap.host_memory_mib - per_host * s.memory_mib] * copies)
        self.eni_left.extend([eni_room(cap) - per_host * s.network_interfaces] * copies)
        if used < gpus_per:
            self.idle_hosts.extend(hosts)
            self.idle.extend(list(range(h * gpus_per + used, (h + 1) * gpus_per)) for h in hosts)
        else:
            self.idle.extend([self.no_idle] * copies)
        usable = cap.usable_gpu_memory_mib
        one = [_OpenGpu(group, usable, MAX_CLIENTS_PER_GPU, {s.name: 1}, whole=True, shared=True)] * used
        one += [_OpenGpu(None, usable, MAX_CLIENTS_PER_GPU, shared=True)] * (gpus_per - used)
        self.gpus.extend(one * copies)

    def place_without_gpu(self, s: ServiceInput, n: int) -> None:
        h = 0
        while n:
            while h < len(self.cpu_left) and not self.fits_host(h, s):
                h += 1
            if h == len(self.cpu_left):
                self.new_host()
            k = min(n, self.host_copies(h, s))
            self.touched.add(h)
            without = self.without.setdefault(h, {})
            without[s.name] = without.get(s.name, 0) + k
            self.take_host(h, s, k)
            n -= k

    def place_mps(self, s: ServiceInput, n: int, group: str | None) -> None:
        # The hot loop of large fleets: the host checks and updates are written out here (fits_host, host_copies and
        # take_host say the same; first_in_chunk and first_idle_in_chunk make the same checks over a whole chunk),
        # and the open GPUs' count is kept in a local. A call per GPU checked, or per placement, costs 10-20% on
        # 100,000-task fleets.
        gpus, open_mps, idle, idle_hosts = self.gpus, self.open_mps, self.idle, self.idle_hosts
        cpu_left, mem_left, eni_left = self.cpu_left, self.mem_left, self.eni_left
        touched, block = self.touched, self.block
        size, clients, name = s.task_gpu_budget_mib, s.clients, s.name
        need_cpu, need_mem, need_eni = s.cpu_units, s.memory_mib, s.network_interfaces
        per = self.capacity.gpus_per_instance
        at = scan = 0
        end = len(open_mps)
        bounds, host_bounds, spans = self.chunk_bounds, self.host_bounds, self.span_bounds
        span_shift = 2 * CHUNK_SHIFT
        span_mask = (1 << span_shift) - 1
        while n:
            while at < end:
                if not at & span_mask and at + (1 << span_shift) <= end:
                    # At the start of a span of CHUNK chunks: skipped where the most of its chunks' bounds rule s
                    # out (worked out again from them where the one kept does not: they only shrink).
                    bound = spans.get(at >> span_shift)
                    if bound is None or not (bound[0] < size or bound[1] < need_mem or bound[2] < need_cpu):
                        bound = self.span_bound(at, span_shift)
                    if bound is not None and (bound[0] < size or bound[1] < need_mem or bound[2] < need_cpu):
                        at += 1 << span_shift
                        continue
                if not at & CHUNK_MASK and at + CHUNK <= end:
                    # At the start of a whole chunk of open GPUs: skip it where its bounds say no GPU in it can take
                    # s; else the first GPU in it that can, if any.
                    bound = bounds.get(at >> CHUNK_SHIFT)
                    if bound is not None and (bound[0] < size or bound[1] < need_mem or bound[2] < need_cpu):
                        at += CHUNK
                        continue
                    found = self.first_in_chunk(at, s, group)
                    if found < 0:
                        at += CHUNK
                        continue
                    at = found
                    gpu = gpus[open_mps[at]]
                    h = open_mps[at] // per
                    break
                gpu = gpus[open_mps[at]]
                h = open_mps[at] // per
                if (
                    gpu.room >= size
                    and mem_left[h] >= need_mem
                    and cpu_left[h] >= need_cpu
                    and gpu.clients >= clients
                    and eni_left[h] >= need_eni
                    and gpu.group == group
                ):
                    break
                at += 1
            if at < end:
                k = min(n, gpu.room // size, gpu.clients // clients)
                if need_cpu:
                    k = min(k, cpu_left[h] // need_cpu)
                if need_mem:
                    k = min(k, mem_left[h] // need_mem)
                if need_eni:
                    k = min(k, eni_left[h] // need_eni)
                if k < n and block[h] >= 0 and h not in touched:
                    # A host made alike with the hosts after it and untouched: they take the same tasks (each as
                    # many as it holds), so they are given them at once.
                    taken, after = self.take_run(at, s, group, n)
                    if taken:
                        n -= taken
                        at = after
                        continue
                if gpu.shared:
                    gpu = self.own(open_mps[at])
                gpu.room -= k * size
                gpu.clients -= k * clients
                gpu.tasks[name] = gpu.tasks.get(name, 0) + k
                touched.add(h)
                cpu_left[h] -= need_cpu * k
                mem_left[h] -= need_mem * k
                eni_left[h] -= need_eni * k
                n -= k
                continue
            # The first host with an idle GPU and room for s. A host passed over stays so for the rest of s's tasks
            # (its idle GPUs and its room only shrink), so the scan resumes where it stopped: linear in hosts per
            # service, not per GPU opened.
            while scan < len(idle_hosts):
                if not scan & CHUNK_MASK and scan + CHUNK <= len(idle_hosts):
                    # The same for the hosts with an idle GPU, by chunks: skipped where the chunk's bounds rule it out.
                    room = host_bounds.get(scan >> CHUNK_SHIFT)
                    if room is not None and (room[0] < need_mem or room[1] < need_cpu):
                        scan += CHUNK
                        continue
                    found = self.first_idle_in_chunk(scan, s)
                    if found < 0:
                        scan += CHUNK
                        continue
                    scan = found
                    break
                h = idle_hosts[scan]
                if idle[h] and cpu_left[h] >= need_cpu and mem_left[h] >= need_mem and eni_left[h] >= need_eni:
                    break
                scan += 1
            if scan == len(idle_hosts):
                # From here on s goes to new hosts, each filled the same way: the full ones in one step.
                fill = self.fresh_fill(s)
                copies = n // sum(fill) if fill else 0
                if copies > 1:
                    self.add_filled(s, group, fill, copies)
                    n -= copies * sum(fill)
                    scan, at = len(idle_hosts), len(open_mps)
                    end = at
                    continue
            elif block[idle_hosts[scan]] >= 0 and idle_hosts[scan] not in touched:
                # A host made alike with the hosts after it and untouched: each opens the same idle GPUs and takes
                # the same tasks, so a run of them is given that at once.
                given, after = self.open_run(scan, s, group, n)
                if given:
                    n -= given
                    scan = after
                    at = end = len(open_mps)
                    continue
            host = idle_hosts[scan] if scan < len(idle_hosts) else self.new_host()
            index = idle[host].pop(0)
            self.own(index).group = group
            open_mps.append(index)
            at, end = end, end + 1

    def open_run(self, scan: int, s: ServiceInput, group: str | None, n: int) -> tuple[int, int]:
        """From position ``scan`` of idle_hosts: where its host and the hosts after it were made alike and are
        untouched since, each opens the same idle GPUs and takes what place_mps would give it (idle_fill), so a run
        of them is given that at once, while ``n`` lasts: their GPUs one shared record each, opened in place_mps's
        order, and a block of their own. Returns the tasks taken and the position after the run in idle_hosts (0 and
        ``scan`` where the run is of one host: place_mps places that)."""
        per = self.capacity.gpus_per_instance
        idle_hosts, idle, block, touched = self.idle_hosts, self.idle, self.block, self.touched
        h = idle_hosts[scan]
        fill = self.idle_fill(s, len(idle[h]), self.cpu_left[h], self.mem_left[h], self.eni_left[h])
        each = sum(fill)
        if not each:
            return 0, scan
        run = 1
        while (
            run < n // each
            and scan + run < len(idle_hosts)
            and idle_hosts[scan + run] == h + run
            and block[h + run] == block[h]
            and h + run not in touched
        ):
            run += 1
        if run == 1:
            return 0, scan
        offsets = [i - h * per for i in idle[h][: len(fill)]]  # alike hosts have the same GPUs idle
        usable, size, clients = self.capacity.usable_gpu_memory_mib, s.task_gpu_budget_mib, s.clients
        for o, k in zip(offsets, fill, strict=True):
            one = _OpenGpu(group, usable - k * size, MAX_CLIENTS_PER_GPU - k * clients, {s.name: k}, shared=True)
            self.gpus[h * per + o : (h + run) * per + o : per] = [one] * run
        for r in range(h, h + run):
            idle[r] = idle[r][len(fill) :]
        self.open_mps.extend(r * per + o for r in range(h, h + run) for o in offsets)
        self.cpu_left[h : h + run] = [self.cpu_left[h] - each * s.cpu_units] * run
        self.mem_left[h : h + run] = [self.mem_left[h] - each * s.memory_mib] * run
        self.eni_left[h : h + run] = [self.eni_left[h] - each * s.network_interfaces] * run
        block[h : h + run] = [self.blocks] * run
        self.blocks += 1
        return run * each, scan + run

    def take_run(self, at: int, s: ServiceInput, group: str | None, n: int) -> tuple[int, int]:
        """Tasks of ``s`` from the open GPU at position ``at`` on: where its host and the hosts after it were made alike
        (one add_filled call, or one run taken here) and are untouched since, each takes what place_mps would give
        it, GPU by GPU, as many as it holds, so a run of them is given that at once, while ``n`` lasts. The run gets
        one shared record per GPU changed and a block of its own, so its hosts stay alike. Returns the tasks taken
        and the position after the run (0 and ``at`` where it is of one host: place_mps places that)."""
        per = self.capacity.gpus_per_instance
        open_mps, block, touched, gpus = self.open_mps, self.block, self.touched, self.gpus
        size, clients = s.task_gpu_budget_mib, s.clients
        need_cpu, need_mem, need_eni = s.cpu_units, s.memory_mib, s.network_interfaces
        h = open_mps[at] // per
        j0 = open_mps[at] - h * per
        first = at - j0  # a block's host has its open GPUs, from the first, at consecutive positions
        if first < 0 or open_mps[first] != h * per:
            return 0, at
        cpu, mem, eni = self.cpu_left[h], self.mem_left[h], self.eni_left[h]
        takes: list[tuple[int, int]] = []  # (GPU of the host, tasks): what place_mps gives one host
        end = at
        while end < len(open_mps) and open_mps[end] // per == h:
            gpu = gpus[open_mps[end]]
            if (
                gpu.room >= size
                and gpu.clients >= clients
                and cpu >= need_cpu
                and mem >= need_mem
                and eni >= need_eni
                and gpu.group == group
            ):
                k = min(gpu.room // size, gpu.clients // clients)
                k = min(k, cpu // need_cpu) if need_cpu else k
                k = min(k, mem // need_mem) if need_mem else k
                k = min(k, eni // need_eni) if need_eni else k
                takes.append((open_mps[end] - h * per, k))
                cpu, mem, eni = cpu - k * need_cpu, mem - k * need_mem, eni - k * need_eni
            end += 1
        each = sum(k for _, k in takes)
        stride = end - first  # positions a host's open GPUs take
        run = 1
        while (
            run < n // each
            and first + (run + 1) * stride <= len(open_mps)
            and open_mps[at + run * stride] == (h + run) * per + j0
            and open_mps[first + (run + 1) * stride - 1] == (h + run) * per + (end - 1 - first)
            and block[h + run] == block[h]
            and h + run not in touched
        ):
            run += 1
        if run == 1:
            return 0, at
        for j, k in takes:
            gpu = gpus[h * per + j]
            tasks = dict(gpu.tasks)
            tasks[s.name] = tasks.get(s.name, 0) + k
            one = _OpenGpu(gpu.group, gpu.room - k * size, gpu.clients - k * clients, tasks, gpu.whole, True)
            gpus[h * per + j : (h + run) * per + j : per] = [one] * run
        self.cpu_left[h : h + run] = [cpu] * run
        self.mem_left[h : h + run] = [mem] * run
        self.eni_left[h : h + run] = [eni] * run
        block[h : h + run] = [self.blocks] * run
        self.blocks += 1
        return run * each, first + run * stride

    def span_bound(self, at: int, span_shift: int) -> tuple[int, int, int] | None:
        """The most of each bound of the chunks in the span of open GPUs from ``at`` (kept), or None while one of
        them has none."""
        bounds = self.chunk_bounds
        room = mem = cpu = -1
        first = at >> CHUNK_SHIFT
        for c in range(first, first + (1 << (span_shift - CHUNK_SHIFT))):
            bound = bounds.get(c)
            if bound is None:
                return None
            if bound[0] > room:
                room = bound[0]
            if bound[1] > mem:
                mem = bound[1]
            if bound[2] > cpu:
                cpu = bound[2]
        self.span_bounds[at >> span_shift] = (room, mem, cpu)
        return room, mem, cpu

    def first_in_chunk(self, at: int, s: ServiceInput, group: str | None) -> int:
        """The first position from ``at`` in the chunk of open GPUs starting there whose GPU and host can take a task
        of ``s``; else -1, and the chunk's bounds (the most GPU memory, host memory and host CPU left in it) are
        kept. These figures only shrink, so bounds once kept stay true: a chunk they rule out is skipped unread."""
        gpus, open_mps = self.gpus, self.open_mps
        cpu_left, mem_left, eni_left = self.cpu_left, self.mem_left, self.eni_left
        size, clients = s.task_gpu_budget_mib, s.clients
        need_cpu, need_mem, need_eni = s.cpu_units, s.memory_mib, s.network_interfaces
        per = self.capacity.gpus_per_instance
        room = mem = cpu = -1
        for i in range(at, at + CHUNK):
            gpu = gpus[open_mps[i]]
            h = open_mps[i] // per
            if (
                gpu.room >= size
                and mem_left[h] >= need_mem
                and cpu_left[h] >= need_cpu
                and gpu.clients >= clients
                and eni_left[h] >= need_eni
                and gpu.group == group
            ):
                return i
            if gpu.room > room:
                room = gpu.room
            if mem_left[h] > mem:
                mem = mem_left[h]
            if cpu_left[h] > cpu:
                cpu = cpu_left[h]
        self.chunk_bounds[at >> CHUNK_SHIFT] = (room, mem, cpu)
        return -1

    def first_idle_in_chunk(self, at: int, s: ServiceInput) -> int:
        """The first position from ``at`` in the chunk of idle_hosts starting there whose host has an idle GPU and
        room for a task of ``s``; else -1, and the chunk's bounds (the most host memory and CPU left on its hosts
        with an idle GPU) are kept. Idle GPUs and room only shrink, so they stay true."""
        idle_hosts, idle = self.idle_hosts, self.idle
        cpu_left, mem_left, eni_left = self.cpu_left, self.mem_left, self.eni_left
        need_cpu, need_mem, need_eni = s.cpu_units, s.memory_mib, s.network_interfaces
        mem = cpu = -1
        for i in range(at, at + CHUNK):
            h = idle_hosts[i]
            if idle[h]:
                if cpu_left[h] >= need_cpu and mem_left[h] >= need_mem and eni_left[h] >= need_eni:
                    return i
                if mem_left[h] > mem:
                    mem = mem_left[h]
                if cpu_left[h] > cpu:
                    cpu = cpu_left[h]
        self.host_bounds[at >> CHUNK_SHIFT] = (mem, cpu)
        return -1

    def fresh_fill(self, s: ServiceInput) -> list[int]:
        """The tasks of ``s`` place_mps puts on each GPU of a new host, in opening order, when it has more than the
        host takes: each GPU as full as its memory, its clients and the host's CPU, memory and interfaces allow, the
        next GPU opened while the host has room for a task."""
        cap = self.capacity
        return self.idle_fill(s, cap.gpus_per_instance, cap.host_cpu_units, cap.host_memory_mib, eni_room(cap))

    def idle_fill(self, s: ServiceInput, idle: int, cpu: int, mem: int, eni: int) -> list[int]:
        """The same for a host with ``idle`` idle GPUs and that CPU, memory and interfaces left."""
        cap = self.capacity
        per_gpu = min(cap.usable_gpu_memory_mib // s.task_gpu_budget_mib, MAX_CLIENTS_PER_GPU // s.clients)
        fill: list[int] = []
        while len(fill) < idle and cpu >= s.cpu_units and mem >= s.memory_mib and eni >= s.network_interfaces:
            k = per_gpu
            if s.cpu_units:
                k = min(k, cpu // s.cpu_units)
            if s.memory_mib:
                k = min(k, mem // s.memory_mib)
            if s.network_interfaces:
                k = min(k, eni // s.network_interfaces)
            if k <= 0:
                break
            fill.append(k)
            cpu -= k * s.cpu_units
            mem -= k * s.memory_mib
            eni -= k * s.network_interfaces
        return fill

    def add_filled(self, s: ServiceInput, group: str | None, fill: list[int], copies: int) -> None:
        """``copies`` new hosts, each with ``fill`` tasks of ``s`` on its first GPUs: the state place_mps leaves."""
        cap = self.capacity
        size, clients, name = s.task_gpu_budget_mib, s.clients, s.name
        tasks = sum(fill)
        cpu = cap.host_cpu_units - tasks * s.cpu_units
        mem = cap.host_memory_mib - tasks * s.memory_mib
        eni = eni_room(cap) - tasks * s.network_interfaces
        usable, gpus_per = cap.usable_gpu_memory_mib, cap.gpus_per_instance
        gpus, open_mps, idle = self.gpus, self.open_mps, self.idle
        block = self.blocks
        self.blocks += 1
        least, least_clients, least_cpu, least_mem = self.coming
        if len(fill) == gpus_per and (
            cpu < least_cpu
            or mem < least_mem
            or all(usable - k * size < least or MAX_CLIENTS_PER_GPU - k * clients < least_clients for k in fill)
        ):
            # No MPS task still to come fits these hosts, and they have no idle GPU for a whole-GPU task: nothing
            # will change their GPUs, so they share one set (a task without a GPU changes only its host's figures).
            shared = [
                _OpenGpu(group, usable - k * size, MAX_CLIENTS_PER_GPU - k * clients, {name: k}, shared=True)
                for k in fill
            ]
            self.block.extend([block] * copies)
            self.cpu_left.extend([cpu] * copies)
            self.mem_left.extend([mem] * copies)
            self.eni_left.extend([eni] * copies)
            idle.extend([self.no_idle] * copies)
            gpus.extend(shared * copies)
            return
        # The hosts' lists grow in bulk. Their GPUs are one set of records, shared until a host's is changed (own);
        # host h's are gpus[h * gpus_per : (h + 1) * gpus_per], its first len(fill) open, in that order.
        hosts = range(len(self.cpu_left), len(self.cpu_left) + copies)
        opened = len(fill)
        self.block.extend([block] * copies)
        self.cpu_left.extend([cpu] * copies)
        self.mem_left.extend([mem] * copies)
        self.eni_left.extend([eni] * copies)
        open_mps.extend(h * gpus_per + j for h in hosts for j in range(opened))
        if opened < gpus_per:
            self.idle_hosts.extend(hosts)
            idle.extend(list(range(h * gpus_per + opened, (h + 1) * gpus_per)) for h in hosts)
        else:
            idle.extend([self.no_idle] * copies)
        one = [
            _OpenGpu(group, usable - k * size, MAX_CLIENTS_PER_GPU - k * clients, {name: k}, shared=True) for k in fill
        ]
        one += [_OpenGpu(None, usable, MAX_CLIENTS_PER_GPU, shared=True)] * (gpus_per - opened)
        gpus.extend(one * copies)

    def own(self, index: int) -> _OpenGpu:
        """The GPU at ``index`` as a record of its own, a shared one copied first: what may be changed."""
        gpu = self.gpus[index]
        if gpu.shared:
            gpu = _OpenGpu(gpu.group, gpu.room, gpu.clients, dict(gpu.tasks), gpu.whole)
            self.gpus[index] = gpu
        return gpu

    def hosts(self) -> list[Host]:
        """The open hosts, identical ones counted together (in the order each kind was first opened). Hosts one
        add_filled call made and nothing touched since are alike: their kind is worked out once."""
        g = self.capacity.gpus_per_instance
        hosts: dict[tuple[Any, ...], Host] = {}
        kinds: dict[int, Host] = {}  # by block: the kind of its hosts untouched since
        seen: dict[tuple[Any, ...], Host] = {}  # by a host's raw figures, read cheaply: its kind
        for h in range(len(self.cpu_left)):
            block = self.block[h]
            alike = block >= 0 and h not in self.touched
            host = kinds.get(block) if alike else None
            if host is None:
                raw = (
                    tuple(
                        [(tuple(gpu.tasks.items()), gpu.room, gpu.clients) for gpu in self.gpus[h * g : (h + 1) * g]]
                    ),
                    self.cpu_left[h],
                    self.mem_left[h],
                    tuple(self.without[h].items()) if h in self.without else (),
                )
                host = seen.get(raw)
                if host is None:
                    host = seen[raw] = self._kind(h, hosts)
                if alike:
                    kinds[block] = host
            host.count += 1
        return list(hosts.values())

    def _kind(self, h: int, hosts: dict[tuple[Any, ...], Host]) -> Host:
        """Host ``h``'s kind among ``hosts`` (by its loads, CPU, memory and GPU-less tasks), added where new."""
        cap = self.capacity
        g = cap.gpus_per_instance
        loads = [
            GpuLoad(
                tasks=tuple(sorted(gpu.tasks.items())),
                used_gpu_memory_mib=0 if gpu.whole else cap.usable_gpu_memory_mib - gpu.room,
                clients=0 if gpu.whole else MAX_CLIENTS_PER_GPU - gpu.clients,
                whole=gpu.whole,
            )
            for gpu in self.gpus[h * g : (h + 1) * g]
            if gpu.tasks
        ]
        cpu = cap.host_cpu_units - self.cpu_left[h]
        mem = cap.host_memory_mib - self.mem_left[h]
        without = self.without.get(h, {})
        key = (tuple(loads), cpu, mem, tuple(sorted(without.items())))
        if key not in hosts:
            hosts[key] = Host(0, loads, cpu, mem, dict(without), eni_room(cap) - self.eni_left[h])
        return hosts[key]


HOST_BINDS = 1.5  # a host resource needing this many times the hosts GPU memory needs: the staged plan is skipped


def _needs(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]]) -> dict[str, float]:
    """Hosts each resource alone needs: GPU memory, host CPU, host memory."""
    pairs = [(s, n) for group in groups for s, n in group]
    return {
        "gpu": sum(s.task_gpu_budget_mib * n for s, n in pairs)
        / (capacity.usable_gpu_memory_mib * capacity.gpus_per_instance or 1),
        "cpu": sum(s.cpu_units * n for s, n in pairs) / capacity.host_cpu_units,
        "memory": sum(s.memory_mib * n for s, n in pairs) / capacity.host_memory_mib,
    }


def staged_may_win(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]]) -> bool:
    """Whether to run the staged plan (GPUs filled by GPU memory, then hosts): always for up to FFD_ALWAYS_TASKS
    tasks; past it, unless host CPU or memory needs HOST_BINDS times the hosts GPU memory needs. There, first-fit
    decreasing won on every tuning fleet (seeds 0-29 of 25,000 tasks, 0-39 of 40,000, 0-19 of 100,000; the staged plan
    was 0.01-8% larger) and on every held-out one measured, and the staged plan costs most of the time at a
    thousand services. Where each service binds a resource of its own, the totals sit within 1.4 of each other and
    both run."""
    if sum(n for group in groups for _, n in group) <= FFD_ALWAYS_TASKS:
        return True
    need = _needs(capacity, groups)
    return max(need["cpu"], need["memory"]) < HOST_BINDS * need["gpu"]


def ffd_orders(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]]) -> list[str]:
    """FFD by GPU budget, and by each host resource: every order for a small fleet; past it, by GPU budget and by each
    host resource whose total is within 25% of the binding one's (the order that sorts the binding dimension first
    packs it best; the GPU order is kept even where host CPU binds twice over, as it still won on two held-out
    fleets of 100,000 tasks, by 3 and 7 hosts)."""
    pairs = [(s, n) for group in groups for s, n in group]
    if sum(n for _, n in pairs) <= FFD_ALWAYS_TASKS:
        return ["gpu", "memory", "cpu", "dominant", "sum"]  # cheap here: every order, the best kept
    need = _needs(capacity, groups)
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
