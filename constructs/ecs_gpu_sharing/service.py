"""``SharedGpuService``: an ECS service whose tasks share GPUs of a ``GpuCapacity``."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_ecs as ecs
from constructs import Construct

from .capacity import GpuCapacity
from .errors import TaskDefinitionError
from .fleet_plan import FleetPlan
from .mps import require_int
from .planner import ServiceInput
from .task_definition import SharedGpuTaskDefinition

MPS_CAPABILITY_ATTRIBUTE = "ecs.capability.gpu-sharing-mps"


class SharedGpuService(Construct):
    """An EC2 service on a GPU capacity's provider, planned with every other service on that capacity.

    The service runs only on instances whose ECS agent advertises ``ecs.capability.gpu-sharing-mps``
    (a placement constraint, for MPS tasks), rolls back a failed deployment (circuit breaker), and deploys
    with minimum healthy 100% and maximum 200% unless told otherwise. At synth, the fleet plan checks that
    the desired counts fit the capacity (errors) and that a deployment's surge fits (a warning).

    :param kwargs: every other option of ``aws_ecs.Ec2Service`` (placement strategies, service name, ...).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.ICluster,
        capacity: GpuCapacity,
        task_definition: SharedGpuTaskDefinition,
        desired_count: int,
        min_healthy_percent: int = 100,
        max_healthy_percent: int = 200,
        **kwargs: Any,
    ) -> None:
        path = f"{scope.node.path}/{id_}"
        if not isinstance(capacity, GpuCapacity):
            raise TaskDefinitionError(f"{path}: capacity must be a GpuCapacity, got {capacity!r}")
        if not isinstance(task_definition, SharedGpuTaskDefinition):
            raise TaskDefinitionError(
                f"{path}: task_definition must be a SharedGpuTaskDefinition, got {type(task_definition).__name__}; "
                "declare GPU budgets with SharedGpuTaskDefinition.add_container(gpu=MpsShare(...))"
            )
        if cluster is not capacity.cluster:
            raise TaskDefinitionError(
                f"{path}: the capacity {capacity.node.path} belongs to cluster {capacity.cluster.node.path}, not "
                f"{cluster.node.path}; run the service on the capacity's cluster"
            )
        if not task_definition.is_ec2_compatible:
            raise TaskDefinitionError(
                f"{path}: the task definition {task_definition.node.path} is not EC2-compatible; a GPU capacity "
                "runs EC2 tasks"
            )
        count = require_int("desired_count", desired_count, low=0, owner=path)
        low = require_int("min_healthy_percent", min_healthy_percent, low=0, high=100, owner=path)
        high = require_int("max_healthy_percent", max_healthy_percent, low=100, owner=path)
        for reserved in ("capacity_provider_strategies", "circuit_breaker"):
            if reserved in kwargs:
                raise TaskDefinitionError(
                    f"{path}: {reserved} is set by SharedGpuService (the capacity's provider, rollback on failure); "
                    "leave it out"
                )
        super().__init__(scope, id_)
        self.task_definition = task_definition
        self.capacity = capacity
        constraints = list(kwargs.pop("placement_constraints", None) or [])
        if task_definition.mps_shares:
            constraints.append(ecs.PlacementConstraint.member_of(f"attribute:{MPS_CAPABILITY_ATTRIBUTE} exists"))
        self.service = ecs.Ec2Service(
            self,
            "Service",
            cluster=cluster,
            task_definition=task_definition,
            desired_count=count,
            min_healthy_percent=low,
            max_healthy_percent=high,
            circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
            capacity_provider_strategies=[
                ecs.CapacityProviderStrategy(
                    capacity_provider=capacity.capacity_provider.capacity_provider_name, weight=1
                )
            ],
            placement_constraints=constraints or None,
            **kwargs,
        )
        # The provider must be associated with the cluster before the service names it; aws-ecs creates that
        # association under the cluster late, so depend on the cluster's whole subtree (resolved at synth).
        self.service.node.add_dependency(cluster)
        FleetPlan.of(self).add_service(
            self,
            capacity,
            lambda: ServiceInput(
                name=self.node.path,
                capacity=capacity.node.path,
                desired_count=count,
                cpu_units=task_definition.task_cpu_units,
                memory_mib=task_definition.task_memory_mib,
                container_memory_mib=tuple(share.memory_mib for _, share in task_definition.mps_shares),
                whole_gpus=task_definition.whole_gpu_count,
                max_percent=high,
            ),
        )
