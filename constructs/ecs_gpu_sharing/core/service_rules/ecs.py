"""Amazon ECS: what the ECS API and its capacity providers refuse."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .. import quotas
from ..rule_family import PREFIX
from ..shape import SERVICE_CONNECT_PROXY_CPU_UNITS, SERVICE_CONNECT_PROXY_MEMORY_MIB, camel_keys
from .base import (
    Finding,
    Resource,
    Templates,
    _containers,
    _network_mode,
    _on_ec2,
    _reserved,
    _service_connect,
    _services,
    literal_number,
    provider_group,
)

# --- Amazon ECS ----------------------------------------------------------------------------------------------------

SERVICE_CONNECT_TASK_MEMORY = f"{PREFIX}ServiceConnectNeedsTaskMemory"
SERVICE_CONNECT_TASKS = f"{PREFIX}ServiceConnectTasksPerService"
SERVICE_CONNECT_NAME_TWICE = f"{PREFIX}ServiceConnectNameTwice"
AWSVPC_NETWORK_CONFIGURATION = f"{PREFIX}AwsvpcServiceNeedsNetworkConfiguration"
NETWORK_CONFIGURATION_NOT_AWSVPC = f"{PREFIX}NetworkConfigurationNeedsAwsvpc"
TARGET_TYPE_MATCHES_NETWORK_MODE = f"{PREFIX}TargetTypeMatchesNetworkMode"
LOAD_BALANCER_CONTAINER = f"{PREFIX}LoadBalancerNamesAContainerPort"
AWSVPC_HOST_PORT = f"{PREFIX}AwsvpcHostPortEqualsContainerPort"
CONTAINER_MEMORY_ON_EC2 = f"{PREFIX}Ec2TaskNeedsMemory"
MEMORY_RESERVATION_BELOW_LIMIT = f"{PREFIX}MemoryReservationBelowLimit"
ESSENTIAL_CONTAINER = f"{PREFIX}TaskNeedsAnEssentialContainer"
STRATEGY_WITH_LAUNCH_TYPE = f"{PREFIX}CapacityProviderStrategyWithLaunchType"
PLACEMENT_CONSTRAINTS = f"{PREFIX}PlacementConstraintsPerTask"
NETWORK_MODE_OPTIONS = f"{PREFIX}ContainerOptionsOfNetworkMode"
PORT_MAPPING_NAME = f"{PREFIX}PortMappingName"
PLACEMENT_STRATEGIES = f"{PREFIX}PlacementStrategiesPerService"
MAX_PLACEMENT_CONSTRAINTS = 10  # ECS API Reference, CreateService, placementConstraints
MAX_PLACEMENT_STRATEGIES = 5  # ECS API Reference, CreateService, placementStrategy
STRATEGY_ONE_BASE = f"{PREFIX}CapacityProviderStrategyOneBase"
PROVIDER_NAME_PREFIX = f"{PREFIX}CapacityProviderNamePrefix"
TARGET_CAPACITY_RANGE = f"{PREFIX}ManagedScalingTargetCapacity"
TERMINATION_PROTECTION = f"{PREFIX}TerminationProtectionNeedsScaleInProtection"
TARGET_GROUPS_PER_SERVICE = f"{PREFIX}ServiceTargetGroups"
DEPLOYMENT_OPTIONS_OF_CONTROLLER = f"{PREFIX}DeploymentOptionsOfController"
SERVICE_ROLE = f"{PREFIX}ServiceRoleWhereEcsTakesOne"
SERVICE_REGISTRIES = f"{PREFIX}OneServiceRegistry"
STRATEGY_WEIGHTS = f"{PREFIX}CapacityProviderStrategyWeights"
NO_PUBLIC_IP_ON_EC2 = f"{PREFIX}NoPublicIpOnEc2"
MAX_STRATEGY_PROVIDERS = 20  # ECS API Reference, CreateService, capacityProviderStrategy
MAX_TARGET_GROUPS = 5  # ECS Developer Guide, 'Registering multiple target groups with an Amazon ECS service'


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
        count = literal_number(service.props.get("DesiredCount"))
        if _service_connect(service) and count is not None and count > limit.number:
            yield (
                service,
                limit.message(f"service {service.logical_id}", count, "split the service, or drop Service Connect"),
            )
    for target in ctx.of_type("AWS::ApplicationAutoScaling::ScalableTarget"):
        scaled = _scaled_service(ctx, target)
        high = literal_number(target.props.get("MaxCapacity"))
        if scaled is not None and _service_connect(scaled) and high is not None and high > limit.number:
            yield (
                target,
                limit.message(f"the scaling maximum of service {scaled.logical_id}", high, "lower max_capacity"),
            )


def service_connect_name_twice(ctx: Templates) -> Iterator[Finding]:
    """A discovery name (the port name unless given) and a client alias (its DNS name, the discovery name unless
    given, and port) claimed by two services of one namespace (by its reference, or its cluster's default)."""
    claimed: dict[tuple[str, str, str], Resource] = {}
    for service in sorted(ctx.of_type("AWS::ECS::Service"), key=lambda r: (r.stack, r.logical_id)):
        if not _service_connect(service):
            continue
        config = camel_keys(service.props.get("ServiceConnectConfiguration"))
        given = config.get("namespace")
        where = ctx.target(given if given is not None else service.props.get("Cluster"), service.stack)
        space = f"{where.stack}/{where.logical_id}" if where is not None else json.dumps(given, sort_keys=True)
        for entry in config.get("services") or []:
            item = camel_keys(entry)
            discovery = item.get("discoveryName") or item.get("portName")
            names = [("discovery name", discovery)]
            for alias in item.get("clientAliases") or []:
                a = camel_keys(alias)
                names.append(("client alias", f"{a.get('dnsName') or discovery}:{a.get('port')}"))
            for kind, name in names:
                if not isinstance(name, str) or "{" in name:
                    continue  # a value known at deploy: not compared
                first = claimed.setdefault((space, kind, name), service)
                if first is not service:
                    yield (
                        service,
                        f"service {service.logical_id} claims the Service Connect {kind} {name!r} that service "
                        f"{first.logical_id} claims in the same namespace; each must be unique there, so the second "
                        "service fails to create; give one of them a discovery_name (or dns_name) of its own",
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
            str(c.get("name")): {
                literal_number(camel_keys(p).get("containerPort")) for p in c.get("portMappings") or []
            }
            for c in _containers(task)
        }
        for entry in service.props.get("LoadBalancers") or []:
            lb = camel_keys(entry)
            name, port = str(lb.get("containerName")), literal_number(lb.get("containerPort"))
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


def target_groups_per_service(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        groups = [e for e in service.props.get("LoadBalancers") or [] if camel_keys(e).get("targetGroupArn")]
        if len(groups) > MAX_TARGET_GROUPS:
            yield (
                service,
                f"it attaches {len(groups)} target groups, and ECS takes at most {MAX_TARGET_GROUPS}; split it",
            )
        controller = _controller(service)
        if len(groups) > 1 and controller != "ECS":
            yield (
                service,
                f"it attaches {len(groups)} target groups under deployment controller {controller}, and ECS takes "
                "more than one only under its own (ECS) controller; attach one, or deploy with ECS",
            )


def service_role(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        if service.props.get("Role") is None:
            continue
        balancers = service.props.get("LoadBalancers") or []
        groups = [e for e in balancers if camel_keys(e).get("targetGroupArn")]
        task = ctx.target(service.props.get("TaskDefinition"), service.stack)
        reasons = [
            *(["it has no load balancer"] if not balancers else []),
            *(["its task definition uses awsvpc"] if task is not None and _network_mode(task) == "awsvpc" else []),
            *(["it uses service discovery"] if service.props.get("ServiceRegistries") else []),
            *(["its deployment controller is EXTERNAL"] if _controller(service) == "EXTERNAL" else []),
            *([f"it attaches {len(groups)} target groups"] if len(groups) > 1 else []),
        ]
        if reasons:
            yield (
                service,
                f"it names a Role, and {'; '.join(reasons)}: ECS takes a Role only for a load balancer of a task "
                "definition outside awsvpc, and uses its service-linked role otherwise; leave Role out",
            )


def service_registries(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        registries = service.props.get("ServiceRegistries") or []
        if isinstance(registries, list) and len(registries) > 1:
            yield service, f"it names {len(registries)} service registries, and ECS takes one; keep one"


def _controller(service: Resource) -> Any:
    return camel_keys(service.props.get("DeploymentController")).get("type", "ECS")


def deployment_options_of_controller(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        controller = _controller(service)
        if controller == "ECS":
            continue
        config = camel_keys(service.props.get("DeploymentConfiguration"))
        if camel_keys(config.get("deploymentCircuitBreaker")).get("enable") in (True, "true"):
            yield (
                service,
                f"its deployment circuit breaker is on under deployment controller {controller}, and ECS takes it "
                "only under its own (ECS) controller; turn the breaker off, or deploy with ECS",
            )
        high = literal_number(config.get("maximumPercent"))
        if high is not None and high != 200 and _service_on_ec2(ctx, service):
            yield (
                service,
                f"its MaximumPercent is {high} under deployment controller {controller} on EC2, where ECS takes no "
                "value but its default (200); leave MaximumPercent out",
            )
        if config.get("bakeTimeInMinutes") is not None:
            yield (
                service,
                f"it sets BakeTimeInMinutes under deployment controller {controller}, which does not support it; "
                "leave it out",
            )


def no_public_ip_on_ec2(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        network = camel_keys(camel_keys(service.props.get("NetworkConfiguration")).get("awsvpcConfiguration"))
        if network.get("assignPublicIp") == "ENABLED" and _service_on_ec2(ctx, service):
            yield (
                service,
                "it asks for a public IP for each task on EC2 container instances, which ECS gives only on Fargate; "
                "set AssignPublicIp DISABLED and reach the internet through a NAT gateway, or reach the tasks "
                "through a load balancer",
            )


def _service_on_ec2(ctx: Templates, service: Resource) -> bool:
    """Whether a service's tasks use EC2 container instances, as the templates say it: the EC2 launch type, or a
    strategy naming a capacity provider of an Auto Scaling group the templates make (unknown counts as not)."""
    if service.props.get("LaunchType") == "EC2":
        return True
    for item in service.props.get("CapacityProviderStrategy") or []:
        provider = ctx.target(camel_keys(item).get("capacityProvider"), service.stack)
        if provider is not None and provider.props.get("AutoScalingGroupProvider") is not None:
            return True
    return False


def awsvpc_host_port(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        if _network_mode(task) not in ("awsvpc", "host"):
            continue
        for c in _containers(task):
            for mapping in c.get("portMappings") or []:
                m = camel_keys(mapping)
                host, container = literal_number(m.get("hostPort")), literal_number(m.get("containerPort"))
                if host is not None and container is not None and host != container:
                    yield (
                        task,
                        (
                            f"container {c.get('name')} maps host port {host} to {container} in {_network_mode(task)} "
                            "mode, where the host port must be left out or equal the container port"
                        ),
                    )


def network_mode_options(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        mode = _network_mode(task)
        for c in _containers(task):
            refused = [key for key in ("hostname", "extraHosts") if mode == "awsvpc" and c.get(key)]
            refused += ["links"] if mode != "bridge" and c.get("links") else []
            if refused:
                yield (
                    task,
                    f"container {c.get('name')} sets {', '.join(refused)}, which ECS refuses in {mode} mode "
                    "(hostname and extraHosts: not with awsvpc; links: bridge only); leave them out",
                )


_PORT_NAME = re.compile(r"[a-z0-9_][a-z0-9_-]{0,63}")


def port_mapping_name(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        for c in _containers(task):
            for mapping in c.get("portMappings") or []:
                name = camel_keys(mapping).get("name")
                if isinstance(name, str) and not _PORT_NAME.fullmatch(name):
                    yield (
                        task,
                        f"container {c.get('name')} names a port mapping {name!r}: a name is 1 to 64 lowercase "
                        "letters, digits, underscores and hyphens, not starting with a hyphen",
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
            hard, soft = literal_number(c.get("memory")), literal_number(c.get("memoryReservation"))
            if hard is not None and soft is not None and soft >= hard:
                yield (
                    task,
                    (
                        f"container {c.get('name')} reserves {soft} MiB with a limit of {hard} MiB; the limit must be "
                        "greater than the reservation"
                    ),
                )
        memory = literal_number(task.props.get("Memory"))
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


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def placement_constraints(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        task = ctx.target(service.props.get("TaskDefinition"), service.stack)
        own = _count(service.props.get("PlacementConstraints"))
        written = _count(task.props.get("PlacementConstraints")) if task is not None else 0
        if own + written > MAX_PLACEMENT_CONSTRAINTS:
            yield (
                service,
                (
                    f"its tasks run under {own + written} placement constraints ({own} of the service, {written} of "
                    f"its task definition); ECS takes at most {MAX_PLACEMENT_CONSTRAINTS} a task: join memberOf "
                    "expressions with 'and'"
                ),
            )


def placement_strategies(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        rules = _count(service.props.get("PlacementStrategies"))
        if rules > MAX_PLACEMENT_STRATEGIES:
            yield service, f"it has {rules} placement strategy rules; ECS takes at most {MAX_PLACEMENT_STRATEGIES}"


def strategy_with_launch_type(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        if _strategies(service) and service.props.get("LaunchType") is not None:
            yield service, "it names a capacity provider strategy and a launch type; drop the launch type"


_STRATEGY_PROPERTIES = {
    "AWS::ECS::Service": "CapacityProviderStrategy",
    "AWS::ECS::TaskSet": "CapacityProviderStrategy",
    "AWS::ECS::Cluster": "DefaultCapacityProviderStrategy",
    "AWS::ECS::ClusterCapacityProviderAssociations": "DefaultCapacityProviderStrategy",
}


def _every_strategy(ctx: Templates) -> Iterator[tuple[Resource, list[dict[str, Any]]]]:
    """Each capacity provider strategy the templates write: a service's or task set's, a cluster's default."""
    for kind, prop in _STRATEGY_PROPERTIES.items():
        for resource in ctx.of_type(kind):
            value = resource.props.get(prop)
            if isinstance(value, list) and value:
                yield resource, [camel_keys(s) for s in value]


def strategy_one_base(ctx: Templates) -> Iterator[Finding]:
    for resource, strategy in _every_strategy(ctx):
        based = [str(s.get("capacityProvider")) for s in strategy if (literal_number(s.get("base")) or 0) > 0]
        if len(based) > 1:
            yield resource, f"{len(based)} capacity providers of its strategy have a base; give a base to one only"


def strategy_weights(ctx: Templates) -> Iterator[Finding]:
    for resource, strategy in _every_strategy(ctx):
        if len(strategy) > MAX_STRATEGY_PROVIDERS:
            yield (
                resource,
                f"its capacity provider strategy names {len(strategy)} capacity providers, and ECS takes at most "
                f"{MAX_STRATEGY_PROVIDERS}; name fewer",
            )
        weights = [literal_number(s.get("weight", 0)) for s in strategy]
        if len(strategy) > 1 and all(w == 0 for w in weights):
            yield (
                resource,
                f"none of the {len(strategy)} capacity providers of its strategy has a weight above 0 (a weight left "
                "out is 0), so ECS can place no task by it; give one provider a weight of 1 or more",
            )


def provider_name_prefix(ctx: Templates) -> Iterator[Finding]:
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        name = provider.props.get("Name")
        if isinstance(name, str) and quotas.reserved_provider_prefix(name):
            yield provider, f"its name {name!r} starts with a prefix ECS reserves (aws, ecs, fargate); rename it"


def target_capacity_range(ctx: Templates) -> Iterator[Finding]:
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        scaling = camel_keys(camel_keys(provider.props.get("AutoScalingGroupProvider")).get("managedScaling"))
        target = literal_number(scaling.get("targetCapacity"))
        if target is not None and not 1 <= target <= 100:
            yield provider, f"managed scaling's target capacity is {target}; give a percent from 1 to 100"


def termination_protection(ctx: Templates) -> Iterator[Finding]:
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        config = camel_keys(provider.props.get("AutoScalingGroupProvider"))
        if config.get("managedTerminationProtection") != "ENABLED":
            continue
        if camel_keys(config.get("managedScaling")).get("status") != "ENABLED":
            yield provider, "managed termination protection is on and managed scaling is off; turn managed scaling on"
        group = provider_group(ctx, provider)
        if group is not None and group.props.get("NewInstancesProtectedFromScaleIn") not in (True, "true"):
            yield (
                group,
                (
                    f"capacity provider {provider.logical_id} protects instances from termination, and this group "
                    "does not protect new instances from scale-in; set NewInstancesProtectedFromScaleIn"
                ),
            )
