"""The fit plan against the written templates: what runs on a GPU capacity is what the plan counted. Pure Python.

The fit plan reads the services it finds among the constructs, and their task definitions as the constructs hold
them; the templates are what CloudFormation deploys. They part where a team writes past the constructs: an L1
``CfnService`` or a task set on a GPU capacity's provider, an escape hatch (``add_property_override``) that gives a
container an MPS budget, more memory, another count or placement after the plan read it, a capacity's group or user
data changed, a scheduled task, pipe, state machine or SDK call that runs a task there. Each is read back from the
templates (``core.runners`` finds the runners, ``core.tenancy`` the capacities they land on):

- a service or task set the plan neither counted nor listed as outside it is refused (``ServiceNotPlanned``): its
  tasks are in no count, so neither the plan nor a derived ``max_instances`` holds them;
- a service the plan counted that, as written, runs another task, more tasks, another surge, Service Connect or
  placement than the plan counted is refused (``PlanNotAsWritten``);
- a capacity that, as written, launches other instance types or fewer instances than the plan counted
  (``CapacityNotAsWritten``), or whose user data undoes what its hosts keep (``HostSettingUndone``), is refused;
- any other task a runner puts on a GPU capacity, as written and as its readable RunTask overrides make it, meets the
  task rules (``core.task_rules``: one task never fits a host of the capacity when its budgets pass one GPU, its CPU
  or memory the host's, ...): on a capacity its strategy names, on that one; on the EC2 launch type, on at least one
  GPU capacity of its cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from . import placement_strategies
from .capacity_facts import (
    HARDENED_SETTINGS,
    ecs_settings,
    log_drivers_in_user_data,
    reserved_memory_in_user_data,
    reserved_ports_in_user_data,
)
from .errors import GpuSharingError
from .planner.model import (
    ECS_DEFAULT_DESIRED_COUNT,
    ECS_DEFAULT_MAX_PERCENT,
    MANAGED_INSTANCES,
    WHOLE_REVISION_STRATEGIES,
    CapacityInput,
    planned_max_percent,
)
from .rule_family import Family, Level, Source
from .runners import Runner, runners
from .service_rules import Resource, Templates
from .service_rules.base import cdk_path, launch_data, listed, literal_number, user_data_text
from .shape import TaskShape, camel_keys, containers_from_cloudformation, task_shape
from .task_rules import TaskProblem, task_problems
from .template_limits import Violation
from .tenancy import Allowed, GpuCapacities, Judgement, Key, add_finding, by_family

RULES = Family("the plan as written")
SERVICE_NOT_PLANNED = RULES.declare(
    "ecs-gpu-sharing:ServiceNotPlanned",
    Level.ERROR,
    "service",
    Source.TEMPLATE,
    "a service or task set on a GPU capacity that the fit plan does not count (an L1 CfnService, a task set, a "
    "service made by an SDK call): its tasks are in no plan and no derived max_instances (FleetPlan.allow permits "
    "it, with a reason, where the capacity's max_instances is given to hold them, not derived)",
)
PLAN_NOT_AS_WRITTEN = RULES.declare(
    "ecs-gpu-sharing:PlanNotAsWritten",
    Level.ERROR,
    "service",
    Source.TEMPLATE,
    "a planned service as written is not what the plan counted: its task definition's GPU, CPU, memory, port or "
    "log-driver figures, or its count, surge, Service Connect, placement strategies or constraints (an escape hatch "
    "changed them after the plan read the construct)",
)
CAPACITY_NOT_AS_WRITTEN = RULES.declare(
    "ecs-gpu-sharing:CapacityNotAsWritten",
    Level.ERROR,
    "capacity",
    Source.TEMPLATE,
    "a GPU capacity as written launches instance types the plan did not count (its Auto Scaling group's, or a Managed "
    "Instances provider's allowed types), its group holds fewer instances (MaxSize) than the plan's max_instances, or "
    "its user data sets other log drivers, reserved ports or reserved memory than the plan read (an escape hatch "
    "changed it after the plan read the construct)",
)
HOST_SETTING_UNDONE = RULES.declare(
    "ecs-gpu-sharing:HostSettingUndone",
    Level.ERROR,
    "capacity",
    Source.TEMPLATE,
    "a GPU capacity's user data, as written, leaves one of the agent settings its hosts keep true "
    f"({', '.join(HARDENED_SETTINGS)}) unset or false after the library's line, or joins its hosts to a cluster "
    "other than the capacity's (ECS_CLUSTER): the last line of /etc/ecs/ecs.config wins (FleetPlan.allow permits it, "
    "with a reason)",
)
ALLOWABLE = (SERVICE_NOT_PLANNED, HOST_SETTING_UNDONE)


@dataclass(frozen=True)
class Counted:
    """What the fit plan made of one service resource on a GPU capacity: its name in the plan, and the shape it
    counted (``None``: listed outside the plan, or its shape refused, each with its own finding)."""

    name: str
    shape: TaskShape | None = None
    service_connect: bool = False
    proxy_memory_mib: int = 0
    tasks: int = 0  # the largest count the plan counted, before a strategy's share
    max_percent: int = ECS_DEFAULT_MAX_PERCENT  # the deployment's maximum percent it counted
    placement: tuple[str, ...] = ()  # the placement strategies it replayed (core.placement's parts)
    distinct_instance: bool = False  # whether it counted a distinctInstance constraint
    member_of: tuple[str, ...] = ()  # the memberOf expressions of the service and its task definition it read


def member_of(*constraints: Any) -> tuple[str, ...]:
    """The memberOf expressions of placement constraint lists (keys in either case), sorted; one the synth cannot
    read as its JSON."""
    out = []
    for listing in constraints:
        for item in listed(listing):
            entry = camel_keys(item)
            if str(entry.get("type", "")).lower() == "memberof":
                expression = entry.get("expression")
                out.append(expression if isinstance(expression, str) else json.dumps(expression, sort_keys=True))
    return tuple(sorted(out))


_OVERRIDDEN = ("cpu", "memory", "memoryReservation", "resourceRequirements")
"""What a RunTask container override may set that the plan counts (Amazon ECS API Reference, ContainerOverride)."""


def _as_run(props: Mapping[str, Any], overrides: Any) -> Mapping[str, Any]:
    """A task definition's properties as a RunTask request's overrides, where they can be read, make the task:
    task-level ``cpu`` and ``memory``, and each named container's CPU, memory and GPU requirements (Amazon ECS API
    Reference, TaskOverride and ContainerOverride)."""
    request = camel_keys(overrides)
    if not request:
        return props
    containers = [camel_keys(c) for c in listed(props.get("ContainerDefinitions"))]
    for given in listed(request.get("containerOverrides")):
        override = camel_keys(given)
        for container in containers:
            if container.get("name") == override.get("name"):
                container.update({k: override[k] for k in _OVERRIDDEN if k in override})
    run = {**props, "ContainerDefinitions": containers}
    run.update({key.title(): request[key] for key in ("cpu", "memory") if key in request})
    return run


def _written_shape(task: Resource, counted: Counted | None, overrides: Any = None) -> TaskShape | str:
    """One task as the template writes it (and a runner's readable overrides make it), read as the plan reads a
    construct's; or why it cannot be read."""
    props = _as_run(task.props, overrides)
    try:
        containers = containers_from_cloudformation(props.get("ContainerDefinitions"), owner=cdk_path(task))
        extra = {"proxy_memory_mib": counted.proxy_memory_mib} if counted and counted.proxy_memory_mib else {}
        return task_shape(
            containers,
            owner=cdk_path(task),
            task_cpu_units=props.get("Cpu"),
            task_memory_mib=props.get("Memory"),
            service_connect=bool(counted and counted.service_connect),
            awsvpc=props.get("NetworkMode") == "awsvpc",
            **extra,
        )
    except GpuSharingError as error:
        return str(error)


def _figures(shape: TaskShape) -> dict[str, Any]:
    return {
        "MPS budgets (MiB)": tuple(sorted(shape.gpu_budgets_mib)),
        "whole GPUs": shape.whole_gpus,
        "CPU units": shape.cpu_units,
        "memory (MiB)": shape.memory_mib,
        "host ports": shape.host_ports,
        "log drivers": shape.log_drivers,
    }


def _differences(planned: TaskShape, written: TaskShape) -> list[str]:
    was, now = _figures(planned), _figures(written)
    return [f"{k} {_show(was[k])} counted, {_show(now[k])} written" for k in was if was[k] != now[k]]


def _named(value: Any) -> Iterator[str]:
    """The logical ids a value refers to within its stack (``Ref``, ``Fn::GetAtt``), at any depth."""
    if isinstance(value, Mapping):
        if set(value) == {"Ref"} and isinstance(value["Ref"], str):
            yield value["Ref"]
        elif set(value) == {"Fn::GetAtt"}:
            arg = value["Fn::GetAtt"]
            yield str(arg[0] if isinstance(arg, list) and arg else str(arg).split(".", 1)[0])
        else:
            for v in value.values():
                yield from _named(v)
    elif isinstance(value, list):
        for v in value:
            yield from _named(v)


def scaling_maxima(ctx: Templates) -> dict[Key, int]:
    """The task auto scaling maximum (``MaxCapacity``) of each service resource a scalable target of its stack names
    in its ``ResourceId`` (``service/<cluster>/<service's Name>``, as aws-ecs writes it)."""
    out: dict[Key, int] = {}
    for target in ctx.of_type("AWS::ApplicationAutoScaling::ScalableTarget"):
        most = literal_number(target.props.get("MaxCapacity"))
        if target.props.get("ScalableDimension") != "ecs:service:DesiredCount" or most is None:
            continue
        for logical_id in _named(target.props.get("ResourceId")):
            service = ctx.resource(target.stack, logical_id)
            if service is not None and service.kind == "AWS::ECS::Service":
                out[(service.stack, logical_id)] = max(most, out.get((service.stack, logical_id), 0))
    return out


def _service_differences(props: Mapping[str, Any], task: Resource, seen: Counted, scaling_max: int | None) -> list[str]:
    """Where a planned service as written runs more tasks than the plan counted, surges by another percent, or runs
    with Service Connect, placement strategies or constraints the plan did not count."""
    out = []
    desired = literal_number(props.get("DesiredCount", ECS_DEFAULT_DESIRED_COUNT))
    if desired is not None and desired > seen.tasks:
        out.append(f"desired count at most {seen.tasks} counted, {desired} written")
    if scaling_max is not None and scaling_max > seen.tasks:
        out.append(f"task auto scaling maximum at most {seen.tasks} counted, {scaling_max} written")
    deployment = camel_keys(props.get("DeploymentConfiguration"))
    percent = literal_number(deployment.get("maximumPercent", ECS_DEFAULT_MAX_PERCENT))
    strategy = deployment.get("strategy")
    if percent is not None and isinstance(strategy, str | None):
        percent = planned_max_percent(percent, strategy)  # as discovery counted it: blue/green runs both whole
    if percent is not None and percent != seen.max_percent:
        whole = (
            f" (its {strategy} deployment runs both revisions whole)" if strategy in WHOLE_REVISION_STRATEGIES else ""
        )
        out.append(f"deployment maximum percent {seen.max_percent} counted, {percent} written{whole}")
    connects = camel_keys(props.get("ServiceConnectConfiguration")).get("enabled") in (True, "true")
    if connects != seen.service_connect:
        out.append(f"Service Connect {_on(seen.service_connect)} counted, {_on(connects)} written")
    strategies = placement_strategies.from_cloudformation(props.get("PlacementStrategies"))
    if strategies != seen.placement:
        out.append(f"placement strategies {_show(seen.placement)} counted, {_show(strategies)} written")
    distinct = any(
        str(camel_keys(c).get("type", "")).lower() == "distinctinstance"
        for c in listed(props.get("PlacementConstraints"))
    )
    if distinct != seen.distinct_instance:
        out.append(f"distinctInstance {_on(seen.distinct_instance)} counted, {_on(distinct)} written")
    written = member_of(props.get("PlacementConstraints"), task.props.get("PlacementConstraints"))
    if written != seen.member_of:
        out.append(f"memberOf constraints {_show(seen.member_of)} counted, {_show(written)} written")
    return out


def _on(value: bool) -> str:
    return "on" if value else "off"


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "none" if not value else ", ".join(str(v[0] if isinstance(v, tuple) else v) for v in value)
    return str(value)


def group_types(ctx: Templates, group: Resource) -> set[str] | str:
    """The instance types an Auto Scaling group launches as written (its mixed instances policy's overrides, else its
    launch template's type), or why they cannot be read."""
    policy = camel_keys(group.props.get("MixedInstancesPolicy"))
    if policy:
        overrides = camel_keys(policy.get("launchTemplate")).get("overrides")
        types = [camel_keys(o).get("instanceType") for o in overrides or []]
        named = {t for t in types if isinstance(t, str)}
        if not types or len(named) < len(set(map(str, types))):
            return "its mixed instances policy names instance types the synth cannot read (instance requirements?)"
        return named
    kind = launch_data(ctx, group).get("instanceType")
    return {kind} if isinstance(kind, str) else "its launch template's instance type cannot be read"


def _host_settings_read(text: str, capacity: CapacityInput) -> list[str]:
    """Where an EC2 GPU capacity's user data, as written, sets what the plan read from the construct's otherwise (an
    escape hatch over the launch template's UserData): its log drivers, reserved host ports and reserved memory."""
    out = []
    drivers = log_drivers_in_user_data(text)
    if drivers and capacity.log_drivers and drivers != capacity.log_drivers:
        out.append(f"log drivers {_show(capacity.log_drivers)} counted, {_show(drivers)} written")
    ports = reserved_ports_in_user_data(text)
    if ports != capacity.reserved_ports:
        out.append(f"reserved host ports {_show(capacity.reserved_ports)} counted, {_show(ports)} written")
    memory = reserved_memory_in_user_data(text)
    if memory != capacity.agent_reserved_memory_mib:
        out.append(f"ECS_RESERVED_MEMORY {capacity.agent_reserved_memory_mib} counted, {memory} written")
    return out


def _host_settings(ctx: Templates, caps: GpuCapacities, group: Resource, name: str) -> list[str]:
    """What an EC2 GPU capacity's user data, as written, undoes: a hardening setting, or the cluster its hosts join."""
    settings = ecs_settings(user_data_text(ctx, group))
    out = [
        f"{setting}={settings[setting]} written last" if setting in settings else f"{setting} not written"
        for setting in HARDENED_SETTINGS
        if settings.get(setting) != "true"
    ]
    clusters = {
        "${" + "/".join(k) + "}" if isinstance(k, tuple) else k for k, held in caps.held.items() if name in held
    }
    joined = settings.get("ECS_CLUSTER", "default")
    if joined not in clusters:
        out.append(f"ECS_CLUSTER={joined} written last: its hosts join a cluster other than the capacity's")
    return out


def _written_types(ctx: Templates, provider: Resource) -> tuple[Resource, set[str] | str] | None:
    """What a GPU provider launches as written: (its Auto Scaling group, or itself on Managed Instances, whose
    allowed types bound what AWS picks; the instance types, or why they cannot be read); ``None`` for neither."""
    props = provider.props
    group = ctx.target(camel_keys(props.get("AutoScalingGroupProvider")).get("autoScalingGroupArn"), provider.stack)
    if group is not None and group.kind == "AWS::AutoScaling::AutoScalingGroup":
        return group, group_types(ctx, group)
    if props.get("ManagedInstancesProvider") is None:
        return None
    launch = camel_keys(camel_keys(props.get("ManagedInstancesProvider")).get("instanceLaunchTemplate"))
    allowed = camel_keys(launch.get("instanceRequirements")).get("allowedInstanceTypes")
    if isinstance(allowed, list) and allowed and all(isinstance(t, str) for t in allowed):
        return provider, set(allowed)
    return provider, "its allowed instance types cannot be read (AWS may launch any type its requirements match)"


def _capacities_as_written(
    out: Judgement,
    allowed: Allowed,
    ctx: Templates,
    caps: GpuCapacities,
    capacities: Mapping[str, CapacityInput],
    max_instances: Mapping[str, int],
) -> None:
    """Each GPU capacity as written (an EC2 capacity's Auto Scaling group, a Managed Instances provider's allowed
    types) against the instance types and max_instances the plan counted (a group two providers share, once)."""
    seen = set()
    for (stack, logical_id), name in sorted(caps.providers.items()):
        provider, capacity = ctx.resource(stack, logical_id), capacities.get(name)
        written = _written_types(ctx, provider) if provider is not None else None
        if capacity is None or written is None or (written[0].stack, written[0].logical_id) in seen:
            continue
        group, types = written
        seen.add((group.stack, group.logical_id))
        diff = []
        if isinstance(types, str):
            diff.append(types)
        elif types - set(capacity.instance_types):
            counted, now = ", ".join(capacity.instance_types), ", ".join(sorted(types))
            diff.append(f"instance types {counted} counted, {now} written")
        most, planned = literal_number(group.props.get("MaxSize")), max_instances.get(name)
        if most is not None and planned is not None and most < planned:
            diff.append(f"max_instances {planned} planned, MaxSize {most} written")
        if group.kind == "AWS::AutoScaling::AutoScalingGroup":
            diff += _host_settings_read(user_data_text(ctx, group), capacity)
        if diff:
            message = (
                f"[{CAPACITY_NOT_AS_WRITTEN}] capacity {name} ({cdk_path(group)}) as written is not what the plan "
                f"counted: {'; '.join(diff)}. An escape hatch changed its Auto Scaling group, provider or launch "
                "template after the plan read the construct; give instance_types and max_instances to the capacity, "
                "and add agent settings to its launch_template.user_data, where the plan reads them"
            )
            out.violations.append(_violation(group, CAPACITY_NOT_AS_WRITTEN, message))
        undone = _host_settings(ctx, caps, group, name) if group.kind == "AWS::AutoScaling::AutoScalingGroup" else []
        if undone:
            message = (
                f"capacity {name} ({cdk_path(group)}): its user data as written undoes what its hosts keep true "
                f"({', '.join(HARDENED_SETTINGS)}, and ECS_CLUSTER the capacity's cluster): "
                f"{'; '.join(undone)} (ecs-init reads /etc/ecs/ecs.config line by line, a later line over an earlier "
                f"one). Remove the line, or allow {HOST_SETTING_UNDONE} with a reason (FleetPlan.allow)"
            )
            add_finding(out, allowed, [group], HOST_SETTING_UNDONE, message)


def judge(
    templates: Mapping[str, Mapping[str, Any]],
    capacities: Mapping[str, CapacityInput],
    counted: Mapping[Key, Counted],
    allowed: Allowed | None = None,
    max_instances: Mapping[str, int] | None = None,
) -> Judgement:
    """The written templates against the plan: ``capacities`` are the plan's, by name, with the ``max_instances`` it
    gave or derived; ``counted`` every service resource (stack, logical id) the plan found on a GPU capacity;
    ``allowed`` as ``core.tenancy.judge`` takes it."""
    ctx = Templates(templates)
    caps = GpuCapacities(ctx)
    maxima = scaling_maxima(ctx)
    out = Judgement()
    _capacities_as_written(out, allowed or {}, ctx, caps, capacities, max_instances or {})
    for runner in sorted(runners(ctx), key=lambda r: (r.resource.stack, r.resource.logical_id)):
        landing, named = caps.landing(runner)
        on = [capacities[name] for name in landing if name in capacities]
        task = ctx.target(runner.task_definition, runner.resource.stack) or by_family(ctx, runner.task_definition)
        if not on or task is None or task.kind != "AWS::ECS::TaskDefinition":
            continue  # not on a GPU capacity; a task definition the templates do not hold is core.tenancy's
        key = (runner.resource.stack, runner.resource.logical_id)
        seen = counted.get(key) if runner.what == "service" else None
        written = _written_shape(task, seen, None if isinstance(runner.overrides, str) else runner.overrides)
        gpu_task = isinstance(written, TaskShape) and written.uses_gpu  # on the EC2 launch type, GPU hosts take it
        if runner.serves and seen is None and (named or gpu_task):
            _not_planned(out, allowed or {}, runner, on)
        if seen is not None and seen.shape is not None:
            _as_planned(out, runner, task, seen, written, maxima.get(key))
        elif isinstance(written, TaskShape):
            _fits(out, runner, task, written, on, named)
    return out


def _not_planned(out: Judgement, allowed: Allowed, runner: Runner, on: list[CapacityInput]) -> None:
    """ServiceNotPlanned: allowable only where no capacity it runs on derives max_instances from the plan (which would
    leave its tasks out of the limit); Managed Instances takes no instance limit."""
    message = (
        f"{runner.what} {cdk_path(runner.resource)} runs on GPU capacity {', '.join(c.name for c in on)}, but the fit "
        "plan does not count it: the plan counts the services aws-ecs builds (Ec2Service, SharedGpuService, "
        "aws-ecs-patterns), not an L1 CfnService, a task set or a service an SDK call makes, so no plan or derived "
        "max_instances holds its tasks. Build it as an aws_ecs service, or give the capacity a max_instances that "
        f"holds its tasks and allow {SERVICE_NOT_PLANNED} with a reason (FleetPlan.allow)"
    )
    derived = [c.name for c in on if c.max_instances is None and c.kind != MANAGED_INSTANCES]
    if not derived:
        add_finding(out, allowed, [runner.resource], SERVICE_NOT_PLANNED, message)
        return
    first = f"max_instances of {', '.join(derived)} is derived from a plan without its tasks: give it first"
    text = f"[{SERVICE_NOT_PLANNED}] {message} ({first})"
    out.violations.append(_violation(runner.resource, SERVICE_NOT_PLANNED, text))


def _as_planned(
    out: Judgement, runner: Runner, task: Resource, seen: Counted, written: TaskShape | str, scaling_max: int | None
) -> None:
    assert seen.shape is not None
    diff = _service_differences(runner.resource.props, task, seen, scaling_max)
    if isinstance(written, str):
        diff.append(f"its task definition's figures as written cannot be read ({written})")
    else:
        diff += _differences(seen.shape, written)
    if not diff:
        return
    message = (
        f"[{PLAN_NOT_AS_WRITTEN}] service {seen.name} ({cdk_path(runner.resource)}, task definition "
        f"{cdk_path(task)}) as written is not what the plan counted: {'; '.join(diff)}. An escape hatch "
        "(add_property_override) changed it after the plan read the construct; set these on the constructs "
        "(add_container's gpu=MpsShare(...), gpu_count, cpu, memory_limit_mib, port_mappings, logging; the service's "
        "desired_count, max_healthy_percent and auto_scale_task_count) so the plan counts what runs"
    )
    out.violations.append(_violation(runner.resource, PLAN_NOT_AS_WRITTEN, message))


def _fits(
    out: Judgement, runner: Runner, task: Resource, shape: TaskShape, on: list[CapacityInput], named: bool
) -> None:
    """The task rules for one task of ``runner`` on each capacity it may land on: on every one it names, on at least
    one of its cluster's where it takes any host (a task that asks for no GPU may run on other hosts there)."""
    from .plan_inputs import service_input  # here: plan_inputs reads fleet files, whose checks import the rule table

    found: list[tuple[CapacityInput, TaskProblem]] = []
    for capacity in on:
        probe = service_input(runner.resource.logical_id, capacity.name, shape, 1, count_source="written")
        found += [(capacity, p) for p in task_problems(probe, capacity)]
    fits_one = any(not any(c is capacity for c, _ in found) for capacity in on)
    if not found or (not named and (fits_one or not (shape.gpu_budgets_mib or shape.whole_gpus))):
        return
    overridden = bool(camel_keys(runner.overrides)) if not isinstance(runner.overrides, str) else False
    for capacity, problem in found:
        message = (
            f"[{problem.rule_id}] {runner.what} {cdk_path(runner.resource)} runs task definition {cdk_path(task)} "
            f"on GPU capacity {capacity.name}, as written{' and overridden' if overridden else ''}: {problem.what}, "
            f"so ECS never places it; {problem.fix}"
        )
        out.violations.append(_violation(runner.resource, problem.rule_id, message))


def _violation(resource: Resource, rule_id: str, message: str) -> Violation:
    return Violation(rule_id, resource.stack, resource.logical_id, message)
