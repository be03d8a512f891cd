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


def provider_groups(ecs: Any, names: list[str]) -> dict[str, str]:
    """Capacity provider name -> the Auto Scaling group behind it (Managed Instances providers have none)."""
    if not names:
        return {}
    with aws_errors(f"describing capacity providers {few(names)}"):
        providers = ecs.describe_capacity_providers(capacityProviders=names)["capacityProviders"]
    return {
        p["name"]: p["autoScalingGroupProvider"]["autoScalingGroupArn"].split("autoScalingGroupName/", 1)[-1]
        for p in providers
        if "autoScalingGroupProvider" in p
    }


def auto_scaling_groups(ecs: Any, cluster: str) -> list[str]:
    """The Auto Scaling groups behind the cluster's capacity providers (Managed Instances ones have none)."""
    with aws_errors(f"describing cluster {cluster}"):
        found = ecs.describe_clusters(clusters=[cluster])
    if not found["clusters"]:
        raise AwsOperationError(f"cluster {cluster} not found: give the name the cluster stack's ClusterName shows")
    return sorted(provider_groups(ecs, found["clusters"][0].get("capacityProviders", [])).values())


def active_services(ecs: Any, cluster: str) -> list[dict[str, Any]]:
    """The cluster's services as DescribeServices gives them (ACTIVE and DRAINING)."""
    with aws_errors(f"listing the services of {cluster}"):
        arns = [a for page in ecs.get_paginator("list_services").paginate(cluster=cluster) for a in page["serviceArns"]]
        return [
            s
            for start in range(0, len(arns), 10)  # DescribeServices takes 10 at a time
            for s in ecs.describe_services(cluster=cluster, services=arns[start : start + 10])["services"]
        ]


def wants_tasks(service: dict[str, Any]) -> bool:
    """A replica service that still wants tasks (or runs some): ECS protects its hosts again."""
    return (
        service.get("schedulingStrategy", "REPLICA") == "REPLICA"
        and service.get("status") == "ACTIVE"
        and (service.get("desiredCount", 0) > 0 or service.get("runningCount", 0) > 0)
    )


def strategy_providers(service: dict[str, Any]) -> set[str]:
    """The capacity providers a service's strategy names."""
    return {item["capacityProvider"] for item in service.get("capacityProviderStrategy") or []}


def running_services(ecs: Any, cluster: str, providers: set[str] | None = None) -> list[str]:
    """Replica services that still want tasks: ECS protects their hosts again, and their tasks would be stopped.
    With ``providers``, only those whose strategy names one of them."""
    return sorted(
        s["serviceName"]
        for s in active_services(ecs, cluster)
        if wants_tasks(s) and (providers is None or strategy_providers(s) & providers)
    )


def unprotect(ecs: Any, autoscaling: Any, cluster: str, providers: list[str] | None = None) -> list[Unprotected]:
    """Clears scale-in protection from every group behind ``cluster`` (or behind ``providers`` only, for a capacity
    that leaves the cluster while the rest stays); refuses while a replica service on them wants tasks."""
    busy = running_services(ecs, cluster, set(providers) if providers is not None else None)
    if busy:
        where = (
            f"capacity providers {few(providers)} of cluster {cluster} still run"
            if providers
            else f"cluster {cluster} still runs"
        )
        fix = (
            "move them to another capacity first (deploy), or ECS protects their hosts again"
            if providers
            else "delete the services stacks first (make destroy does), or ECS protects their hosts again"
        )
        raise AwsOperationError(f"{where} {len(busy)} services ({few(busy)}): {fix}")
    if providers is None:
        groups = auto_scaling_groups(ecs, cluster)
    else:
        found = provider_groups(ecs, providers)
        missing = sorted(set(providers) - set(found))
        if missing:
            raise AwsOperationError(
                f"no capacity provider with an Auto Scaling group named {few(missing)}: give the names "
                "`ecs-gpu-sharing fleet capacities` prints (Managed Instances hosts are ECS's own)"
            )
        groups = sorted(found.values())
    return [_unprotect_group(autoscaling, group) for group in groups]


def _unprotect_group(autoscaling: Any, group: str) -> Unprotected:
    with aws_errors(f"unprotecting Auto Scaling group {group}"):
        described = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
        if not described:  # a provider whose group is already gone (replaced, or deleted by hand)
            return Unprotected(group, (), found=False)
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
    return Unprotected(group, tuple(protected))
