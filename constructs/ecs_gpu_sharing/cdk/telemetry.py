"""GPU telemetry for a fleet: the daemon on every GPU host, and the cluster's stopped tasks counted.

``GpuTelemetry`` runs the telemetry daemon (``operations/telemetry``; its image is built from the Dockerfile
there as a CDK asset) as an ECS daemon service on every host that advertises GPU sharing. How it reaches NVML,
and why:

- The ECS agent gives a container the ``nvidia`` runtime only when its task asks for GPUs
  (amazon-ecs-agent ``agent/api/task/task.go``, ``overrideContainerRuntime``: ``task.isGPUEnabled() &&
  task.shouldRequireNvidiaRuntime(container)``), and the AL2023 GPU AMI registers ``nvidia`` as an extra Docker
  runtime, not the default. A daemon that asks for no GPU therefore runs under runc: ``NVIDIA_VISIBLE_DEVICES``
  does nothing there and NVML is absent. Asking for a GPU would reserve one, which MPS tasks then cannot use.
- So the daemon gets exactly what NVML needs, by routes the agent supports for any task: the host's
  ``libnvidia-ml.so.1`` as a read-only bind mount (a host volume), and the device files ``/dev/nvidiactl`` and
  ``/dev/nvidia<N>`` (``linuxParameters.devices``, which the agent passes to Docker as devices). NVML opens them
  read-write for its ioctls, so the device cgroup allows read and write, not mknod. Each host must have every
  device it names, so there is one daemon service per GPU count, placed by ``ecs.instance-type`` (a built-in
  attribute) on the instance types with that count. NVML opens no CUDA context: the daemon is no MPS client and
  holds no GPU memory.
- the host's ``/proc``, read-only: NVML names processes by host PID, ``/proc/<pid>/cgroup`` names the container,
  and ``/proc/<pid>/comm`` tells whether the MPS control daemon runs. The MPS pipe folder is not mounted: a
  read-only bind mount does not stop a write into its control FIFO.
- ``ecs:ListTasks``, ``ecs:DescribeTasks`` and ``ecs:DescribeContainerInstances`` on its own cluster: which task,
  container and service a container id belongs to; ``logs:CreateLogStream`` and ``logs:PutLogEvents`` on the
  cluster's evidence log group only (``core.telemetry.evidence_log_group``), where it writes its figures.

It runs as ``nobody`` with a read-only root filesystem, in bridge mode (no host network, so no instance
credentials: the hosts require IMDSv2 with a hop limit of 1), 128 CPU units and 192 MiB (the fleet plan takes
that from every host).

``GpuTelemetry`` also records the cluster's stopped tasks: an ECS task state change rule writes them to a log
group whose resource policy admits only that rule (``aws:SourceArn``; CloudWatch Logs allows 10 such policies per
region), and metric filters count them by task group (``service:<name>``) for the dashboard: ``OomStops`` (a
container killed for host memory), ``MpsStops`` (the MPS control daemon not responding), ``CrashStops`` (an
essential container exited, as a process does on a CUDA out-of-memory error it does not handle).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

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

from ..core import catalog
from ..core.container_guards import GPU_DEVICE_MAPPED, HOST_PATH
from ..core.errors import ServiceError
from ..core.escalation import TASK_ROLE_ESCALATION
from ..core.mps import MPS_HOSTS_EXPRESSION, require_int
from ..core.planner import EC2
from ..core.telemetry import (
    DAEMON_CPU_UNITS,
    DAEMON_MEMORY_MIB,
    DAEMON_NAME,
    METRIC_NAMESPACE,
    METRIC_PERIOD_SECONDS,
    NVML_LIBRARY,
    NVML_MOUNT_DIR,
    evidence_log_group,
    gpu_device_paths,
    stop_metric_filters,
    stopped_tasks_log_group,
)
from .fleet_plan import FleetPlan
from .refusals import require_cluster, require_kind

if TYPE_CHECKING:
    from .capacity import GpuCapacity

DAEMON_IMAGE_DIR = Path(__file__).resolve().parent.parent / "operations" / "telemetry"
NAMESPACE = METRIC_NAMESPACE
# metric name -> CloudWatch Logs filter pattern over the ECS "Task State Change" event of a stopped task, from the
# rules evaluate reads the same events with (core.telemetry.STOP_RULES)
STOP_METRICS = stop_metric_filters()


def gpu_count_groups(capacities: Sequence[GpuCapacity], owner: str) -> dict[int, tuple[str, ...]]:
    """The capacities' instance types by their GPU count (each type has one count, so each host one daemon)."""
    if hasattr(capacities, "node"):  # one construct, not a list of them
        raise ServiceError(
            f"{owner}: capacities must be a list of GpuCapacity constructs, got one; pass "
            f"capacities=[{capacities.node.id}]"
        )
    if not isinstance(capacities, (list, tuple)) or not capacities:
        raise ServiceError(
            f"{owner}: capacities must name the GpuCapacity constructs whose hosts the daemon runs on, got "
            f"{capacities!r}; pass capacities=[my_capacity]"
        )
    groups: dict[int, set[str]] = {}
    for capacity in capacities:
        facts = getattr(capacity, "facts", None)
        if facts is None or getattr(capacity, "kind", None) != EC2:
            raise ServiceError(
                f"{owner}: {capacity!r} is not a GpuCapacity; the daemon runs on EC2 GPU hosts only (daemon "
                "services do not run on Managed Instances)"
            )
        for name in facts.instance_types:
            groups.setdefault(catalog.lookup(name).gpus, set()).add(name)
    return {count: tuple(sorted(types)) for count, types in sorted(groups.items())}


# What the daemon may do that a model may not (FleetPlan.allow), each with the reason the plan files list.
DAEMON_ALLOWANCES = (
    (
        GPU_DEVICE_MAPPED,
        "the telemetry daemon opens the GPU device files for NVML only (read-only figures, no CUDA context, no GPU "
        "memory); it runs the library's own image",
    ),
    (
        HOST_PATH,
        f"the telemetry daemon reads the host's /proc and {NVML_LIBRARY}, both mounted read-only: NVML names processes "
        "by host PID, and the library must match the host's driver",
    ),
    (
        TASK_ROLE_ESCALATION,
        "the telemetry daemon is the one writer of the evidence log group that evaluate believes: its task role may "
        "write there, and no other may",
    ),
)


class GpuTelemetry(Construct):
    """The telemetry daemon on every GPU-sharing host of the given capacities.

    :param cluster: the ECS cluster the capacities belong to (another is refused: the daemon would run on none of
        their hosts).
    :param capacities: the ``GpuCapacity`` constructs whose hosts it samples; one daemon service per GPU count
        among their instance types.
    :param image: the daemon's image; built from the library's Dockerfile (a CDK asset) by default.
    :param sample_seconds: how often, in seconds, it samples NVML; 5 by default, at most ``publish_seconds``.
    :param publish_seconds: how often, in seconds, it publishes a window of samples; 60 by default, at most 300
        (the period of the dashboard's budget metrics and alarms, each of which then has a window).
    :param log_retention: how long the evidence and stopped-task log groups keep records; one month by default.
    :param alarm_topic: where the alarm on undelivered stopped-task events (``stopped_tasks_delivery_alarm``)
        notifies; without one, it notifies no one (the alarm still shows its state).
    """

    DEFAULT_ID = DAEMON_NAME
    """The id to give it: the fleet file's plan counts the daemon's share of each host under this name."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.ICluster,
        capacities: Sequence[GpuCapacity],
        image: ecs.ContainerImage | None = None,
        sample_seconds: int = 5,
        publish_seconds: int = 60,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        alarm_topic: sns.ITopic | None = None,
    ) -> None:
        owner = f"{scope.node.path}/{id_}"
        require_cluster(cluster, owner=owner, error=ServiceError)
        require_kind("image", image, ecs.ContainerImage, "aws_ecs.ContainerImage", owner=owner, error=ServiceError)
        require_kind(
            "log_retention",
            log_retention,
            logs.RetentionDays,
            "aws_logs.RetentionDays",
            owner=owner,
            error=ServiceError,
        )
        require_kind("alarm_topic", alarm_topic, "topic_arn", "aws_sns.ITopic", owner=owner, error=ServiceError)
        groups = gpu_count_groups(capacities, owner)
        for capacity in capacities:
            if isinstance(cluster, ecs.Cluster) and capacity.cluster is not cluster:
                raise ServiceError(
                    f"{owner}: capacity {capacity.plan_name} is in cluster {capacity.cluster.node.path}, not "
                    f"{cluster.node.path}: a daemon service runs on its own cluster's hosts only; give cluster= that "
                    "cluster, or a GpuTelemetry for each cluster"
                )
        publish_seconds = require_int("publish_seconds", publish_seconds, low=1, owner=owner, error=ServiceError)
        sample_seconds = require_int("sample_seconds", sample_seconds, low=1, owner=owner, error=ServiceError)
        if publish_seconds > METRIC_PERIOD_SECONDS:
            raise ServiceError(
                f"{owner}: publish_seconds {publish_seconds} is more than {METRIC_PERIOD_SECONDS}, the period of the "
                "dashboard's budget metrics and alarms, so some periods would get no window; publish at most every "
                f"{METRIC_PERIOD_SECONDS} s"
            )
        if sample_seconds > publish_seconds:
            raise ServiceError(
                f"{owner}: sample_seconds {sample_seconds} is more than publish_seconds {publish_seconds}, so a "
                "published window could hold no sample; sample at least as often as it publishes"
            )
        super().__init__(scope, id_)
        cluster_name = cluster.cluster_name
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention)
        self.evidence = logs.LogGroup(
            self, "Evidence", log_group_name=evidence_log_group(cluster_name), retention=log_retention
        )
        image = image or ecs.ContainerImage.from_asset(str(DAEMON_IMAGE_DIR))
        self.task_definitions: dict[int, ecs.Ec2TaskDefinition] = {}
        self.services: dict[int, ecs.Ec2Service] = {}
        plan = FleetPlan.of(self)
        for gpus, instance_types in groups.items():
            task, service = self._daemon(
                plan, id_, gpus, instance_types, image, cluster, sample_seconds, publish_seconds
            )
            self.task_definitions[gpus] = task
            self.services[gpus] = service
        self._count_stopped_tasks(cluster, log_retention, alarm_topic)

    def _daemon(
        self,
        plan: FleetPlan,
        id_: str,
        gpus: int,
        instance_types: Sequence[str],
        image: ecs.ContainerImage,
        cluster: ecs.ICluster,
        sample_seconds: int,
        publish_seconds: int,
    ) -> tuple[ecs.Ec2TaskDefinition, ecs.Ec2Service]:
        """The daemon service of the hosts with ``gpus`` GPUs (placed by instance type), and its task definition."""
        stack = cdk.Stack.of(self)
        cluster_name = cluster.cluster_name
        group = Construct(self, f"Gpus{gpus}")
        task = ecs.Ec2TaskDefinition(group, "Task", network_mode=ecs.NetworkMode.BRIDGE)
        task.add_volume(name="host-proc", host=ecs.Host(source_path="/proc"))
        task.add_volume(name="nvml", host=ecs.Host(source_path=NVML_LIBRARY))
        linux = ecs.LinuxParameters(group, "Linux")
        linux.add_devices(
            *(
                ecs.Device(
                    host_path=path,
                    container_path=path,
                    permissions=[ecs.DevicePermission.READ, ecs.DevicePermission.WRITE],
                )
                for path in gpu_device_paths(gpus)
            )
        )
        container = task.add_container(
            "telemetry",
            image=image,
            cpu=DAEMON_CPU_UNITS,
            memory_limit_mib=DAEMON_MEMORY_MIB,
            user="65534:65534",
            readonly_root_filesystem=True,
            linux_parameters=linux,
            environment={
                "CLUSTER": cluster_name,
                "METRIC_NAMESPACE": NAMESPACE,
                "EVIDENCE_LOG_GROUP": self.evidence.log_group_name,
                "SAMPLE_SECONDS": str(sample_seconds),
                "PUBLISH_SECONDS": str(publish_seconds),
                "HOST_PROC": "/host/proc",
                "LD_LIBRARY_PATH": NVML_MOUNT_DIR,
            },
            logging=ecs.LogDrivers.aws_logs(stream_prefix="gpu-telemetry", log_group=self.log_group),
        )
        container.add_mount_points(
            ecs.MountPoint(source_volume="host-proc", container_path="/host/proc", read_only=True),
            ecs.MountPoint(source_volume="nvml", container_path=f"{NVML_MOUNT_DIR}/libnvidia-ml.so.1", read_only=True),
        )
        self._grant(task, stack, cluster_name)
        service = ecs.Ec2Service(
            group,
            "Service",
            cluster=cluster,
            task_definition=task,
            daemon=True,
            circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
            placement_constraints=[
                ecs.PlacementConstraint.member_of(
                    f"{MPS_HOSTS_EXPRESSION} and attribute:ecs.instance-type in [{', '.join(instance_types)}]"
                )
            ],
            min_healthy_percent=0,  # a daemon replaces its one task per host in place
        )
        plan.name_service(group, id_)  # every group is the one daemon of its hosts, under this construct's id
        for rule, reason in DAEMON_ALLOWANCES:
            plan.allow(task, rule, reason)
        self._acknowledge(task, stack, cluster)
        return task, service

    def _count_stopped_tasks(
        self, cluster: ecs.ICluster, log_retention: logs.RetentionDays, alarm_topic: sns.ITopic | None
    ) -> None:
        """Stopped tasks counted by cause, per task group: EventBridge's ECS events into a log group, metric filters
        over it, and an alarm when EventBridge cannot deliver."""
        stack = cdk.Stack.of(self)
        cluster_name = cluster.cluster_name
        # Stopped tasks: EventBridge -> a log group (names under /aws/events/ are EventBridge's) -> metric filters.
        self.stopped_tasks = logs.LogGroup(
            self,
            "StoppedTasks",
            log_group_name=stopped_tasks_log_group(cluster_name),
            retention=log_retention,
        )
        rule = events.Rule(
            self,
            "Stopped",
            event_pattern=events.EventPattern(
                source=["aws.ecs"],
                detail_type=["ECS Task State Change"],
                detail={"lastStatus": ["STOPPED"], "clusterArn": [cluster.cluster_arn]},
            ),
            targets=[_LogGroupTarget(self.stopped_tasks)],
        )
        # EventBridge drops what it cannot deliver without a word (a log group policy gone, say): then the stopped-task
        # counts read zero, as on a healthy fleet. Its own metric (AWS/Events FailedInvocations, per rule; Amazon
        # EventBridge User Guide, "Monitoring Amazon EventBridge") says so.
        self.stopped_tasks_delivery_alarm = cloudwatch.Alarm(
            self,
            "StoppedTasksDeliveryFails",
            metric=cloudwatch.Metric(
                namespace="AWS/Events",
                metric_name="FailedInvocations",
                dimensions_map={"RuleName": rule.rule_name},
                statistic="Sum",
                period=cdk.Duration.minutes(5),
            ),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=(
                "EventBridge could not deliver ECS stopped-task events to the stopped-tasks log group: the GPU "
                "dashboard's stop counts (OOM, MPS failures) are incomplete until it is fixed"
            ),
        )
        if alarm_topic is not None:
            self.stopped_tasks_delivery_alarm.add_alarm_action(cw_actions.SnsAction(alarm_topic))
        logs.CfnResourcePolicy(
            self,
            "StoppedTasksPolicy",
            policy_name=f"{stack.stack_name}-stopped-tasks",
            policy_document=stack.to_json_string(
                {
                    "Version": "2012-10-17",
                    # Only this rule may write here; the source condition goes on the writes alone: EventBridge's
                    # CreateLogStream call carries no aws:SourceArn, so a condition there refuses every stream and
                    # every delivery fails (aws-samples/serverless-patterns, eventbridge-cloudwatch, pull request 618).
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "events.amazonaws.com"},
                            "Action": ["logs:CreateLogStream"],
                            "Resource": self.stopped_tasks.log_group_arn,
                        },
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "events.amazonaws.com"},
                            "Action": ["logs:PutLogEvents"],
                            "Resource": self.stopped_tasks.log_group_arn,
                            "Condition": {"ArnEquals": {"aws:SourceArn": rule.rule_arn}},
                        },
                    ],
                }
            ),
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

    @property
    def task_definition(self) -> ecs.Ec2TaskDefinition:
        """The daemon's task definition for the smallest GPU count (the only one where all hosts have one)."""
        return self.task_definitions[min(self.task_definitions)]

    @property
    def service(self) -> ecs.Ec2Service:
        """The daemon service for the smallest GPU count."""
        return self.services[min(self.services)]

    def _grant(self, task: ecs.Ec2TaskDefinition, stack: cdk.Stack, cluster_name: str) -> None:
        instances = stack.format_arn(service="ecs", resource="container-instance", resource_name=f"{cluster_name}/*")
        tasks = stack.format_arn(service="ecs", resource="task", resource_name=f"{cluster_name}/*")
        task.add_to_task_role_policy(iam.PolicyStatement(actions=["ecs:ListTasks"], resources=[instances]))
        task.add_to_task_role_policy(iam.PolicyStatement(actions=["ecs:DescribeTasks"], resources=[tasks]))
        task.add_to_task_role_policy(
            iam.PolicyStatement(actions=["ecs:DescribeContainerInstances"], resources=[instances])
        )
        task.add_to_task_role_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.evidence.log_group_arn, f"{self.evidence.log_group_arn}:log-stream:*"],
            )
        )

    def _acknowledge(self, task: ecs.Ec2TaskDefinition, stack: cdk.Stack, cluster: ecs.ICluster) -> None:
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
        evidence = stack.get_logical_id(self.evidence.node.default_child)  # type: ignore[arg-type]
        cdk.Validations.of(policy or task.task_role).acknowledge(
            cdk.Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{evidence}.Arn>:log-stream:*]",
                reason="the daemon names its own log stream (host and task) in its evidence log group, and no other",
            )
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
                reason="the daemon's environment holds its settings (cluster, log group, intervals, NVML's path), "
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
