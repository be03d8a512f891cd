"""First-fit decreasing over every task, task by task: the reference the staged plan must not lose to."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import overload

from .first_fit import _NEVER, FirstFitHosts
from .hosts import CHUNK, CHUNK_MASK, CHUNK_SHIFT, Host, plan_size
from .model import CapacityInput, ServiceInput

FFD_ALWAYS_TASKS = 20_000  # up to this many tasks FFD always runs beside the staged plan


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
    """First-fit decreasing's hosts (``ffd_fill``), identical ones counted together."""
    return ffd_fill(capacity, groups, ordering).hosts()


def ffd_best(
    capacity: CapacityInput,
    groups: list[list[tuple[ServiceInput, int]]],
    best: list[Host] | None = None,
    enough: int = 0,
) -> list[Host]:
    """``best`` (a plan in hand), or first-fit decreasing's hosts in the first order of ``ffd_orders`` that packs
    fewer (``plan_size``), each order stopped once it holds more hosts than the best so far (``ffd_fill``'s
    ``above``); no order is begun once the best has ``enough`` hosts or fewer (a caller that reads only the count,
    at a lower bound on the hosts)."""
    size = None if best is None else plan_size(best)
    kept: FirstFitHosts | None = None
    for order in ffd_orders(capacity, groups):
        if size is not None and size[0] <= enough:
            break
        fill = ffd_fill(capacity, groups, order, None if size is None else size[0])
        if fill is not None and (size is None or fill.size() < size):
            kept, size = fill, fill.size()
    if kept is not None:
        return kept.hosts()
    assert best is not None  # without a plan in hand the first order runs whole
    return best


@overload
def ffd_fill(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], ordering: str = "gpu"
) -> FirstFitHosts: ...


@overload
def ffd_fill(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], ordering: str, above: int | None
) -> FirstFitHosts | None: ...


def ffd_fill(
    capacity: CapacityInput,
    groups: list[list[tuple[ServiceInput, int]]],
    ordering: str = "gpu",
    above: int | None = None,
) -> FirstFitHosts | None:
    """First-fit decreasing, task by task, over GPUs and hosts together: each task (largest first: whole GPUs, GPU
    budget, CPU, memory) goes to the first GPU in opening order with its memory and clients and whose host still
    has its CPU and memory; else to an idle GPU of the first open host with room; else to a new host. Where host CPU
    or memory binds, this strands fewer hosts than filling GPUs first; the planner keeps whichever plan is smaller.
    Identical tasks are placed together (as many on a GPU as fit), so the work grows with services, not tasks.

    ``above``: the hosts of a plan in hand, which the caller keeps unless this fill has fewer (or as many and fewer
    busy GPUs). A fill only opens hosts, so once it holds more it cannot win: it stops there and gives ``None``
    (where it loses, it has most of its hosts before half its tasks are placed, the largest going first)."""
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
        if above is not None and len(fill.cpu_left) > above:
            return None
    return fill


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


class _FirstFit(FirstFitHosts):
    """First-fit decreasing's placements, task by task, over the open hosts and GPUs: the scans read in chunks."""

    def __init__(self, capacity: CapacityInput) -> None:
        super().__init__(capacity)
        # Where place_mps's two scans (open GPUs, hosts with an idle GPU) stopped for the last service of each shape:
        # every GPU and host before them was full for it, and GPUs and hosts only fill, so a later service of the same
        # needs and isolation group starts there (a model run as a service a tenant: rows of services of one shape).
        self.resume: dict[tuple[int, int, int, int, int, str | None], tuple[int, int]] = {}

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
        gpus, open_mps = self.gpus, self.open_mps
        cpu_left, mem_left, eni_left = self.cpu_left, self.mem_left, self.eni_left
        touched, block = self.touched, self.block
        size, clients, name = s.task_gpu_budget_mib, s.clients, s.name
        need_cpu, need_mem, need_eni = s.cpu_units, s.memory_mib, s.network_interfaces
        per = self.capacity.gpus_per_instance
        shape = (size, clients, need_cpu, need_mem, need_eni, group)
        at, scan = self.resume.get(shape, (0, 0))
        end = len(open_mps)
        bounds, spans = self.chunk_bounds, self.span_bounds
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
                    found = self.first_in_chunk(at, shape)
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
            scan = self.next_idle(scan, s)
            given, scan = self.open_more(scan, s, group, n)
            n -= given
            end = len(open_mps)
            at = end if given else end - 1  # a run of hosts given their tasks, or the one GPU opened
        self.resume[shape] = (at, scan)

    def next_idle(self, scan: int, s: ServiceInput) -> int:
        """The first position from ``scan`` in idle_hosts whose host has an idle GPU and room for a task of ``s``
        (len(idle_hosts) where none has), by chunks skipped where their bounds rule it out."""
        idle_hosts, idle, host_bounds = self.idle_hosts, self.idle, self.host_bounds
        cpu_left, mem_left, eni_left = self.cpu_left, self.mem_left, self.eni_left
        need_cpu, need_mem, need_eni = s.cpu_units, s.memory_mib, s.network_interfaces
        while scan < len(idle_hosts):
            if not scan & CHUNK_MASK and scan + CHUNK <= len(idle_hosts):
                room = host_bounds.get(scan >> CHUNK_SHIFT)
                if room is not None and (room[0] < need_mem or room[1] < need_cpu):
                    scan += CHUNK
                    continue
                found = self.first_idle_in_chunk(scan, s)
                if found < 0:
                    scan += CHUNK
                    continue
                return found
            h = idle_hosts[scan]
            if idle[h] and cpu_left[h] >= need_cpu and mem_left[h] >= need_mem and eni_left[h] >= need_eni:
                return scan
            scan += 1
        return scan

    def open_more(self, scan: int, s: ServiceInput, group: str | None, n: int) -> tuple[int, int]:
        """Room for more of ``s``'s ``n`` tasks once no open GPU takes one, from the host at ``scan`` of idle_hosts
        (next_idle's) or new hosts: a run of hosts given their tasks at once (the tasks given, and where the scan
        resumes), else one GPU opened for place_mps to fill (0 tasks given)."""
        idle_hosts = self.idle_hosts
        if scan == len(idle_hosts):
            # From here on s goes to new hosts, each filled the same way: the full ones in one step.
            fill = self.fresh_fill(s)
            copies = n // sum(fill) if fill else 0
            if copies > 1:
                self.add_filled(s, group, fill, copies)
                return copies * sum(fill), len(idle_hosts)
        elif self.block[idle_hosts[scan]] >= 0 and idle_hosts[scan] not in self.touched:
            # A host made alike with the hosts after it and untouched: each opens the same idle GPUs and takes the
            # same tasks, so a run of them is given that at once.
            given, after = self.open_run(scan, s, group, n)
            if given:
                return given, after
        host = idle_hosts[scan] if scan < len(idle_hosts) else self.new_host()
        index = self.idle[host].pop(0)
        self.own(index).group = group
        self.open_mps.append(index)
        return 0, scan

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

    def first_in_chunk(self, at: int, shape: tuple[int, int, int, int, int, str | None]) -> int:
        """The first position from ``at`` in the chunk of open GPUs starting there whose GPU and host can take a task
        of ``shape`` (``place_mps``'s: a task's GPU memory, clients, CPU, memory, interfaces and isolation group, read
        off its service once a call of ``place_mps``, not once a chunk); else -1, and the chunk's bounds (the most GPU
        memory, host memory and host CPU left in it) are kept. These figures only shrink, so bounds once kept stay
        true: a chunk they rule out is skipped unread. Each bound is the most over the chunk, so a chunk whose GPUs
        with memory are on hosts whose CPU or memory is spent passes them, and is read for every service that asks
        (many services of one or two tasks: 0.1 s of the scaled packing of held-out 1004 at 40,000 tasks, 1,176
        services, on eight H100s a host). Once a chunk has been read in vain HOSTS_AFTER_MISSES times, its hosts'
        figures are kept too (per host: the most GPU memory on its GPUs in the chunk, its memory and CPU), again each
        time: where none has all three for the task, the chunk is not read."""
        gpus, open_mps = self.gpus, self.open_mps
        cpu_left, mem_left, eni_left = self.cpu_left, self.mem_left, self.eni_left
        size, clients, need_cpu, need_mem, need_eni, group = shape
        per = self.capacity.gpus_per_instance
        chunk = at >> CHUNK_SHIFT
        hosts = self.chunk_hosts.get(chunk)
        if hosts is not None:  # no host has a GPU with the memory, and the host memory and CPU, for it: none takes it
            for room, mem, cpu in hosts:
                if room >= size and mem >= need_mem and cpu >= need_cpu:
                    break
            else:
                return -1
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
        self.chunk_bounds[chunk] = (room, mem, cpu)
        misses = self.chunk_misses.get(chunk, 0) + 1
        self.chunk_misses[chunk] = misses % HOSTS_AFTER_MISSES
        if misses >= HOSTS_AFTER_MISSES:  # read in vain often: its hosts' figures kept (read again, they only shrink)
            most: dict[int, int] = {}  # per host, the most GPU memory left on its GPUs in the chunk
            for i in range(at, at + CHUNK):
                h, left = open_mps[i] // per, gpus[open_mps[i]].room
                if left > most.get(h, -1):
                    most[h] = left
            self.chunk_hosts[chunk] = [(left, mem_left[h], cpu_left[h]) for h, left in most.items()]
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


HOSTS_AFTER_MISSES = 8  # reads of a chunk of open GPUs that found nothing, after which its hosts' figures are kept
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
    """Whether to run FFD beside the staged plan of ``staged`` hosts: always for up to FFD_ALWAYS_TASKS tasks (it is
    cheap there); for more, on hosts of one GPU where host CPU or memory nearly binds (what stages 1 and 2 pack worst:
    there a GPU's contents are its host's, chosen by GPU memory). On hosts of several GPUs the staged plan spreads and
    balances GPUs of unlike CPU and memory over the hosts, and FFD beside it packed no fewer hosts on any tuning fleet
    where it ran, at 0.08-0.38 s a plan (docs/planning.md)."""
    pairs = [(s, n) for group in groups for s, n in group]
    if sum(n for _, n in pairs) <= FFD_ALWAYS_TASKS:
        return True
    if capacity.gpus_per_instance > 1:
        return False
    cpu = math.ceil(sum(s.cpu_units * n for s, n in pairs) / capacity.host_cpu_units)
    mem = math.ceil(sum(s.memory_mib * n for s, n in pairs) / capacity.host_memory_mib)
    return max(cpu, mem) * 10 >= staged * 9
