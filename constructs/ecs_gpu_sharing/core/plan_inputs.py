"""The one builder of planner inputs (``CapacityInput``, ``ServiceInput``), from either source. Pure Python.

Two sources describe a fleet: a construct tree (``cdk.discovery`` reads it at synth) and a fleet file
(``core.fleet``). Both come here with plain values: a capacity's host facts and the daemons that take a share of
every host, a service's task shape, count and whether ECS is told to keep it off other isolation groups' hosts.
Nothing else in the package constructs a planner input (a test walks the sources), so the two roads cannot plan
the same fleet differently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .allocation import AllocationNote, Evidence
from .capacity_facts import AMI_LOG_DRIVERS, RESERVED_HOST_PORTS, HostFacts
from .fleet import FleetSpec
from .fleet.model import VPC_ZONES
from .placement import ZONES
from .placement_strategies import LIBRARY_STRATEGY
from .planner import EC2, ECS_DEFAULT_MAX_PERCENT, CapacityInput, ServiceInput
from .shape import TaskShape
from .telemetry import DAEMON_CPU_UNITS, DAEMON_MEMORY_MIB, DAEMON_NAME


@dataclass(frozen=True)
class HostShare:
    """A daemon service's one task on every host of a capacity: what it takes is not there for planned tasks."""

    name: str
    cpu_units: int
    memory_mib: int


def capacity_input(
    name: str,
    facts: HostFacts,
    *,
    max_instances: int | None = None,
    min_instances: int = 0,
    kind: str = EC2,
    daemons: Iterable[HostShare] = (),
    acknowledged: Mapping[str, str] | None = None,
    log_drivers: tuple[str, ...] | None = None,
    agent_reserved_memory_mib: int = 0,
    reserved_ports: tuple[int, ...] = RESERVED_HOST_PORTS,
    zones: int = ZONES,
) -> CapacityInput:
    """A capacity as the planner sees it: ``facts`` less what ``daemons`` take of each host, and less the memory its
    agent keeps from tasks (``agent_reserved_memory_mib``, ECS_RESERVED_MEMORY in the hosts' user data); its hosts'
    agent keeps ``reserved_ports`` from tasks (the agent's defaults unless the user data sets ECS_RESERVED_PORTS); its
    hosts' subnets span ``zones`` Availability Zones.
    ``log_drivers``: those its hosts register, read from their user data; unless given, the AMI's on EC2, and not
    known on Managed Instances (AWS's hosts, whose agent settings this project has not read)."""
    shares = tuple(daemons)
    return CapacityInput(
        kind=kind,
        instance_types=facts.instance_types,
        name=name,
        instance_type=facts.instance_type,
        gpus_per_instance=facts.gpus_per_instance,
        ec2_gpu_memory_mib=facts.ec2_gpu_memory_mib,
        usable_gpu_memory_mib=facts.usable_gpu_memory_mib,
        host_cpu_units=facts.host_cpu_units - sum(d.cpu_units for d in shares),
        host_memory_mib=facts.host_memory_mib - agent_reserved_memory_mib - sum(d.memory_mib for d in shares),
        max_instances=max_instances,
        min_instances=min_instances,
        registered_gpu_memory_mib=facts.gpu_memory.ecs_mib,
        gpu_margin_mib=facts.gpu_memory.margin_mib,
        gpu_memory_basis=str(facts.gpu_memory.basis),
        gpu_memory_source=facts.gpu_memory.source,
        daemons=tuple(d.name for d in shares),
        acknowledged=tuple(sorted((acknowledged or {}).items())),
        task_network_interfaces=facts.task_network_interfaces,
        cuda_context_mib=facts.gpu_memory.cuda_context_mib,
        cuda_context_source=facts.gpu_memory.cuda_context_source,
        log_drivers=log_drivers if log_drivers is not None else (AMI_LOG_DRIVERS if kind == EC2 else ()),
        reserved_ports=reserved_ports,
        agent_reserved_memory_mib=agent_reserved_memory_mib,
        zones=zones,
    )


def service_input(
    name: str,
    capacity: str,
    shape: TaskShape,
    tasks: int,
    *,
    count_source: str,
    max_percent: int = ECS_DEFAULT_MAX_PERCENT,
    allocation: AllocationNote | None = None,
    evidence: Evidence | None = None,
    image: str | None = None,
    acknowledged: Mapping[str, str] | None = None,
    kept_apart: bool = False,
    placement: tuple[str, ...] = LIBRARY_STRATEGY,
    distinct_instance: bool = False,
    constraints_not_planned: tuple[str, ...] = (),
    zone_rebalancing: bool = False,
) -> ServiceInput:
    """A service as the planner sees it. ``kept_apart``: ECS is told to keep its tasks off the hosts of other
    isolation groups' services (a ``memberOf`` placement constraint on ``task:group``); ``distinct_instance``: a
    ``distinctInstance`` constraint runs one of its tasks an instance; ``constraints_not_planned``: ``memberOf``
    expressions that narrow its hosts in ways the plan does not model; ``zone_rebalancing``: ECS moves its tasks
    between Availability Zones (``core.constraints.zone_rebalancing``)."""
    return ServiceInput(
        name=name,
        capacity=capacity,
        shape=shape,
        tasks=tasks,
        max_percent=max_percent,
        count_source=count_source,
        allocation=allocation,
        evidence=evidence,
        image=image,
        acknowledged=tuple(sorted((acknowledged or {}).items())),
        kept_apart=kept_apart,
        placement=tuple(placement),
        distinct_instance=distinct_instance,
        constraints_not_planned=tuple(constraints_not_planned),
        zone_rebalancing=zone_rebalancing,
    )


# The last spec built and its inputs, held (so its identity stands for it): ``fleet.load`` builds them to check each
# task alone and ``plan`` builds them again from the same spec, 11 ms of a 1,176-service command (docs/planning.md).
# A spec is frozen, its tables read-only mappings, and the inputs frozen: a spec replaced is another object.
_last_built: list[tuple[FleetSpec, list[CapacityInput], list[ServiceInput]]] = []


def from_fleet(spec: FleetSpec) -> tuple[list[CapacityInput], list[ServiceInput]]:
    """The planner's inputs for a fleet file: what ``ecs-gpu-sharing plan`` plans, and what the app's synth plans
    from the constructs it builds (a test holds the two equal). In lists of the caller's own; the spec built last is
    not built again."""
    last = _last_built[0] if _last_built else None
    if last is None or last[0] is not spec:  # read once: another thread may build beside this one
        last = (spec, *_built(spec))
        _last_built[:] = [last]
    return list(last[1]), list(last[2])


def _built(spec: FleetSpec) -> tuple[list[CapacityInput], list[ServiceInput]]:
    # The app runs the telemetry daemon on every EC2 GPU host (GpuTelemetry writes these figures into its task).
    daemon = (HostShare(DAEMON_NAME, DAEMON_CPU_UNITS, DAEMON_MEMORY_MIB),) if spec.telemetry else ()
    capacities = [
        capacity_input(
            cap.name,
            cap.facts,
            max_instances=cap.max_instances,
            min_instances=cap.min_instances,
            kind=cap.kind,
            daemons=daemon if cap.kind == EC2 else (),
            acknowledged=cap.acknowledge,
            # the app's own VPC; an existing one's subnets are read at synth (from the VPC's lookup), not here
            zones=VPC_ZONES if spec.vpc_id is None else ZONES,
        )
        for cap in spec.capacities.values()
    ]
    apart = spec.host_isolation_lengths()  # who is kept apart: the expressions themselves are not needed here
    connect = spec.service_connect_namespace is not None
    proxy = spec.proxy_memory_mib  # once: it sums over every service
    services = [
        service_input(
            s.name,
            s.capacity,
            s.shape(spec.source, service_connect=connect, proxy_memory_mib=proxy),
            s.largest_count[0],
            count_source=s.largest_count[1],
            allocation=s.allocation,
            evidence=s.evidence,
            image=s.image,
            acknowledged=s.acknowledge,
            kept_apart=s.name in apart,
            placement=s.placement_strategy if spec.capacities[s.capacity].kind == EC2 else (),
        )
        for s in spec.services.values()
    ]
    return capacities, services
