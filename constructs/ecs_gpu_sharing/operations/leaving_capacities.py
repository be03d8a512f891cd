"""``fleet capacities``: before deploy, whether each capacity the deploy takes off the cluster is free to leave.

A capacity leaves the deployed cluster stack when the fleet file drops it, renames it or changes its kind:
CloudFormation makes the new capacity provider, updates the cluster's list of providers without the old one, and
deletes the old provider and its Auto Scaling group once the update is done. A real account stops that twice where no
synth and no emulator can see it:

- ECS takes a capacity provider off a cluster only when no task uses it (ECS API Reference,
  PutClusterCapacityProviders: "You can only disassociate an existing capacity provider from a cluster if it's not
  being used by any existing tasks"), and deletes a Managed Instances provider only once no service's strategy names
  it (DeleteCapacityProvider). The cluster stack deploys before the services stacks that move the services, so their
  tasks are still there: the cluster stack fails and rolls back (a Managed Instances provider is left behind).
- Every host of a ``GpuCapacity`` group starts protected from scale-in (managed termination protection), and ECS
  leaves the protection when the provider goes (aws-cdk issue 18179): CloudFormation cannot empty the group, waits for
  hours to delete it, and the GPU hosts keep running.

So a capacity leaves in two deploys: the first moves its services (and sets its ``min_instances`` to 0), the second
removes it once nothing runs there; ``cluster unprotect --provider`` clears the protection its last hosts keep.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.fleet import EC2, MANAGED_INSTANCES, FleetSpec
from ..core.service_rules.base import CAPACITY_METADATA
from ..core.text import few
from .aws import Clients, aws_errors
from .deployed import deployed_template
from .teardown import active_services, cluster_from_stack, provider_groups, strategy_providers, wants_tasks

CAPACITY_PROVIDER = "AWS::ECS::CapacityProvider"
GONE = "not in the fleet file"
DESCRIBE_TASKS_BATCH = 100  # DescribeTasks takes at most 100 tasks (ECS API Reference)


@dataclass(frozen=True)
class Leaving:
    """A capacity of the deployed cluster stack that the fleet file no longer has as it was."""

    capacity: str
    logical_id: str
    why: str  # "not in the fleet file", or "now managed-instances"


@dataclass(frozen=True)
class LeavingCapacity:
    capacity: str
    why: str
    stack: str
    provider: str  # the capacity provider's name
    services: tuple[str, ...]  # services whose strategy names it and that want or run tasks
    tasks: int  # tasks running on it
    group: str | None  # its Auto Scaling group (None: Managed Instances)
    hosts: int
    protected: int  # hosts protected from scale-in

    @property
    def problem(self) -> str | None:
        head = f"capacity {self.capacity} ({self.why}) leaves the cluster in this deploy"
        if self.services or self.tasks:
            refusal = (
                "ECS takes a capacity provider off a cluster only when no task uses it, and the cluster stack "
                "deploys before the services stacks, so it would fail and roll back"
                if self.group
                else "ECS deletes a Managed Instances provider only once no service names it, and the cluster stack "
                "deploys before the services stacks, so it would be left behind"
            )
            keep = " (with min_instances = 0)" if self.group else ""
            running = f"services {few(list(self.services))}" if self.services else "tasks outside any fleet service"
            steps = (
                f"keep [capacity.{self.capacity}] as it was{keep} while its services move to their new capacity"
                if self.why == GONE
                # A capacity of another kind under the same name keeps its output's name, and a services stack whose
                # template does not change is not deployed again: make the new kind a capacity of another name.
                else f"keep [capacity.{self.capacity}] as it was{keep}, add the new kind as a capacity of another "
                "name, and move its services there"
            )
            return (
                f"{head}, but {running} still run on its capacity provider {self.provider} ({self.tasks} tasks): "
                f"{refusal}. Deploy in two steps: {steps}; once they run there, remove [capacity.{self.capacity}]"
            )
        if self.protected:
            return (
                f"{head}, but {self.protected} of the {self.hosts} hosts of its Auto Scaling group {self.group} are "
                "protected from scale-in, so CloudFormation cannot delete the group (it waits for hours, and the "
                "hosts keep running): run `ecs-gpu-sharing cluster unprotect --stack "
                f"{self.stack} --provider {self.provider}` first"
            )
        return None

    def line(self) -> str:
        hosts = f"; group {self.group}: {self.hosts} hosts, {self.protected} protected" if self.group else ""
        return (
            f"capacity {self.capacity} ({self.why}) leaves: provider {self.provider}: {len(self.services)} services "
            f"and {self.tasks} tasks on it{hosts}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "why": self.why,
            "provider": self.provider,
            "services": list(self.services),
            "tasks": self.tasks,
            "auto_scaling_group": self.group,
            "hosts": self.hosts,
            "protected_hosts": self.protected,
            "problem": self.problem,
        }


def _capacity_name(resource: Mapping[str, Any]) -> str | None:
    """The fleet capacity a deployed capacity provider is: its metadata, else its construct path
    (``<stack>/Capacities/<name>/...``, as the app builds it)."""
    metadata = resource.get("Metadata") or {}
    if isinstance(metadata.get(CAPACITY_METADATA), str):
        return str(metadata[CAPACITY_METADATA])
    parts = str(metadata.get("aws:cdk:path", "")).split("/")
    return parts[2] if len(parts) > 3 and parts[1] == "Capacities" else None


def leaving(template: Mapping[str, Any], spec: FleetSpec) -> list[Leaving]:
    """The capacity providers of a deployed cluster stack's template that ``spec`` drops or makes of another kind
    (either way CloudFormation replaces them). Pure: no AWS call."""
    out = []
    for logical_id, resource in (template.get("Resources") or {}).items():
        if not isinstance(resource, Mapping) or resource.get("Type") != CAPACITY_PROVIDER:
            continue
        name = _capacity_name(resource)
        if name is None:
            continue  # not one of the fleet's capacities
        properties = resource.get("Properties") or {}
        kind = MANAGED_INSTANCES if "ManagedInstancesProvider" in properties else EC2
        wanted = spec.capacities.get(name)
        if wanted is None:
            out.append(Leaving(name, logical_id, GONE))
        elif wanted.kind != kind:
            out.append(Leaving(name, logical_id, f"now {wanted.kind}"))
    return sorted(out, key=lambda left: left.capacity)


def _tasks_by_provider(ecs: Any, cluster: str) -> Counter[str]:
    arns = [a for page in ecs.get_paginator("list_tasks").paginate(cluster=cluster) for a in page["taskArns"]]
    return Counter(
        t["capacityProviderName"]
        for start in range(0, len(arns), DESCRIBE_TASKS_BATCH)
        for t in ecs.describe_tasks(cluster=cluster, tasks=arns[start : start + DESCRIBE_TASKS_BATCH])["tasks"]
        if t.get("capacityProviderName")
    )


def _hosts(autoscaling: Any, group: str) -> tuple[int, int]:
    described = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
    instances = [i for g in described for i in g.get("Instances", [])]
    return len(instances), sum(1 for i in instances if i.get("ProtectedFromScaleIn"))


def check(clients: Clients, region: str | None, spec: FleetSpec) -> list[LeavingCapacity]:
    """Each capacity this deploy takes off the deployed cluster, with what still runs on it; nothing for a first
    deploy, or when every deployed capacity stays as it is."""
    stack = spec.stack_name("cluster")
    cloudformation = clients("cloudformation", region)
    where = cloudformation.meta.region_name
    with aws_errors(f"{where}: reading the deployed stack {stack}"):
        deployed = deployed_template(cloudformation, stack)
    if deployed is None:
        return []
    template, physical = deployed
    gone = [(left, physical[left.logical_id]) for left in leaving(template, spec) if left.logical_id in physical]
    if not gone:
        return []
    with aws_errors(f"{where}: reading the deployed stack {stack}"):
        cluster = cluster_from_stack(cloudformation, stack)
    ecs = clients("ecs", region)
    services = [s for s in active_services(ecs, cluster) if wants_tasks(s)]
    with aws_errors(f"{where}: reading the tasks of cluster {cluster}"):
        tasks = _tasks_by_provider(ecs, cluster)
    groups = provider_groups(ecs, [provider for _, provider in gone])
    out = []
    for left, provider in gone:
        group = groups.get(provider)
        hosts = (0, 0)
        if group is not None:
            with aws_errors(f"{where}: reading Auto Scaling group {group}"):
                hosts = _hosts(clients("autoscaling", region), group)
        on_it = tuple(sorted(s["serviceName"] for s in services if provider in strategy_providers(s)))
        out.append(LeavingCapacity(left.capacity, left.why, stack, provider, on_it, tasks[provider], group, *hosts))
    return out
