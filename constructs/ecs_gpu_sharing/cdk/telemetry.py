"""GPU telemetry for a fleet: the daemon on every GPU host, and a dashboard with alarms per service.

``GpuTelemetry`` runs the telemetry daemon (``operations/telemetry``; its image is built from the Dockerfile
there as a CDK asset) as an ECS daemon service on every host that advertises GPU sharing. What it needs of the
host, and why:

- ``NVIDIA_VISIBLE_DEVICES=all`` with ``NVIDIA_DRIVER_CAPABILITIES=utility``: the NVIDIA container runtime then
  mounts the GPUs' device files and NVML, not CUDA; the daemon opens no CUDA context, so it is no MPS client and
  takes no GPU memory. It reserves no GPU (ECS would keep the GPU from MPS tasks).
- the host's ``/proc``, read-only: NVML names processes by host PID, and ``/proc/<pid>/cgroup`` names the
  container; ``/run/mps-ecs``, read-only: the MPS control daemon's pipe, for its health.
- ``ecs:ListTasks``, ``ecs:DescribeTasks`` and ``ecs:DescribeContainerInstances`` on its own cluster: which task,
  container and service a container id belongs to.

It runs as ``nobody`` with a read-only root filesystem, in bridge mode (no host network, so no instance
credentials), 128 CPU units and 192 MiB (the fleet plan takes that from every host).

``GpuTelemetry`` also records the cluster's stopped tasks: an ECS task state change rule writes them to a log
group (with its own resource policy; CloudWatch Logs allows 10 such policies per region), and metric filters count
them by task group (``service:<name>``): ``OomStops`` (a container killed for host memory), ``MpsStops`` (the MPS
control daemon not responding), ``CrashStops`` (an essential container exited, as a process does on a CUDA
out-of-memory error it does not handle).

``GpuFleetDashboard`` shows per service its GPU budget against the measured peak and p99, the utilization of the
GPUs it ran on, and those stopped tasks; an alarm fires when a service's peak nears its budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import aws_cdk as cdk
import jsii
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk.interfaces.aws_events import IRuleRef
from constructs import Construct

from ..core.errors import ServiceError
from ..core.mps import MPS_HOSTS_EXPRESSION
from ..core.telemetry import DAEMON_CPU_UNITS, DAEMON_MEMORY_MIB
from ..operations.telemetry import sampling

DAEMON_IMAGE_DIR = Path(__file__).resolve().parent.parent / "operations" / "telemetry"
NAMESPACE = sampling.NAMESPACE
MAX_DASHBOARD_WIDGETS = 500  # CloudWatch's limit per dashboard
MAX_SERVICES_PER_DASHBOARD = (MAX_DASHBOARD_WIDGETS - 1) // 3  # three widgets each, and the MPS health row
STOP_METRICS = {
    # metric name -> CloudWatch Logs filter pattern over the ECS "Task State Change" event of a stopped task
    "OomStops": " || ".join(
        ['($.detail.stoppedReason = "*OutOfMemory*")']
        + [f'($.detail.containers[{i}].reason = "*OutOfMemory*")' for i in range(4)]
    ),
    "MpsStops": '($.detail.stoppedReason = "*MPS*")',
    "CrashStops": '($.detail.stopCode = "EssentialContainerExited")',
}


class GpuTelemetry(Construct):
    """The telemetry daemon on every GPU-sharing host of ``cluster``.

    :param image: the daemon's image; built from the library's Dockerfile (a CDK asset) by default.
    :param sample_seconds: how often it samples NVML; :param publish_seconds: how often it publishes a window.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.ICluster,
        image: ecs.ContainerImage | None = None,
        sample_seconds: int = 5,
        publish_seconds: int = 60,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
    ) -> None:
        super().__init__(scope, id_)
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention)
        task = ecs.Ec2TaskDefinition(self, "Task", network_mode=ecs.NetworkMode.BRIDGE)
        task.add_volume(name="host-proc", host=ecs.Host(source_path="/proc"))
        task.add_volume(name="mps-pipes", host=ecs.Host(source_path="/run/mps-ecs"))
        container = task.add_container(
            "telemetry",
            image=image or ecs.ContainerImage.from_asset(str(DAEMON_IMAGE_DIR)),
            cpu=DAEMON_CPU_UNITS,
            memory_limit_mib=DAEMON_MEMORY_MIB,
            user="65534:65534",
            readonly_root_filesystem=True,
            environment={
                # NVML only (the utility capability), on every GPU, without reserving one: see the module's notes.
                "NVIDIA_VISIBLE_DEVICES": "all",
                "NVIDIA_DRIVER_CAPABILITIES": "utility",
                "CLUSTER": cluster.cluster_name,
                "SAMPLE_SECONDS": str(sample_seconds),
                "PUBLISH_SECONDS": str(publish_seconds),
                "HOST_PROC": "/host/proc",
                "MPS_PIPE_DIR": "/host/run/mps-ecs",
            },
            logging=ecs.LogDrivers.aws_logs(stream_prefix="gpu-telemetry", log_group=self.log_group),
        )
        container.add_mount_points(
            ecs.MountPoint(source_volume="host-proc", container_path="/host/proc", read_only=True),
            ecs.MountPoint(source_volume="mps-pipes", container_path="/host/run/mps-ecs", read_only=True),
        )
        stack = cdk.Stack.of(self)
        cluster_name = cluster.cluster_name
        task.add_to_task_role_policy(
            iam.PolicyStatement(
                actions=["ecs:ListTasks"],
                resources=[
                    stack.format_arn(service="ecs", resource="container-instance", resource_name=f"{cluster_name}/*")
                ],
            )
        )
        task.add_to_task_role_policy(
            iam.PolicyStatement(
                actions=["ecs:DescribeTasks"],
                resources=[stack.format_arn(service="ecs", resource="task", resource_name=f"{cluster_name}/*")],
            )
        )
        task.add_to_task_role_policy(
            iam.PolicyStatement(
                actions=["ecs:DescribeContainerInstances"],
                resources=[
                    stack.format_arn(service="ecs", resource="container-instance", resource_name=f"{cluster_name}/*")
                ],
            )
        )
        self.service = ecs.Ec2Service(
            self,
            "Service",
            cluster=cluster,
            task_definition=task,
            daemon=True,
            circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
            placement_constraints=[ecs.PlacementConstraint.member_of(MPS_HOSTS_EXPRESSION)],
            min_healthy_percent=0,  # a daemon replaces its one task per host in place
        )
        self.task_definition = task
        reason = "the daemon reads the tasks of its own cluster only: every task and container instance of it"
        policy = task.task_role.node.try_find_child("DefaultPolicy")
        prefix = ":".join(_nag(stack, v) for v in ("arn", stack.partition, "ecs", stack.region, stack.account))
        for finding in (
            f"Resource::{prefix}:task/<{_logical(cluster)}>/*",
            f"Resource::{prefix}:container-instance/<{_logical(cluster)}>/*",
        ):
            cdk.Validations.of(policy or task.task_role).acknowledge(
                cdk.Acknowledgment(id=f"AwsSolutions::AwsSolutions-IAM5[{finding}]", reason=reason)
            )
        # Stopped tasks: EventBridge -> a log group (names under /aws/events/ are EventBridge's) -> metric filters.
        self.stopped_tasks = logs.LogGroup(
            self,
            "StoppedTasks",
            log_group_name=f"/aws/events/{stack.stack_name}-stopped-tasks",
            retention=log_retention,
        )
        logs.CfnResourcePolicy(
            self,
            "StoppedTasksPolicy",
            policy_name=f"{stack.stack_name}-stopped-tasks",
            policy_document=stack.to_json_string(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": ["events.amazonaws.com", "delivery.logs.amazonaws.com"]},
                            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                            "Resource": self.stopped_tasks.log_group_arn,
                        }
                    ],
                }
            ),
        )
        events.Rule(
            self,
            "Stopped",
            event_pattern=events.EventPattern(
                source=["aws.ecs"],
                detail_type=["ECS Task State Change"],
                detail={"lastStatus": ["STOPPED"], "clusterArn": [cluster.cluster_arn]},
            ),
            targets=[_LogGroupTarget(self.stopped_tasks)],
        )
        for metric, pattern in STOP_METRICS.items():
            logs.MetricFilter(
                self,
                metric,
                log_group=self.stopped_tasks,
                metric_namespace=NAMESPACE,
                metric_name=metric,
                filter_pattern=logs.FilterPattern.literal("{ " + pattern + " }"),
                metric_value="1",
                dimensions={"Group": "$.detail.group"},
                unit=cloudwatch.Unit.COUNT,
            )
        execution = task.execution_role.node.try_find_child("DefaultPolicy") if task.execution_role else None
        if execution is not None:
            cdk.Validations.of(execution).acknowledge(
                cdk.Acknowledgment(
                    id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                    reason="ecr:GetAuthorizationToken takes no resource; pulls are limited to the asset repository",
                )
            )
        cdk.Validations.of(task.node.default_child).acknowledge(  # type: ignore[arg-type]
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-ECS2",
                reason="the daemon's environment holds its settings (cluster name, intervals, NVML visibility), "
                "no secrets",
            )
        )


def _nag(stack: cdk.Stack, value: str) -> str:
    """How cdk-nag writes a value in a finding id: a literal as it is, a pseudo parameter as <AWS::Name>."""
    resolved = stack.resolve(value)
    if isinstance(resolved, dict) and "Ref" in resolved:
        return f"<{resolved['Ref']}>"
    return str(resolved)


def _logical(cluster: ecs.ICluster) -> str:
    """How cdk-nag writes the cluster's name in a finding id: its CloudFormation logical id."""
    child = cluster.node.default_child
    return cdk.Stack.of(cluster).get_logical_id(child) if isinstance(child, cdk.CfnElement) else cluster.node.id


@jsii.implements(events.IRuleTarget)
class _LogGroupTarget:
    """An EventBridge target writing to a log group whose resource policy is declared beside it (aws-events-
    targets' CloudWatchLogGroup writes that policy through a Lambda-backed custom resource)."""

    def __init__(self, group: logs.ILogGroup) -> None:
        self._group = group

    def bind(self, rule: IRuleRef, id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self._group.log_group_arn)


class GpuFleetDashboard(Construct):
    """A CloudWatch dashboard of the fleet's GPU services, and an alarm per service when its peak nears its budget.

    :param services: service name in the plan -> (the ECS service, its task's GPU budget in MiB).
    :param alarm_ratio: the share of the budget at which the alarm fires (0.9: at 90%).
    :param alarm_topic: where alarms notify, if anywhere.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.ICluster,
        services: Mapping[str, tuple[ecs.BaseService, int]],
        alarm_ratio: float = 0.9,
        alarm_topic: sns.ITopic | None = None,
    ) -> None:
        super().__init__(scope, id_)
        if not 0 < alarm_ratio <= 1:
            raise ServiceError(
                f"{self.node.path}: alarm_ratio must be in (0, 1], got {alarm_ratio}; give the share of a budget at "
                "which to alarm, such as 0.9"
            )
        if len(services) > MAX_SERVICES_PER_DASHBOARD:
            raise ServiceError(
                f"{self.node.path}: {len(services)} services need {3 * len(services) + 1} widgets, more than a "
                f"CloudWatch dashboard holds ({MAX_DASHBOARD_WIDGETS}); give each dashboard at most "
                f"{MAX_SERVICES_PER_DASHBOARD} services"
            )
        stack = cdk.Stack.of(self)
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"{stack.stack_name}-gpu")
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        for name, (service, budget) in sorted(services.items()):
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
                threshold=int(budget * alarm_ratio),
                evaluation_periods=3,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=(
                    f"{name}: GPU memory peak at {int(alarm_ratio * 100)}% or more of its {budget} MiB budget for "
                    "15 minutes; the next allocation past the budget fails (CUDA out of memory): raise the budget "
                    "(ecs-gpu-sharing evaluate suggests one)"
                ),
            )
            if alarm_topic is not None:
                alarm.add_alarm_action(cw_actions.SnsAction(alarm_topic))
            self.alarms[name] = alarm
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title=f"{name}: GPU memory (MiB) against its budget",
                    left=[peak, p99],
                    left_annotations=[cloudwatch.HorizontalAnnotation(value=budget, label=f"budget {budget} MiB")],
                    width=10,
                ),
                cloudwatch.GraphWidget(title=f"{name}: utilization of its GPUs (%)", left=[utilization], width=7),
                cloudwatch.GraphWidget(title=f"{name}: stopped tasks", left=stops, width=7),
            )
        healthy = _metric("MpsHealthy", {"Cluster": cluster.cluster_name}, "Minimum", "MPS control daemon up (1)")
        self.dashboard.add_widgets(cloudwatch.GraphWidget(title="MPS health, lowest host", left=[healthy], width=24))


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
        period=period or cdk.Duration.minutes(5),
    )
