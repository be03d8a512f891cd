"""Every AWS service: a custom name is claimed by one resource.

CloudFormation User Guide, "Name type": "Resource names must be unique across all your active stacks". Two resources
of one stack that write the same name are one name claimed twice: the service refuses the second ("already exists")
or, for the services whose create call writes over (a dashboard, an alarm), both resources manage one thing and
deleting either deletes it. Only names within one template are compared: stacks of one app may be deployed to other
regions or accounts, which their templates do not say.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ..rule_family import PREFIX
from .base import Finding, Resource, Templates

NAME_CLAIMED_TWICE = f"{PREFIX}NameClaimedTwice"

# resource type -> (its name property, the property that scopes the name, if names are unique only within it)
NAMED: Mapping[str, tuple[str, str | None]] = {
    "AWS::AutoScaling::AutoScalingGroup": ("AutoScalingGroupName", None),
    "AWS::CloudWatch::Alarm": ("AlarmName", None),
    "AWS::CloudWatch::Dashboard": ("DashboardName", None),
    "AWS::EC2::LaunchTemplate": ("LaunchTemplateName", None),
    "AWS::ECS::CapacityProvider": ("Name", None),
    "AWS::ECS::Cluster": ("ClusterName", None),
    "AWS::ECS::Service": ("ServiceName", "Cluster"),
    "AWS::ElasticLoadBalancingV2::LoadBalancer": ("Name", None),
    "AWS::ElasticLoadBalancingV2::TargetGroup": ("Name", None),
    "AWS::Events::Rule": ("Name", "EventBusName"),
    "AWS::IAM::InstanceProfile": ("InstanceProfileName", None),
    "AWS::IAM::ManagedPolicy": ("ManagedPolicyName", None),
    "AWS::IAM::Role": ("RoleName", None),
    "AWS::KMS::Alias": ("AliasName", None),
    "AWS::Logs::LogGroup": ("LogGroupName", None),
    "AWS::Logs::MetricFilter": ("FilterName", "LogGroupName"),
    "AWS::Logs::ResourcePolicy": ("PolicyName", None),
    "AWS::S3::Bucket": ("BucketName", None),
    "AWS::SNS::Topic": ("TopicName", None),
    "AWS::SQS::Queue": ("QueueName", None),
    "AWS::SSM::Parameter": ("Name", None),
    "AWS::SecretsManager::Secret": ("Name", None),
    "AWS::ServiceDiscovery::Service": ("Name", "NamespaceId"),
}


def _text(value: Any) -> str | None:
    """A name as it will read once deployed, references kept by what they name (two names that read alike here are
    alike in AWS); ``None`` for a value this cannot read."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            parts = [_text(part) for part in arg[1]]
            return None if None in parts else str(arg[0]).join(p for p in parts if p is not None)
        if key in ("Ref", "Fn::GetAtt", "Fn::Sub", "Fn::ImportValue", "Fn::GetStackOutput"):
            return "${" + json.dumps(value, sort_keys=True) + "}"
    return None


def name_claimed_twice(ctx: Templates) -> Iterator[Finding]:
    claimed: dict[tuple[str, str, str | None, str], Resource] = {}
    for kind, (prop, scope_prop) in sorted(NAMED.items()):
        for resource in sorted(ctx.of_type(kind), key=lambda r: (r.stack, r.logical_id)):
            if "Condition" in resource.attributes:
                continue  # created only where its condition holds: two such may never meet
            name = _text(resource.props.get(prop))
            scope = _text(resource.props.get(scope_prop)) if scope_prop else None
            if name is None or (scope_prop and scope is None and resource.props.get(scope_prop) is not None):
                continue
            key = (resource.stack, kind, scope, name)
            first = claimed.setdefault(key, resource)
            if first is not resource:
                shown = name if isinstance(resource.props.get(prop), str) else f"{name} (as written)"
                yield (
                    resource,
                    f"its {prop} {shown} is also {first.logical_id}'s in this stack: the service refuses the second "
                    "(already exists) or both manage one resource; give each its own name, or leave the name out "
                    "and let CloudFormation make one",
                )
