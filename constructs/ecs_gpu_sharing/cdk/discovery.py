"""Finds, at synth, every ECS service that runs on a GPU capacity, however it was built, and reads its plan input.

A service reaches a capacity through its capacity provider strategy, or, with neither a strategy nor a launch
type, through its cluster's default strategy. Its task shape is read from its task definition's resolved
CloudFormation properties (the one road: ``core.shape``); its largest count is the count stated for planning,
else the larger of its desired count and its task auto scaling maximum; its surge comes from its own
deployment maximum percent. What cannot be read is reported by name, never dropped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

import aws_cdk as cdk
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_ecs as ecs
from constructs import IConstruct

from ..core import placement_strategies
from ..core.allocation import AllocationNote, Evidence
from ..core.capacity_facts import HostFacts
from ..core.constraints import instance_types_required, planned_member_of, zone_rebalancing
from ..core.errors import GpuSharingError
from ..core.plan_inputs import HostShare, capacity_input, service_input
from ..core.planner import (
    ECS_DEFAULT_DESIRED_COUNT,
    ECS_DEFAULT_MAX_PERCENT,
    MANAGED_INSTANCES,
    CapacityInput,
    ServiceInput,
    planned_max_percent,
)
from ..core.rules import NameClash, OutsideService
from ..core.shape import (
    SERVICE_CONNECT_PROXY_MEMORY_MIB,
    TaskShape,
    containers_from_cloudformation,
    service_connect_proxy_memory_mib,
    task_shape,
)
from ..core.tokens import describe
from ..core.written_fit import Counted, member_of
from .refusals import kind_of
from .rendered import rendered_properties, template_key


class PlannedCapacity(Protocol):
    """What the plan needs of a GPU capacity construct (``GpuCapacity`` is one)."""

    @property
    def node(self) -> Any: ...

    @property
    def plan_name(self) -> str: ...

    @property
    def facts(self) -> HostFacts: ...

    @property
    def min_instances(self) -> int: ...

    @property
    def given_max_instances(self) -> int | None: ...

    @property
    def kind(self) -> str: ...

    @property
    def provider_names(self) -> Sequence[str]: ...

    @property
    def log_drivers(self) -> tuple[str, ...] | None: ...

    @property
    def agent_reserved_memory_mib(self) -> int: ...

    @property
    def reserved_ports(self) -> tuple[int, ...]: ...

    @property
    def zones(self) -> int: ...

    @property
    def cluster(self) -> ecs.ICluster: ...


@dataclass
class Discovered:
    capacities: list[CapacityInput] = field(default_factory=list)
    services: list[ServiceInput] = field(default_factory=list)
    outside: list[OutsideService] = field(default_factory=list)
    clashes: list[NameClash] = field(default_factory=list)
    shape_errors: list[tuple[str, str]] = field(default_factory=list)  # (service name, message)
    # The construct each name's findings attach to: the one whose id (or name=) the user gave.
    services_by_name: dict[str, list[IConstruct]] = field(default_factory=dict)
    # Every service resource on a GPU capacity, by (template, logical id), as the plan counted it (core.written_fit)
    counted: dict[tuple[str, str], Counted] = field(default_factory=dict)


def _resource_key(service: ecs.BaseService) -> tuple[str, str]:
    """How the written templates name the service's resource."""
    cfn = service.node.default_child
    assert isinstance(cfn, cdk.CfnElement)
    return template_key(cfn)


def user_construct(service: ecs.BaseService) -> IConstruct:
    """The construct a user named: an L3 wrapper's (a pattern, a SharedGpuService) when the service is its
    ``Service`` child, else the service itself."""
    scope = service.node.scope
    return scope if service.node.id == "Service" and scope is not None and scope.node.scope is not None else service


def stage_of(scope: IConstruct) -> IConstruct:
    """The stage ``scope`` is in (itself, when it is one): the innermost ``cdk.Stage`` holding it, else the root."""
    if cdk.Stage.is_stage(scope):
        return scope
    return cdk.Stage.of(scope) or scope.node.root


def stage_constructs(stage: IConstruct) -> Iterator[IConstruct]:
    """Every construct of ``stage`` but those of the stages inside it, which are other cloud assemblies."""
    for child in stage.node.children:
        if not cdk.Stage.is_stage(child):
            yield child
            yield from stage_constructs(child)


def _placed_instance_types(props: Mapping[str, Any]) -> set[str] | None:
    """The instance types a service's memberOf constraints allow (``core.constraints.instance_types_required``), or
    ``None`` when they do not restrict by instance type."""
    for constraint in props.get("placementConstraints") or []:
        expression = constraint.get("expression") if isinstance(constraint, Mapping) else None
        types = instance_types_required(expression) if isinstance(expression, str) else None
        if types is not None:
            return set(types)
    return None


def _resolve(scope: IConstruct, value: Any) -> Any:
    return cdk.Stack.of(scope).resolve(value)


def _same_name(scope: IConstruct, given: Any, provider_names: Sequence[str]) -> bool:
    if any(given == name for name in provider_names):
        return True
    resolved = _resolve(scope, given)
    return any(resolved == _resolve(scope, name) for name in provider_names)


def _strategy_items(service: ecs.BaseService, props: Mapping[str, Any]) -> list[tuple[Any, int, int]] | None:
    """(provider name as written, weight, base) of the strategy ECS applies; ``None`` for the EC2 launch type."""
    cfn = service.node.default_child
    raw = getattr(cfn, "capacity_provider_strategy", None)
    items = []
    if isinstance(raw, list) and raw:
        for item in raw:
            name = getattr(item, "capacity_provider", None)
            weight = getattr(item, "weight", None)
            base = getattr(item, "base", None)
            items.append((name, weight if isinstance(weight, int) else 0, base if isinstance(base, int) else 0))
        return items
    if props.get("launchType"):
        return None
    default = getattr(service.cluster, "default_capacity_provider_strategy", None) or []
    return [(s.capacity_provider, s.weight or 0, s.base or 0) for s in default]


def _share(count: int, items: list[tuple[Any, int, int]], index: int) -> int:
    """Tasks a strategy puts on its item ``index`` (base first, then by weight; rounded up: the plan must hold).

    ECS takes a weight left out as 0; a strategy whose weights are all 0 is counted whole on every item."""
    _, weight, base = items[index]
    total = sum(w for _, w, _ in items)
    if not total:
        return count
    rest = max(0, count - sum(b for _, _, b in items))
    return min(count, base + math.ceil(rest * weight / total))


def _scaling_max(service: ecs.BaseService) -> Any:
    count = service.node.try_find_child("TaskCount")
    target = count.node.try_find_child("Target") if count is not None else None
    cfn = target.node.default_child if target is not None else None
    return _resolve(service, cfn.max_capacity) if isinstance(cfn, appscaling.CfnScalableTarget) else None


def _connects(props: Mapping[str, Any]) -> bool:
    connect = props.get("serviceConnectConfiguration")
    return isinstance(connect, dict) and connect.get("enabled") is True


def _proxy_memory_mib(
    resolved: Mapping[ecs.BaseService, Mapping[str, Any]], stated_counts: Mapping[IConstruct, int]
) -> int:
    """The Service Connect proxy's memory in each task: more once the services with Service Connect, all taken as one
    namespace (at most what the app's namespaces hold), pass 100 or run more than 2,000 tasks at their largest."""
    services = tasks = 0
    for construct, props in resolved.items():
        if not _connects(props):
            continue
        services += 1
        named = user_construct(construct)
        counted = _largest_count(construct, props, _by(stated_counts, construct, named))
        tasks += counted[0] if isinstance(counted, tuple) else 0
    return service_connect_proxy_memory_mib(services, tasks)


def _shape(
    service: ecs.BaseService, owner: str, service_connect: bool = False, proxy_memory_mib: int = 0
) -> TaskShape | str:
    """The task's shape, or why it cannot be read (as a reason for the outside-plan warning)."""
    td = service.task_definition
    if not isinstance(td, ecs.TaskDefinition):
        return f"its task definition ({kind_of(td)}) is imported, so its containers cannot be read"
    props = rendered_properties(td)
    containers = containers_from_cloudformation(props.get("containerDefinitions"), owner=owner)
    shares = dict(getattr(td, "mps_shares", ()))  # SharedGpuTaskDefinition writes its budgets as overrides
    if shares:
        containers = [
            replace(c, gpu_budget_mib=shares[c.name].gpu_budget_mib) if c.name in shares else c for c in containers
        ]
    return task_shape(
        containers,
        owner=owner,
        task_cpu_units=props.get("cpu"),
        task_memory_mib=props.get("memory"),
        service_connect=service_connect,
        proxy_memory_mib=proxy_memory_mib or SERVICE_CONNECT_PROXY_MEMORY_MIB,
        awsvpc=props.get("networkMode") == "awsvpc",
    )


def _largest_count(service: ecs.BaseService, props: Mapping[str, Any], stated: int | None) -> tuple[int, str] | str:
    """(largest count, where it comes from), or why it cannot be counted."""
    if stated is not None:
        return stated, "stated for planning"
    desired = props.get("desiredCount", ECS_DEFAULT_DESIRED_COUNT)
    scaling = _scaling_max(service)
    if scaling is not None:
        if isinstance(scaling, int):
            if isinstance(desired, int) and desired > scaling:
                return desired, "desired count"
            return scaling, "auto scaling maximum"
        return f"its task auto scaling maximum is {describe(scaling)}"
    if isinstance(desired, int):
        source = "desired count" if "desiredCount" in props else "ECS's default desired count"
        return desired, source
    return f"its desired count is {describe(desired)} and it has no task auto scaling maximum"


def _gpu_image(service: ecs.BaseService) -> str | None:
    """The image of the task's first GPU container: the literal name, or, for a name built at deploy time (an
    ECR repository's URI), the digest it pins written after a placeholder; ``None`` when neither can be read."""
    td = service.task_definition
    if not isinstance(td, ecs.TaskDefinition):
        return None
    props = rendered_properties(td)
    shares = dict(getattr(td, "mps_shares", ()))  # SharedGpuTaskDefinition writes its budgets as overrides
    for c in props.get("containerDefinitions") or []:
        if not isinstance(c, dict) or not (c.get("resourceRequirements") or c.get("name") in shares):
            continue
        image = c.get("image")
        if isinstance(image, str):
            return image
        pinned = _DIGEST.search(json.dumps(image))
        return f"<deploy-time name>{pinned.group(0)}" if pinned else None
    return None


_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")


def _kept_apart(props: Mapping[str, Any]) -> bool:
    """Whether a memberOf constraint keeps the service off hosts by the task groups running there."""
    return any(
        isinstance(c, Mapping) and "task:group" in str(c.get("expression", ""))
        for c in props.get("placementConstraints") or []
    )


def _distinct_instance(props: Mapping[str, Any]) -> bool:
    """Whether a distinctInstance constraint runs one of the service's tasks an instance."""
    return any(
        isinstance(c, Mapping) and str(c.get("type", "")).lower() == "distinctinstance"
        for c in props.get("placementConstraints") or []
    )


def _member_of(service: ecs.BaseService, props: Mapping[str, Any]) -> tuple[str, ...]:
    """The memberOf expressions of the service and its task definition, as the plan read them."""
    task = service.task_definition
    own = rendered_properties(task).get("placementConstraints") if isinstance(task, ecs.TaskDefinition) else None
    return member_of(props.get("placementConstraints"), own)


def _constraints_not_planned(service: ecs.BaseService, props: Mapping[str, Any]) -> tuple[str, ...]:
    """The memberOf expressions of the service and its task definition that narrow its hosts in ways the plan does
    not model: all but the isolation groups' (``core.fleet``'s task:group terms) and the MPS capability's, which every
    host of a GPU capacity has."""
    written = list(props.get("placementConstraints") or [])
    if isinstance(service.task_definition, ecs.TaskDefinition):
        written += rendered_properties(service.task_definition).get("placementConstraints") or []
    out = []
    for constraint in written:
        if not isinstance(constraint, Mapping) or str(constraint.get("type", "")).lower() != "memberof":
            continue
        expression = constraint.get("expression")
        if not (isinstance(expression, str) and planned_member_of(expression)):
            out.append(expression if isinstance(expression, str) else describe(expression))
    return tuple(out)


def _max_percent(props: Mapping[str, Any]) -> int | str:
    """The maximum percent the service's deployments surge by (a blue/green one runs both revisions whole)."""
    config = props.get("deploymentConfiguration") or {}
    value, strategy = config.get("maximumPercent", ECS_DEFAULT_MAX_PERCENT), config.get("strategy")
    if not isinstance(strategy, str | None):
        return f"its deployment strategy is {describe(strategy)}"
    if not isinstance(value, int):
        return f"its deployment maximum percent is {describe(value)}"
    return planned_max_percent(value, strategy)


_T = TypeVar("_T")


def _by(table: Mapping[IConstruct, _T], service: ecs.BaseService, named: IConstruct) -> _T | None:
    """A service's entry, kept under its user-facing construct or under the task definition it runs."""
    found = table.get(named)
    return found if found is not None else table.get(service.task_definition)


def _task_acks(acks: Callable[[IConstruct], Mapping[str, str]], service: ecs.BaseService) -> Mapping[str, str]:
    task = service.task_definition
    return acks(task) if isinstance(task, ecs.TaskDefinition) else {}


def _capacities_of(
    construct: ecs.BaseService, items: list[Any] | None, caps: list[PlannedCapacity]
) -> list[tuple[PlannedCapacity, int | None]]:
    """The GPU capacities a service's tasks may land on: (capacity, its strategy index; None: EC2 launch type)."""
    if items is None:
        return [(c, None) for c in caps if c.cluster is construct.cluster]
    return [
        (c, i)
        for i, (given, _, _) in enumerate(items)
        for c in caps
        if given is not None and _same_name(construct, given, c.provider_names)
    ]


def _reserve_for_daemon(
    reserved: dict[str, list[HostShare]],
    on: list[tuple[PlannedCapacity, int | None]],
    name: str,
    shape: TaskShape,
    props: Mapping[str, Any],
) -> None:
    """A daemon of the EC2 launch type runs one task on every EC2 host of the cluster: what it takes is not there for
    the planned tasks. Managed Instances hosts are assumed not to take EC2-launch-type tasks
    (docs/known-unknowns.md). A daemon placed by instance type lands only on capacities with one of those types;
    daemons of one name are alternatives by instance type (GpuTelemetry: one per GPU count), so one host runs one."""
    types = _placed_instance_types(props)
    for cap, _ in on:
        if cap.kind == MANAGED_INSTANCES:
            continue
        if types is not None and not types & set(cap.facts.instance_types):
            continue
        daemons = reserved.setdefault(cap.plan_name, [])
        if all(d.name != name for d in daemons):
            daemons.append(HostShare(name, shape.cpu_units, shape.memory_mib))


def _not_planned_because(
    shape: TaskShape | str,
    props: Mapping[str, Any],
    count: tuple[int, str] | str,
    percent: int | str,
    on: list[tuple[PlannedCapacity, int | None]],
) -> list[tuple[str, str]]:
    """Why a service on a GPU capacity cannot be planned (its values are deploy-time, it is a daemon, it spreads
    over capacities), each with what would let the plan count it: each is said, and it is reported as outside the
    plan."""
    literal = "give the values literally"
    problems = [(shape, literal)] if isinstance(shape, str) else []
    if props.get("schedulingStrategy") == "DAEMON":
        problems.append(
            ("it is a daemon service (one task per host), which the plan does not count", "")  # nothing: acknowledge
        )
    if isinstance(count, str):
        problems.append(
            (
                count,
                "state a count for planning (SharedGpuService(planned_count=...) or "
                "FleetPlan.of(scope).plan_count(service, tasks))",
            )
        )
    if isinstance(percent, str):
        problems.append((percent, literal))
    if len({c.plan_name for c, _ in on}) > 1:
        problems.append(
            (
                "its strategy spreads it over several GPU capacities ("
                + ", ".join(sorted({c.plan_name for c, _ in on}))
                + "), which the plan does not split",
                "run one service on each GPU capacity",
            )
        )
    return problems


def _capacities_by_name(found: Discovered, caps: list[PlannedCapacity]) -> dict[str, list[PlannedCapacity]]:
    """The capacities by plan name; a name two capacities give is a clash."""
    by_name: dict[str, list[PlannedCapacity]] = {}
    for cap in caps:
        by_name.setdefault(cap.plan_name, []).append(cap)
    for name, same in sorted(by_name.items()):
        if len(same) > 1:
            found.clashes.append(NameClash("capacity", name, tuple(c.node.path for c in same)))
    return by_name


def discover(
    stage: IConstruct,
    capacities: Iterable[PlannedCapacity],
    *,
    names: Mapping[IConstruct, str],
    stated_counts: Mapping[IConstruct, int],
    allocations: Mapping[IConstruct, AllocationNote] | None = None,
    evidence: Mapping[IConstruct, Evidence] | None = None,
    acknowledged: Callable[[IConstruct], Mapping[str, str]] | None = None,
) -> Discovered:
    """Every GPU capacity and every service on one, as plan inputs (built by ``core.plan_inputs``); ``names``,
    ``stated_counts`` and ``allocations`` are keyed by the services' user-facing constructs; ``acknowledged`` gives the
    warnings accepted for a service's user-facing construct or a capacity construct."""
    acks = acknowledged or (lambda _: {})
    found = Discovered()
    caps = list(capacities)
    by_name = _capacities_by_name(found, caps)
    reserved: dict[str, list[HostShare]] = {}  # capacity -> the daemons on each of its hosts
    seen: dict[str, list[str]] = {}
    resolved = {
        construct: rendered_properties(construct)
        for construct in stage_constructs(stage)
        if isinstance(construct, ecs.BaseService)
    }
    proxy_memory = _proxy_memory_mib(resolved, stated_counts)
    for construct, props in resolved.items():
        named = user_construct(construct)
        name = _by(names, construct, named) or named.node.id
        items = _strategy_items(construct, props)
        on = _capacities_of(construct, items, caps)
        if not on:
            continue
        owner = named.node.path
        found.counted[_resource_key(construct)] = Counted(name)  # outside the plan, until it is planned below
        try:
            # ECS adds a Service Connect proxy to each task of a service that turns it on.
            shape = _shape(construct, owner, _connects(props), proxy_memory)
        except GpuSharingError as error:
            found.shape_errors.append((name, str(error)))
            found.services_by_name.setdefault(name, []).append(named)
            continue
        if items is None:
            _on_the_ec2_launch_type(found, reserved, on, name, named, shape, props)
            continue
        seen.setdefault(name, []).append(owner)
        found.services_by_name.setdefault(name, []).append(named)
        count = _largest_count(construct, props, _by(stated_counts, construct, named))
        percent = _max_percent(props)
        problems = _not_planned_because(shape, props, count, percent, on)
        if problems:
            fixes = list(dict.fromkeys(f for _, f in problems if f))
            fix = ", ".join(fixes) + ", or acknowledge it" if fixes else "acknowledge it"
            found.outside.append(OutsideService(name, on[0][0].plan_name, "; ".join(p for p, _ in problems), fix))
            continue
        assert isinstance(shape, TaskShape) and not isinstance(count, str) and isinstance(percent, int)
        capacity, index = on[0]
        tasks, source = count
        counted = found.counted[_resource_key(construct)] = _counted(
            construct, props, name, shape, proxy_memory, tasks, percent
        )
        assert items is not None and index is not None
        share = _share(tasks, items, index)
        if share != tasks:
            source = f"{source} ({tasks}), this capacity's share by strategy"
        found.services.append(
            service_input(
                name,
                capacity.plan_name,
                shape,
                share,
                max_percent=percent,
                count_source=source,
                allocation=_by(allocations or {}, construct, named),
                evidence=_by(evidence or {}, construct, named),
                image=_gpu_image(construct),
                acknowledged={**_task_acks(acks, construct), **acks(named)},
                kept_apart=_kept_apart(props),
                placement=counted.placement,
                distinct_instance=counted.distinct_instance,
                constraints_not_planned=_constraints_not_planned(construct, props),
                zone_rebalancing=zone_rebalancing(
                    props.get("availabilityZoneRebalancing"), counted.placement, percent, counted.member_of
                ),
            )
        )
    _add_capacities(found, by_name, reserved, acks)
    _service_clashes(found, seen)
    return found


def _on_the_ec2_launch_type(
    found: Discovered,
    reserved: dict[str, list[HostShare]],
    on: list[tuple[PlannedCapacity, int | None]],
    name: str,
    named: IConstruct,
    shape: TaskShape | str,
    props: Mapping[str, Any],
) -> None:
    """A service on the EC2 launch type in a cluster with GPU capacity: a daemon without a GPU takes its share of each
    host; a GPU task may land on these hosts, but their capacity provider does not scale for it."""
    if isinstance(shape, TaskShape) and not shape.uses_gpu:
        if props.get("schedulingStrategy") == "DAEMON":
            _reserve_for_daemon(reserved, on, name, shape, props)
        return
    reason = "it uses the EC2 launch type, so ECS may place its GPU tasks on these hosts without the capacity"
    fix = "give it this capacity's provider in capacity_provider_strategies"
    found.outside.append(OutsideService(name, on[0][0].plan_name, reason + " provider scaling for them", fix))
    found.services_by_name.setdefault(name, []).append(named)


def _counted(
    service: ecs.BaseService,
    props: Mapping[str, Any],
    name: str,
    shape: TaskShape,
    proxy_memory: int,
    tasks: int,
    percent: int,
) -> Counted:
    """What the plan counts of a planned service, as the written templates are held to it (core.written_fit)."""
    return Counted(
        name,
        shape,
        _connects(props),
        proxy_memory,
        tasks,
        percent,
        placement_strategies.from_cloudformation(props.get("placementStrategies")),
        _distinct_instance(props),
        _member_of(service, props),
    )


def _service_clashes(found: Discovered, seen: Mapping[str, list[str]]) -> None:
    """One name, two services: neither is planned, and the clash is reported."""
    for name, paths in sorted(seen.items()):
        if len(paths) > 1:
            found.clashes.append(NameClash("service", name, tuple(paths)))
            found.services = [s for s in found.services if s.name != name]


def _add_capacities(
    found: Discovered,
    by_name: Mapping[str, list[PlannedCapacity]],
    reserved: Mapping[str, list[HostShare]],
    acks: Callable[[IConstruct], Mapping[str, str]],
) -> None:
    """Each capacity as a plan input, with the daemons that run on each of its hosts."""
    for name, same in sorted(by_name.items()):
        found.capacities.append(
            capacity_input(
                name,
                same[0].facts,
                max_instances=same[0].given_max_instances,
                min_instances=same[0].min_instances,
                kind=same[0].kind,
                daemons=reserved.get(name, ()),
                acknowledged=acks(same[0]),  # type: ignore[arg-type]
                log_drivers=same[0].log_drivers,
                agent_reserved_memory_mib=same[0].agent_reserved_memory_mib,
                reserved_ports=same[0].reserved_ports,
                zones=same[0].zones,
            )
        )
