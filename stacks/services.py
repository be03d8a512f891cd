"""The fleet's services, sharded over stacks so none nears CloudFormation's 500-resource limit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IConstruct

from ecs_gpu_sharing import (
    FleetPlan,
    GpuCapacity,
    GpuManagedInstancesCapacity,
    SharedGpuManagedInstancesService,
    SharedGpuManagedInstancesTaskDefinition,
    SharedGpuService,
    SharedGpuTaskDefinition,
    placement_strategies,
)
from ecs_gpu_sharing.core.fleet import (
    AWSVPC,
    CONTAINER_NAME,
    MANAGED_POLICY_ON_TASK_ROLE,
    MAX_CONTAINER_START_PERIOD,
    SERVICE_TAG,
    TASK_ROLE_WILDCARD,
    ServiceSpec,
    ecr_image,
    nag_wildcards,
    scratch_volume_name,
)

from .ingress import Balancer, expose, join_security_group, task_security_group

LOG_RETENTION = logs.RetentionDays.ONE_MONTH


class ServicesStack(Stack):
    """One shard of the fleet's services: per service a task definition, a log group, the service, and its route,
    scaling and permissions. ``proxy_memory_mib``: the Service Connect proxy's memory in each task, for the whole
    namespace (``FleetSpec.proxy_memory_mib``)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.Cluster,
        capacities: dict[str, GpuCapacity | GpuManagedInstancesCapacity],
        services: Sequence[ServiceSpec],
        load_balancers: Mapping[str, Balancer] | None = None,
        priorities: Mapping[str, int] | None = None,
        target_groups: Mapping[str, int] | None = None,
        isolation: Mapping[str, str] | None = None,
        service_names: Mapping[str, str] | None = None,
        proxy_memory_mib: int,
        connect_members: ec2.ISecurityGroup | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        self.services: dict[str, ecs.BaseService] = {}
        for spec in services:
            # One scope per service: its constructs' ids cannot collide with another service's ("s", "s-logs").
            scope = Construct(self, spec.name)
            capacity = capacities[spec.capacity]
            connect = cluster.default_cloud_map_namespace is not None
            task = _task_definition(scope, spec, capacity, connect, proxy_memory_mib)
            _containers(scope, spec, task)
            _task_role(scope, spec, task)
            service = _service(
                scope,
                spec,
                capacity,
                cluster,
                task,
                isolation=(isolation or {}).get(spec.name),
                service_name=(service_names or {}).get(spec.name),
            )
            if spec.evidence is not None:  # measured, without an allocation note ([service.<name>.evidence])
                FleetPlan.of(scope).set_evidence(service, spec.evidence)
            group = None
            if spec.load_balancer is not None:
                group = expose(
                    scope,
                    service=service,
                    spec=spec,
                    balancer=(load_balancers or {})[spec.load_balancer],
                    priority=(priorities or {}).get(spec.name, 10),
                    moves=(target_groups or {}).get(spec.name, 0),
                    vpc=cluster.vpc,
                )
            if cluster.default_cloud_map_namespace is not None:
                _service_connect(scope, spec, service)
                if spec.network_mode == AWSVPC:
                    assert connect_members is not None, "the cluster stack makes the group with the namespace"
                    _join_service_connect(spec, service, connect_members)
            _scaling(spec, service, group)
            if spec.load_balancer is not None or spec.health_check:
                # ECS ignores failed load balancer and container checks this long after a task starts (botocore's
                # ECS model, healthCheckGracePeriodSeconds); past it, a model still loading is stopped and restarted.
                resource = service.node.default_child
                assert isinstance(resource, ecs.CfnService)
                resource.add_property_override("HealthCheckGracePeriodSeconds", spec.startup_seconds)
            # ECS tags each service so `ecs-gpu-sharing cluster status --fleet` can find it.
            cdk.Tags.of(service).add(SERVICE_TAG, spec.name)
            for key, value in spec.tags.items():
                cdk.Tags.of(scope).add(key, value)
            for rule_id, reason in spec.acknowledge.items():
                # The scope holds the service, its task definition and role: the one acknowledgment covers them
                # in the synth output and in the plan files. An error the allow-list permits (TaskRoleEscalation)
                # is an allowance, listed in the plan files with its reason.
                if rule_id == TASK_ROLE_WILDCARD:
                    continue  # the fleet file's own rule: its reason goes into cdk-nag's acknowledgment (_task_role)
                if rule_id in FleetPlan.ALLOWABLE:
                    FleetPlan.of(scope).allow(scope, rule_id, reason)
                else:
                    FleetPlan.of(scope).acknowledge(scope, rule_id, reason)
            self.services[spec.name] = service
            CfnOutput(scope, "ServiceName", value=service.service_name)


def _task_definition(
    scope: Construct,
    spec: ServiceSpec,
    capacity: GpuCapacity | GpuManagedInstancesCapacity,
    service_connect: bool,
    proxy_memory_mib: int,
) -> SharedGpuTaskDefinition | SharedGpuManagedInstancesTaskDefinition:
    task: SharedGpuTaskDefinition | SharedGpuManagedInstancesTaskDefinition
    # Task-level figures hold the Service Connect proxy, when the cluster has a namespace: Managed Instances always
    # takes them, and on EC2 ECS requires task-level memory of a service with Service Connect (core.service_rules).
    shape = spec.shape("", service_connect=service_connect, proxy_memory_mib=proxy_memory_mib)
    if isinstance(capacity, GpuManagedInstancesCapacity):
        # Managed Instances tasks run in awsvpc mode, with task-level CPU and memory.
        task = SharedGpuManagedInstancesTaskDefinition(
            scope, "Task", network_mode=ecs.NetworkMode.AWS_VPC, cpu=shape.cpu_units, memory_mib=shape.memory_mib
        )
    else:
        mode = ecs.NetworkMode.AWS_VPC if spec.network_mode == AWSVPC else ecs.NetworkMode.BRIDGE
        task = SharedGpuTaskDefinition(
            scope,
            "Task",
            network_mode=mode,
            cpu=shape.cpu_units if service_connect else None,
            memory_mib=shape.memory_mib if service_connect else None,
        )
    for path in spec.writable_paths:
        task.add_volume(name=scratch_volume_name(path))
    if spec.model_cache_path:
        # One Docker volume per host, shared by the service's tasks there: weights download once per host. The agent
        # names a shared volume after the task definition's volume (amazon-ecs-agent, agent/api/task/task.go,
        # addSharedVolumes), so the name is the service's own: another service's tasks on the host name theirs.
        task.add_volume(
            name=model_cache_volume(spec.name),
            docker_volume_configuration=ecs.DockerVolumeConfiguration(
                scope=ecs.Scope.SHARED, autoprovision=True, driver="local"
            ),
        )
    return task


def model_cache_volume(service: str) -> str:
    """The service's model cache volume: its name is host-wide (a fleet's service names are letters, digits and '-')."""
    return f"{service}-model-cache"


def _containers(scope: Construct, spec: ServiceSpec, task: ecs.TaskDefinition) -> None:
    """The model container and the sidecars, each with the service's user and root-filesystem setting."""
    group = logs.LogGroup(scope, "Logs", retention=LOG_RETENTION)
    mounts = [
        ecs.MountPoint(source_volume=scratch_volume_name(p), container_path=p, read_only=False)
        for p in spec.writable_paths
    ]
    if spec.model_cache_path:
        mounts.append(
            ecs.MountPoint(
                source_volume=model_cache_volume(spec.name), container_path=spec.model_cache_path, read_only=False
            )
        )
    model = task.add_container(  # type: ignore[call-arg]
        CONTAINER_NAME,
        image=_image(scope, spec.image, task),
        cpu=spec.cpu_units,
        memory_limit_mib=spec.memory_mib,
        gpu=spec.share,
        environment=dict(spec.environment) or None,
        port_mappings=(
            [ecs.PortMapping(container_port=spec.port, name=PORT_NAME, app_protocol=HTTP)] if spec.port else None
        ),
        logging=ecs.LogDrivers.aws_logs(stream_prefix=spec.name, log_group=group),
        command=list(spec.command) or None,
        # Failures count only after the start period (at most ECS's 300 s): a model server loads its weights first.
        health_check=ecs.HealthCheck(
            command=list(spec.health_check),
            start_period=cdk.Duration.seconds(min(spec.startup_seconds, MAX_CONTAINER_START_PERIOD)),
        )
        if spec.health_check
        else None,
        linux_parameters=(
            ecs.LinuxParameters(scope, "Linux", shared_memory_size=spec.shm_size_mib) if spec.shm_size_mib else None
        ),
        stop_timeout=cdk.Duration.seconds(spec.stop_timeout_seconds) if spec.stop_timeout_seconds else None,
        secrets={name: _secret(scope, name, ref) for name, ref in spec.secrets.items()} or None,
        user=spec.user,
        readonly_root_filesystem=spec.read_only_root_filesystem,
    )
    model.add_mount_points(*mounts)
    for sidecar in spec.sidecars:
        container = task.add_container(  # type: ignore[call-arg]
            sidecar.name,
            image=_image(Construct(scope, f"Sidecar-{sidecar.name}"), sidecar.image, task),
            cpu=sidecar.cpu_units,
            memory_limit_mib=sidecar.memory_mib,
            gpu=sidecar.share,
            environment=dict(sidecar.environment) or None,
            command=list(sidecar.command) or None,
            essential=sidecar.essential,
            logging=ecs.LogDrivers.aws_logs(stream_prefix=f"{spec.name}-{sidecar.name}", log_group=group),
            user=spec.user,
            readonly_root_filesystem=spec.read_only_root_filesystem,
        )
        container.add_mount_points(*mounts[: len(spec.writable_paths)])


PORT_NAME = "http"
HTTP: ecs.AppProtocol = ecs.AppProtocol.http  # type: ignore[assignment]  # a jsii static property


def _task_role(scope: Construct, spec: ServiceSpec, task: ecs.TaskDefinition) -> None:
    """What the task may do beyond running: read its model bucket, the managed policies and statements given."""
    if spec.model_bucket:
        # Model weights: the task role may read that bucket, nothing else.
        s3.Bucket.from_bucket_name(scope, "ModelBucket", spec.model_bucket).grant_read(task.task_role)
        policy = task.task_role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            for finding in ("Action::s3:GetBucket*", "Action::s3:GetObject*", "Action::s3:List*"):
                _acknowledge(
                    policy,
                    f"AwsSolutions-IAM5[{finding}]",
                    "read access to the service's model bucket, as grant_read writes it",
                )
            _acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{spec.model_bucket}/*]",
                "the objects of the service's own model bucket",
            )
    if spec.kms_key_arn:
        _key_grants(spec, spec.kms_key_arn, task)
    for name in spec.task_role_managed_policies:
        # The parser refuses the escalating ones; the task definition warns of any other (ManagedPolicyOnTaskRole)
        # until the fleet file acknowledges it with a reason, which cdk-nag's acknowledgment then carries.
        task.task_role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(name))
        stated = spec.acknowledge.get(MANAGED_POLICY_ON_TASK_ROLE)
        _acknowledge(
            task.task_role,
            f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]",
            f"named in the fleet file's task_role_managed_policies; acknowledged there: {stated}"
            if stated
            else f"named in the fleet file's task_role_managed_policies; {MANAGED_POLICY_ON_TASK_ROLE} warns until "
            "the fleet file acknowledges it with a reason",
        )
    for statement in spec.task_role_statements:
        task.add_to_task_role_policy(
            iam.PolicyStatement(actions=list(statement.actions), resources=list(statement.resources))
        )
    # A wildcard there reaches this only acknowledged (the parser refuses it otherwise): cdk-nag's finding of each
    # carries the fleet file's reason.
    stated = spec.acknowledge.get(TASK_ROLE_WILDCARD)
    policy = task.task_role.node.try_find_child("DefaultPolicy")
    if stated and policy is not None:
        for statement in spec.task_role_statements:
            for finding in nag_wildcards(statement.actions, statement.resources):
                _acknowledge(
                    policy,
                    f"AwsSolutions-IAM5[{finding}]",
                    f"named in the fleet file's task_role_statements; acknowledged there: {stated}",
                )


def _key_grants(spec: ServiceSpec, key_arn: str, task: ecs.TaskDefinition) -> None:
    """Decrypting with the service's customer managed key, each role through the service it reads with only: the
    execution role fetches the secrets (Secrets Manager, SSM), the task role reads the bucket (S3). Without it the
    task stops before it starts (ResourceInitializationError), or cannot read its weights (Amazon ECS Developer Guide,
    "Required IAM permissions for Amazon ECS secrets": kms:Decrypt, for a custom key)."""
    region = cdk.Stack.of(task).region

    def via(*services: str) -> iam.PolicyStatement:
        endpoints = [f"{s}.{region}.amazonaws.com" for s in services]
        return iam.PolicyStatement(
            actions=["kms:Decrypt"], resources=[key_arn], conditions={"StringEquals": {"kms:ViaService": endpoints}}
        )

    if spec.secrets:
        task.obtain_execution_role().add_to_principal_policy(via("secretsmanager", "ssm"))
    if spec.model_bucket:
        task.add_to_task_role_policy(via("s3"))


def _acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason))


def _service(
    scope: Construct,
    spec: ServiceSpec,
    capacity: GpuCapacity | GpuManagedInstancesCapacity,
    cluster: ecs.Cluster,
    task: ecs.TaskDefinition,
    *,
    isolation: str | None = None,
    service_name: str | None = None,
) -> ecs.BaseService:
    if isinstance(capacity, GpuManagedInstancesCapacity):
        return SharedGpuManagedInstancesService(
            scope,
            "Service",
            name=spec.name,
            cluster=cluster,
            capacity=capacity,
            task_definition=task,
            desired_count=spec.desired_count,
            allocation=spec.allocation,
        ).service
    return SharedGpuService(
        scope,
        "Service",
        name=spec.name,
        cluster=cluster,
        capacity=capacity,
        task_definition=task,
        desired_count=spec.desired_count,
        # Isolation groups: off the hosts of other groups' services, named so the expression can say which.
        placement_constraints=[ecs.PlacementConstraint.member_of(isolation)] if isolation else None,
        placement_strategies=placement_strategies(spec.placement_strategy),
        service_name=service_name,
        allocation=spec.allocation,
        # awsvpc tasks get an interface in the private subnets and the service's own security group.
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        if spec.network_mode == AWSVPC
        else None,
    ).service


def _service_connect(scope: Construct, spec: ServiceSpec, service: ecs.BaseService) -> None:
    """Every service calls others by name; a service with a port answers at http://<service>:<port>."""
    services = (
        # Cloud Map needs each discovery name once in a namespace (ECS API reference, ServiceConnectService):
        # it defaults to the port's name, "http" in every service, so name it after the service.
        [
            ecs.ServiceConnectService(
                port_mapping_name=PORT_NAME,
                discovery_name=spec.name,
                dns_name=spec.name,
                port=spec.port,
                per_request_timeout=_seconds(spec.request_timeout_seconds),
                idle_timeout=_seconds(_idle_timeout(spec.request_timeout_seconds)),
            )
        ]
        if spec.port
        else None
    )
    namespace = service.cluster.default_cloud_map_namespace
    assert namespace is not None, "called only where the cluster has a namespace"
    service.enable_service_connect(
        # By ARN, not the name CDK writes by default: ECS takes either (botocore's ECS model,
        # ServiceConnectConfiguration), and private DNS namespaces of one name may sit in other VPCs of the account
        # (sst issue 3996: a lookup of one such name found two, "too many results: wanted 1, got 2").
        namespace=namespace.namespace_arn,
        services=services,
        log_driver=ecs.LogDrivers.aws_logs(
            stream_prefix=f"{spec.name}-connect",
            log_group=logs.LogGroup(scope, "ConnectLogs", retention=LOG_RETENTION),
        ),
    )


IDLE_TIMEOUT_SECONDS = (
    300  # Service Connect's idle timeout for HTTP when unset (ECS API Reference, TimeoutConfiguration)
)


def _idle_timeout(request_timeout: int | None) -> int | None:
    """The proxy's idle timeout raised to a longer per-request one: an idle timeout below the per-request one closes
    the connection first (ECS API Reference, TimeoutConfiguration). 0 turns both off; none: ECS's own."""
    if request_timeout is None or 0 < request_timeout <= IDLE_TIMEOUT_SECONDS:
        return None
    return request_timeout


def _seconds(value: int | None) -> cdk.Duration | None:
    return None if value is None else cdk.Duration.seconds(value)


def _join_service_connect(spec: ServiceSpec, service: ecs.BaseService, members: ec2.ISecurityGroup) -> None:
    """An awsvpc task calls from its own interface, so it joins the namespace's members; a listener is reached on its
    container port at that interface (amazon-ecs-agent, agent/api/serviceconnect/service_connect.go, InterceptPort),
    which admits the members there. Bridge-mode hosts join in the cluster stack."""
    if spec.port:
        task_security_group(service).add_ingress_rule(
            members, ec2.Port.tcp(spec.port), f"Service Connect to {spec.name}"
        )
    join_security_group(service, members)


def _scaling(spec: ServiceSpec, service: ecs.BaseService, group: elbv2.ApplicationTargetGroup | None) -> None:
    """Task auto scaling from desired_count to max_tasks; the fleet plan reads the maximum and sizes for it."""
    if spec.max_tasks is None:
        return
    scaling = service.auto_scale_task_count(min_capacity=spec.desired_count, max_capacity=spec.max_tasks)
    if spec.scale_on_cpu_percent is not None:
        scaling.scale_on_cpu_utilization("Cpu", target_utilization_percent=spec.scale_on_cpu_percent)
    if spec.scale_on_requests_per_target is not None:
        assert group is not None  # the fleet file refuses it without an application load balancer
        scaling.scale_on_request_count(
            "Requests", requests_per_target=spec.scale_on_requests_per_target, target_group=group
        )
    metric = spec.scale_on_metric
    if metric is not None:
        scaling.scale_to_track_custom_metric(
            "Metric",
            metric=cloudwatch.Metric(
                namespace=metric.namespace,
                metric_name=metric.metric_name,
                statistic=metric.statistic,
                dimensions_map=dict(metric.dimensions) or None,
            ),
            target_value=metric.target,
        )


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
