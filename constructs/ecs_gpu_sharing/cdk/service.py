"""``SharedGpuService``: an ECS service whose tasks share GPUs of a ``GpuCapacity``."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_ecs as ecs
from constructs import Construct

from ..core.allocation import AllocationNote
from ..core.errors import ServiceError, TaskDefinitionError
from ..core.mps import require_int
from ..core.quotas import MAX_TASKS_PER_SERVICE
from ..core.tokens import is_token
from .capacity import GpuCapacity
from .fleet_plan import FleetPlan


class SharedGpuService(Construct):
    """An EC2 service on a GPU capacity's provider, planned with every other service on that capacity.

    The service runs only on instances whose ECS agent advertises ``ecs.capability.gpu-sharing-mps``
    (a placement constraint, for MPS tasks), rolls back a failed deployment (circuit breaker), and deploys
    with minimum healthy 100% and maximum 200% unless told otherwise. It is planned at its largest count:
    ``planned_count`` when given, else the larger of ``desired_count`` and the task auto scaling maximum
    (``.service.auto_scale_task_count(max_capacity=...)``).

    Any other ECS service on the capacity (a plain ``Ec2Service``, an aws-ecs-patterns service) is planned too;
    this construct adds the placement constraint and defaults.

    :param desired_count: tasks to run; may be a token (a ``CfnParameter``), which the plan cannot count: then
        give ``planned_count`` or a task auto scaling maximum.
    :param name: the service's name in the fleet plan; the construct id by default. Unique within the app.
    :param planned_count: the count to plan for, when the service's own counts are deploy-time values.
    :param allocation: the service's allocation note (``AllocationNote``): what its budget must cover, the evidence
        behind it, and its isolation group. Without one, its budget is a guess (a warning).
    :param kwargs: every other option of ``aws_ecs.Ec2Service`` (placement strategies, service name, ...).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.ICluster,
        capacity: GpuCapacity,
        task_definition: ecs.TaskDefinition,
        desired_count: int,
        name: str | None = None,
        planned_count: int | None = None,
        allocation: AllocationNote | None = None,
        min_healthy_percent: int = 100,
        max_healthy_percent: int = 200,
        **kwargs: Any,
    ) -> None:
        path = f"{scope.node.path}/{id_}"
        if not isinstance(capacity, GpuCapacity):
            raise ServiceError(f"{path}: capacity must be a GpuCapacity, got {capacity!r}")
        if not isinstance(task_definition, ecs.TaskDefinition):
            raise TaskDefinitionError(
                f"{path}: task_definition must be a task definition of this app (SharedGpuTaskDefinition), got "
                f"{type(task_definition).__name__}; the plan reads its containers"
            )
        if cluster is not capacity.cluster:
            raise ServiceError(
                f"{path}: the capacity {capacity.node.path} belongs to cluster {capacity.cluster.node.path}, not "
                f"{cluster.node.path}; run the service on the capacity's cluster"
            )
        if not task_definition.is_ec2_compatible:
            raise TaskDefinitionError(
                f"{path}: the task definition {task_definition.node.path} is not EC2-compatible; a GPU capacity "
                "runs EC2 tasks (use SharedGpuTaskDefinition)"
            )
        count: Any = desired_count
        if not is_token(desired_count):
            count = require_int(
                "desired_count", desired_count, low=0, high=MAX_TASKS_PER_SERVICE, owner=path, error=ServiceError
            )
        low = require_int("min_healthy_percent", min_healthy_percent, low=0, high=100, owner=path, error=ServiceError)
        high = require_int("max_healthy_percent", max_healthy_percent, low=100, owner=path, error=ServiceError)
        for reserved in ("capacity_provider_strategies", "circuit_breaker", "launch_type"):
            if reserved in kwargs:
                raise ServiceError(
                    f"{path}: {reserved} is set by SharedGpuService (the capacity's provider, rollback on failure); "
                    "leave it out"
                )
        plan = FleetPlan.of(scope)
        super().__init__(scope, id_)
        plan.name_service(self, id_ if name is None else name)
        if planned_count is not None:
            plan.plan_count(self, planned_count)
        if allocation is not None:
            plan.describe(self, allocation)
        self.task_definition = task_definition
        self.capacity = capacity
        constraints = list(kwargs.pop("placement_constraints", None) or [])
        if getattr(task_definition, "mps_shares", ()):
            constraints.extend(GpuCapacity.mps_placement_constraints())
        self.service = ecs.Ec2Service(
            self,
            "Service",
            cluster=cluster,
            task_definition=task_definition,
            desired_count=count,
            min_healthy_percent=low,
            max_healthy_percent=high,
            circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
            capacity_provider_strategies=capacity.capacity_provider_strategies(),
            placement_constraints=constraints or None,
            **kwargs,
        )
        # The provider must be associated with the cluster before the service names it; aws-ecs creates that
        # association under the cluster late, so depend on the cluster's whole subtree (resolved at synth).
        self.service.node.add_dependency(cluster)
