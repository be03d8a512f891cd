"""``SharedGpuService`` and ``SharedGpuManagedInstancesService``: ECS services whose tasks share the GPUs of a
``GpuCapacity`` or a ``GpuManagedInstancesCapacity``, planned with every other service of the app."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from ..core.allocation import AllocationNote
from ..core.errors import ServiceError, TaskDefinitionError
from ..core.fleet.service_spec import DEFAULT_STARTUP_SECONDS
from ..core.mps import require_int
from ..core.placement_strategies import (
    BINPACK_CPU,
    BINPACK_MEMORY,
    LIBRARY_STRATEGY,
    RANDOM,
    SPREAD_INSTANCE,
    SPREAD_ZONE,
)
from ..core.quotas import MAX_TASKS_PER_SERVICE
from ..core.shape import folded_keys
from ..core.tokens import is_token
from .capacity import GpuCapacity
from .fleet_plan import FleetPlan, planned_tasks
from .managed_capacity import GpuManagedInstancesCapacity
from .options import SharedGpuManagedInstancesServiceOptions, SharedGpuServiceOptions
from .refusals import check_options, kind_of, passed_on, require_cluster, require_name

# Options of aws-ecs's service that the construct sets itself (the capacity's provider strategy, rollback on failure)
# or that Managed Instances takes none of: refused when given, and left out of the typed options (cdk/options.py).
EC2_RESERVED = ("capacity_provider_strategies", "circuit_breaker", "launch_type")
MANAGED_INSTANCES_RESERVED = (*EC2_RESERVED, "placement_constraints")


@jsii.implements(elbv2.IApplicationLoadBalancerTarget, elbv2.INetworkLoadBalancerTarget, ec2.IConnectable)
class _PlannedGpuService(Construct):
    """What the EC2 and the Managed Instances service share: the counts and deployment percents checked, the
    capacity's provider strategy and rollback on failure set, Availability Zone rebalancing off unless asked for, and
    the service named, counted and noted in the fleet plan. Each subclass checks its capacity and task definition and
    says which ECS service class it builds.

    It is taken where aws-ecs's service is: a load balancer's target (``listener.add_targets(targets=[service])``),
    ``connections``, ``load_balancer_target`` and ``auto_scale_task_count`` are the ECS service's (``.service``)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.ICluster,
        capacity: GpuCapacity | GpuManagedInstancesCapacity,
        task_definition: ecs.TaskDefinition,
        desired_count: int,
        name: str | None,
        planned_count: int | None,
        allocation: AllocationNote | None,
        min_healthy_percent: int,
        max_healthy_percent: int,
        options: Mapping[str, Any],
        reserved: tuple[str, ...],
        service_type: type[ecs.Ec2Service] | type[ecs.FargateService],
        known: type,
    ) -> None:
        path = f"{scope.node.path}/{id_}"
        require_cluster(cluster, owner=path, error=ServiceError)
        if name is not None:
            require_name(name, owner=path, error=ServiceError)
        if planned_count is not None:
            planned_tasks("planned_count", planned_count, owner=path)
        count, low, high = _checked(
            path,
            cluster,
            capacity,
            desired_count,
            min_healthy_percent,
            max_healthy_percent,
            options,
            reserved,
            type(self).__name__,
        )
        check_options(type(self), path, options, known, service_type.__name__, ServiceError)
        options = _namespace_by_arn(cluster, options)
        # ECS turns Availability Zone rebalancing on for a new service without a value (botocore's ECS model,
        # CreateService): it moves tasks between zones, which the plan's replay does not, and each move reloads a model.
        options = {"availability_zone_rebalancing": ecs.AvailabilityZoneRebalancing.DISABLED, **options}
        super().__init__(scope, id_)
        self.task_definition = task_definition
        self.capacity = capacity
        with passed_on(path, f"aws_ecs.{service_type.__name__}", ServiceError):
            self.service = service_type(
                self,
                "Service",
                cluster=cluster,
                task_definition=task_definition,
                desired_count=count,
                min_healthy_percent=low,
                max_healthy_percent=high,
                circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
                capacity_provider_strategies=capacity.capacity_provider_strategies(),
                **options,
            )
        if options.get("health_check_grace_period") is None:
            resource = self.service.node.default_child
            assert isinstance(resource, ecs.CfnService)
            grace = cdk.Lazy.uncached_any(_StartupGrace(resource, task_definition))
            resource.add_property_override("HealthCheckGracePeriodSeconds", grace)
        _register(self, id_ if name is None else name, planned_count, allocation)  # its Service exists now
        # The provider must be associated with the cluster before the service names it; aws-ecs creates that
        # association under the cluster late, so depend on the cluster's whole subtree (resolved at synth).
        self.service.node.add_dependency(cluster)

    @property
    def connections(self) -> ec2.Connections:
        """The ECS service's connections (its tasks' security groups in the awsvpc network mode)."""
        return self.service.connections

    def attach_to_application_target_group(
        self, target_group: elbv2.IApplicationTargetGroup
    ) -> elbv2.LoadBalancerTargetProps:
        """The ECS service's task definition's default container, registered in an ALB target group."""
        return self.service.attach_to_application_target_group(target_group)

    def attach_to_network_target_group(self, target_group: elbv2.INetworkTargetGroup) -> elbv2.LoadBalancerTargetProps:
        """The ECS service's task definition's default container, registered in an NLB target group."""
        return self.service.attach_to_network_target_group(target_group)

    def load_balancer_target(
        self, *, container_name: str, container_port: int | None = None, protocol: ecs.Protocol | None = None
    ) -> ecs.IEcsLoadBalancerTarget:
        """A named container and port of the service as a load balancer target (the ECS service's)."""
        return self.service.load_balancer_target(
            container_name=container_name, container_port=container_port, protocol=protocol
        )

    def auto_scale_task_count(self, *, max_capacity: int, min_capacity: int | None = None) -> ecs.ScalableTaskCount:
        """Task auto scaling of the ECS service; the plan counts ``max_capacity``."""
        return self.service.auto_scale_task_count(max_capacity=max_capacity, min_capacity=min_capacity)


@jsii.implements(cdk.IAnyProducer)
class _StartupGrace:
    """A service's health check grace period where it has a check to ignore: the fleet file's default startup (300 s)
    where it has a load balancer or a container health check, none otherwise (aws-ecs's own default is 60 s with a
    load balancer, and a model server still loading its weights is stopped and started again, over and over). Read at
    synth, since a load balancer attaches the service after it is made."""

    def __init__(self, service: ecs.CfnService, task_definition: ecs.TaskDefinition) -> None:
        self._service, self._task = service, task_definition

    def produce(self, context: cdk.IResolveContext) -> Any:
        stack = cdk.Stack.of(self._service)
        balanced = bool(stack.resolve(self._service.load_balancers))
        containers = self._task.node.default_child
        written = (
            stack.resolve(containers.container_definitions) if isinstance(containers, ecs.CfnTaskDefinition) else []
        )
        checked = any(folded_keys(c).get("healthcheck") for c in written or [])  # as aws-ecs or an L1 writes it
        return DEFAULT_STARTUP_SECONDS if balanced or checked else None


class SharedGpuService(_PlannedGpuService):
    """An EC2 service on a GPU capacity's provider, planned with every other service on that capacity.

    The service runs on the capacity's provider only, whose hosts all run a GPU AMI release that shares GPUs (so no
    ``memberOf`` constraint is added: AWS's "Amazon ECS managed scaling behavior" recommends none but
    ``distinctInstance``, since others can stop scale-out from zero), rolls back a failed deployment (circuit breaker),
    and deploys with minimum healthy 100% and maximum 200% unless told otherwise. Its tasks are placed spread over
    Availability Zones, then on the host with the least memory left, unless ``placement_strategies`` is given; the
    plan replays ECS's placement with the service's strategies (``core.placement``) and warns where they scatter.
    ECS's Availability Zone rebalancing is off unless ``availability_zone_rebalancing`` is given (the replay does not
    move tasks between zones). Behind a load balancer or with a container health check, failed checks count 300 s
    after a task starts (the fleet file's default ``startup_seconds``; aws-ecs's own default for a load-balanced
    service, 60 s, restarts a model still loading its weights) unless ``health_check_grace_period`` is given.
    It is planned at its largest count: ``planned_count`` when given, else the larger of ``desired_count`` and the task
    auto scaling maximum (``.service.auto_scale_task_count(max_capacity=...)``).

    Any other ECS service on the capacity (a plain ``Ec2Service``, an aws-ecs-patterns service) is planned too;
    this construct adds the capacity's provider strategy and defaults.

    :param cluster: the capacity's cluster.
    :param capacity: the ``GpuCapacity`` whose provider runs the tasks.
    :param task_definition: an EC2-compatible task definition of this app (``SharedGpuTaskDefinition``); the plan
        reads its containers.
    :param desired_count: tasks to run; may be a token (a ``CfnParameter``), which the plan cannot count: then
        give ``planned_count`` or a task auto scaling maximum.
    :param name: the service's name in the fleet plan; the construct id by default. Unique within the app.
    :param planned_count: the count to plan for, when the service's own counts are deploy-time values; without
        one, the larger of ``desired_count`` and the auto scaling maximum.
    :param allocation: the service's allocation note (``AllocationNote``): what its budget must cover, the evidence
        behind it, and its isolation group. Without one, its budget is a guess (a warning).
    :param min_healthy_percent: the deployment's minimum healthy percent of ``desired_count``; 100 by default.
    :param max_healthy_percent: the deployment's maximum percent of ``desired_count``, which sizes the surge the
        plan makes room for; 200 by default.
    :param kwargs: every other option of ``aws_ecs.Ec2Service`` (``SharedGpuServiceOptions``: placement
        strategies, service name, ...), passed on unchanged.
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
        **kwargs: Unpack[SharedGpuServiceOptions],
    ) -> None:
        path = f"{scope.node.path}/{id_}"
        if not isinstance(capacity, GpuCapacity):
            raise ServiceError(f"{path}: capacity must be a GpuCapacity, got {capacity!r}")
        if not isinstance(task_definition, ecs.TaskDefinition) or not task_definition.is_ec2_compatible:
            raise TaskDefinitionError(
                f"{path}: task_definition must be an EC2-compatible task definition of this app "
                f"(SharedGpuTaskDefinition), got {kind_of(task_definition)}; the plan reads its containers"
            )
        if "placement_strategies" not in kwargs:
            kwargs["placement_strategies"] = placement_strategies(LIBRARY_STRATEGY)
        super().__init__(
            scope,
            id_,
            cluster=cluster,
            capacity=capacity,
            task_definition=task_definition,
            desired_count=desired_count,
            name=name,
            planned_count=planned_count,
            allocation=allocation,
            min_healthy_percent=min_healthy_percent,
            max_healthy_percent=max_healthy_percent,
            options=kwargs,
            reserved=EC2_RESERVED,
            service_type=ecs.Ec2Service,
            known=SharedGpuServiceOptions,
        )


def _namespace_by_arn(cluster: ecs.ICluster, options: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Service Connect configuration without a namespace joins the cluster's default one by its ARN. aws-ecs would
    write its name, and ECS resolves a name among every namespace of the account and region (botocore's ECS model,
    ServiceConnectConfiguration), where private DNS namespaces of one name may sit in several VPCs (sst issue 3996: a
    lookup of one such name found two)."""
    config = options.get("service_connect_configuration")
    default = cluster.default_cloud_map_namespace
    if not isinstance(config, ecs.ServiceConnectProps) or config.namespace is not None or default is None:
        return options  # none, one that names its namespace, a form aws-ecs reads itself, or no default
    fields = inspect.signature(ecs.ServiceConnectProps.__init__).parameters
    given = {name: getattr(config, name) for name in fields if name not in ("self", "namespace")}
    connect = ecs.ServiceConnectProps(namespace=default.namespace_arn, **given)
    return {**options, "service_connect_configuration": connect}


def placement_strategies(parts: Sequence[str] = LIBRARY_STRATEGY) -> list[ecs.PlacementStrategy]:
    """ECS placement strategies for the model's parts (``core.placement``: a preset's, say), in order; by default what
    ``SharedGpuService`` sets: spread over Availability Zones, then the host with the least memory left. Give them to
    any other service on a GPU capacity (an aws-ecs-patterns service, say) for the density the plan counts on."""
    made = {
        SPREAD_ZONE: lambda: ecs.PlacementStrategy.spread_across(ecs.BuiltInAttributes.AVAILABILITY_ZONE),
        SPREAD_INSTANCE: ecs.PlacementStrategy.spread_across_instances,
        BINPACK_MEMORY: ecs.PlacementStrategy.packed_by_memory,
        BINPACK_CPU: ecs.PlacementStrategy.packed_by_cpu,
        RANDOM: ecs.PlacementStrategy.randomly,
    }
    unknown = [p for p in parts if p not in made]
    if unknown:
        raise ServiceError(f"placement strategies {unknown} are not known; use {', '.join(made)}")
    return [made[p]() for p in parts]


def _checked(
    path: str,
    cluster: ecs.ICluster,
    capacity: GpuCapacity | GpuManagedInstancesCapacity,
    desired_count: Any,
    min_healthy_percent: int,
    max_healthy_percent: int,
    kwargs: Mapping[str, Any],
    reserved: tuple[str, ...],
    who: str,
) -> tuple[Any, int, int]:
    """The checked count and deployment percents of a service on ``capacity``; refuses another cluster's capacity and
    the options the construct sets itself."""
    if cluster is not capacity.cluster:
        raise ServiceError(
            f"{path}: the capacity {capacity.node.path} belongs to cluster {capacity.cluster.node.path}, not "
            f"{cluster.node.path}; run the service on the capacity's cluster"
        )
    count: Any = desired_count
    if not is_token(desired_count):
        count = require_int(
            "desired_count", desired_count, low=0, high=MAX_TASKS_PER_SERVICE, owner=path, error=ServiceError
        )
    low = require_int("min_healthy_percent", min_healthy_percent, low=0, high=100, owner=path, error=ServiceError)
    high = require_int("max_healthy_percent", max_healthy_percent, low=100, owner=path, error=ServiceError)
    for name in reserved:
        if name in kwargs:
            raise ServiceError(
                f"{path}: {name} is set by {who} (the capacity's provider, rollback on failure"
                + (
                    "; Managed Instances takes no placement constraints from it"
                    if "placement_constraints" in reserved
                    else ""
                )
                + "); leave it out"
            )
    kind = _controller_type(kwargs.get("deployment_controller"))
    if kind not in (None, "ECS"):
        raise ServiceError(
            f"{path}: deployment_controller {kind} is not ECS's own; the construct rolls back a failed deployment with "
            "ECS's circuit breaker, which ECS takes only under its own (ECS) controller (botocore's ECS model, "
            "DeploymentConfiguration.deploymentCircuitBreaker), and its plan replays that controller's deployments; "
            "leave deployment_controller out"
        )
    return count, low, high


def _controller_type(controller: Any) -> str | None:
    """The type a ``deployment_controller`` option names (a struct or a dict, an enum member or a string)."""
    if controller is None:
        return None
    kind = controller.get("type") if isinstance(controller, Mapping) else getattr(controller, "type", None)
    return None if kind is None else str(getattr(kind, "value", kind))


def _register(service: Construct, name: str, planned_count: int | None, allocation: AllocationNote | None) -> None:
    plan = FleetPlan.of(service)
    plan.name_service(service, name)
    if planned_count is not None:
        plan.plan_count(service, planned_count)
    if allocation is not None:
        plan.set_allocation(service, allocation)


class SharedGpuManagedInstancesService(_PlannedGpuService):
    """A service on ECS Managed Instances GPU hosts, planned with every other service of the app.

    aws-ecs runs services on Managed Instances as a ``FargateService`` with the capacity's provider strategy; this
    construct builds that service (``.service``), rolls back a failed deployment, deploys with minimum healthy 100%
    and maximum 200% unless told otherwise, and names, counts and describes it in the fleet plan as
    ``SharedGpuService`` does. Managed Instances takes no placement expressions from the app: the plan warns when
    isolation groups share such a capacity (``IsolationNotEnforceable``).

    :param cluster: the capacity's cluster.
    :param capacity: the ``GpuManagedInstancesCapacity`` whose provider runs the tasks.
    :param task_definition: a ``SharedGpuManagedInstancesTaskDefinition`` (awsvpc, task-level CPU and memory).
    :param desired_count: tasks to run; may be a token, which the plan cannot count: then give ``planned_count``
        or a task auto scaling maximum.
    :param name: the service's name in the fleet plan; the construct id by default. Unique within the app.
    :param planned_count: the count to plan for, when the service's own counts are deploy-time values; without
        one, the larger of ``desired_count`` and the auto scaling maximum.
    :param allocation: the service's allocation note (``AllocationNote``); without one, its budget is a guess (a
        warning).
    :param min_healthy_percent: the deployment's minimum healthy percent of ``desired_count``; 100 by default.
    :param max_healthy_percent: the deployment's maximum percent of ``desired_count``; 200 by default.
    :param kwargs: every other option of ``aws_ecs.FargateService`` (``SharedGpuManagedInstancesServiceOptions``:
        subnets, security groups, service name, ...), passed on unchanged.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.ICluster,
        capacity: GpuManagedInstancesCapacity,
        task_definition: ecs.TaskDefinition,
        desired_count: int,
        name: str | None = None,
        planned_count: int | None = None,
        allocation: AllocationNote | None = None,
        min_healthy_percent: int = 100,
        max_healthy_percent: int = 200,
        **kwargs: Unpack[SharedGpuManagedInstancesServiceOptions],
    ) -> None:
        path = f"{scope.node.path}/{id_}"
        if not isinstance(capacity, GpuManagedInstancesCapacity):
            raise ServiceError(f"{path}: capacity must be a GpuManagedInstancesCapacity, got {capacity!r}")
        if not isinstance(task_definition, ecs.TaskDefinition) or not task_definition.is_managed_instances_compatible:
            raise TaskDefinitionError(
                f"{path}: task_definition must be a Managed Instances task definition of this app "
                f"(SharedGpuManagedInstancesTaskDefinition), got {kind_of(task_definition)}"
            )
        super().__init__(
            scope,
            id_,
            cluster=cluster,
            capacity=capacity,
            task_definition=task_definition,
            desired_count=desired_count,
            name=name,
            planned_count=planned_count,
            allocation=allocation,
            min_healthy_percent=min_healthy_percent,
            max_healthy_percent=max_healthy_percent,
            options=kwargs,
            reserved=MANAGED_INSTANCES_RESERVED,
            known=SharedGpuManagedInstancesServiceOptions,
            service_type=ecs.FargateService,
        )
