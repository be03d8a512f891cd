"""The planner's inputs and its plan: capacities, services, GPU loads, instance groups."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..allocation import AllocationNote, Evidence
from ..capacity_facts import RESERVED_HOST_PORTS
from ..placement import ZONES
from ..placement_strategies import LIBRARY_STRATEGY
from ..shape import TaskShape

EC2 = "ec2"
"""A capacity kind: an Auto Scaling group on a pinned AMI (GpuCapacity)."""
MANAGED_INSTANCES = "managed-instances"
"""A capacity kind: ECS Managed Instances, whose hosts AWS launches with no instance limit."""
KINDS = (EC2, MANAGED_INSTANCES)


ECS_DEFAULT_MAX_PERCENT = 200
"""ECS's deploymentConfiguration.maximumPercent for a replica service that leaves it unset."""
WHOLE_REVISION_STRATEGIES = ("BLUE_GREEN", "LINEAR", "CANARY")
"""ECS deployment strategies that run the new revision whole beside the old one, whatever the maximum percent:
CloudFormation's schema, AWS::ECS::Service DeploymentConfiguration: BLUE_GREEN runs "two identical production
environments", and for blue/green, linear and canary deployments BakeTimeInMinutes is "the time period when both blue
and green service revisions are running simultaneously after the production traffic has shifted" (15 minutes unset)."""


def planned_max_percent(max_percent: int, strategy: str | None) -> int:
    """The maximum percent a deployment's surge is planned at: the stated one for a rolling deployment, both revisions
    whole (200) for the strategies that keep them side by side."""
    return ECS_DEFAULT_MAX_PERCENT if strategy in WHOLE_REVISION_STRATEGIES else max_percent


ECS_DEFAULT_DESIRED_COUNT = 1
"""What ECS starts a new replica service with when its DesiredCount is left out."""


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
    cuda_context_mib: int = 0  # what a CUDA context takes of an MPS client's limit on its GPU (0: not measured)
    cuda_context_source: str = ""
    # the log drivers its hosts register (a task logging with another is never placed there); () where not known
    log_drivers: tuple[str, ...] = ()
    reserved_ports: tuple[int, ...] = RESERVED_HOST_PORTS  # the TCP host ports its hosts' agent keeps from tasks
    agent_reserved_memory_mib: int = 0  # ECS_RESERVED_MEMORY its user data sets (already off host_memory_mib)
    zones: int = ZONES  # Availability Zones its hosts' subnets span: ECS's placement is replayed over them


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
    distinct_instance: bool = False  # a distinctInstance constraint: ECS runs one of its tasks an instance
    constraints_not_planned: tuple[str, ...] = ()  # memberOf expressions that narrow its hosts beyond the plan's
    zone_rebalancing: bool = False  # ECS moves its tasks between Availability Zones (core.constraints)

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
    instances_without_lp: int  # instances the plan's other strategies need (the plan without the host-level LP)

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


def tasks_on_a_host(c: CapacityPlan, services: Sequence[ServiceInput]) -> list[dict[str, int]]:
    """Per instance group of ``c``, each service's tasks on one of its hosts. A task of whole GPUs is listed on each
    of its GPUs, and counted once."""
    whole = {s.name: max(s.shape.whole_gpus, 1) for s in services if s.capacity == c.capacity.name}
    out = []
    for group in c.instances:
        on: dict[str, int] = {}
        held: dict[str, int] = {}  # GPUs held whole, by service
        for gpu in group.gpus:
            for name, n in gpu.tasks:
                into = held if gpu.whole else on
                into[name] = into.get(name, 0) + n
        for name, n in group.tasks_without_gpu:
            on[name] = on.get(name, 0) + n
        for name, n in held.items():
            on[name] = on.get(name, 0) + n // whole[name]
        out.append(on)
    return out


def interfaces_used(c: CapacityPlan, services: Sequence[ServiceInput]) -> list[int] | None:
    """Per instance group of ``c``, the network interfaces its awsvpc tasks take; None where none of the capacity's
    services runs in awsvpc or its types' interface count is not known."""
    shapes = {s.name: s.shape for s in services if s.capacity == c.capacity.name}
    if not c.capacity.task_network_interfaces or not any(x.network_interfaces for x in shapes.values()):
        return None
    return [sum(shapes[name].network_interfaces * n for name, n in on.items()) for on in tasks_on_a_host(c, services)]


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
