"""The fleet's services, sharded over stacks so none nears CloudFormation's 500-resource limit."""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from ecs_gpu_sharing import (
    GpuCapacity,
    GpuManagedInstancesCapacity,
    SharedGpuManagedInstancesTaskDefinition,
    SharedGpuService,
    SharedGpuTaskDefinition,
)
from ecs_gpu_sharing.core.fleet import CONTAINER_NAME, SERVICE_TAG, ServiceSpec, ecr_image

LOG_RETENTION = logs.RetentionDays.ONE_MONTH


class ServicesStack(Stack):
    """One shard of the fleet's services: per service a task definition, a log group and the service."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.Cluster,
        capacities: dict[str, GpuCapacity | GpuManagedInstancesCapacity],
        services: Sequence[ServiceSpec],
        **kwargs: object,
    ) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        self.services: dict[str, ecs.BaseService] = {}
        for spec in services:
            # One scope per service: its constructs' ids cannot collide with another service's ("s", "s-logs").
            scope = Construct(self, spec.name)
            group = logs.LogGroup(scope, "Logs", retention=LOG_RETENTION)
            capacity = capacities[spec.capacity]
            managed = isinstance(capacity, GpuManagedInstancesCapacity)
            task: SharedGpuTaskDefinition | SharedGpuManagedInstancesTaskDefinition
            if managed:
                # Managed Instances tasks run in awsvpc mode, with task-level CPU and memory.
                task = SharedGpuManagedInstancesTaskDefinition(
                    scope,
                    "Task",
                    network_mode=ecs.NetworkMode.AWS_VPC,
                    cpu=str(spec.cpu_units),
                    memory_mib=str(spec.memory_mib),
                )
            else:
                task = SharedGpuTaskDefinition(scope, "Task")
            task.add_container(
                CONTAINER_NAME,
                image=_image(scope, spec.image, task),
                cpu=spec.cpu_units,
                memory_limit_mib=spec.memory_mib,
                gpu=spec.share,
                environment=dict(spec.environment) or None,
                port_mappings=[ecs.PortMapping(container_port=spec.port)] if spec.port else None,
                logging=ecs.LogDrivers.aws_logs(stream_prefix=spec.name, log_group=group),
                command=list(spec.command) or None,
                health_check=ecs.HealthCheck(command=list(spec.health_check)) if spec.health_check else None,
                linux_parameters=(
                    ecs.LinuxParameters(scope, "Linux", shared_memory_size=spec.shm_size_mib)
                    if spec.shm_size_mib
                    else None
                ),
                stop_timeout=cdk.Duration.seconds(spec.stop_timeout_seconds) if spec.stop_timeout_seconds else None,
                secrets={name: _secret(scope, name, ref) for name, ref in spec.secrets.items()} or None,
            )
            if spec.model_bucket:
                # Model weights: the task role may read that bucket, nothing else.
                s3.Bucket.from_bucket_name(scope, "ModelBucket", spec.model_bucket).grant_read(task.task_role)
                policy = task.task_role.node.try_find_child("DefaultPolicy")
                if policy is not None:
                    for finding in ("Action::s3:GetBucket*", "Action::s3:GetObject*", "Action::s3:List*"):
                        cdk.Validations.of(policy).acknowledge(
                            cdk.Acknowledgment(
                                id=f"AwsSolutions::AwsSolutions-IAM5[{finding}]",
                                reason="read access to the service's model bucket, as grant_read writes it",
                            )
                        )
                    cdk.Validations.of(policy).acknowledge(
                        cdk.Acknowledgment(
                            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{spec.model_bucket}/*]",
                            reason="the objects of the service's own model bucket",
                        )
                    )
            if spec.environment:
                cdk.Validations.of(task.node.default_child).acknowledge(  # type: ignore[arg-type]
                    cdk.Acknowledgment(
                        id="AwsSolutions::AwsSolutions-ECS2",
                        reason="the fleet file's environment holds non-secret model settings (such as MODEL_ID); "
                        "it has no way to declare secrets",
                    )
                )
            service: ecs.BaseService
            if isinstance(capacity, GpuManagedInstancesCapacity):
                # aws-ecs runs services on Managed Instances as FargateService with the provider's strategy.
                service = ecs.FargateService(
                    scope,
                    "Service",
                    cluster=cluster,
                    task_definition=task,
                    desired_count=spec.desired_count,
                    capacity_provider_strategies=capacity.capacity_provider_strategies(),
                    circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
                    min_healthy_percent=100,
                    max_healthy_percent=200,
                )
                service.node.add_dependency(cluster)
            else:
                service = SharedGpuService(
                    scope,
                    "Service",
                    name=spec.name,
                    cluster=cluster,
                    capacity=capacity,
                    task_definition=task,
                    desired_count=spec.desired_count,
                ).service
            if spec.max_tasks is not None:
                # The fleet plan reads this maximum from the service and sizes the capacity for it.
                scaling = service.auto_scale_task_count(min_capacity=spec.desired_count, max_capacity=spec.max_tasks)
                if spec.scale_on_cpu_percent is not None:
                    scaling.scale_on_cpu_utilization("Cpu", target_utilization_percent=spec.scale_on_cpu_percent)
            # ECS tags each service so `ecs-gpu-sharing cluster status --fleet` can find it.
            cdk.Tags.of(service).add(SERVICE_TAG, spec.name)
            self.services[spec.name] = service
            CfnOutput(scope, "ServiceName", value=service.service_name)


def _secret(scope: Construct, name: str, ref: str) -> ecs.Secret:
    """A secret from SSM Parameter Store or Secrets Manager; aws-ecs grants the execution role reading exactly it."""
    kind, _, key = ref.partition(":")
    if kind == "ssm":
        parameter = ssm.StringParameter.from_secure_string_parameter_attributes(
            scope, f"Secret{name}", parameter_name=key
        )
        return ecs.Secret.from_ssm_parameter(parameter)
    return ecs.Secret.from_secrets_manager(secretsmanager.Secret.from_secret_name_v2(scope, f"Secret{name}", key))


def _image(scope: Construct, image: str, task: ecs.TaskDefinition) -> ecs.ContainerImage:
    """The container image; a private ECR image through its repository, so the execution role may pull it."""
    ecr_ref = ecr_image(image)
    if ecr_ref is None:
        return ecs.ContainerImage.from_registry(image)
    repository = ecr.Repository.from_repository_attributes(
        scope, "Repository", repository_arn=ecr_ref.repository_arn, repository_name=ecr_ref.repository
    )
    container_image = ecs.ContainerImage.from_ecr_repository(repository, ecr_ref.reference)
    role = task.obtain_execution_role()
    policy = role.node.try_find_child("DefaultPolicy")
    cdk.Validations.of(policy or role).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            reason="ecr:GetAuthorizationToken takes no resource; the image pulls are limited to the service's "
            "own repository",
        )
    )
    return container_image
