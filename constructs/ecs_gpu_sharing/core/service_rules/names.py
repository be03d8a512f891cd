"""Every AWS service: a custom name is claimed by one resource.

CloudFormation User Guide, "Name type": "Resource names must be unique across all your active stacks". Two resources
of one stack that write the same name are one name claimed twice: the service refuses the second ("already exists")
or, for the services whose create call writes over (a dashboard, an alarm), both resources manage one thing and
deleting either deletes it. Only names within one template are compared: stacks of one app may be deployed to other
regions or accounts, which their templates do not say.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..rule_family import PREFIX
from .base import UNKNOWN_TEXT, Finding, Resource, Templates

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


def name_claimed_twice(ctx: Templates) -> Iterator[Finding]:
    claimed: dict[tuple[str, str, str | None, str], Resource] = {}
    for kind, (prop, scope_prop) in sorted(NAMED.items()):
        for resource in sorted(ctx.of_type(kind), key=lambda r: (r.stack, r.logical_id)):
            if "Condition" in resource.attributes:
                continue  # created only where its condition holds: two such may never meet
            if resource.props.get(prop) is None:
                continue  # CloudFormation makes a name of its own
            name = ctx.text(resource.props.get(prop), resource.stack)
            scoped = resource.props.get(scope_prop) if scope_prop else None  # absent: the default (cluster, bus)
            scope = ctx.text(scoped, resource.stack) if scoped is not None else None
            if UNKNOWN_TEXT in name or (scope is not None and UNKNOWN_TEXT in scope):
                continue  # a part that cannot be read: not known to be alike
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
