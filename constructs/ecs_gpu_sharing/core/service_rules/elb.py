"""Elastic Load Balancing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..rule_family import PREFIX
from ..shape import camel_keys
from .base import Finding, Resource, Templates, literal_number

# --- Elastic Load Balancing ----------------------------------------------------------------------------------------

HEALTH_CHECK_TIMEOUT = f"{PREFIX}HealthCheckTimeoutBelowInterval"
ELB_NAME_LENGTH = f"{PREFIX}LoadBalancingNameLength"
LISTENER_RULE_PRIORITY = f"{PREFIX}ListenerRulePriorityUnique"
DEREGISTRATION_DELAY = f"{PREFIX}DeregistrationDelayRange"
TARGET_GROUP_ONE_BALANCER = f"{PREFIX}TargetGroupOneLoadBalancer"


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
