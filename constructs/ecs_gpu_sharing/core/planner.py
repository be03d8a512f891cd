"""The fit planner: a placement of a fleet's tasks on GPU hosts that ECS could realise. Pure Python.

Rules (ECS GPU sharing: a task's MPS containers land on one GPU, ECS places by GPU memory only; NVIDIA MPS: 48
clients per GPU): a task's MPS containers share one GPU; a GPU holds MPS tasks or whole-GPU tasks, never
both; per GPU the MPS memory stays within the usable memory and the MPS clients (containers) within NVIDIA's
48; per host the tasks' CPU units and memory stay within what the host offers to tasks.

The plan proves that a placement exists and estimates capacity; it is not where ECS will put tasks (ECS places
by its own strategy, task by task). It packs best-fit decreasing: tasks by GPU memory, largest first, each onto
the open GPU with the least room that still takes it, else onto an idle GPU of an open host, else onto a new
host. Ties break on names, so the same input always gives the same plan.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from .capacity_facts import HostFacts
from .errors import PlanError
from .mps import MAX_CLIENTS_PER_GPU
from .shape import TaskShape

# How many open GPUs a task tries (smallest room first) before it opens a new one: bounds the work per task.
_SCAN_LIMIT = 48


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
    ecs_gpu_memory_mib: int = 0  # one GPU as ECS registers it (0: taken as the usable figure)
    gpu_margin_mib: int = 0
    gpu_memory_basis: str = "given"  # measured, table, fallback: how sure the ECS figure is
    gpu_memory_source: str = ""

    @classmethod
    def from_facts(
        cls, name: str, facts: HostFacts, max_instances: int | None = None, min_instances: int = 0
    ) -> CapacityInput:
        return cls(
            name=name,
            instance_type=facts.instance_type,
            gpus_per_instance=facts.gpus_per_instance,
            ec2_gpu_memory_mib=facts.ec2_gpu_memory_mib,
            usable_gpu_memory_mib=facts.usable_gpu_memory_mib,
            host_cpu_units=facts.host_cpu_units,
            host_memory_mib=facts.host_memory_mib,
            max_instances=max_instances,
            min_instances=min_instances,
            ecs_gpu_memory_mib=facts.gpu_memory.ecs_mib,
            gpu_margin_mib=facts.gpu_memory.margin_mib,
            gpu_memory_basis=str(facts.gpu_memory.basis),
            gpu_memory_source=facts.gpu_memory.source,
        )


@dataclass(frozen=True)
class ServiceInput:
    """What the planner needs of one service: its task's shape and its largest count of tasks."""

    name: str
    capacity: str
    shape: TaskShape
    tasks: int  # the largest count the service runs outside a deployment
    max_percent: int = 200  # the deployment's maximum percent, as the service states it
    count_source: str = "desired count"  # where ``tasks`` comes from, for the reader of a plan

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
    def task_gpu_budget_mib(self) -> int:
        return self.shape.task_gpu_budget_mib

    @property
    def clients(self) -> int:
        return self.shape.clients

    def surge_count(self) -> int:
        """Tasks running at the peak of a rolling deployment: tasks x maximum percent / 100."""
        return self.tasks * self.max_percent // 100


@dataclass
class PlacedTask:
    service: str
    replica: int
    gpu_budget_mib: int  # the task's GPU budget (0 for a task without MPS containers)
    containers: int


@dataclass
class GpuPlan:
    tasks: list[PlacedTask] = field(default_factory=list)
    used_gpu_memory_mib: int = 0
    whole: bool = False  # held whole by one task

    @property
    def clients(self) -> int:
        return sum(t.containers for t in self.tasks)


@dataclass
class InstancePlan:
    gpus: list[GpuPlan]
    cpu_units_used: int = 0
    memory_mib_used: int = 0
    tasks_without_gpu: list[PlacedTask] = field(default_factory=list)


@dataclass(frozen=True)
class Unplaced:
    service: str
    replica: int
    reason: str


@dataclass
class CapacityPlan:
    capacity: CapacityInput
    instances: list[InstancePlan]
    unplaced: list[Unplaced]
    instances_needed: int  # hosts the placed and unplaceable-by-bound tasks need, ignoring max_instances
    gpu_lower_bound: int
    instance_lower_bound: int
    whole_gpu_gpus: int  # GPUs these tasks would take with a whole GPU each

    @property
    def gpus_used(self) -> int:
        return sum(1 for host in self.instances for gpu in host.gpus if gpu.tasks)

    @property
    def used_gpu_memory_mib(self) -> int:
        return sum(gpu.used_gpu_memory_mib for host in self.instances for gpu in host.gpus)

    @property
    def fits(self) -> bool:
        return not self.unplaced


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
        return sum(len(c.instances) for c in self.capacities)

    @property
    def gpus(self) -> int:
        return sum(c.gpus_used for c in self.capacities)

    @property
    def gpu_lower_bound(self) -> int:
        return sum(c.gpu_lower_bound for c in self.capacities)

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
        f"({capacity.ecs_gpu_memory_mib or capacity.usable_gpu_memory_mib} MiB as ECS registers it "
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
        "ecs-gpu-sharing:TaskExceedsGpuMemory",
        "a task's MPS containers all land on one GPU, so their budgets must fit one GPU's usable memory",
        "lower the GPU budgets, or move the service to a capacity with larger GPUs",
        _gpu_memory,
    ),
    TaskRule(
        "ecs-gpu-sharing:TaskExceedsMpsClients",
        f"NVIDIA MPS accepts at most {MAX_CLIENTS_PER_GPU} clients per GPU; each MPS container is one at least",
        "split the containers over several task definitions",
        _clients,
    ),
    TaskRule(
        "ecs-gpu-sharing:TaskExceedsGpus",
        "a task's whole GPUs must all be on one host",
        "use an instance type with more GPUs",
        _whole_gpus,
    ),
    TaskRule(
        "ecs-gpu-sharing:TaskExceedsHostCpu",
        "a task's CPU units must fit what one host offers to tasks",
        "lower the task's CPU, or use a larger instance type",
        _host_cpu,
    ),
    TaskRule(
        "ecs-gpu-sharing:TaskExceedsHostMemory",
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


class _Packer:
    """Best-fit-decreasing state for one capacity."""

    def __init__(self, capacity: CapacityInput, min_gpu_need: int, min_cpu: int, min_mem: int) -> None:
        self.cap = capacity
        self.hosts: list[InstancePlan] = []
        self.host_cpu: list[int] = []  # room left
        self.host_mem: list[int] = []
        self.host_idle: list[list[int]] = []  # idle GPU indexes per host
        self.gpu_host: list[int] = []
        self.gpu_room: list[int] = []
        self.gpu_clients: list[int] = []
        self.gpu_plans: list[GpuPlan] = []
        self.open: list[tuple[int, int]] = []  # (room, gpu id), sorted
        self.hosts_with_idle: list[int] = []  # hosts that still have an idle GPU, in opening order
        self.min_gpu_need, self.min_cpu, self.min_mem = min_gpu_need, min_cpu, min_mem

    def _new_host(self) -> int:
        h = len(self.hosts)
        gpus = [GpuPlan() for _ in range(self.cap.gpus_per_instance)]
        self.hosts.append(InstancePlan(gpus=gpus))
        self.host_cpu.append(self.cap.host_cpu_units)
        self.host_mem.append(self.cap.host_memory_mib)
        first = len(self.gpu_plans)
        for plan in gpus:
            self.gpu_plans.append(plan)
            self.gpu_host.append(h)
            self.gpu_room.append(self.cap.usable_gpu_memory_mib)
            self.gpu_clients.append(0)
        self.host_idle.append(list(range(first + len(gpus) - 1, first - 1, -1)))  # pop() gives lowest first
        self.hosts_with_idle.append(h)
        return h

    def _host_takes(self, h: int, cpu: int, mem: int) -> bool:
        return self.host_cpu[h] >= cpu and self.host_mem[h] >= mem

    def _charge_host(self, h: int, cpu: int, mem: int) -> None:
        self.host_cpu[h] -= cpu
        self.host_mem[h] -= mem
        self.hosts[h].cpu_units_used += cpu
        self.hosts[h].memory_mib_used += mem
        if self.host_cpu[h] < self.min_cpu or self.host_mem[h] < self.min_mem:
            self._close_host(h)

    def _close_host(self, h: int) -> None:
        # The host cannot take even the smallest task: its GPUs leave the open list.
        for gid in self._gpus_of(h):
            key = (self.gpu_room[gid], gid)
            i = bisect_left(self.open, key)
            if i < len(self.open) and self.open[i] == key:
                del self.open[i]
        self.host_idle[h].clear()

    def _gpus_of(self, h: int) -> range:
        start = h * self.cap.gpus_per_instance
        return range(start, start + self.cap.gpus_per_instance)

    def _idle_gpu(self, cpu: int, mem: int, count: int = 1) -> list[int] | None:
        """``count`` idle GPUs on one open host that has room, else on a new host."""
        kept = []
        found = None
        for h in self.hosts_with_idle:
            if found is None and len(self.host_idle[h]) >= count and self._host_takes(h, cpu, mem):
                found = [self.host_idle[h].pop() for _ in range(count)]
            if self.host_idle[h]:
                kept.append(h)
        self.hosts_with_idle = kept
        if found is not None:
            return found
        if self.cap.max_instances is not None and len(self.hosts) >= self.cap.max_instances:
            return None
        h = self._new_host()
        gids = [self.host_idle[h].pop() for _ in range(count)]
        if not self.host_idle[h]:
            self.hosts_with_idle.remove(h)
        return gids

    def place_mps(self, task: PlacedTask, cpu: int, mem: int) -> bool:
        need, clients = task.gpu_budget_mib, task.containers
        i = bisect_left(self.open, (need, -1))
        tried = 0
        gid = None
        while i < len(self.open) and tried < _SCAN_LIMIT:
            _, candidate = self.open[i]
            if self.gpu_clients[candidate] + clients <= MAX_CLIENTS_PER_GPU and self._host_takes(
                self.gpu_host[candidate], cpu, mem
            ):
                gid = candidate
                del self.open[i]
                break
            i += 1
            tried += 1
        if gid is None:
            idle = self._idle_gpu(cpu, mem)
            if idle is None:
                return False
            gid = idle[0]
        self.gpu_room[gid] -= need
        self.gpu_clients[gid] += clients
        plan = self.gpu_plans[gid]
        plan.tasks.append(task)
        plan.used_gpu_memory_mib += need
        h = self.gpu_host[gid]
        if self.gpu_room[gid] >= self.min_gpu_need and self.gpu_clients[gid] < MAX_CLIENTS_PER_GPU:
            insort(self.open, (self.gpu_room[gid], gid))
        self._charge_host(h, cpu, mem)
        return True

    def place_whole(self, task: PlacedTask, gpus: int, cpu: int, mem: int) -> bool:
        idle = self._idle_gpu(cpu, mem, gpus)
        if idle is None:
            return False
        for gid in idle:
            self.gpu_plans[gid].tasks.append(task)
            self.gpu_plans[gid].whole = True
            self.gpu_room[gid] = 0
        self._charge_host(self.gpu_host[idle[0]], cpu, mem)
        return True

    def place_cpu_only(self, task: PlacedTask, cpu: int, mem: int) -> bool:
        for h in range(len(self.hosts)):
            if self._host_takes(h, cpu, mem):
                break
        else:
            if self.cap.max_instances is not None and len(self.hosts) >= self.cap.max_instances:
                return False
            h = self._new_host()
        self.hosts[h].tasks_without_gpu.append(task)
        self._charge_host(h, cpu, mem)
        return True


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


def _lower_bounds(capacity: CapacityInput, tasks: Sequence[tuple[ServiceInput, int]]) -> tuple[int, int]:
    """Lower bounds on the GPUs and on the instances these (placeable) tasks need."""
    mps = [(s, n) for s, n in tasks if s.clients]
    whole = sum(s.whole_gpus * n for s, n in tasks if s.whole_gpus)
    sizes: dict[int, int] = {}
    for s, n in mps:
        sizes[s.task_gpu_budget_mib] = sizes.get(s.task_gpu_budget_mib, 0) + n
    clients = sum(s.clients * n for s, n in mps)
    gpu_lb = whole + max(
        bin_lower_bound(sizes, capacity.usable_gpu_memory_mib), math.ceil(clients / MAX_CLIENTS_PER_GPU)
    )
    cpu = sum(s.cpu_units * n for s, n in tasks)
    mem = sum(s.memory_mib * n for s, n in tasks)
    host_lb = max(
        math.ceil(gpu_lb / capacity.gpus_per_instance),
        math.ceil(cpu / capacity.host_cpu_units),
        math.ceil(mem / capacity.host_memory_mib),
    )
    return gpu_lb, host_lb


def _plan_capacity(
    capacity: CapacityInput, tasks: Sequence[tuple[ServiceInput, int]], *, bounded: bool
) -> CapacityPlan:
    unplaced: list[Unplaced] = []
    fitting = []
    for service, count in tasks:
        problems = task_problems(service, capacity)
        if problems:
            unplaced.extend(Unplaced(service.name, r, "; ".join(map(str, problems))) for r in range(count))
        elif count:
            fitting.append((service, count))
    order = sorted(
        ((s, r) for s, n in fitting for r in range(n)),
        key=lambda sr: (
            -sr[0].whole_gpus,
            -sr[0].task_gpu_budget_mib,
            -sr[0].cpu_units,
            -sr[0].memory_mib,
            sr[0].name,
            sr[1],
        ),
    )
    mps_needs = [s.task_gpu_budget_mib for s, _ in fitting if s.clients]
    packer = _Packer(
        capacity if bounded else _unbounded(capacity),
        min(mps_needs, default=0),
        min((s.cpu_units for s, _ in fitting), default=0),
        min((s.memory_mib for s, _ in fitting), default=0),
    )
    for service, replica in order:
        task = PlacedTask(service.name, replica, service.task_gpu_budget_mib, service.clients)
        if service.whole_gpus:
            ok = packer.place_whole(task, service.whole_gpus, service.cpu_units, service.memory_mib)
        elif service.clients:
            ok = packer.place_mps(task, service.cpu_units, service.memory_mib)
        else:
            ok = packer.place_cpu_only(task, service.cpu_units, service.memory_mib)
        if not ok:
            unplaced.append(Unplaced(service.name, replica, f"no room within max_instances={capacity.max_instances}"))
    gpu_lb, host_lb = _lower_bounds(capacity, fitting)
    whole_gpu = sum(max(s.whole_gpus, 1 if s.clients else 0) * n for s, n in fitting)
    return CapacityPlan(
        capacity=capacity,
        instances=packer.hosts,
        unplaced=sorted(unplaced, key=lambda u: (u.service, u.replica)),
        instances_needed=len(packer.hosts),
        gpu_lower_bound=gpu_lb,
        instance_lower_bound=host_lb,
        whole_gpu_gpus=whole_gpu,
    )


def _unbounded(capacity: CapacityInput) -> CapacityInput:
    return replace(capacity, max_instances=None)


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
    results = []
    for cap in caps:
        tasks = [(s, counts[s.name]) for s in svcs if s.capacity == cap.name]
        bounded = _plan_capacity(cap, tasks, bounded=True)
        if cap.max_instances is not None and any(u.reason.startswith("no room") for u in bounded.unplaced):
            bounded.instances_needed = len(_plan_capacity(cap, tasks, bounded=False).instances)
        results.append(bounded)
    placed = {s.name: counts[s.name] for s in svcs}
    for c in results:
        for u in c.unplaced:
            placed[u.service] -= 1
    return Plan(capacities=results, services=svcs, placed=placed, counts=counts)
