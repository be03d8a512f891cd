"""``cluster unprotect``: lets CloudFormation delete a cluster's Auto Scaling groups.

A capacity provider with managed termination protection (what ``GpuCapacity`` makes) has ECS protect each host that
runs a task from scale-in, and a group whose instances are protected is never emptied: deleting its stack waits for
hours and fails. ECS leaves the protection in place when the capacity provider goes (aws-cdk issue 18179, open;
containers-roadmap issue 2862). Once the services are gone, this clears it: the groups stop protecting new instances
(``UpdateAutoScalingGroup``) and each instance is unprotected (``SetInstanceProtection``, 50 at a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import AwsOperationError
from ..core.text import few
from .aws import aws_errors

PROTECTION_BATCH = 50  # SetInstanceProtection takes at most 50 instance ids (botocore's Auto Scaling model)


@dataclass(frozen=True)
class Unprotected:
    group: str
    instances: tuple[str, ...]
    found: bool = True  # False: the capacity provider names a group that no longer exists


def cluster_from_stack(cloudformation: Any, stack: str) -> str:
    """The cluster name a fleet's cluster stack exports (its ``ClusterName`` output)."""
    with aws_errors(f"reading stack {stack}"):
        outputs = cloudformation.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    for output in outputs:
        if output["OutputKey"] == "ClusterName":
            return str(output["OutputValue"])
    raise AwsOperationError(f"stack {stack} has no ClusterName output: is it a fleet's cluster stack?")


def auto_scaling_groups(ecs: Any, cluster: str) -> list[str]:
    """The Auto Scaling groups behind the cluster's capacity providers (Managed Instances ones have none)."""
    with aws_errors(f"describing cluster {cluster}"):
        found = ecs.describe_clusters(clusters=[cluster])
    if not found["clusters"]:
        raise AwsOperationError(f"cluster {cluster} not found: give the name the cluster stack's ClusterName shows")
    names = found["clusters"][0].get("capacityProviders", [])
    if not names:
        return []
    with aws_errors(f"describing the capacity providers of {cluster}"):
        providers = ecs.describe_capacity_providers(capacityProviders=names)["capacityProviders"]
    arns = [p["autoScalingGroupProvider"]["autoScalingGroupArn"] for p in providers if "autoScalingGroupProvider" in p]
    return sorted(arn.split("autoScalingGroupName/", 1)[-1] for arn in arns)


def running_services(ecs: Any, cluster: str) -> list[str]:
    """Replica services that still want tasks: ECS protects their hosts again, and their tasks would be stopped."""
    with aws_errors(f"listing the services of {cluster}"):
        arns = [a for page in ecs.get_paginator("list_services").paginate(cluster=cluster) for a in page["serviceArns"]]
        services = [
            s
            for start in range(0, len(arns), 10)  # DescribeServices takes 10 at a time
            for s in ecs.describe_services(cluster=cluster, services=arns[start : start + 10])["services"]
        ]
    return sorted(
        s["serviceName"]
        for s in services
        if s.get("schedulingStrategy", "REPLICA") == "REPLICA" and s.get("status") == "ACTIVE" and s["desiredCount"] > 0
    )


def unprotect(ecs: Any, autoscaling: Any, cluster: str) -> list[Unprotected]:
    """Clears scale-in protection from every group behind ``cluster``; refuses while a replica service wants tasks."""
    busy = running_services(ecs, cluster)
    if busy:
        raise AwsOperationError(
            f"cluster {cluster} still runs {len(busy)} services ({few(busy)}): delete the services stacks first "
            "(make destroy does), or ECS protects their hosts again"
        )
    out = []
    for group in auto_scaling_groups(ecs, cluster):
        with aws_errors(f"unprotecting Auto Scaling group {group}"):
            described = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
            if not described:  # a provider whose group is already gone (replaced, or deleted by hand)
                out.append(Unprotected(group, (), found=False))
                continue
            autoscaling.update_auto_scaling_group(AutoScalingGroupName=group, NewInstancesProtectedFromScaleIn=False)
            protected = [
                i["InstanceId"] for g in described for i in g.get("Instances", []) if i.get("ProtectedFromScaleIn")
            ]
            for start in range(0, len(protected), PROTECTION_BATCH):
                autoscaling.set_instance_protection(
                    AutoScalingGroupName=group,
                    InstanceIds=protected[start : start + PROTECTION_BATCH],
                    ProtectedFromScaleIn=False,
                )
        out.append(Unprotected(group, tuple(protected)))
    return out
