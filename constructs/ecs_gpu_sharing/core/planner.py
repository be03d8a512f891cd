"""The fit planner: a placement of a fleet's tasks on GPU hosts that ECS could realise. Pure Python.

Rules (ECS GPU sharing: a task's MPS containers land on one GPU, ECS places by GPU memory only; NVIDIA MPS: 48
clients per GPU): a task's MPS containers share one GPU; a GPU holds MPS tasks or whole-GPU tasks, never
both; per GPU the MPS memory stays within the usable memory and the MPS clients (containers) within NVIDIA's
48; per host the tasks' CPU units and memory stay within what the host offers to tasks.

The plan proves that a placement exists and estimates capacity; it is not where ECS will put tasks (ECS places
by its own strategy, task by task). It packs in two stages, by shape and in bulk, so its cost grows with the
number of services, not of tasks:

1. GPUs: the largest remaining task opens a GPU, and the rest of that GPU is filled as fully as memory allows
   (an exact subset-sum over the remaining task shapes, on a bitset; a greedy fill when the exact one breaks the
   client, CPU or memory limits). The GPU's contents are then repeated for as many GPUs as the counts allow.
2. Hosts: GPU contents, whole-GPU tasks and tasks without a GPU are packed onto hosts first-fit decreasing, in
   groups of identical hosts.

Ties break on names, so the same input always gives the same plan. Lower bounds (GPUs: Martello and Toth's L2 on
GPU memory and NVIDIA's client limit; instances: GPUs, CPU and memory; a fleet of one task shape: its count over
the most that fit a host) say how far from optimal a plan can be; a plan at its bound is optimal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from . import cutting_stock, host_lp
from .allocation import AllocationNote, Evidence
from .errors import PlanError
from .mps import MAX_CLIENTS_PER_GPU
from .placement import LIBRARY_STRATEGY
from .shape import TaskShape

EC2 = "ec2"
"""A capacity kind: an Auto Scaling group on a pinned AMI (GpuCapacity)."""
MANAGED_INSTANCES = "managed-instances"
"""A capacity kind: ECS Managed Instances, whose hosts AWS launches with no instance limit."""
KINDS = (EC2, MANAGED_INSTANCES)


ECS_DEFAULT_MAX_PERCENT = 200
"""ECS's deploymentConfiguration.maximumPercent for a replica service that leaves it unset."""
TASK_EXCEEDS_GPU_MEMORY = "ecs-gpu-sharing:TaskExceedsGpuMemory"
TASK_EXCEEDS_MPS_CLIENTS = "ecs-gpu-sharing:TaskExceedsMpsClients"
TASK_EXCEEDS_GPUS = "ecs-gpu-sharing:TaskExceedsGpus"
TASK_EXCEEDS_HOST_CPU = "ecs-gpu-sharing:TaskExceedsHostCpu"
TASK_EXCEEDS_HOST_MEMORY = "ecs-gpu-sharing:TaskExceedsHostMemory"


@dataclass(frozen=True)
class CapacityInput:
    """What the planner needs of one capacity."""

    name: str
    instance_type: str
    gpus_per_instance: int
    ec2_gpu_memory_mib: int  # one GPU's memory as EC2 lists it
    usable_gpu_memory_mib: int  # what plans may fill on one GPU
    host_cpu_units: int  # what one host offers to tasks
    host_memory_mib: int  # what one host offers to tasks
    max_instances: int | None = None
    min_instances: int = 0
    registered_gpu_memory_mib: int = 0  # one GPU as ECS registers it (0: taken as the usable figure)
    gpu_margin_mib: int = 0
    gpu_memory_basis: str = "given"  # measured, table, fallback: how sure the ECS figure is
    gpu_memory_source: str = ""
    kind: str = EC2  # or MANAGED_INSTANCES
    instance_types: tuple[str, ...] = ()  # all allowed; the figures are the smallest's (``instance_type``)
    daemons: tuple[str, ...] = ()  # daemon services whose one task per host the host figures already leave out
    acknowledged: tuple[tuple[str, str], ...] = ()  # (warning id, reason) accepted for this capacity
    task_network_interfaces: int = 0  # awsvpc tasks one host takes (its interfaces less its own; 0: not limited)


@dataclass(frozen=True)
class ServiceInput:
    """What the planner needs of one service: its task's shape and its largest count of tasks."""

    name: str
    capacity: str
    shape: TaskShape
    tasks: int  # the largest count the service runs outside a deployment
    max_percent: int = ECS_DEFAULT_MAX_PERCENT  # the deployment's maximum percent, as the service states it
    count_source: str = "desired count"  # where ``tasks`` comes from, for the reader of a plan
    allocation: AllocationNote | None = None  # why the budget is what it is; its isolation group keeps it apart
    image: str | None = None  # the GPU container's image, when known (evidence names the image it was measured on)
    acknowledged: tuple[tuple[str, str], ...] = ()  # (warning id, reason) accepted for this service
    kept_apart: bool = False  # ECS is told to keep it off other isolation groups' hosts (memberOf task:group)
    placement: tuple[str, ...] = LIBRARY_STRATEGY  # its ECS placement strategies in order; () is ECS's default
    evidence: Evidence | None = None  # what was measured, for a service without an allocation note

    @property
    def measured(self) -> Evidence | None:
        """What was measured of the service: its note's evidence, or its own."""
        return self.allocation.evidence if self.allocation is not None and self.allocation.evidence else self.evidence

    @property
    def isolation_group(self) -> str:
        return self.allocation.isolation_group if self.allocation is not None else ""

    @property
    def isolate_host(self) -> bool:
        return self.allocation is not None and self.allocation.isolate_host

    @property
    def cpu_units(self) -> int:
        return self.shape.cpu_units

    @property
    def memory_mib(self) -> int:
        return self.shape.memory_mib

    @property
    def whole_gpus(self) -> int:
        return self.shape.whole_gpus

    @property
    def network_interfaces(self) -> int:
        return self.shape.network_interfaces

    @property
    def task_gpu_budget_mib(self) -> int:
        return self.shape.task_gpu_budget_mib

    @property
    def clients(self) -> int:
        return self.shape.clients

    def surge_count(self) -> int:
        """Tasks running at the peak of a rolling deployment: tasks x maximum percent / 100."""
        return self.tasks * self.max_percent // 100


Tasks = tuple[tuple[str, int], ...]  # (service, tasks of it)


@dataclass(frozen=True)
class GpuLoad:
    """What one GPU holds: some tasks of some services (MPS), or one task that holds it whole."""

    tasks: Tasks = ()
    used_gpu_memory_mib: int = 0
    clients: int = 0
    whole: bool = False

    @property
    def idle(self) -> bool:
        return not self.tasks


@dataclass
class InstanceGroup:
    """``count`` identical instances: their GPUs (idle ones included) and what their tasks take of the host."""

    count: int
    gpus: list[GpuLoad]
    cpu_units_used: int = 0
    memory_mib_used: int = 0
    tasks_without_gpu: Tasks = ()


@dataclass(frozen=True)
class Unplaced:
    service: str
    tasks: int
    reason: str


@dataclass
class CapacityPlan:
    capacity: CapacityInput
    instances: list[InstanceGroup]
    unplaced: list[Unplaced]
    instances_needed: int  # instances every placeable task needs, ignoring max_instances
    gpu_lower_bound: int
    instance_lower_bound: int
    whole_gpu_gpus: int  # GPUs these tasks would take with a whole GPU each

    @property
    def instance_count(self) -> int:
        return sum(g.count for g in self.instances)

    @property
    def gpus_used(self) -> int:
        return sum(g.count for g in self.instances for gpu in g.gpus if not gpu.idle)

    @property
    def used_gpu_memory_mib(self) -> int:
        return sum(g.count * gpu.used_gpu_memory_mib for g in self.instances for gpu in g.gpus)

    @property
    def fits(self) -> bool:
        return not self.unplaced

    @property
    def optimal(self) -> bool:
        """The plan uses as few instances as a lower bound allows: no plan can use fewer."""
        return self.fits and self.instance_count <= self.instance_lower_bound


@dataclass
class Plan:
    capacities: list[CapacityPlan]
    services: list[ServiceInput]
    placed: dict[str, int]
    counts: dict[str, int]  # tasks planned per service (largest count, or surge)

    @property
    def fits(self) -> bool:
        return all(c.fits for c in self.capacities)

    @property
    def instances(self) -> int:
        return sum(c.instance_count for c in self.capacities)

    @property
    def gpus(self) -> int:
        return sum(c.gpus_used for c in self.capacities)

    @property
    def gpu_lower_bound(self) -> int:
        return sum(c.gpu_lower_bound for c in self.capacities)

    @property
    def instance_lower_bound(self) -> int:
        return sum(c.instance_lower_bound for c in self.capacities)

    @property
    def whole_gpu_gpus(self) -> int:
        return sum(c.whole_gpu_gpus for c in self.capacities)

    def capacity(self, name: str) -> CapacityPlan:
        return next(c for c in self.capacities if c.capacity.name == name)

    def unplaced_of(self, service: str) -> list[Unplaced]:
        return [u for c in self.capacities for u in c.unplaced if u.service == service]


@dataclass(frozen=True)
class TaskProblem:
    """Why one task can never fit a host, and what to do about it."""

    rule_id: str
    what: str
    fix: str

    def __str__(self) -> str:
        return self.what


def _gpu_memory(service: ServiceInput, capacity: CapacityInput) -> str | None:
    if service.task_gpu_budget_mib <= capacity.usable_gpu_memory_mib:
        return None
    return (
        f"one task needs {service.task_gpu_budget_mib} MiB of GPU memory on one GPU, more than the "
        f"{capacity.usable_gpu_memory_mib} MiB usable on a {capacity.instance_type} GPU "
        f"({capacity.registered_gpu_memory_mib or capacity.usable_gpu_memory_mib} MiB as ECS registers it "
        f"({capacity.gpu_memory_basis}), less a {capacity.gpu_margin_mib} MiB margin)"
    )


def _clients(service: ServiceInput, capacity: CapacityInput) -> str | None:
    if service.clients <= MAX_CLIENTS_PER_GPU:
        return None
    return (
        f"one task has {service.clients} MPS containers, more than the {MAX_CLIENTS_PER_GPU} clients "
        "NVIDIA MPS accepts on one GPU"
    )


def _whole_gpus(service: ServiceInput, capacity: CapacityInput) -> str | None:
    if service.whole_gpus <= capacity.gpus_per_instance:
        return None
    return (
        f"one task holds {service.whole_gpus} whole GPUs, more than the {capacity.gpus_per_instance} "
        f"of a {capacity.instance_type}"
    )


def _host_cpu(service: ServiceInput, capacity: CapacityInput) -> str | None:
    if service.cpu_units <= capacity.host_cpu_units:
        return None
    return (
        f"one task needs {service.cpu_units} CPU units, more than the {capacity.host_cpu_units} "
        f"a {capacity.instance_type} offers to tasks"
    )


def _host_memory(service: ServiceInput, capacity: CapacityInput) -> str | None:
    if service.memory_mib <= capacity.host_memory_mib:
        return None
    return (
        f"one task needs {service.memory_mib} MiB of host memory, more than the "
        f"{capacity.host_memory_mib} MiB a {capacity.instance_type} offers to tasks"
    )


@dataclass(frozen=True)
class TaskRule:
    """A rule one task must meet on one host, whatever else runs there."""

    rule_id: str
    explanation: str
    fix: str
    check: Callable[[ServiceInput, CapacityInput], str | None]


TASK_RULES: tuple[TaskRule, ...] = (
    TaskRule(
        TASK_EXCEEDS_GPU_MEMORY,
        "a task's MPS containers all land on one GPU, so their budgets must fit one GPU's usable memory",
        "lower the GPU budgets, or move the service to a capacity with larger GPUs",
        _gpu_memory,
    ),
    TaskRule(
        TASK_EXCEEDS_MPS_CLIENTS,
        f"NVIDIA MPS accepts at most {MAX_CLIENTS_PER_GPU} clients per GPU; each MPS container is one at least",
        "split the containers over several task definitions",
        _clients,
    ),
    TaskRule(
        TASK_EXCEEDS_GPUS,
        "a task's whole GPUs must all be on one host",
        "use an instance type with more GPUs",
        _whole_gpus,
    ),
    TaskRule(
        TASK_EXCEEDS_HOST_CPU,
        "a task's CPU units must fit what one host offers to tasks",
        "lower the task's CPU, or use a larger instance type",
        _host_cpu,
    ),
    TaskRule(
        TASK_EXCEEDS_HOST_MEMORY,
        "a task's memory must fit what one host offers to tasks",
        "lower the task's memory, or use a larger instance type",
        _host_memory,
    ),
)


def task_problems(service: ServiceInput, capacity: CapacityInput) -> list[TaskProblem]:
    """Why one task of ``service`` can never fit a host of ``capacity`` (empty when it can)."""
    problems = []
    for rule in TASK_RULES:
        what = rule.check(service, capacity)
        if what is not None:
            problems.append(TaskProblem(rule.rule_id, what, rule.fix))
    return problems


def bin_lower_bound(sizes: dict[int, int], capacity: int) -> int:
    """A lower bound on the bins of ``capacity`` that items of ``sizes`` (size -> count) need.

    Martello and Toth's L2 bound, after rounding the capacity down to a multiple of the sizes' greatest
    common divisor (no bin can use the remainder).
    """
    items = sorted((size, n) for size, n in sizes.items() if n > 0)
    if not items:
        return 0
    g = 0
    for size, _ in items:
        g = math.gcd(g, size)
    cap = capacity - capacity % g
    total = sum(size * n for size, n in items)
    best = math.ceil(total / cap)
    thresholds = [0] + [size for size, _ in items if size * 2 <= cap]
    for k in thresholds:
        j1 = sum(n for size, n in items if size > cap - k)
        j2 = [(size, n) for size, n in items if cap - k >= size > cap / 2]
        j3 = sum(size * n for size, n in items if k <= size <= cap / 2)
        n2 = sum(n for _, n in j2)
        room2 = n2 * cap - sum(size * n for size, n in j2)
        best = max(best, j1 + n2 + max(0, math.ceil((j3 - room2) / cap)))
    return best


@dataclass
class _Item:
    """One service's MPS tasks still to place, with what one task takes."""

    name: str
    size: int  # GPU budget
    clients: int
    cpu: int
    mem: int
    left: int


def _greedy_fill(items: list[_Item], room: int, clients: int, cpu: int, mem: int, taken: dict[int, int]) -> int:
    """Adds tasks largest first while every limit holds; returns the GPU memory added."""
    used = 0
    for i, it in enumerate(items):
        avail = it.left - taken.get(i, 0)
        if avail <= 0 or it.size > room:
            continue
        k = min(avail, room // it.size, clients // it.clients)
        if it.cpu:
            k = min(k, cpu // it.cpu)
        if it.mem:
            k = min(k, mem // it.mem)
        if k > 0:
            taken[i] = taken.get(i, 0) + k
            room -= k * it.size
            clients -= k * it.clients
            cpu -= k * it.cpu
            mem -= k * it.mem
            used += k * it.size
    return used


def _exact_fill(items: list[_Item], room: int, taken: dict[int, int]) -> dict[int, int] | None:
    """The subset of remaining tasks that fills ``room`` of GPU memory best (bounded subset-sum on a bitset)."""
    candidates = [(i, it) for i, it in enumerate(items) if it.size <= room and it.left - taken.get(i, 0) > 0]
    if not candidates:
        return {}
    step = 0
    for _, it in candidates:
        step = math.gcd(step, it.size)
    cap = room // step
    mask = (1 << (cap + 1)) - 1
    reach = 1
    history: list[tuple[int, int, int]] = []  # (reach before, item index, copies) per binary chunk
    for i, it in candidates:
        avail = min(it.left - taken.get(i, 0), room // it.size)
        weight = it.size // step
        chunk = 1
        while avail > 0:
            k = min(chunk, avail)
            history.append((reach, i, k))
            reach = (reach | (reach << (weight * k))) & mask
            avail -= k
            chunk *= 2
    target = reach.bit_length() - 1
    chosen: dict[int, int] = {}
    for before, i, k in reversed(history):
        if not (before >> target) & 1:
            chosen[i] = chosen.get(i, 0) + k
            target -= k * (items[i].size // step)
    return chosen


def _limits_hold(items: list[_Item], contents: dict[int, int], cap: CapacityInput) -> bool:
    return (
        sum(items[i].clients * k for i, k in contents.items()) <= MAX_CLIENTS_PER_GPU
        and sum(items[i].cpu * k for i, k in contents.items()) <= cap.host_cpu_units
        and sum(items[i].mem * k for i, k in contents.items()) <= cap.host_memory_mib
    )


def _fill_greedy(items: list[_Item], first: int, cap: CapacityInput) -> dict[int, int]:
    """First-fit decreasing within the GPU: the largest remaining tasks that still fit, in order."""
    it = items[first]
    contents = {first: 1}
    _greedy_fill(
        items,
        cap.usable_gpu_memory_mib - it.size,
        MAX_CLIENTS_PER_GPU - it.clients,
        cap.host_cpu_units - it.cpu,
        cap.host_memory_mib - it.mem,
        contents,
    )
    return contents


def _fill_exact(items: list[_Item], first: int, cap: CapacityInput, partner: bool = False) -> dict[int, int]:
    """The GPU's memory filled as fully as the remaining tasks allow (after one largest partner, if asked);
    the greedy fill when that breaks a client, CPU or memory limit, or fills less."""
    contents = {first: 1}
    room = cap.usable_gpu_memory_mib - items[first].size
    if partner:
        for i, other in enumerate(items):
            if other.size <= room and other.left - contents.get(i, 0) > 0:
                contents[i] = contents.get(i, 0) + 1
                room -= other.size
                break
    for i, k in (_exact_fill(items, room, contents) or {}).items():
        contents[i] = contents.get(i, 0) + k
    greedy = _fill_greedy(items, first, cap)
    used = sum(items[i].size * k for i, k in contents.items())
    if _limits_hold(items, contents, cap) and used > sum(items[i].size * k for i, k in greedy.items()):
        return contents
    return greedy


def _fill_paired(items: list[_Item], first: int, cap: CapacityInput) -> dict[int, int]:
    """A task larger than half a GPU takes its largest partner first; smaller ones fill exactly."""
    big = items[first].size * 2 > cap.usable_gpu_memory_mib
    return _fill_exact(items, first, cap, partner=big)


# Each GPU-filling strategy packs well on some workloads and less well on others; the plan keeps the best.
_FILLS: tuple[Callable[[list[_Item], int, CapacityInput], dict[int, int]], ...] = (
    _fill_exact,
    _fill_greedy,
    _fill_paired,
)


def _pack_gpus(
    items: list[_Item], cap: CapacityInput, fill: Callable[[list[_Item], int, CapacityInput], dict[int, int]]
) -> list[tuple[GpuLoad, int, int, int]]:
    """Stage 1: MPS tasks onto GPUs, as (GPU contents, CPU units, memory, how many such GPUs)."""
    groups = []
    items = sorted((replace(it) for it in items), key=lambda it: (-it.size, -it.cpu, -it.mem, it.name))
    first = 0
    while first < len(items):
        if items[first].left == 0:
            first += 1
            continue
        contents = fill(items, first, cap)
        repeat = min(items[i].left // k for i, k in contents.items())
        for i, k in contents.items():
            items[i].left -= k * repeat
        order = sorted(contents.items())
        load = GpuLoad(
            tasks=tuple((items[i].name, k) for i, k in order),
            used_gpu_memory_mib=sum(items[i].size * k for i, k in order),
            clients=sum(items[i].clients * k for i, k in order),
        )
        groups.append((load, sum(items[i].cpu * k for i, k in order), sum(items[i].mem * k for i, k in order), repeat))
    return groups


@dataclass
class _Unit:
    """Stage 2's item: something that takes GPU slots, CPU and memory on one host, ``count`` times."""

    gpus: list[GpuLoad]  # the GPU slots it takes (empty for a task without a GPU)
    cpu: int
    mem: int
    count: int
    without_gpu: Tasks = ()
    enis: int = 0  # the network interfaces its awsvpc tasks take


@dataclass
class _Host:
    count: int
    gpus: list[GpuLoad]
    cpu: int = 0
    mem: int = 0
    without_gpu: dict[str, int] = field(default_factory=dict)
    enis: int = 0


def _copies(host: _Host, unit: _Unit, cap: CapacityInput) -> int:
    """How many copies of ``unit`` one host of ``host``'s kind still takes."""
    k = (cap.gpus_per_instance - len(host.gpus)) // len(unit.gpus) if unit.gpus else unit.count
    if unit.cpu:
        k = min(k, (cap.host_cpu_units - host.cpu) // unit.cpu)
    if unit.mem:
        k = min(k, (cap.host_memory_mib - host.mem) // unit.mem)
    if unit.enis:
        k = min(k, (_eni_room(cap) - host.enis) // unit.enis)
    return max(k, 0)


def _add(host: _Host, unit: _Unit, k: int) -> None:
    host.gpus.extend(unit.gpus * k)
    host.cpu += unit.cpu * k
    host.mem += unit.mem * k
    host.enis += unit.enis * k
    for name, n in unit.without_gpu:
        host.without_gpu[name] = host.without_gpu.get(name, 0) + n * k


def _pack_hosts(units: list[_Unit], cap: CapacityInput) -> list[_Host]:
    """Stage 2: first-fit decreasing onto hosts, in groups of identical hosts."""
    hosts: list[_Host] = []
    g = cap.gpus_per_instance

    def weight(u: _Unit) -> tuple[float, int]:
        share = max(len(u.gpus) / g, u.cpu / cap.host_cpu_units, u.mem / cap.host_memory_mib, u.enis / _eni_room(cap))
        return (share, u.cpu + u.mem)

    for unit in sorted(units, key=weight, reverse=True):
        n = unit.count
        at = 0
        while n and at < len(hosts):
            host = hosts[at]
            k = _copies(host, unit, cap)
            if not k:
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
                    twin = _Host(count, list(host.gpus), host.cpu, host.mem, dict(host.without_gpu), host.enis)
                    _add(twin, unit, copies)
                    split.append(twin)
            host.count -= full + (1 if rest else 0)
            hosts[at:at] = split
            n = 0
        if n:
            per_host = _copies(_Host(1, []), unit, cap)
            full, rest = divmod(n, per_host)
            for count, copies in ((full, per_host), (1 if rest else 0, rest)):
                if count:
                    group = _Host(count, [])
                    _add(group, unit, copies)
                    hosts.append(group)
        hosts = [h for h in hosts if h.count]
    return hosts


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


UNLIMITED = 1 << 62


def _eni_room(capacity: CapacityInput) -> int:
    """The awsvpc tasks one host takes (its network interfaces less its own); unlimited where not known."""
    return capacity.task_network_interfaces or UNLIMITED


def _normalized(s: ServiceInput, capacity: CapacityInput) -> tuple[float, float, float]:
    """One task's share of a GPU's memory, a host's CPU and a host's memory."""
    return (
        s.task_gpu_budget_mib / capacity.usable_gpu_memory_mib,
        s.cpu_units / capacity.host_cpu_units,
        s.memory_mib / capacity.host_memory_mib,
    )


def _ffd_hosts(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], ordering: str = "gpu"
) -> list[_Host]:
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
        tasks.sort(key=lambda t: (-t[0].whole_gpus, -pick(_normalized(t[0], capacity)), t[0].name))
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
        eni_left.append(_eni_room(capacity))
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
    hosts: dict[tuple[Any, ...], _Host] = {}
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
        enis = _eni_room(capacity) - eni_left[h]
        key = (tuple(loads), cpu, mem, tuple(sorted(without[h].items())))
        if key in hosts:
            hosts[key].count += 1
        else:
            hosts[key] = _Host(1, list(loads), cpu, mem, dict(without[h]), enis)
    return list(hosts.values())


def _lp_solution(items: list[_Item], cap: CapacityInput) -> cutting_stock.Solution | None:
    """The cutting-stock LP over the MPS tasks' sizes (services of one size and client count taken together)."""
    demand: dict[tuple[int, int], int] = {}
    for it in items:
        demand[(it.size, it.clients)] = demand.get((it.size, it.clients), 0) + it.left
    keys = sorted(demand)
    return cutting_stock.solve(
        [s for s, _ in keys],
        [c for _, c in keys],
        [demand[k] for k in keys],
        cap.usable_gpu_memory_mib,
        MAX_CLIENTS_PER_GPU,
    )


def _pack_gpus_lp(
    items: list[_Item], cap: CapacityInput, solution: cutting_stock.Solution
) -> list[tuple[GpuLoad, int, int, int]] | None:
    """Stage 1 guided by the LP: its patterns, rounded down, filled with services of each size; the rest by the
    exact fill. ``None`` when a GPU so filled would break a host's CPU or memory (the other fills handle that)."""
    items = sorted((replace(it) for it in items), key=lambda it: (-it.size, -it.cpu, -it.mem, it.name))
    keys = sorted({(it.size, it.clients) for it in items})
    by_key = {k: [i for i, it in enumerate(items) if (it.size, it.clients) == k] for k in keys}
    groups: list[tuple[GpuLoad, int, int, int]] = []
    for pattern, value in sorted(solution.patterns, key=lambda p: (-p[1], p[0])):
        copies = int(value + 1e-9)
        while copies > 0:
            contents: dict[int, int] = {}
            repeat = copies
            for key, k in zip(keys, pattern, strict=True):
                if not k:
                    continue
                # The service of this size with the most tasks left fills the slots; a GPU may mix services.
                need = k
                for i in sorted(by_key[key], key=lambda i: -items[i].left):
                    if need == 0:
                        break
                    take = min(need, items[i].left - contents.get(i, 0))
                    if take > 0:
                        contents[i] = contents.get(i, 0) + take
                        need -= take
                if need:
                    repeat = 0
                    break
            if not repeat or not contents:
                break
            if not _limits_hold(items, contents, cap):
                return None
            repeat = min(repeat, *(items[i].left // k for i, k in contents.items()))
            for i, k in contents.items():
                items[i].left -= k * repeat
            order = sorted(contents.items())
            load = GpuLoad(
                tasks=tuple((items[i].name, k) for i, k in order),
                used_gpu_memory_mib=sum(items[i].size * k for i, k in order),
                clients=sum(items[i].clients * k for i, k in order),
            )
            groups.append(
                (load, sum(items[i].cpu * k for i, k in order), sum(items[i].mem * k for i, k in order), repeat)
            )
            copies -= repeat
    return groups + _pack_gpus([it for it in items if it.left], cap, _fill_exact)


def _size(hosts: list[_Host]) -> tuple[int, int]:
    """Instances, then busy GPUs: what a better plan has fewer of."""
    return sum(h.count for h in hosts), sum(h.count * len(h.gpus) for h in hosts)


def _lower_bounds(
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
    gpu_lb = whole + max(
        bin_lower_bound(sizes, capacity.usable_gpu_memory_mib), math.ceil(clients / MAX_CLIENTS_PER_GPU), lp_bound
    )
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
        math.ceil(sum(s.network_interfaces * n for s, n in tasks) / _eni_room(capacity)),
    )
    shapes = {s.shape for s, n in tasks if n}
    if len(shapes) == 1:
        # One task shape: no host holds more than per_host of them, so the count over it is a bound too.
        (shape,) = shapes
        per_host = _per_host(shape, capacity)
        host_lb = max(host_lb, math.ceil(sum(n for _, n in tasks) / per_host))
    return gpu_lb, host_lb


def _per_host(shape: TaskShape, cap: CapacityInput) -> int:
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
        k = min(k, _eni_room(cap) // shape.network_interfaces)
    return max(k, 1)


def _plan_capacity(capacity: CapacityInput, tasks: Sequence[tuple[ServiceInput, int]]) -> CapacityPlan:
    unplaced: list[Unplaced] = []
    fitting = []
    for service, count in tasks:
        problems = task_problems(service, capacity)
        if problems and count:
            unplaced.append(Unplaced(service.name, count, "; ".join(map(str, problems))))
        elif count:
            fitting.append((service, count))
    best: list[_Host] = []
    lp_bound = 0
    partition_hosts = 0  # the partitions' own host bounds added up: no host holds two partitions
    for partition in _partitions(fitting):
        hosts, bound, host_bound = _pack_partition(capacity, partition)
        best.extend(hosts)
        lp_bound += bound
        partition_hosts += host_bound
    groups = [
        InstanceGroup(
            count=h.count,
            gpus=h.gpus + [GpuLoad()] * (capacity.gpus_per_instance - len(h.gpus)),
            cpu_units_used=h.cpu,
            memory_mib_used=h.mem,
            tasks_without_gpu=tuple(sorted(h.without_gpu.items())),
        )
        for h in best
    ]
    needed = sum(g.count for g in groups)
    if capacity.max_instances is not None and needed > capacity.max_instances:
        groups, over = _keep(groups, capacity.max_instances, {s.name: s.whole_gpus for s, _ in fitting if s.whole_gpus})
        unplaced.extend(
            Unplaced(name, n, f"no room within max_instances={capacity.max_instances}") for name, n in over.items()
        )
    gpu_lb, host_lb = _lower_bounds(capacity, fitting, lp_bound)
    host_lb = max(host_lb, partition_hosts)
    whole_gpu = sum(max(s.whole_gpus, 1 if s.clients else 0) * n for s, n in fitting)
    return CapacityPlan(
        capacity=capacity,
        instances=groups,
        unplaced=sorted(unplaced, key=lambda u: (u.service, u.reason)),
        instances_needed=needed,
        gpu_lower_bound=gpu_lb,
        instance_lower_bound=host_lb,
        whole_gpu_gpus=whole_gpu,
    )


def _partitions(fitting: list[tuple[ServiceInput, int]]) -> list[list[list[tuple[ServiceInput, int]]]]:
    """The tasks as host partitions (no host holds two), each a list of isolation groups (no GPU holds two): a
    host-isolated group is a partition of its own; the other groups share hosts, on GPUs of their own."""
    by_group: dict[str, list[tuple[ServiceInput, int]]] = {}
    for s, n in fitting:
        by_group.setdefault(s.isolation_group, []).append((s, n))
    alone = [[g] for name, g in sorted(by_group.items()) if any(s.isolate_host for s, _ in g)]
    shared = [g for name, g in sorted(by_group.items()) if not any(s.isolate_host for s, _ in g)]
    return alone + ([shared] if shared else [])


def _pack_partition(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]]
) -> tuple[list[_Host], int, int]:
    """Hosts for tasks that may share hosts, each isolation group on GPUs of its own; the GPU cutting-stock LP's bound
    on the GPUs of their MPS tasks (0 where it was not run); and a bound on their hosts."""
    best, gpu_bound = _pack_staged(capacity, groups)
    flat = [pair for group in groups for pair in group]
    host_bound = _lower_bounds(capacity, flat)[1]
    if _size(best)[0] > host_bound and sum(n for _, n in flat) <= HOST_LP_TASKS:
        planned, lp_bound = _pack_host_lp(capacity, groups, _size(best)[0])
        host_bound = max(host_bound, lp_bound)
        if planned is not None and _size(planned) < _size(best):
            best = planned
    # A small fleet: search for a placement on fewer hosts, one fewer at a time, within a budget of steps.
    while _size(best)[0] > host_bound and (fewer := _search_hosts(capacity, groups, _size(best)[0] - 1)) is not None:
        best = fewer
    return best, gpu_bound, host_bound


HOST_LP_TASKS = (
    20_000  # a partition of at most this many tasks gets the host-level LP (when its plan is above its bound)
)


def _pack_host_lp(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], beat: int
) -> tuple[list[_Host] | None, int]:
    """Hosts from the host-level cutting-stock LP's patterns, the rest by first-fit decreasing (None where the LP
    cannot beat ``beat`` hosts); and the LP's bound."""
    pairs = [(s, n) for group in groups for s, n in group if n]
    items, spec = lp_problem(capacity, pairs)
    solution = host_lp.solve(items, spec, beat=beat)
    if not solution.hosts:
        return None, solution.bound
    hosts = [_lp_host(p, k, pairs) for p, k in solution.hosts]
    left = {s.name: n for (s, _), n in zip(pairs, solution.rest, strict=True)}
    rest = [[(s, left[s.name]) for s, _ in group if left.get(s.name)] for group in groups]
    rest = [group for group in rest if group]
    if rest:
        packed = [_ffd_hosts(capacity, rest, order) for order in _ffd_orders(capacity, rest)]
        hosts += sorted(packed, key=_size)[0]
    return hosts, solution.bound


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
        _eni_room(capacity),
    )
    return items, spec


def _lp_host(p: host_lp.Pattern, count: int, pairs: list[tuple[ServiceInput, int]]) -> _Host:
    """One of the LP's patterns as ``count`` identical hosts."""
    services = [s for s, _ in pairs]
    gpus = []
    for tasks, whole in p.gpus:
        named = tuple(sorted((services[i].name, k) for i, k in tasks))
        if whole:
            gpus.append(GpuLoad(tasks=named, whole=True))
        else:
            gpus.append(
                GpuLoad(
                    tasks=named,
                    used_gpu_memory_mib=sum(services[i].task_gpu_budget_mib * k for i, k in tasks),
                    clients=sum(services[i].clients * k for i, k in tasks),
                )
            )
    return _Host(
        count,
        gpus,
        cpu=sum(services[i].cpu_units * a for i, a in enumerate(p.counts)),
        mem=sum(services[i].memory_mib * a for i, a in enumerate(p.counts)),
        without_gpu={services[i].name: k for i, k in p.no_gpu},
        enis=sum(services[i].network_interfaces * a for i, a in enumerate(p.counts)),
    )


def _pack_staged(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]]) -> tuple[list[_Host], int]:
    """The staged packings (GPUs filled, then hosts) and first-fit decreasing over GPUs and hosts: the plan with the
    fewest hosts; and the GPU cutting-stock LP's bound on the MPS tasks' GPUs (0 where it was not run)."""
    candidates: list[list[list[tuple[GpuLoad, int, int, int]]]] = []
    others: list[_Unit] = []
    bound = 0
    enis = {s.name: s.network_interfaces for group in groups for s, _ in group}
    room = _eni_room(capacity)

    def load_enis(load: GpuLoad) -> int:
        return sum(enis[name] * k for name, k in load.tasks)

    for group in groups:
        items = [
            _Item(s.name, s.task_gpu_budget_mib, s.clients, s.cpu_units, s.memory_mib, n)
            for s, n in group
            if s.clients and not s.whole_gpus
        ]
        for s, n in group:
            if s.whole_gpus:
                load = GpuLoad(tasks=((s.name, 1),), whole=True)
                others.append(_Unit([load] * s.whole_gpus, s.cpu_units, s.memory_mib, n, enis=s.network_interfaces))
            elif not s.clients:
                others.append(
                    _Unit([], s.cpu_units, s.memory_mib, n, without_gpu=((s.name, 1),), enis=s.network_interfaces)
                )
        if not items:
            continue
        solution = _lp_solution(items, capacity)
        packed = [_pack_gpus(items, capacity, fill) for fill in _FILLS]
        if solution is not None and solution.patterns:
            bound += solution.bound
            guided = _pack_gpus_lp(items, capacity, solution)
            if guided is not None:
                packed.append(guided)
        candidates.append(packed)
    best: list[_Host] | None = None
    # Strategy i packs every group with its i-th way (its last, where it has fewer), then the hosts.
    for i in range(max((len(c) for c in candidates), default=1)):
        gpus = [
            _Unit([load], cpu, mem, count, enis=load_enis(load))
            for packed in candidates
            for load, cpu, mem, count in packed[min(i, len(packed) - 1)]
        ]
        if any(u.enis > room for u in gpus):
            continue  # a GPU filled with more awsvpc tasks than a host has interfaces for: FFD places them
        hosts = _pack_hosts(gpus + others, capacity)
        if best is None or _size(hosts) < _size(best):
            best = hosts
    # Tasks first-fit onto GPUs and hosts together: better where host CPU or memory binds. It builds hosts one by
    # one, so past small fleets it runs only where host CPU or memory binds (the staged plan groups identical hosts
    # and answers in time where GPU memory binds, as for a million small tasks).
    if best is None or _ffd_may_help(capacity, groups, _size(best)[0]) or _enis_may_bind(capacity, groups):
        for ordering in _ffd_orders(capacity, groups):
            ffd = _ffd_hosts(capacity, groups, ordering)
            if best is None or _size(ffd) < _size(best):
                best = ffd
    # A small fleet: search for a placement on fewer hosts, one fewer at a time, within a budget of steps.
    assert best is not None
    while (fewer := _search_hosts(capacity, groups, _size(best)[0] - 1)) is not None:
        best = fewer
    return best, bound


def _enis_may_bind(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]]) -> bool:
    """Whether the hosts' network interfaces can limit the plan: awsvpc tasks on a type whose count is known."""
    return bool(capacity.task_network_interfaces) and any(s.network_interfaces for g in groups for s, _ in g)


SEARCH_TASKS = 40  # fleets of at most this many tasks (one isolation group, no whole GPUs) get the exact search
SEARCH_STEPS = 20_000  # placements the search tries before it gives up (the plan found so far stands)


def _search_hosts(
    capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], hosts: int
) -> list[_Host] | None:
    """A placement of a small fleet's tasks on at most ``hosts`` hosts, by depth-first search with symmetry cuts
    (identical tasks go in order; of the idle GPUs of a host only the first is tried; a new host is one choice), or
    ``None`` when there is none or the search ran out of steps. Where host CPU, host memory and GPU memory all bind,
    first-fit in any order can miss a packing a person would see (two tasks that only fit together)."""
    pairs = [(s, n) for group in groups for s, n in group if n]
    if hosts < 1 or len(groups) != 1 or sum(n for _, n in pairs) > SEARCH_TASKS or any(s.whole_gpus for s, _ in pairs):
        return None
    if sum(s.cpu_units * n for s, n in pairs) > hosts * capacity.host_cpu_units:
        return None
    if sum(s.memory_mib * n for s, n in pairs) > hosts * capacity.host_memory_mib:
        return None
    gpus_held = hosts * capacity.gpus_per_instance
    if sum(s.task_gpu_budget_mib * n for s, n in pairs) > gpus_held * capacity.usable_gpu_memory_mib:
        return None  # fewer hosts than GPU memory alone needs: nothing to search
    tasks = sorted((s for s, n in pairs for _ in range(n)), key=lambda s: (-max(_normalized(s, capacity)), s.name))
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
            eni.append(_eni_room(capacity))
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
    out: dict[tuple[object, ...], _Host] = {}
    for h in range(len(cpu)):
        loads = [
            GpuLoad(
                tasks=tuple(sorted(held[h][gpu].items())),
                used_gpu_memory_mib=capacity.usable_gpu_memory_mib - room[h][gpu],
                clients=MAX_CLIENTS_PER_GPU - clients[h][gpu],
            )
            for gpu in range(g)
            if held[h][gpu]
        ]
        used_cpu, used_mem = capacity.host_cpu_units - cpu[h], capacity.host_memory_mib - mem[h]
        key = (tuple(loads), used_cpu, used_mem, tuple(sorted(without[h].items())))
        if key in out:
            out[key].count += 1
        else:
            out[key] = _Host(1, loads, used_cpu, used_mem, dict(without[h]), _eni_room(capacity) - eni[h])
    return list(out.values())


def _ffd_orders(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]]) -> list[str]:
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


def _ffd_may_help(capacity: CapacityInput, groups: list[list[tuple[ServiceInput, int]]], staged: int) -> bool:
    """Whether to run FFD as well: always for up to FFD_ALWAYS_TASKS tasks (it is cheap there); for more, where host
    CPU or memory nearly binds (what stages 1 and 2 pack worst)."""
    pairs = [(s, n) for group in groups for s, n in group]
    if sum(n for _, n in pairs) <= FFD_ALWAYS_TASKS:
        return True
    cpu = math.ceil(sum(s.cpu_units * n for s, n in pairs) / capacity.host_cpu_units)
    mem = math.ceil(sum(s.memory_mib * n for s, n in pairs) / capacity.host_memory_mib)
    return max(cpu, mem) * 10 >= staged * 9


def _keep(groups: list[InstanceGroup], limit: int, whole: dict[str, int]) -> tuple[list[InstanceGroup], dict[str, int]]:
    """The first ``limit`` instances, and the tasks of the rest, per service (``whole``: GPUs per whole-GPU task)."""
    kept: list[InstanceGroup] = []
    over: dict[str, int] = {}
    room = limit
    for g in groups:
        stay = min(g.count, room)
        room -= stay
        if stay:
            kept.append(InstanceGroup(stay, g.gpus, g.cpu_units_used, g.memory_mib_used, g.tasks_without_gpu))
        gone = g.count - stay
        if not gone:
            continue
        on_host: dict[str, int] = dict(g.tasks_without_gpu)
        for gpu in g.gpus:
            for name, n in gpu.tasks:
                on_host[name] = on_host.get(name, 0) + n
        for name, n in on_host.items():
            over[name] = over.get(name, 0) + n // whole.get(name, 1) * gone
    return kept, over


def plan(capacities: Iterable[CapacityInput], services: Iterable[ServiceInput], *, surge: bool = False) -> Plan:
    """Places every task of ``services`` (largest counts, or the deployment surge) on ``capacities``."""
    caps = sorted(capacities, key=lambda c: c.name)
    svcs = sorted(services, key=lambda s: s.name)
    names = {c.name for c in caps}
    for s in svcs:
        if s.capacity not in names:
            raise PlanError(
                f"service {s.name!r} names capacity {s.capacity!r}, which is not among the planned capacities "
                f"({', '.join(sorted(names))}); plan the capacity too"
            )
    counts = {s.name: s.surge_count() if surge else s.tasks for s in svcs}
    results = [_plan_capacity(cap, [(s, counts[s.name]) for s in svcs if s.capacity == cap.name]) for cap in caps]
    placed = dict(counts)
    for c in results:
        for u in c.unplaced:
            placed[u.service] -= u.tasks
    return Plan(capacities=results, services=svcs, placed=placed, counts=counts)
