"""AWS's limits, checked over synthesized CloudFormation templates. Pure Python: templates in, violations out.

Every check reads resources as CloudFormation will see them, whichever construct wrote them (the cdk-nag way), so
it holds for the deployable app and for any app that composes the library. The numbers live in ``core.quotas``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from . import quotas
from .quotas import Limit

Template = Mapping[str, Any]


@dataclass(frozen=True)
class Violation:
    rule_id: str
    stack: str
    logical_id: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.stack}{'/' + self.logical_id if self.logical_id else ''}: {self.message}"


def template_bytes(template: Template) -> int:
    """The template's size as CDK writes it (JSON, indented by one space) and uploads it."""
    return len(json.dumps(template, indent=1).encode())


def check_templates(
    templates: Mapping[str, Template], as_written: Mapping[str, Template] | None = None
) -> list[Violation]:
    """Every limit of ``core.quotas`` that the templates break (counted on ``as_written`` where given), and every
    security group rule they declare twice."""
    out: list[Violation] = []
    for stack, template in (templates if as_written is None else as_written).items():
        out.extend(_stack_checks(stack, template))
    rules = security_group_rules(templates)
    out.extend(rules_per_security_group(rules))
    out.extend(_duplicates(rules, templates))
    return out


def rules_per_security_group(rules: list[SecurityGroupRule]) -> Iterator[Violation]:
    """Each security group holding more rules one way (inbound or outbound, IPv4 or IPv6) than EC2 takes."""
    counted: dict[tuple[str, bool, bool], list[SecurityGroupRule]] = defaultdict(list)
    for rule in rules:
        counted[(rule.group, rule.ingress, rule.ipv6)].append(rule)
    for (group, ingress, ipv6), held in counted.items():
        try:
            where = json.loads(group)
            stack, logical_id = where["stack"], where["Fn::GetAtt"][0]
        except (ValueError, KeyError, TypeError):  # a group the templates import: name it by its first rule
            stack, logical_id = held[0].stack, held[0].logical_id
        yield from _over(
            quotas.RULES_PER_SECURITY_GROUP,
            stack,
            logical_id,
            f"security group {logical_id}, {'inbound' if ingress else 'outbound'} {'IPv6' if ipv6 else 'IPv4'}",
            len(held),
            "let the peers share one security group and open it by one rule (the fleet app does so for a "
            "balancer's awsvpc targets and for Service Connect)",
        )


def _over(limit: Limit, stack: str, logical_id: str | None, subject: str, seen: int, fix: str) -> Iterator[Violation]:
    if seen > limit.number:
        yield Violation(limit.rule_id, stack, logical_id, limit.message(subject, seen, fix))


def _stack_checks(stack: str, template: Template) -> Iterator[Violation]:
    resources: Mapping[str, Any] = template.get("Resources", {})
    yield from _over(
        quotas.RESOURCES_PER_STACK,
        stack,
        None,
        f"stack {stack}",
        len(resources),
        "split the stack (the fleet app shards services by counted resources)",
    )
    for limit, section, fix in (
        (quotas.OUTPUTS_PER_STACK, "Outputs", "split the stack: each value another stack imports is an output"),
        (quotas.PARAMETERS_PER_STACK, "Parameters", "split the stack, or pass fewer values as parameters"),
    ):
        yield from _over(limit, stack, None, f"stack {stack}", len(template.get(section) or {}), fix)
    yield from _over(quotas.TEMPLATE_BYTES, stack, None, f"stack {stack}", template_bytes(template), "split the stack")
    for logical_id, resource in resources.items():
        kind = resource.get("Type")
        props = resource.get("Properties") or {}
        tags = props.get("Tags")
        if isinstance(tags, list):
            yield from _over(
                quotas.TAGS_PER_RESOURCE, stack, logical_id, kind, len(tags), "drop tags (tags apply to each resource)"
            )
        check = _BY_TYPE.get(kind)
        if check is not None:
            for limit, seen, fix in check(props):
                yield from _over(limit, stack, logical_id, kind, seen, fix)


def _task_definition(props: Mapping[str, Any]) -> Iterator[tuple[Limit, int, str]]:
    containers = props.get("ContainerDefinitions")
    if isinstance(containers, list):
        yield quotas.CONTAINERS_PER_TASK_DEFINITION, len(containers), "move sidecars into another service"
    yield (
        quotas.TASK_DEFINITION_BYTES,
        len(json.dumps(props, separators=(",", ":")).encode()),
        "shorten commands and environment, or move settings into a file the image reads",
    )


def _listener_rule(props: Mapping[str, Any]) -> Iterator[tuple[Limit, int, str]]:
    values = 0
    for condition in props.get("Conditions") or []:
        for config in ("PathPatternConfig", "HostHeaderConfig"):
            items = (condition.get(config) or {}).get("Values") or []
            values += len(items)
            if config == "PathPatternConfig":
                for item in items:
                    if isinstance(item, str):
                        yield quotas.PATH_PATTERN_CHARACTERS, len(item), "shorten the path"
        values += len(condition.get("Values") or [])
    yield quotas.CONDITION_VALUES_PER_RULE, values, "give the service at most 5 paths and hosts together"


def _auto_scaling_group(props: Mapping[str, Any]) -> Iterator[tuple[Limit, int, str]]:
    overrides = ((props.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get("Overrides")
    if isinstance(overrides, list):
        yield quotas.INSTANCE_TYPES_PER_GROUP, len(overrides), "list fewer instance types in the capacity"


def _capacity_providers(props: Mapping[str, Any]) -> Iterator[tuple[Limit, int, str]]:
    providers = props.get("CapacityProviders")
    if isinstance(providers, list):
        yield quotas.CAPACITY_PROVIDERS_PER_CLUSTER, len(providers), "merge capacities or use a second cluster"


def _alarm(props: Mapping[str, Any]) -> Iterator[tuple[Limit, int, str]]:
    dimensions = props.get("Dimensions")
    if isinstance(dimensions, list):
        yield quotas.DIMENSIONS_PER_METRIC, len(dimensions), "use fewer dimensions"


def _scaling_policy(props: Mapping[str, Any]) -> Iterator[tuple[Limit, int, str]]:
    spec = (props.get("TargetTrackingScalingPolicyConfiguration") or {}).get("CustomizedMetricSpecification") or {}
    dimensions = spec.get("Dimensions")
    if isinstance(dimensions, list):
        yield quotas.DIMENSIONS_PER_METRIC, len(dimensions), "use fewer dimensions in scale_on_metric"


_BY_TYPE = {
    "AWS::ECS::TaskDefinition": _task_definition,
    "AWS::ElasticLoadBalancingV2::ListenerRule": _listener_rule,
    "AWS::AutoScaling::AutoScalingGroup": _auto_scaling_group,
    "AWS::ECS::ClusterCapacityProviderAssociations": _capacity_providers,
    "AWS::CloudWatch::Alarm": _alarm,
    "AWS::ApplicationAutoScaling::ScalingPolicy": _scaling_policy,
}


# --- duplicate security group rules ------------------------------------------------------------------------------


def output_value(value: Any, templates: Mapping[str, Template]) -> tuple[str, Any] | None:
    """What a cross-stack reference (``Fn::GetStackOutput``, ``Fn::ImportValue``) reads: the stack that exports it and
    the output's value there; ``None`` for anything else, or an output the templates do not hold."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return None
    ((key, arg),) = value.items()
    if key == "Fn::GetStackOutput" and isinstance(arg, Mapping):
        source = str(arg.get("StackName"))
        output = (templates.get(source, {}).get("Outputs") or {}).get(str(arg.get("OutputName")))
        return None if output is None else (source, output.get("Value"))
    if key == "Fn::ImportValue":
        for name, template in templates.items():
            for output in (template.get("Outputs") or {}).values():
                if output.get("Export", {}).get("Name") == arg:
                    return name, output.get("Value")
    return None


def canonical(value: Any, stack: str, templates: Mapping[str, Template]) -> str:
    """A reference as one value wherever it is written: a cross-stack output read back to the value it exports."""
    exported = output_value(value, templates)
    if exported is not None:
        return canonical(exported[1], exported[0], templates)
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key in ("Ref", "Fn::GetAtt"):
            return json.dumps({"stack": stack, key: arg}, sort_keys=True)
    return json.dumps(value, sort_keys=True)


@dataclass(frozen=True)
class SecurityGroupRule:
    """One rule as EC2 holds it, wherever the template writes it (inline in its group, or a resource of its own):
    ``group`` and ``peer`` (a group, or ``None`` for an address range) as ``canonical`` values."""

    stack: str
    logical_id: str
    group: str
    ingress: bool
    peer: str | None
    properties: Mapping[str, Any]
    inline: bool = False  # written in its group's own resource, not as a resource of its own

    @property
    def ipv6(self) -> bool:
        return "CidrIpv6" in self.properties


_DIRECTIONS = (
    ("SecurityGroupIngress", True, "SourceSecurityGroupId"),
    ("SecurityGroupEgress", False, "DestinationSecurityGroupId"),
)
"""Each direction: its key inline in a group (after ``AWS::EC2::``, its resource type), and its peer group's key."""


def security_group_rules(templates: Mapping[str, Template]) -> list[SecurityGroupRule]:
    """Every security group rule of the templates: the inline rules of each ``AWS::EC2::SecurityGroup`` and each
    ``AWS::EC2::SecurityGroupIngress`` and ``Egress``."""
    out = []
    for stack, template in templates.items():
        for logical_id, resource in (template.get("Resources") or {}).items():
            kind, props = resource.get("Type"), resource.get("Properties") or {}
            if kind == "AWS::EC2::SecurityGroup":
                group = canonical({"Fn::GetAtt": [logical_id, "GroupId"]}, stack, templates)
                for key, ingress, peer_key in _DIRECTIONS:
                    for rule in props.get(key) or ():
                        peer = canonical(rule[peer_key], stack, templates) if peer_key in rule else None
                        out.append(SecurityGroupRule(stack, logical_id, group, ingress, peer, rule, inline=True))
            elif kind in _RULE_TYPES:
                _, ingress, peer_key = _RULE_TYPES[kind]
                peer = canonical(props[peer_key], stack, templates) if peer_key in props else None
                group = canonical(props.get("GroupId"), stack, templates)
                out.append(SecurityGroupRule(stack, logical_id, group, ingress, peer, props))
    return out


_RULE_TYPES = {f"AWS::EC2::{d[0]}": d for d in _DIRECTIONS}


def duplicate_security_group_rules(templates: Mapping[str, Template]) -> list[Violation]:
    """Standalone ingress and egress rules that say the same thing twice, in one stack or across stacks.

    EC2 refuses the second (InvalidPermission.Duplicate), so CloudFormation fails the stack that declares it.
    """
    return _duplicates(security_group_rules(templates), templates)


def _duplicates(rules: list[SecurityGroupRule], templates: Mapping[str, Template]) -> list[Violation]:
    seen: dict[tuple[object, ...], list[tuple[str, str]]] = defaultdict(list)
    for rule in rules:
        if rule.inline:
            continue
        props = rule.properties
        key = (
            rule.ingress,
            rule.group,
            rule.peer,
            *(str(props.get(k)) for k in ("IpProtocol", "FromPort", "ToPort")),
            *(canonical(props.get(k), rule.stack, templates) for k in ("CidrIp", "CidrIpv6")),
        )
        seen[key].append((rule.stack, rule.logical_id))
    out = []
    for places in seen.values():
        first, *repeats = places
        for stack, logical_id in repeats:
            out.append(
                Violation(
                    quotas.DUPLICATE_RULE_ID,
                    stack,
                    logical_id,
                    f"[{quotas.DUPLICATE_RULE_ID}] this security group rule repeats {first[0]}/{first[1]}: EC2 refuses "
                    "a rule that already exists (InvalidPermission.Duplicate) and CloudFormation fails the stack; "
                    "declare each rule once",
                )
            )
    return out
