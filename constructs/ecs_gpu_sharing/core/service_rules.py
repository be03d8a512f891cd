"""What the real AWS services refuse and an emulator lets through, as one table. Pure Python: templates in, findings
out.

moto (the deploy rehearsal's emulator) checks request shapes against botocore's models; the real services also check
how resources fit together: a Service Connect task without task-level memory, a rolling update that cannot launch a
host, a key policy naming a role that does not exist yet. Each row here is one such rule: its id, the service that
enforces it, the requirement, where AWS states it (page title and sentence), and a check that reads the synthesized
templates as CloudFormation will see them, whichever construct wrote them (the cdk-nag way). The checks run at
``cdk synth`` in every app that uses the library (``FleetPlan`` adds them; ``AwsLimitsChecks`` holds them for an app
without one), and again in the deploy rehearsal, which names every row it cannot see enforced in moto.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from . import quotas
from .markdown import table
from .shape import SERVICE_CONNECT_PROXY_CPU_UNITS, SERVICE_CONNECT_PROXY_MEMORY_MIB, camel_keys
from .template_limits import Violation, check_templates, output_value

PREFIX = quotas.PREFIX
Template = Mapping[str, Any]


@dataclass(frozen=True)
class Resource:
    stack: str
    logical_id: str
    kind: str
    props: Mapping[str, Any]
    attributes: Mapping[str, Any]  # UpdatePolicy, DependsOn, ...: everything beside Type and Properties


class Templates:
    """Every stack's resources, with references followed within a stack and across stacks (outputs read back)."""

    def __init__(self, templates: Mapping[str, Template]) -> None:
        self.templates = templates
        self._by_id: dict[tuple[str, str], Resource] = {}
        for stack, template in templates.items():
            for logical_id, raw in (template.get("Resources") or {}).items():
                if not isinstance(raw, Mapping):
                    continue
                props = raw.get("Properties")
                self._by_id[(stack, logical_id)] = Resource(
                    stack,
                    logical_id,
                    str(raw.get("Type")),
                    props if isinstance(props, Mapping) else {},
                    {k: v for k, v in raw.items() if k not in ("Type", "Properties")},
                )

    def of_type(self, kind: str) -> Iterator[Resource]:
        return (r for r in self._by_id.values() if r.kind == kind)

    def target(self, value: Any, stack: str) -> Resource | None:
        """The resource a ``Ref`` or ``Fn::GetAtt`` names, in ``stack`` or, through an output, in another stack."""
        if not isinstance(value, Mapping) or len(value) != 1:
            return None
        ((key, arg),) = value.items()
        if key == "Ref" and isinstance(arg, str):
            return self._by_id.get((stack, arg))
        if key == "Fn::GetAtt":
            name = arg[0] if isinstance(arg, list) and arg else str(arg).split(".", 1)[0]
            return self._by_id.get((stack, str(name)))
        exported = output_value(value, self.templates)
        return None if exported is None else self.target(exported[1], exported[0])


Finding = tuple[Resource, str]  # the resource and what is wrong with it, with what to do
Check = Callable[[Templates], Iterator[Finding]]


@dataclass(frozen=True)
class ServiceRule:
    rule_id: str
    service: str  # the AWS service that refuses
    requirement: str  # what it requires, one line
    source: str  # the page and its sentence
    check: Check
    rehearsal: str = "not enforced by moto: checked on the templates before deploying"


def _int(value: Any) -> int | None:
    """A literal whole number (CloudFormation writes some as strings); ``None`` for tokens and absences."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _containers(task: Resource) -> list[dict[str, Any]]:
    containers = task.props.get("ContainerDefinitions")
    return [camel_keys(c) for c in containers] if isinstance(containers, list) else []


def _compatibilities(task: Resource) -> set[str]:
    value = task.props.get("RequiresCompatibilities")
    return {str(v) for v in value} if isinstance(value, list) else set()


def _on_ec2(task: Resource) -> bool:
    """A task definition that may run on EC2 container instances (EC2 is also ECS's default compatibility)."""
    found = _compatibilities(task)
    return not found or "EC2" in found


def _network_mode(task: Resource) -> str:
    mode = task.props.get("NetworkMode")
    return mode if isinstance(mode, str) else "bridge"


def _services(ctx: Templates) -> Iterator[tuple[Resource, Resource]]:
    """Each ECS service with the task definition it runs, where the templates hold it (imported ones are skipped)."""
    for service in ctx.of_type("AWS::ECS::Service"):
        task = ctx.target(service.props.get("TaskDefinition"), service.stack)
        if task is not None and task.kind == "AWS::ECS::TaskDefinition":
            yield service, task


def _reserved(task: Resource) -> tuple[int, int]:
    """The containers' CPU units and memory as ECS reserves them on EC2: each container's reservation, else its limit
    (the same reading as ``core.shape.task_shape``; a token counts as nothing here)."""
    containers = _containers(task)
    cpu = sum(_int(c.get("cpu")) or 0 for c in containers)
    memory = sum(_int(c.get("memoryReservation", c.get("memory"))) or 0 for c in containers)
    return cpu, memory


def _service_connect(service: Resource) -> bool:
    config = service.props.get("ServiceConnectConfiguration")
    return isinstance(config, Mapping) and config.get("Enabled") in (True, "true")


# --- Amazon ECS ----------------------------------------------------------------------------------------------------

SERVICE_CONNECT_TASK_MEMORY = f"{PREFIX}ServiceConnectNeedsTaskMemory"
SERVICE_CONNECT_TASKS = f"{PREFIX}ServiceConnectTasksPerService"
AWSVPC_NETWORK_CONFIGURATION = f"{PREFIX}AwsvpcServiceNeedsNetworkConfiguration"
NETWORK_CONFIGURATION_NOT_AWSVPC = f"{PREFIX}NetworkConfigurationNeedsAwsvpc"
TARGET_TYPE_MATCHES_NETWORK_MODE = f"{PREFIX}TargetTypeMatchesNetworkMode"
LOAD_BALANCER_CONTAINER = f"{PREFIX}LoadBalancerNamesAContainerPort"
AWSVPC_HOST_PORT = f"{PREFIX}AwsvpcHostPortEqualsContainerPort"
CONTAINER_MEMORY_ON_EC2 = f"{PREFIX}Ec2TaskNeedsMemory"
MEMORY_RESERVATION_BELOW_LIMIT = f"{PREFIX}MemoryReservationBelowLimit"
ESSENTIAL_CONTAINER = f"{PREFIX}TaskNeedsAnEssentialContainer"
STRATEGY_WITH_LAUNCH_TYPE = f"{PREFIX}CapacityProviderStrategyWithLaunchType"
STRATEGY_ONE_BASE = f"{PREFIX}CapacityProviderStrategyOneBase"
PROVIDER_NAME_PREFIX = f"{PREFIX}CapacityProviderNamePrefix"
TARGET_CAPACITY_RANGE = f"{PREFIX}ManagedScalingTargetCapacity"
TERMINATION_PROTECTION = f"{PREFIX}TerminationProtectionNeedsScaleInProtection"


def service_connect_task_memory(ctx: Templates) -> Iterator[Finding]:
    for service, task in _services(ctx):
        if _service_connect(service) and _on_ec2(task) and task.props.get("Memory") is None:
            cpu, memory = _reserved(task)
            yield (
                task,
                f"service {service.logical_id} uses Service Connect and this EC2 task definition has no task-level "
                "memory (container limits alone are not supported with Service Connect); set the task's memory and "
                "cpu to at least the containers' sum plus the proxy's share (128 MiB more past 100 services or 2,000 "
                f"tasks in the namespace): memory {memory + SERVICE_CONNECT_PROXY_MEMORY_MIB}, cpu "
                f"{cpu + SERVICE_CONNECT_PROXY_CPU_UNITS} (SharedGpuTaskDefinition(memory_mib=..., cpu=...))",
            )


def service_connect_tasks(ctx: Templates) -> Iterator[Finding]:
    limit = quotas.SERVICE_CONNECT_TASKS_PER_SERVICE
    for service in ctx.of_type("AWS::ECS::Service"):
        count = _int(service.props.get("DesiredCount"))
        if _service_connect(service) and count is not None and count > limit.number:
            yield (
                service,
                limit.message(f"service {service.logical_id}", count, "split the service, or drop Service Connect"),
            )
    for target in ctx.of_type("AWS::ApplicationAutoScaling::ScalableTarget"):
        scaled = _scaled_service(ctx, target)
        high = _int(target.props.get("MaxCapacity"))
        if scaled is not None and _service_connect(scaled) and high is not None and high > limit.number:
            yield (
                target,
                limit.message(f"the scaling maximum of service {scaled.logical_id}", high, "lower max_capacity"),
            )


def _scaled_service(ctx: Templates, target: Resource) -> Resource | None:
    """The ECS service a scalable target scales: its ResourceId joins ``service/<cluster>/<service name>``."""
    resource_id = target.props.get("ResourceId")
    parts = resource_id.get("Fn::Join", [None, []])[1] if isinstance(resource_id, Mapping) else []
    for part in parts if isinstance(parts, list) else []:
        found = ctx.target(part, target.stack)
        if found is not None and found.kind == "AWS::ECS::Service":
            return found
    return None


def awsvpc_network_configuration(ctx: Templates) -> Iterator[Finding]:
    for service, task in _services(ctx):
        has = isinstance((service.props.get("NetworkConfiguration") or {}).get("AwsvpcConfiguration"), Mapping)
        if _network_mode(task) == "awsvpc" and not has:
            yield (
                service,
                "its task definition uses the awsvpc network mode and the service has no network "
                "configuration; give the service subnets and security groups (NetworkConfiguration)",
            )


def network_configuration_not_awsvpc(ctx: Templates) -> Iterator[Finding]:
    for service, task in _services(ctx):
        if _network_mode(task) != "awsvpc" and service.props.get("NetworkConfiguration"):
            yield (
                service,
                (
                    f"the service has a network configuration but its task definition's network mode is "
                    f"{_network_mode(task)}; drop the network configuration, or use the awsvpc network mode"
                ),
            )


def target_type_matches_network_mode(ctx: Templates) -> Iterator[Finding]:
    for service, task in _services(ctx):
        mode = _network_mode(task)
        for entry in service.props.get("LoadBalancers") or []:
            group = ctx.target(camel_keys(entry).get("targetGroupArn"), service.stack)
            if group is None or group.kind != "AWS::ElasticLoadBalancingV2::TargetGroup":
                continue
            kind = str(group.props.get("TargetType") or "instance")
            want = "ip" if mode == "awsvpc" else "instance"
            if kind != want:
                yield (
                    group,
                    (
                        f"service {service.logical_id} registers {mode}-mode tasks in this target group of target type "
                        f"{kind}; ECS needs target type {want} for the {mode} network mode"
                    ),
                )


def load_balancer_container(ctx: Templates) -> Iterator[Finding]:
    for service, task in _services(ctx):
        ports = {
            str(c.get("name")): {_int(camel_keys(p).get("containerPort")) for p in c.get("portMappings") or []}
            for c in _containers(task)
        }
        for entry in service.props.get("LoadBalancers") or []:
            lb = camel_keys(entry)
            name, port = str(lb.get("containerName")), _int(lb.get("containerPort"))
            if name not in ports:
                yield service, f"its load balancer names container {name}, which the task definition does not have"
            elif port is not None and port not in ports[name]:
                yield (
                    service,
                    (
                        f"its load balancer names port {port} of container {name}, which maps "
                        f"{sorted(p for p in ports[name] if p is not None) or 'no port'}; add the port mapping"
                    ),
                )


def awsvpc_host_port(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        if _network_mode(task) not in ("awsvpc", "host"):
            continue
        for c in _containers(task):
            for mapping in c.get("portMappings") or []:
                m = camel_keys(mapping)
                host, container = _int(m.get("hostPort")), _int(m.get("containerPort"))
                if host is not None and container is not None and host != container:
                    yield (
                        task,
                        (
                            f"container {c.get('name')} maps host port {host} to {container} in {_network_mode(task)} "
                            "mode, where the host port must be left out or equal the container port"
                        ),
                    )


def container_memory_on_ec2(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        if not _on_ec2(task) or task.props.get("Memory") is not None:
            continue
        for c in _containers(task):
            if c.get("memory") is None and c.get("memoryReservation") is None:
                yield (
                    task,
                    (
                        f"container {c.get('name')} has no memory limit or reservation and the task has no task-level "
                        "memory; give the container memory_limit_mib (or memory_reservation_mib), or the task memory"
                    ),
                )


def memory_reservation_below_limit(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        for c in _containers(task):
            hard, soft = _int(c.get("memory")), _int(c.get("memoryReservation"))
            if hard is not None and soft is not None and soft >= hard:
                yield (
                    task,
                    (
                        f"container {c.get('name')} reserves {soft} MiB with a limit of {hard} MiB; the limit must be "
                        "greater than the reservation"
                    ),
                )
        memory = _int(task.props.get("Memory"))
        used = _reserved(task)[1]
        if memory is not None and used > memory:
            yield (
                task,
                (f"its containers reserve {used} MiB, more than the task's memory {memory} MiB; raise the task memory"),
            )


def essential_container(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        containers = _containers(task)
        if containers and all(c.get("essential") in (False, "false") for c in containers):
            yield task, "no container is essential; mark the model container essential"


def _strategies(service: Resource) -> list[dict[str, Any]]:
    value = service.props.get("CapacityProviderStrategy")
    return [camel_keys(s) for s in value] if isinstance(value, list) else []


def strategy_with_launch_type(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        if _strategies(service) and service.props.get("LaunchType") is not None:
            yield service, "it names a capacity provider strategy and a launch type; drop the launch type"


def strategy_one_base(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        based = [str(s.get("capacityProvider")) for s in _strategies(service) if (_int(s.get("base")) or 0) > 0]
        if len(based) > 1:
            yield service, f"{len(based)} capacity providers of its strategy have a base; give a base to one only"


_RESERVED_PROVIDER_PREFIX = re.compile(r"^(aws|ecs|fargate)", re.IGNORECASE)


def provider_name_prefix(ctx: Templates) -> Iterator[Finding]:
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        name = provider.props.get("Name")
        if isinstance(name, str) and _RESERVED_PROVIDER_PREFIX.match(name):
            yield provider, f"its name {name!r} starts with a prefix ECS reserves (aws, ecs, fargate); rename it"


def target_capacity_range(ctx: Templates) -> Iterator[Finding]:
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        scaling = camel_keys(camel_keys(provider.props.get("AutoScalingGroupProvider")).get("managedScaling"))
        target = _int(scaling.get("targetCapacity"))
        if target is not None and not 1 <= target <= 100:
            yield provider, f"managed scaling's target capacity is {target}; give a percent from 1 to 100"


def termination_protection(ctx: Templates) -> Iterator[Finding]:
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        config = camel_keys(provider.props.get("AutoScalingGroupProvider"))
        if config.get("managedTerminationProtection") != "ENABLED":
            continue
        if camel_keys(config.get("managedScaling")).get("status") != "ENABLED":
            yield provider, "managed termination protection is on and managed scaling is off; turn managed scaling on"
        group = ctx.target(config.get("autoScalingGroupArn"), provider.stack)
        if group is not None and group.props.get("NewInstancesProtectedFromScaleIn") not in (True, "true"):
            yield (
                group,
                (
                    f"capacity provider {provider.logical_id} protects instances from termination, and this group "
                    "does not protect new instances from scale-in; set NewInstancesProtectedFromScaleIn"
                ),
            )


# --- Amazon EC2 Auto Scaling and CloudFormation's update policy ----------------------------------------------------

ROLL_BELOW_MAX_SIZE = f"{PREFIX}RollingUpdateBelowMaxSize"
GROUP_SIZES = f"{PREFIX}AutoScalingGroupSizes"
ROLL_PAUSE_TIME = f"{PREFIX}RollingUpdatePauseTime"
GROUP_ONE_LAUNCH_SOURCE = f"{PREFIX}AutoScalingGroupOneLaunchSource"


def roll_below_max_size(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::AutoScaling::AutoScalingGroup"):
        roll = (group.attributes.get("UpdatePolicy") or {}).get("AutoScalingRollingUpdate") or {}
        keep, high = _int(roll.get("MinInstancesInService")), _int(group.props.get("MaxSize"))
        if keep is not None and high is not None and keep >= high:
            yield (
                group,
                (
                    f"its rolling update keeps {keep} instances in service with MaxSize {high}; CloudFormation needs "
                    "MinInstancesInService below MaxSize to launch a replacement: raise max_instances above "
                    "min_instances"
                ),
            )


def group_sizes(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::AutoScaling::AutoScalingGroup"):
        low, high = _int(group.props.get("MinSize")), _int(group.props.get("MaxSize"))
        desired = _int(group.props.get("DesiredCapacity"))
        if low is not None and high is not None and low > high:
            yield group, f"MinSize {low} is above MaxSize {high}; raise max_instances"
        if desired is not None and ((low is not None and desired < low) or (high is not None and desired > high)):
            yield group, f"DesiredCapacity {desired} is outside MinSize {low} .. MaxSize {high}"


_DURATION = re.compile(r"^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?$")


def roll_pause_time(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::AutoScaling::AutoScalingGroup"):
        roll = (group.attributes.get("UpdatePolicy") or {}).get("AutoScalingRollingUpdate") or {}
        pause = roll.get("PauseTime")
        if not isinstance(pause, str):
            continue
        match = _DURATION.match(pause)
        if match is None or pause == "PT":
            yield group, f"its rolling update's PauseTime {pause!r} is not an ISO 8601 duration (PT#H#M#S)"
            continue
        hours, minutes, seconds = (int(x or 0) for x in match.groups())
        if hours * 3600 + minutes * 60 + seconds > 3600:
            yield group, f"its rolling update's PauseTime {pause} is over one hour (PT1H), the most allowed"


def group_one_launch_source(ctx: Templates) -> Iterator[Finding]:
    sources = ("LaunchTemplate", "LaunchConfigurationName", "MixedInstancesPolicy", "InstanceId")
    for group in ctx.of_type("AWS::AutoScaling::AutoScalingGroup"):
        given = [s for s in sources if group.props.get(s) is not None]
        if len(given) != 1:
            yield group, f"it names {', '.join(given) or 'no launch source'}; name exactly one of {', '.join(sources)}"


# --- Elastic Load Balancing ----------------------------------------------------------------------------------------

HEALTH_CHECK_TIMEOUT = f"{PREFIX}HealthCheckTimeoutBelowInterval"
ELB_NAME_LENGTH = f"{PREFIX}LoadBalancingNameLength"
LISTENER_RULE_PRIORITY = f"{PREFIX}ListenerRulePriorityUnique"
DEREGISTRATION_DELAY = f"{PREFIX}DeregistrationDelayRange"


def health_check_timeout(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::ElasticLoadBalancingV2::TargetGroup"):
        timeout = _int(group.props.get("HealthCheckTimeoutSeconds"))
        interval = _int(group.props.get("HealthCheckIntervalSeconds"))
        if timeout is not None and interval is not None and timeout >= interval:
            yield (
                group,
                f"its health check times out after {timeout} s with checks every {interval} s; keep the "
                "timeout below the interval",
            )


def elb_name_length(ctx: Templates) -> Iterator[Finding]:
    for kind in ("AWS::ElasticLoadBalancingV2::TargetGroup", "AWS::ElasticLoadBalancingV2::LoadBalancer"):
        for resource in ctx.of_type(kind):
            name = resource.props.get("Name")
            if isinstance(name, str) and (len(name) > 32 or name.startswith("-") or name.endswith("-")):
                yield resource, f"its name {name!r} is over 32 characters or starts or ends with a hyphen"


def listener_rule_priority(ctx: Templates) -> Iterator[Finding]:
    seen: dict[tuple[str, str], Resource] = {}
    for rule in ctx.of_type("AWS::ElasticLoadBalancingV2::ListenerRule"):
        priority = _int(rule.props.get("Priority"))
        if priority is None:
            continue
        if not 1 <= priority <= 50_000:
            yield rule, f"its priority {priority} is outside 1 .. 50,000"
        listener = ctx.target(rule.props.get("ListenerArn"), rule.stack)
        key = (
            f"{listener.stack}/{listener.logical_id}" if listener else json.dumps(rule.props.get("ListenerArn")),
            str(priority),
        )
        if key in seen:
            first = seen[key]
            yield rule, f"priority {priority} is already taken on its listener by {first.stack}/{first.logical_id}"
        else:
            seen[key] = rule


def deregistration_delay(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::ElasticLoadBalancingV2::TargetGroup"):
        for attribute in group.props.get("TargetGroupAttributes") or []:
            a = camel_keys(attribute)
            value = _int(a.get("value"))
            if a.get("key") == "deregistration_delay.timeout_seconds" and value is not None and value > 3600:
                yield group, f"its deregistration delay is {value} s; AWS allows 0 .. 3,600"


# --- Amazon CloudWatch, EventBridge, CloudWatch Logs ---------------------------------------------------------------

ALARM_PERIOD = f"{PREFIX}AlarmPeriod"
ALARM_DATAPOINTS = f"{PREFIX}AlarmDatapointsWithinPeriods"
RULE_TARGETS = f"{PREFIX}TargetsPerEventRule"
LOG_RETENTION = f"{PREFIX}LogRetentionDays"

_RETENTION_DAYS = frozenset(
    (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)
)


def alarm_period(ctx: Templates) -> Iterator[Finding]:
    for alarm in ctx.of_type("AWS::CloudWatch::Alarm"):
        period, periods = _int(alarm.props.get("Period")), _int(alarm.props.get("EvaluationPeriods"))
        if period is not None and period not in (10, 20, 30) and (period < 60 or period % 60):
            yield alarm, f"its period is {period} s; use 10, 20, 30 or a multiple of 60"
        if period is not None and periods is not None and period * periods > 86_400:
            yield alarm, f"it evaluates {periods} periods of {period} s, over one day (86,400 s)"


def alarm_datapoints(ctx: Templates) -> Iterator[Finding]:
    for alarm in ctx.of_type("AWS::CloudWatch::Alarm"):
        points, periods = _int(alarm.props.get("DatapointsToAlarm")), _int(alarm.props.get("EvaluationPeriods"))
        if points is not None and periods is not None and points > periods:
            yield (
                alarm,
                f"it alarms on {points} datapoints out of {periods} evaluation periods; keep datapoints <= periods",
            )


def rule_targets(ctx: Templates) -> Iterator[Finding]:
    for rule in ctx.of_type("AWS::Events::Rule"):
        targets = rule.props.get("Targets")
        if isinstance(targets, list) and len(targets) > 5:
            yield rule, f"it has {len(targets)} targets; an EventBridge rule takes at most 5"


def log_retention(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::Logs::LogGroup"):
        days = _int(group.props.get("RetentionInDays"))
        if days is not None and days not in _RETENTION_DAYS:
            yield group, f"its retention of {days} days is not one CloudWatch Logs offers ({sorted(_RETENTION_DAYS)})"


# --- AWS KMS -------------------------------------------------------------------------------------------------------

KEY_POLICY_PRINCIPALS = f"{PREFIX}KeyPolicyNamesNoMissingPrincipal"
KEY_POLICY_SIZE = f"{PREFIX}KeyPolicySize"

# A service-linked role: AWS makes it with the service's first use in an account, so a new account lacks it. Another
# role named by ARN may well exist (an imported one): the templates cannot tell, so only these are refused.
_SERVICE_LINKED_ROLE = re.compile(r":iam::[^:]*:role/aws-service-role/")


def _flat(value: Any) -> str:
    """A string as it will read once deployed, with every reference written as ``{ref}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            return str(arg[0]).join(_flat(part) for part in arg[1])
        if key == "Fn::Sub" and isinstance(arg, str):
            return arg
    return "{ref}"


def _principals(statement: Mapping[str, Any]) -> list[Any]:
    principal = statement.get("Principal")
    if not isinstance(principal, Mapping):
        return []
    names = principal.get("AWS")
    return names if isinstance(names, list) else [names] if names is not None else []


def key_policy_principals(ctx: Templates) -> Iterator[Finding]:
    for key in ctx.of_type("AWS::KMS::Key"):
        policy = key.props.get("KeyPolicy")
        if isinstance(policy, str):
            try:
                policy = json.loads(policy)
            except ValueError:
                continue
        for statement in (policy or {}).get("Statement") or []:
            for name in _principals(statement):
                if ctx.target(name, key.stack) is not None:
                    continue  # a role of the templates: CloudFormation creates it before the key
                arn = _flat(name)
                if _SERVICE_LINKED_ROLE.search(arn):
                    yield (
                        key,
                        (
                            f"its policy names the role {arn} as a principal; KMS refuses a policy whose principal "
                            "does not exist yet (a service-linked role appears only with the service's first use): "
                            "name the account and match the role with an aws:PrincipalArn condition"
                        ),
                    )


def key_policy_size(ctx: Templates) -> Iterator[Finding]:
    for key in ctx.of_type("AWS::KMS::Key"):
        policy = key.props.get("KeyPolicy")
        size = len(policy if isinstance(policy, str) else json.dumps(policy, separators=(",", ":")))
        if size > 32_768:
            yield key, f"its policy is {size:,} bytes; a key policy holds at most 32 KB"


# --- the table -----------------------------------------------------------------------------------------------------

_ECS_GUIDE = "Amazon ECS Developer Guide"
_ECS_API = "Amazon ECS API Reference"
_ASG = "Amazon EC2 Auto Scaling API Reference, CreateAutoScalingGroup"
_ELB = "Elastic Load Balancing API Reference (version 2015-12-01)"

SERVICE_RULES: tuple[ServiceRule, ...] = (
    ServiceRule(
        SERVICE_CONNECT_TASK_MEMORY,
        "Amazon ECS",
        "an EC2 task definition of a service with Service Connect has task-level memory",
        f"{_ECS_GUIDE}, 'Service Connect considerations': \"On Amazon EC2, task memory is optional, but it is required "
        'for Service Connect"; "task definitions that set container memory limits for all containers instead of '
        "setting the task memory limit aren't supported\"",
        service_connect_task_memory,
    ),
    ServiceRule(
        SERVICE_CONNECT_TASKS,
        "Amazon ECS (AWS Cloud Map)",
        f"a service with Service Connect runs at most {quotas.SERVICE_CONNECT_TASKS_PER_SERVICE.number:,} tasks",
        quotas.SERVICE_CONNECT_TASKS_PER_SERVICE.source,
        service_connect_tasks,
    ),
    ServiceRule(
        AWSVPC_NETWORK_CONFIGURATION,
        "Amazon ECS",
        "a service whose task definition uses awsvpc has a network configuration",
        f'{_ECS_API}, CreateService, networkConfiguration: "This parameter is required for task definitions that use '
        'the awsvpc network mode to receive their own elastic network interface"',
        awsvpc_network_configuration,
    ),
    ServiceRule(
        NETWORK_CONFIGURATION_NOT_AWSVPC,
        "Amazon ECS",
        "a service has a network configuration only with the awsvpc network mode",
        f'{_ECS_API}, CreateService, networkConfiguration: "... and it isn\'t supported for other network modes"',
        network_configuration_not_awsvpc,
    ),
    ServiceRule(
        TARGET_TYPE_MATCHES_NETWORK_MODE,
        "Amazon ECS",
        "awsvpc tasks register in ip target groups; bridge and host tasks in instance target groups",
        f"{_ECS_GUIDE}, 'Use an Application Load Balancer for Amazon ECS': \"If your service's task definition uses "
        'the awsvpc network mode ..., you must choose ip as the target type"',
        target_type_matches_network_mode,
    ),
    ServiceRule(
        LOAD_BALANCER_CONTAINER,
        "Amazon ECS",
        "a service's load balancer names a container of its task definition and a port that container maps",
        f'{_ECS_API}, LoadBalancer: containerName "as it appears in a container definition"; containerPort "This '
        'port must correspond to a containerPort in the task definition the tasks in the service are using"',
        load_balancer_container,
    ),
    ServiceRule(
        AWSVPC_HOST_PORT,
        "Amazon ECS",
        "in awsvpc and host mode a port mapping's host port is left out or equals its container port",
        f'{_ECS_API}, PortMapping, hostPort: "If you use containers in a task with the awsvpc or host network mode, '
        'the hostPort can either be left blank or set to the same value as the containerPort"',
        awsvpc_host_port,
    ),
    ServiceRule(
        CONTAINER_MEMORY_ON_EC2,
        "Amazon ECS",
        "on EC2, a task without task-level memory gives every container a memory limit or reservation",
        f"{_ECS_API}, ContainerDefinition, memory: \"If you're using the EC2 launch type, you must specify either a "
        'task-level memory value or a container-level memory value"',
        container_memory_on_ec2,
    ),
    ServiceRule(
        MEMORY_RESERVATION_BELOW_LIMIT,
        "Amazon ECS",
        "a container's memory limit is above its reservation, and the task's memory holds its containers'",
        f'{_ECS_API}, ContainerDefinition, memoryReservation: "If you specify both, memory must be greater than '
        "memoryReservation\"; RegisterTaskDefinition, memory: the containers' memory must fit the task's",
        memory_reservation_below_limit,
    ),
    ServiceRule(
        ESSENTIAL_CONTAINER,
        "Amazon ECS",
        "a task definition has at least one essential container",
        f'{_ECS_API}, ContainerDefinition, essential: "All tasks must have at least one essential container"',
        essential_container,
    ),
    ServiceRule(
        STRATEGY_WITH_LAUNCH_TYPE,
        "Amazon ECS",
        "a service names a capacity provider strategy or a launch type, not both",
        f'{_ECS_API}, CreateService, capacityProviderStrategy: "If a capacityProviderStrategy is specified, the '
        'launchType parameter must be omitted"',
        strategy_with_launch_type,
    ),
    ServiceRule(
        STRATEGY_ONE_BASE,
        "Amazon ECS",
        "at most one capacity provider of a strategy has a base",
        f'{_ECS_API}, CapacityProviderStrategyItem, base: "Only one capacity provider in a capacity provider strategy '
        'can have a base defined"',
        strategy_one_base,
    ),
    ServiceRule(
        PROVIDER_NAME_PREFIX,
        "Amazon ECS",
        'a capacity provider\'s name does not start with "aws", "ecs" or "fargate"',
        f'{_ECS_API}, CreateCapacityProvider, name: "The name can\'t be prefixed with "aws", "ecs", or "fargate""',
        provider_name_prefix,
    ),
    ServiceRule(
        TARGET_CAPACITY_RANGE,
        "Amazon ECS",
        "managed scaling's target capacity is a percent from 1 to 100",
        f'{_ECS_API}, ManagedScaling, targetCapacity: "The value must be greater than 0 and less than or equal to 100"',
        target_capacity_range,
    ),
    ServiceRule(
        TERMINATION_PROTECTION,
        "Amazon ECS",
        "managed termination protection comes with managed scaling and a group that protects new instances from "
        "scale-in",
        f'{_ECS_API}, AutoScalingGroupProvider, managedTerminationProtection: "When using managed termination '
        "protection, managed scaling must also be used otherwise managed termination protection doesn't work\" and "
        '"the Auto Scaling group ... must have instance protection from scale in enabled"',
        termination_protection,
    ),
    ServiceRule(
        ROLL_BELOW_MAX_SIZE,
        "AWS CloudFormation",
        "a rolling update keeps fewer instances in service than the group's MaxSize",
        "AWS CloudFormation User Guide, 'UpdatePolicy attribute', AutoScalingRollingUpdate, MinInstancesInService: "
        '"This value must be less than the MaxSize of the Auto Scaling group"',
        roll_below_max_size,
    ),
    ServiceRule(
        GROUP_SIZES,
        "Amazon EC2 Auto Scaling",
        "MinSize <= DesiredCapacity <= MaxSize",
        f'{_ASG}, DesiredCapacity: "must be greater than or equal to the minimum size of the group and less than or '
        'equal to the maximum size of the group"',
        group_sizes,
    ),
    ServiceRule(
        ROLL_PAUSE_TIME,
        "AWS CloudFormation",
        "a rolling update's PauseTime is an ISO 8601 duration of at most one hour",
        "AWS CloudFormation User Guide, 'UpdatePolicy attribute', PauseTime: \"Specify PauseTime in the ISO8601 "
        'duration format (in the format PT#H#M#S ...). The maximum PauseTime is one hour (PT1H)"',
        roll_pause_time,
    ),
    ServiceRule(
        GROUP_ONE_LAUNCH_SOURCE,
        "Amazon EC2 Auto Scaling",
        "a group names exactly one of a launch template, a launch configuration, a mixed instances policy, an instance",
        f'{_ASG}: "You must specify one of the following parameters in your request: LaunchConfigurationName, '
        'LaunchTemplate, InstanceId, or MixedInstancesPolicy"',
        group_one_launch_source,
    ),
    ServiceRule(
        HEALTH_CHECK_TIMEOUT,
        "Elastic Load Balancing",
        "a target group's health check timeout is below its interval",
        f"{_ELB}, CreateTargetGroup, HealthCheckTimeoutSeconds and the target group health check settings: the "
        "timeout must be smaller than the interval",
        health_check_timeout,
    ),
    ServiceRule(
        ELB_NAME_LENGTH,
        "Elastic Load Balancing",
        "a load balancer's or target group's name has at most 32 characters and no hyphen at either end",
        f'{_ELB}, CreateTargetGroup and CreateLoadBalancer, Name: "This name must be unique per region per account, '
        'can have a maximum of 32 characters, ... and must not begin or end with a hyphen"',
        elb_name_length,
    ),
    ServiceRule(
        LISTENER_RULE_PRIORITY,
        "Elastic Load Balancing",
        "each rule of a listener has its own priority, from 1 to 50,000",
        f"{_ELB}, CreateRule, Priority: \"The rule priority. A listener can't have multiple rules with the same "
        'priority" (valid range 1 - 50000)',
        listener_rule_priority,
    ),
    ServiceRule(
        DEREGISTRATION_DELAY,
        "Elastic Load Balancing",
        "a target group's deregistration delay is 0 .. 3,600 seconds",
        f'{_ELB}, TargetGroupAttribute, deregistration_delay.timeout_seconds: "The range is 0-3600 seconds"',
        deregistration_delay,
    ),
    ServiceRule(
        ALARM_PERIOD,
        "Amazon CloudWatch",
        "an alarm's period is 10, 20, 30 s or a multiple of 60, and its periods together span at most one day",
        'Amazon CloudWatch API Reference, PutMetricAlarm, Period: "Valid values are 10, 20, 30, and any multiple of '
        '60"; EvaluationPeriods: "An alarm\'s total current evaluation period can be no longer than one day"',
        alarm_period,
    ),
    ServiceRule(
        ALARM_DATAPOINTS,
        "Amazon CloudWatch",
        "an alarm's datapoints to alarm are at most its evaluation periods",
        "Amazon CloudWatch User Guide, 'Evaluating an alarm': \"Datapoints to Alarm ... must be less than or equal to "
        'Evaluation Periods"',
        alarm_datapoints,
    ),
    ServiceRule(
        RULE_TARGETS,
        "Amazon EventBridge",
        "an EventBridge rule has at most 5 targets",
        "Amazon EventBridge User Guide, 'Amazon EventBridge quotas': \"Targets per rule: 5\"",
        rule_targets,
    ),
    ServiceRule(
        LOG_RETENTION,
        "Amazon CloudWatch Logs",
        "a log group's retention is one of the day counts CloudWatch Logs offers",
        'Amazon CloudWatch Logs API Reference, PutRetentionPolicy, retentionInDays: "Possible values are: 1, 3, 5, 7, '
        '14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, and 3653"',
        log_retention,
    ),
    ServiceRule(
        KEY_POLICY_PRINCIPALS,
        "AWS KMS",
        "a key policy names no service-linked role as a principal (a new account has none until the service's first "
        "use)",
        "AWS KMS Developer Guide, 'Key policies in AWS KMS' (principals): a principal in a key policy must exist, or "
        "CreateKey and PutKeyPolicy fail with MalformedPolicyDocumentException; the Auto Scaling service-linked role "
        "is created with an account's first Auto Scaling group (EC2 Auto Scaling User Guide, 'Service-linked roles')",
        key_policy_principals,
        rehearsal="checked in the rehearsal's account too: a key policy naming a role the account lacks fails the "
        "deploy, as in AWS",
    ),
    ServiceRule(
        KEY_POLICY_SIZE,
        "AWS KMS",
        "a key policy document is at most 32 KB",
        "AWS KMS Developer Guide, 'Resource quotas': \"Key policy document size: 32 KB (32,768 bytes)\"",
        key_policy_size,
    ),
)

SERVICE_RULES_BY_ID = {rule.rule_id: rule for rule in SERVICE_RULES}


def check_service_rules(templates: Mapping[str, Template]) -> list[Violation]:
    """Every row of ``SERVICE_RULES`` that the templates break; a check that fails is reported as a finding, not raised
    (the cdk-nag way: one broken check must not hide the others)."""
    ctx = Templates(templates)
    out: list[Violation] = []
    for rule in SERVICE_RULES:
        try:
            for resource, what in rule.check(ctx):
                out.append(Violation(rule.rule_id, resource.stack, resource.logical_id, f"[{rule.rule_id}] {what}"))
        except Exception as error:
            out.append(
                Violation(
                    rule.rule_id,
                    "",
                    None,
                    f"[{rule.rule_id}] the check failed ({type(error).__name__}: {error}); a bug to report",
                )
            )
    return out


def check_all(templates: Mapping[str, Template]) -> list[Violation]:
    """AWS's limits (``core.quotas``, ``core.template_limits``) and its service-side rules, over every template."""
    return [*check_templates(templates), *check_service_rules(templates)]


def rule_ids() -> list[str]:
    """The ids ``check_all`` reports under."""
    return [*(limit.rule_id for limit in quotas.LIMITS), quotas.DUPLICATE_RULE_ID, *SERVICE_RULES_BY_ID]


def markdown() -> str:
    """docs/aws-rules.md: the table, generated."""
    rows = [
        [f"`{r.rule_id.removeprefix(PREFIX)}`", r.service, r.requirement, r.source, r.rehearsal] for r in SERVICE_RULES
    ]
    return (
        "# What AWS refuses that an emulator does not\n\n"
        "<!-- generated by `make docs` from core/service_rules.py; do not edit -->\n\n"
        "Each row is a rule the real service enforces when CloudFormation creates or updates the resource, and moto "
        "(the deploy rehearsal's emulator) does not. Every row is checked at `cdk synth` on every template of an app "
        "that uses the library (a GPU capacity brings the check; `AwsLimitsChecks` adds it to an app without one), and "
        "again by `make rehearse` before it deploys. A finding fails the synth, naming the stack, the resource and "
        "what to change. Ids carry the prefix `ecs-gpu-sharing:`.\n\n"
        + "\n".join(table(["rule", "service", "requirement", "source", "in the rehearsal"], rows))
        + "\n"
    )
