"""Elastic Load Balancing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..rule_family import PREFIX
from ..shape import camel_keys
from .base import Finding, Resource, ServiceRule, Templates, cdk_path, literal_number, none_made_before

# --- Elastic Load Balancing ----------------------------------------------------------------------------------------

_ELB = "Elastic Load Balancing API Reference (version 2015-12-01)"

HEALTH_CHECK_TIMEOUT = f"{PREFIX}HealthCheckTimeoutBelowInterval"
ELB_NAME_LENGTH = f"{PREFIX}LoadBalancingNameLength"
LISTENER_RULE_PRIORITY = f"{PREFIX}ListenerRulePriorityUnique"
DEREGISTRATION_DELAY = f"{PREFIX}DeregistrationDelayRange"
TARGET_GROUP_ONE_BALANCER = f"{PREFIX}TargetGroupOneLoadBalancer"
TARGET_GROUP_HEALTH_CHECK = f"{PREFIX}TargetGroupHealthCheck"
ALB_TWO_ZONES = f"{PREFIX}ApplicationLoadBalancerTwoZones"
TARGET_GROUP_ROUTED_FIRST = f"{PREFIX}ServiceAfterItsTargetGroupIsRouted"
ALWAYS_CHECKED_TARGETS = ("instance", "ip", "alb")  # CreateTargetGroup, HealthCheckEnabled


def health_check_timeout(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::ElasticLoadBalancingV2::TargetGroup"):
        timeout = literal_number(group.props.get("HealthCheckTimeoutSeconds"))
        interval = literal_number(group.props.get("HealthCheckIntervalSeconds"))
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
        priority = literal_number(rule.props.get("Priority"))
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
            value = literal_number(a.get("value"))
            if a.get("key") == "deregistration_delay.timeout_seconds" and value is not None and value > 3600:
                yield group, f"its deregistration delay is {value} s; AWS allows 0 .. 3,600"


def _forwarded(actions: Any) -> Iterator[Any]:
    """What an action list forwards to: each action's target group, or those of its forward config."""
    for action in actions if isinstance(actions, list) else []:
        a = camel_keys(action)
        if a.get("targetGroupArn") is not None:
            yield a["targetGroupArn"]
        for group in camel_keys(a.get("forwardConfig")).get("targetGroups") or []:
            if camel_keys(group).get("targetGroupArn") is not None:
                yield camel_keys(group)["targetGroupArn"]


def target_group_one_balancer(ctx: Templates) -> Iterator[Finding]:
    """A target group that listeners of two load balancers forward to: AWS refuses the second
    (TargetGroupAssociationLimit)."""
    groups: dict[tuple[str, str], Resource] = {}
    balancers: dict[tuple[str, str], dict[tuple[str, str], Resource]] = {}

    def note(reference: Any, stack: str, listener: Resource | None) -> None:
        group = ctx.target(reference, stack)
        balancer = ctx.target(listener.props.get("LoadBalancerArn"), listener.stack) if listener else None
        if group is None or balancer is None:
            return  # imported: not in these templates
        key = (group.stack, group.logical_id)
        groups[key] = group
        balancers.setdefault(key, {})[(balancer.stack, balancer.logical_id)] = balancer

    for listener in ctx.of_type("AWS::ElasticLoadBalancingV2::Listener"):
        for reference in _forwarded(listener.props.get("DefaultActions")):
            note(reference, listener.stack, listener)
    for rule in ctx.of_type("AWS::ElasticLoadBalancingV2::ListenerRule"):
        for reference in _forwarded(rule.props.get("Actions")):
            note(reference, rule.stack, ctx.target(rule.props.get("ListenerArn"), rule.stack))
    for key, by in balancers.items():
        if len(by) > 1:
            names = ", ".join(f"{stack}/{logical_id}" for stack, logical_id in sorted(by))
            yield (
                groups[key],
                f"listeners of {len(by)} load balancers forward to it ({names}), and a target group serves one "
                "load balancer: give each balancer's route its own target group",
            )


def _routes_to(ctx: Templates, group: Resource) -> list[Resource]:
    """The listeners (by their default actions) and listener rules of the templates that forward to ``group``: each
    one's creation associates the group with a load balancer."""
    found = []
    for kind, prop in (("Listener", "DefaultActions"), ("ListenerRule", "Actions")):
        for router in ctx.of_type(f"AWS::ElasticLoadBalancingV2::{kind}"):
            if any(ctx.target(ref, router.stack) is group for ref in _forwarded(router.props.get(prop))):
                found.append(router)
    return found


def target_group_routed_first(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        entries = service.props.get("LoadBalancers")
        for entry in entries if isinstance(entries, list) else []:
            group = ctx.target(camel_keys(entry).get("targetGroupArn"), service.stack)
            if group is None or group.kind != "AWS::ElasticLoadBalancingV2::TargetGroup":
                continue  # a classic load balancer, or a group the templates do not make
            routes = _routes_to(ctx, group)
            if not routes:
                yield (
                    service,
                    f"its target group {cdk_path(group)} has no load balancer: no listener of the templates forwards "
                    "to it, and ECS refuses a service whose target group has none; add a listener or listener rule "
                    "that forwards to it (listener.add_targets, or add_target_groups)",
                )
            elif none_made_before(service, ctx.created_before(service), routes):
                names = ", ".join(sorted(cdk_path(r) for r in routes))
                yield (
                    service,
                    f"its target group {cdk_path(group)} is forwarded to by {names}, and none of them is created "
                    "before it, so CloudFormation may create the service while the group has no load balancer, and "
                    "ECS refuses it; make the service depend on one (service.node.add_dependency)",
                )


def target_group_health_check(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::ElasticLoadBalancingV2::TargetGroup"):
        protocol, checked = group.props.get("Protocol"), group.props.get("HealthCheckProtocol")
        if protocol in ("HTTP", "HTTPS") and checked == "TCP":
            yield (
                group,
                f"its health check speaks TCP to an {protocol} target group, which ELB does not take; check with "
                f"{protocol} (a path the model server answers)",
            )
        kind = group.props.get("TargetType", "instance")
        if group.props.get("HealthCheckEnabled") in (False, "false") and kind in ALWAYS_CHECKED_TARGETS:
            yield (
                group,
                f"it turns health checks off, and a target group of {kind} targets is always health checked; "
                "leave HealthCheckEnabled out",
            )


def alb_two_zones(ctx: Templates) -> Iterator[Finding]:
    for balancer in ctx.of_type("AWS::ElasticLoadBalancingV2::LoadBalancer"):
        if balancer.props.get("Type", "application") != "application":
            continue
        for prop in ("Subnets", "SubnetMappings"):
            subnets = balancer.props.get(prop)
            if isinstance(subnets, list) and len(subnets) < 2:
                yield (
                    balancer,
                    f"it is in {len(subnets)} subnet{'s' if len(subnets) != 1 else ''}, and an application load "
                    "balancer needs subnets in at least two Availability Zones; give the VPC two zones (max_azs=2)",
                )


ELB_RULES: tuple[ServiceRule, ...] = (
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
        TARGET_GROUP_ONE_BALANCER,
        "Elastic Load Balancing",
        "a target group is forwarded to by the listeners of one load balancer only",
        "Elastic Load Balancing User Guide, 'Create a target group for your Application Load Balancer': \"You can "
        "specify the same target group in multiple listeners, but these listeners must belong to the same "
        'Application Load Balancer"; API Reference, TargetGroup, LoadBalancerArns: "You can use each target group '
        'with only one load balancer"',
        target_group_one_balancer,
    ),
    ServiceRule(
        DEREGISTRATION_DELAY,
        "Elastic Load Balancing",
        "a target group's deregistration delay is 0 .. 3,600 seconds",
        f'{_ELB}, TargetGroupAttribute, deregistration_delay.timeout_seconds: "The range is 0-3600 seconds"',
        deregistration_delay,
    ),
    ServiceRule(
        TARGET_GROUP_HEALTH_CHECK,
        "Elastic Load Balancing",
        "an HTTP or HTTPS target group is not health checked over TCP, and one of instance, ip or alb targets keeps "
        "its health checks on",
        f'{_ELB}, CreateTargetGroup: HealthCheckProtocol "The TCP protocol is not supported for health checks if the '
        'protocol of the target group is HTTP or HTTPS"; HealthCheckEnabled "If the target type is instance, ip, or '
        "alb, health checks are always enabled and can't be disabled\"",
        target_group_health_check,
    ),
    ServiceRule(
        ALB_TWO_ZONES,
        "Elastic Load Balancing",
        "an application load balancer has subnets in at least two Availability Zones",
        f'{_ELB}, CreateLoadBalancer, Subnets: "[Application Load Balancers] You must specify subnets from at least '
        'two Availability Zones"',
        alb_two_zones,
    ),
    ServiceRule(
        TARGET_GROUP_ROUTED_FIRST,
        "Amazon ECS",
        "a service's target group is forwarded to by a listener or listener rule created before the service",
        'CreateService answers InvalidParameterException "The target group with targetGroupArn ... does not have an '
        'associated load balancer" where no listener forwards to it yet (aws/aws-cdk#1160, '
        "aws-samples/ecs-refarch-cloudformation#5: CloudFormation created the service before the listener rule)",
        target_group_routed_first,
    ),
)
