"""Elastic Load Balancing."""

from __future__ import annotations

import json
from collections.abc import Iterator

from ..rule_family import PREFIX
from ..shape import camel_keys
from .base import Finding, Resource, Templates, _int

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
