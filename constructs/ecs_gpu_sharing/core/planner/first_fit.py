"""First-fit's open hosts and GPUs: the state first-fit decreasing (ffd) places tasks on, its output as host groups,
and the steps that give a run of hosts made alike the same tasks at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..mps import MAX_CLIENTS_PER_GPU
from .hosts import Host, eni_room, tasks_per_host
from .model import CapacityInput, GpuLoad, ServiceInput

_NEVER = (1 << 62, 1 << 62, 1 << 62, 1 << 62)


@dataclass(slots=True)
class _OpenGpu:
    """One GPU of first-fit's hosts (host h's GPUs are gpus[h * gpus_per_instance:][:gpus_per_instance])."""

    group: str | None  # the isolation group it holds (None while idle)
    room: int
    clients: int
    tasks: dict[str, int] = field(default_factory=dict)
    whole: bool = False
    shared: bool = False  # one record for the same GPU of many hosts made alike: copied before it is changed


class FirstFitHosts:
    """First-fit's open hosts and GPUs (per host: CPU, memory and awsvpc tasks left, idle GPUs, GPU-less tasks), and
    the steps that change many alike at once; ffd._FirstFit places tasks on them."""

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
        self.block: list[int] = []  # per host: the step that made it and its like (-1: new_host), alike while untouched
        self.coming = _NEVER  # the least of each figure of the MPS tasks after the service being placed
        self.blocks = 0
        self.touched: set[int] = set()  # hosts given a task since they were made
        # Per chunk of CHUNK open GPUs (by position in open_mps, which only grows): the most GPU memory, host memory
        # and host CPU left on its GPUs when last read whole. Spent GPUs stay in the list; their chunks' bounds keep
        # the scans off them.
        self.chunk_bounds: dict[int, tuple[int, int, int]] = {}
        self.host_bounds: dict[int, tuple[int, int]] = {}  # the same for idle_hosts: host memory and CPU
        self.span_bounds: dict[int, tuple[int, int, int]] = {}  # per CHUNK chunks of open GPUs: their bounds' most
        # Per chunk of open GPUs read in vain often (ffd._FirstFit.first_in_chunk): per host, the most GPU memory left
        # on its GPUs in the chunk, its memory and its CPU, when last read; and the reads in vain since.
        self.chunk_hosts: dict[int, list[tuple[int, int, int]]] = {}
        self.chunk_misses: dict[int, int] = {}

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

    def whole_per_host(self, s: ServiceInput) -> int:
        """The whole-GPU tasks of ``s`` one new host takes: place_whole puts them there one by one until it is full."""
        return tasks_per_host(s.shape, self.capacity)

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
        (one add_filled, add_whole, open_run or take_run step) and are untouched since, each takes what place_mps would
        give it, GPU by GPU, as many as it holds, so a run of them is given that at once, while ``n`` lasts. The run
        gets one shared record per GPU changed and a block of its own, so its hosts stay alike. Returns the tasks taken
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

    def size(self) -> tuple[int, int]:
        """``plan_size`` of ``hosts()``: the open hosts and their busy GPUs, read without working out their kinds (a
        plan keeps one FFD order of several; the others' hosts are never read)."""
        return len(self.cpu_left), sum(1 for gpu in self.gpus if gpu.tasks)

    def hosts(self) -> list[Host]:
        """The open hosts, identical ones counted together (in the order each kind was first opened). Hosts one
        step made and nothing touched since are alike (one block): their kind is worked out once."""
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
