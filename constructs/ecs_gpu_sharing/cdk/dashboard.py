"""The fleet's GPU dashboard, with an alarm per service (``cdk.telemetry`` writes what it shows).

``GpuFleetDashboard`` shows per service its GPU budget against the measured peak and p99, the utilization of the
GPUs it ran on, and those stopped tasks; an alarm fires when a service's peak nears its budget. Dashboards and
alarms read the metric namespace, which any log group's embedded-metric-format lines can write to; ``evaluate``
reads the evidence log group and the stopped-task log group instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_sns as sns
from constructs import Construct, IConstruct, IValidation

from ..core.aws_text import DASHBOARD_NAME, REGION_MAX_LENGTH, STACK_NAME_MAX_LENGTH
from ..core.errors import ServiceError
from ..core.telemetry import METRIC_PERIOD_SECONDS
from .fleet_plan import FleetPlan
from .refusals import kind_of, require_cluster, require_kind
from .telemetry import NAMESPACE, STOP_METRICS

MAX_DASHBOARD_WIDGETS = 500  # CloudWatch's limit per dashboard
MAX_SERVICES_PER_DASHBOARD = (MAX_DASHBOARD_WIDGETS - 1) // 3  # three widgets each, and the MPS health row


class GpuFleetDashboard(Construct):
    """A CloudWatch dashboard of the fleet's GPU services, and an alarm per service when its peak nears its budget.

    Each service's budget is read from the fleet plan when the app synthesizes: its task's GPU budget, every
    container's MPS share summed (what the telemetry daemon measures), so a budget changed in the task definition
    moves the dashboard's line, the alarm's threshold and its description with it.

    The dashboard is named ``<stack name>-<region>-<this construct's path in its stack>``: dashboards are account-wide,
    so one stack deployed to several regions, and several dashboards in one stack, each keep their own.

    :param cluster: the ECS cluster the services run in (the metrics' dimension).
    :param services: the name each service is shown under (its name in the plan, for most) -> the service: an ECS
        service, an aws-ecs-patterns service or its ``.service``, or a ``SharedGpuService``; it must be on a GPU
        capacity (the plan holds it), which the synth checks.
    :param alarm_ratio: the share of the budget at which the alarm fires, from 0 to 1 (0.9, at 90%, by default).
    :param alarm_topic: where alarms notify; without one, they notify no one (the dashboard still shows them).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.ICluster,
        services: Mapping[str, IConstruct],
        alarm_ratio: float = 0.9,
        alarm_topic: sns.ITopic | None = None,
    ) -> None:
        super().__init__(scope, id_)
        _check_inputs(self.node.path, cluster, services, alarm_ratio, alarm_topic)
        ecs_services = {name: self._ecs_service(name, given, cluster) for name, given in services.items()}
        plan = FleetPlan.of(self)
        self.node.add_validation(_PlannedBudgets(self, plan, services))
        stack = cdk.Stack.of(self)
        # Dashboards are account-wide, not per region (CloudFormation User Guide, AWS::CloudWatch::Dashboard: "All
        # dashboards in your account are global, not region-specific"): the name carries the region, so one stack
        # deployed to two regions keeps two dashboards instead of writing over one, and the construct's path in its
        # stack, so two dashboards of one stack (one holds at most MAX_SERVICES_PER_DASHBOARD services) stay two.
        within = self.node.path.removeprefix(f"{stack.node.path}/")
        # The path's part leaves room for the longest stack name and region, and the two hyphens.
        room = DASHBOARD_NAME.max_length - STACK_NAME_MAX_LENGTH - REGION_MAX_LENGTH - 2
        dashboard_name = f"{stack.stack_name}-{stack.region}-{DASHBOARD_NAME.fitted(within, unique=True, room=room)}"
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=dashboard_name)
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        for name, service in sorted(ecs_services.items()):
            budget = _PlannedBudget(plan, services[name])
            dims = {"Cluster": cluster.cluster_name, "Service": service.service_name}
            peak = _metric("GpuMemoryPeakMiB", dims, "Maximum", f"{name} peak")
            p99 = _metric("GpuMemoryP99MiB", dims, "Maximum", f"{name} p99")
            utilization = _metric("GpuUtilizationPercent", dims, "Average", f"{name} GPU utilization")
            group = {"Group": cdk.Fn.join("", ["service:", service.service_name])}
            stops = [_metric(m, group, "Sum", m, period=cdk.Duration.hours(1)) for m in STOP_METRICS]
            alarm = cloudwatch.Alarm(
                self,
                f"{name}-near-budget",
                metric=peak,
                threshold=cdk.Lazy.number(budget.share(alarm_ratio)),
                evaluation_periods=3,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=cdk.Lazy.string(
                    budget.text(
                        f"{name}: GPU memory peak at {int(alarm_ratio * 100)}% or more of its {{budget}} MiB budget "
                        "for 15 minutes; the next allocation past the budget fails (CUDA out of memory): raise the "
                        "budget (ecs-gpu-sharing evaluate suggests one)"
                    )
                ),
            )
            if alarm_topic is not None:
                alarm.add_alarm_action(cw_actions.SnsAction(alarm_topic))
            self.alarms[name] = alarm
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title=f"{name}: GPU memory (MiB) against its budget",
                    left=[peak, p99],
                    left_annotations=[
                        cloudwatch.HorizontalAnnotation(
                            value=cdk.Lazy.number(budget.share(1)),
                            label=cdk.Lazy.string(budget.text("budget {budget} MiB")),
                        )
                    ],
                    width=10,
                ),
                cloudwatch.GraphWidget(title=f"{name}: utilization of its GPUs (%)", left=[utilization], width=7),
                cloudwatch.GraphWidget(title=f"{name}: stopped tasks", left=stops, width=7),
            )
        healthy = _metric("MpsHealthy", {"Cluster": cluster.cluster_name}, "Minimum", "MPS control daemon up (1)")
        self.dashboard.add_widgets(cloudwatch.GraphWidget(title="MPS health, lowest host", left=[healthy], width=24))

    def _ecs_service(self, name: str, given: object, cluster: ecs.ICluster) -> ecs.BaseService:
        """The ECS service behind a handle, in ``cluster``, or a clear refusal naming what was given."""
        found = self._service_of(name, given)
        if isinstance(cluster, ecs.Cluster) and isinstance(found.cluster, ecs.Cluster) and found.cluster is not cluster:
            raise ServiceError(
                f"{self.node.path}: services[{name!r}] runs in cluster {found.cluster.node.path}, not "
                f"{cluster.node.path}: the dashboard's metrics are the cluster's; give cluster= that cluster, or a "
                "dashboard for each cluster"
            )
        return found

    def _service_of(self, name: str, given: object) -> ecs.BaseService:
        where = f"{self.node.path}: services[{name!r}]"
        if isinstance(given, tuple):
            raise ServiceError(
                f"{where} is a (service, budget) pair: the budget is read from the fleet plan (the task's MPS shares "
                "summed), so it cannot drift from the task definition; give the service alone"
            )
        if isinstance(given, ecs.TaskDefinition):
            raise ServiceError(
                f"{where} is a task definition: a dashboard graphs a service's metrics; give the service that runs "
                "it (an ECS service, an aws-ecs-patterns service or its .service, a SharedGpuService)"
            )
        if isinstance(given, ecs.BaseService):
            return given
        node = getattr(given, "node", None)
        child = node.try_find_child("Service") if node is not None else None
        if isinstance(child, ecs.BaseService):
            return child
        raise ServiceError(
            f"{where} must be a service (an ECS service, an aws-ecs-patterns service or its .service, a "
            f"SharedGpuService), got {kind_of(given)}"
        )


def _check_inputs(owner: str, cluster: Any, services: Any, alarm_ratio: Any, alarm_topic: Any) -> None:
    """Refuses, naming the option, what the dashboard cannot graph: a cluster or topic of another kind, a ratio
    outside (0, 1], no services, or more than a dashboard's widgets hold."""
    require_cluster(cluster, owner=owner, error=ServiceError)
    require_kind("alarm_topic", alarm_topic, "topic_arn", "aws_sns.ITopic", owner=owner, error=ServiceError)
    if isinstance(alarm_ratio, bool) or not isinstance(alarm_ratio, int | float) or not 0 < alarm_ratio <= 1:
        raise ServiceError(
            f"{owner}: alarm_ratio must be a number in (0, 1], got {alarm_ratio!r:.80}; give the share "
            "of a budget at which to alarm, such as 0.9"
        )
    if not isinstance(services, Mapping):
        raise ServiceError(
            f"{owner}: services must be a mapping of names to services, such as "
            f"{{'embedder': embedder_service}}, got {kind_of(services)} {services!r:.80}"
        )
    if not services:
        raise ServiceError(
            f"{owner}: services is empty; name the services to graph and alarm on, such as "
            "{'embedder': embedder_service}"
        )
    if len(services) > MAX_SERVICES_PER_DASHBOARD:
        raise ServiceError(
            f"{owner}: {len(services)} services need {3 * len(services) + 1} widgets, more than a "
            f"CloudWatch dashboard holds ({MAX_DASHBOARD_WIDGETS}); give each dashboard at most "
            f"{MAX_SERVICES_PER_DASHBOARD} services"
        )


@jsii.implements(IValidation)
class _PlannedBudgets:
    """A dashboard's services must be in the plan: their budgets are read from it."""

    def __init__(self, dashboard: GpuFleetDashboard, plan: FleetPlan, services: Mapping[str, IConstruct]) -> None:
        self._dashboard, self._plan, self._services = dashboard, plan, dict(services)

    def validate(self) -> list[str]:
        return [
            f"{self._dashboard.node.path}: services[{name!r}] ({given.node.path}) is not in the GPU fleet plan, so it "
            "has no GPU budget to graph or alarm on; put it on a GpuCapacity (its capacity provider strategy), or "
            "leave it out of the dashboard"
            for name, given in sorted(self._services.items())
            if self._plan.planned_task_gpu_budget(given) is None
        ]


class _PlannedBudget:
    """One service's task GPU budget from the sealed plan, as the ``Lazy`` producers a dashboard needs."""

    def __init__(self, plan: FleetPlan, service: IConstruct) -> None:
        self._plan, self._service = plan, service

    def mib(self) -> int:
        # CDK resolves tokens (looking for cross-stack references) before it validates: a service the plan does
        # not hold reads 0 here, and the dashboard's validation then fails the synth, naming it.
        return self._plan.planned_task_gpu_budget(self._service) or 0

    def share(self, ratio: float) -> cdk.IStableNumberProducer:
        return _Number(lambda: int(self.mib() * ratio))

    def text(self, template: str) -> cdk.IStableStringProducer:
        return _String(lambda: template.format(budget=self.mib()))


# One class per interface: jsii tells a producer's kind by the interface its class declares.
@jsii.implements(cdk.IStableNumberProducer)
class _Number:
    def __init__(self, produce: Callable[[], int]) -> None:
        self._produce = produce

    def produce(self) -> int:
        return self._produce()


@jsii.implements(cdk.IStableStringProducer)
class _String:
    def __init__(self, produce: Callable[[], str]) -> None:
        self._produce = produce

    def produce(self) -> str:
        return self._produce()


def _metric(
    name: str,
    dimensions: Mapping[str, str],
    statistic: str,
    label: str,
    period: cdk.Duration | None = None,
) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=name,
        dimensions_map=dict(dimensions),
        statistic=statistic,
        label=label,
        period=period or cdk.Duration.seconds(METRIC_PERIOD_SECONDS),
    )
