"""Amazon ECS: a capacity provider is associated with its cluster before a service or task set names it.

ECS refuses a capacity provider strategy that names a provider not yet associated with the cluster (ECS API
Reference, CapacityProviderStrategyItem: "Only capacity providers that are already associated with a cluster and have
an ACTIVE or UPDATING status can be used in a capacity provider strategy"). CloudFormation creates resources that do
not depend on each other at the same time, so a service written beside the association that names its provider, and
not depending on it, is created first on some deploys: the first deploy fails and rolls back. moto does not check
the association, and aws-ecs's services depend on it only when told (``service.node.add_dependency(cluster)``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..rule_family import PREFIX
from ..shape import camel_keys
from .base import Finding, Resource, Templates, cdk_path, listed, none_made_before

PROVIDER_ASSOCIATED_FIRST = f"{PREFIX}ServiceAfterItsProviderIsAssociated"
PROVIDER_ONE_CLUSTER = f"{PREFIX}AutoScalingProviderInOneCluster"

_ASSOCIATIONS = "AWS::ECS::ClusterCapacityProviderAssociations"


def _names(ctx: Templates, value: Any, stack: str, kind: str) -> set[str]:
    """What a reference to a cluster or a provider can be matched by: the resource it names (``stack/logical id``)
    and its literal name, or the literal name written in its place."""
    if isinstance(value, str):
        return {f"name:{value}"}
    target = ctx.target(value, stack)
    if target is None or target.kind != kind:
        return set()
    out = {f"id:{target.stack}/{target.logical_id}"}
    name = target.props.get("ClusterName" if kind == "AWS::ECS::Cluster" else "Name")
    if isinstance(name, str):
        out.add(f"name:{name}")
    return out


def _providers(ctx: Templates, value: Any, stack: str) -> list[set[str]]:
    return [_names(ctx, v, stack, "AWS::ECS::CapacityProvider") for v in listed(value)]


def _enablers(ctx: Templates, cluster: set[str], provider: set[str] | None) -> list[Resource]:
    """The resources whose creation associates ``provider`` with ``cluster`` (``None``: gives the cluster its default
    strategy): an association resource, the cluster itself (its own providers), a Managed Instances provider (made
    in its cluster)."""
    holders = [(r, r.props.get("Cluster")) for r in ctx.of_type(_ASSOCIATIONS)]
    holders += [(r, {"Ref": r.logical_id}) for r in ctx.of_type("AWS::ECS::Cluster")]
    found: list[Resource] = []
    for r, held in holders:
        if not cluster & _names(ctx, held, r.stack, "AWS::ECS::Cluster"):
            continue
        if provider is None:
            if r.props.get("DefaultCapacityProviderStrategy"):
                found.append(r)
        elif any(provider & p for p in _providers(ctx, r.props.get("CapacityProviders"), r.stack)):
            found.append(r)
    if provider is not None:
        for r in ctx.of_type("AWS::ECS::CapacityProvider"):
            own = _names(ctx, {"Ref": r.logical_id}, r.stack, "AWS::ECS::CapacityProvider")
            if provider & own and cluster & _names(ctx, r.props.get("ClusterName"), r.stack, "AWS::ECS::Cluster"):
                found.append(r)
    return found


def _in_templates(ctx: Templates, names: set[str], kind: str) -> bool:
    """Whether a resource of the templates answers to ``names``."""
    return any(names & _names(ctx, {"Ref": r.logical_id}, r.stack, kind) for r in ctx.of_type(kind))


def _runners(ctx: Templates) -> Iterator[tuple[Resource, Any, list[Any] | None]]:
    """Each service and task set, its cluster as written, and the providers its strategy names (``None``: it uses
    the cluster's default strategy; services only, where neither a strategy nor a launch type is written)."""
    for kind in ("AWS::ECS::Service", "AWS::ECS::TaskSet"):
        for r in ctx.of_type(kind):
            strategy = r.props.get("CapacityProviderStrategy")
            if isinstance(strategy, list) and strategy:
                yield r, r.props.get("Cluster"), [camel_keys(item).get("capacityProvider") for item in strategy]
            elif kind == "AWS::ECS::Service" and r.props.get("LaunchType") is None and strategy in (None, []):
                yield r, r.props.get("Cluster"), None


def provider_associated_first(ctx: Templates) -> Iterator[Finding]:
    for runner, cluster_value, named in _runners(ctx):
        cluster = _names(ctx, cluster_value, runner.stack, "AWS::ECS::Cluster")
        if not cluster:
            continue  # a cluster the templates do not hold (imported): its associations are made elsewhere
        before = ctx.created_before(runner)

        what = runner.kind.removeprefix("AWS::ECS::").lower().replace("taskset", "task set")
        if named is None:
            enablers = _enablers(ctx, cluster, None)
            if none_made_before(runner, before, enablers):
                yield runner, _message(what, "the cluster's default capacity provider strategy", enablers, default=True)
            continue
        for value in named:
            provider = _names(ctx, value, runner.stack, "AWS::ECS::CapacityProvider")
            if not _in_templates(ctx, provider, "AWS::ECS::CapacityProvider"):
                continue  # a provider the templates do not make (FARGATE, an imported one)
            enablers = _enablers(ctx, cluster, provider)
            label = min(provider, key=lambda n: (not n.startswith("name:"), n)).split(":", 1)[1].rsplit("/", 1)[-1]
            if not enablers:
                if _in_templates(ctx, cluster, "AWS::ECS::Cluster"):
                    yield (
                        runner,
                        f"its capacity provider strategy names {label}, which nothing in the templates associates "
                        "with its cluster; add the provider to the cluster (cluster.add_asg_capacity_provider)",
                    )
            elif none_made_before(runner, before, enablers):
                yield runner, _message(what, f"capacity provider {label}", enablers)


def _message(what: str, subject: str, enablers: list[Resource], default: bool = False) -> str:
    by = ", ".join(sorted(f"{cdk_path(r)} ({r.kind})" for r in enablers))
    why = (
        "ECS reads the cluster's default strategy when it creates the service, so one created first does not get it "
        "(the ECS API Reference does not say what it gets instead)"
        if default
        else "ECS refuses a strategy naming a provider the cluster does not have yet"
    )
    return (
        f"this {what} uses {subject}, set on its cluster by {by}, and does not depend on it: CloudFormation may "
        f"create the {what} first, and {why}. Make the {what} depend on it: in CDK, "
        "service.node.add_dependency(cluster); in a template, DependsOn"
    )


def provider_in_one_cluster(ctx: Templates) -> Iterator[Finding]:
    """An Auto Scaling group capacity provider is associated with one cluster: ECS API Reference, CreateCluster,
    capacityProviders: "If specifying a capacity provider that uses an Auto Scaling group, the capacity provider must be
    created but not associated with another cluster". A provider added to a second cluster (aws-ecs's
    ``add_asg_capacity_provider`` on both) fails to deploy there; moto associates it with both."""
    holders = [(r, r.props.get("Cluster")) for r in ctx.of_type(_ASSOCIATIONS)]
    holders += [(r, {"Ref": r.logical_id}) for r in ctx.of_type("AWS::ECS::Cluster")]
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        if not provider.props.get("AutoScalingGroupProvider"):
            continue  # a Managed Instances provider is made in its one cluster
        own = _names(ctx, {"Ref": provider.logical_id}, provider.stack, "AWS::ECS::CapacityProvider")
        clusters: list[tuple[set[str], Resource]] = []  # one entry a cluster: the names it answers to, and who adds it
        for holder, cluster_value in holders:
            if not any(own & p for p in _providers(ctx, holder.props.get("CapacityProviders"), holder.stack)):
                continue
            names = _names(ctx, cluster_value, holder.stack, "AWS::ECS::Cluster")
            if names and not any(names & seen for seen, _ in clusters):
                clusters.append((names, holder))
        if len(clusters) > 1:
            by = ", ".join(sorted(f"{cdk_path(r)} ({r.kind})" for _, r in clusters))
            yield (
                provider,
                f"this Auto Scaling group capacity provider is associated with {len(clusters)} clusters (by {by}); "
                "ECS associates one with a single cluster and refuses it in another: give each cluster its own "
                "provider and Auto Scaling group (a GpuCapacity for each)",
            )
