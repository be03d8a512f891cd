"""A determined tenant on the construct road: what aws-cdk-lib lets them write, synthesized, meets the allow-list.

Each case builds the same small app (a VPC, a cluster, one GPU capacity) and one way around the guards: an escape
hatch, L1 resources, an imported cluster, a grant on the task role. The judgement comes from the written templates
(core.tenancy), so each is found however it was built; ``FleetPlan.allow`` with a reason is the one way through, and
the plan file lists it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk import custom_resources as cr

from ecs_gpu_sharing import (
    FleetPlan,
    GpuCapacity,
    GpuTelemetry,
    MpsShare,
    SharedGpuService,
    SharedGpuTaskDefinition,
)

from conftest import new_app

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/x/model@sha256:" + "0" * 64)


def _app(
    *, path_metadata: bool = False, **capacity_options: Any
) -> tuple[cdk.App, cdk.Stack, ecs.Cluster, GpuCapacity]:
    app = new_app(**({"aws:cdk:enable-path-metadata": True} if path_metadata else {}))
    stack = cdk.Stack(app, "Gpu")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    cluster = ecs.Cluster(stack, "Cluster", vpc=vpc)
    capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"], **capacity_options)
    return app, stack, cluster, capacity


def _plain_task(scope: Any, id_: str = "Tenant") -> ecs.Ec2TaskDefinition:
    task = ecs.Ec2TaskDefinition(scope, id_)
    task.add_container("app", image=IMAGE, memory_limit_mib=256, user="1000", readonly_root_filesystem=True)
    return task


def _refused(app: cdk.App, rule: str) -> str:
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    message = str(raised.value)
    assert f"[ecs-gpu-sharing:{rule}]" in message, message[:2000]
    return message


def _plain_service_overridden(path: str, value: Any) -> cdk.App:
    """An Ec2Service on the capacity running a plain task definition, with ``path`` of the task written over."""
    app, stack, cluster, capacity = _app()
    task = _plain_task(stack)
    service = ecs.Ec2Service(
        stack,
        "Svc",
        cluster=cluster,
        task_definition=task,
        capacity_provider_strategies=capacity.capacity_provider_strategies(),
    )
    service.node.add_dependency(cluster)  # created after the cluster has the capacity's provider
    task.node.default_child.add_property_override(path, value)  # type: ignore[union-attr]
    return app


def test_host_network_by_an_escape_hatch_on_a_plain_task_is_refused() -> None:
    _refused(_plain_service_overridden("NetworkMode", "host"), "NetworkModeNotAllowed")


def test_l1_resources_on_the_capacity_provider_are_judged() -> None:
    app, stack, cluster, capacity = _app()
    task = ecs.CfnTaskDefinition(
        stack,
        "L1Task",
        container_definitions=[
            ecs.CfnTaskDefinition.ContainerDefinitionProperty(name="x", image="x@sha256:" + "0" * 64, memory=64)
        ],
    )
    task.add_property_override("ContainerDefinitions.0.Privileged", "true")
    ecs.CfnService(
        stack,
        "L1Service",
        cluster=cluster.cluster_name,
        task_definition=task.ref,
        capacity_provider_strategy=[
            ecs.CfnService.CapacityProviderStrategyItemProperty(
                capacity_provider=capacity.capacity_provider.capacity_provider_name
            )
        ],
    )
    _refused(app, "PrivilegedContainer")


def test_a_service_in_an_imported_cluster_in_another_stack_is_judged() -> None:
    app, _, cluster, _capacity = _app()
    tenant = cdk.Stack(app, "Tenant")
    imported = ecs.Cluster.from_cluster_attributes(
        tenant, "Same", cluster_name="whatever-the-gpu-cluster-is-called", vpc=cluster.vpc, security_groups=[]
    )
    task = _plain_task(tenant)
    task.add_volume(name="docker", host=ecs.Host(source_path="/var/run/docker.sock"))
    ecs.Ec2Service(tenant, "Svc", cluster=imported, task_definition=task, daemon=True)
    message = _refused(app, "HostPathMounted")
    assert "/var/run/docker.sock" in message and "cannot be told apart" in message


def _model_task(stack: cdk.Stack, **container: Any) -> SharedGpuTaskDefinition:
    """A shared-GPU task of one hardened model container, with ``container``'s extra arguments."""
    task = SharedGpuTaskDefinition(stack, "Task")
    task.add_container(
        "model",
        image=IMAGE,
        memory_limit_mib=2048,
        gpu=container.pop("gpu", MpsShare(4096)),
        user="1000",
        readonly_root_filesystem=True,
        **container,
    )
    return task


def _served(desired_count: int = 1) -> tuple[cdk.App, GpuCapacity, SharedGpuService]:
    """The small app with one model service on the capacity."""
    app, stack, cluster, capacity = _app()
    task = _model_task(stack)
    service = SharedGpuService(
        stack, "Model", cluster=cluster, capacity=capacity, task_definition=task, desired_count=desired_count
    )
    return app, capacity, service


def _escalating_service() -> tuple[cdk.App, SharedGpuService]:
    app, stack, cluster, capacity = _app()
    task = _model_task(stack)
    service = SharedGpuService(
        stack, "Model", cluster=cluster, task_definition=task, capacity=capacity, desired_count=1
    )
    task.add_to_task_role_policy(iam.PolicyStatement(actions=["iam:PassRole"], resources=["*"]))
    task.add_to_task_role_policy(iam.PolicyStatement(actions=["ecs:RunTask"], resources=["*"]))
    return app, service


def test_a_task_role_grant_that_escalates_is_refused_on_the_construct_road() -> None:
    app, _ = _escalating_service()
    message = _refused(app, "TaskRoleEscalation")
    assert "runs code under another role" in message


def test_an_allowance_with_a_reason_lets_it_through_and_the_plan_lists_it() -> None:
    app, service = _escalating_service()
    FleetPlan.of(service).allow(service, "ecs-gpu-sharing:TaskRoleEscalation", "the batch launcher starts jobs")
    assembly = app.synth()
    plan = json.loads((Path(assembly.directory) / "gpu-fleet-plan.json").read_text())
    assert {"rule_id": "ecs-gpu-sharing:TaskRoleEscalation", "reason": "the batch launcher starts jobs"} in [
        {k: a[k] for k in ("rule_id", "reason")} for a in plan["allowances"]
    ]
    assert "the batch launcher starts jobs" in (Path(assembly.directory) / "gpu-fleet-plan.md").read_text()


@pytest.mark.parametrize("way", ["log driver", "grant"])
def test_the_evidence_group_by_reference_is_refused_and_the_daemon_that_writes_it_is_not(way: str) -> None:
    """What evaluate believes is written by the telemetry daemon alone: a tenant that names the group by its construct
    (a Ref, no name in the template) is refused as one that names it by text, and the daemon's own grant passes."""
    app, stack, cluster, capacity = _app()
    telemetry = GpuTelemetry(stack, "Telemetry", cluster=cluster, capacities=[capacity])
    logged = ecs.LogDrivers.aws_logs(stream_prefix="m", log_group=telemetry.evidence)
    task = _model_task(stack, logging=logged if way == "log driver" else None)
    if way == "grant":
        telemetry.evidence.grant_write(task.task_role)
    SharedGpuService(stack, "Model", cluster=cluster, task_definition=task, capacity=capacity, desired_count=1)
    message = _refused(app, "EvidenceLogGroupNamed" if way == "log driver" else "TaskRoleEscalation")
    errors = [line for line in message.splitlines() if "ERROR [" in line]
    assert errors and all("Gpu/Task" in e and "Telemetry" not in e for e in errors), errors  # the daemon passes


def test_a_state_machine_that_runs_a_task_on_the_gpu_cluster_is_judged() -> None:
    """Step Functions' ecs:runTask is one more way to run a task definition on the cluster: its definition is JSON
    text around the references, which the judgement reads back."""
    app, stack, cluster, _capacity = _app()
    task = _plain_task(stack)
    task.node.default_child.add_property_override(  # type: ignore[union-attr]
        "ContainerDefinitions.0.LinuxParameters", {"Devices": [{"HostPath": "/dev/nvidia0"}]}
    )
    run = tasks.EcsRunTask(
        stack,
        "Run",
        cluster=cluster,
        task_definition=task,
        launch_target=tasks.EcsEc2LaunchTarget(),
        integration_pattern=sfn.IntegrationPattern.RUN_JOB,
    )
    sfn.StateMachine(stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(run))
    message = _refused(app, "GpuDeviceMapped")
    assert "state machine task Gpu/Machine" in message


def test_a_pipe_that_runs_a_task_on_the_gpu_cluster_is_judged() -> None:
    app, stack, cluster, _capacity = _app()
    task = _plain_task(stack)
    task.node.default_child.add_property_override("ContainerDefinitions.0.Privileged", True)  # type: ignore[union-attr]
    pipes.CfnPipe(
        stack,
        "Pipe",
        role_arn="arn:aws:iam::123456789012:role/pipe",
        source="arn:aws:sqs:us-east-1:123456789012:jobs",
        target=cluster.cluster_arn,
        target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
            ecs_task_parameters=pipes.CfnPipe.PipeTargetEcsTaskParametersProperty(
                task_definition_arn=task.task_definition_arn, launch_type="EC2"
            )
        ),
    )
    assert "pipe Gpu/Pipe" in _refused(app, "PrivilegedContainer")


def test_a_scheduled_tasks_container_overrides_are_judged() -> None:
    """events_targets.EcsTask writes its container overrides into the target's Input, which ECS reads as RunTask's
    overrides: a steering variable there reaches the container as one in the task definition would."""
    app, stack, cluster, _capacity = _app()
    task = _plain_task(stack)
    override = targets.ContainerOverride(
        container_name="app", environment=[targets.TaskEnvironmentVariable(name="CUDA_VISIBLE_DEVICES", value="0")]
    )
    events.Rule(
        stack,
        "Nightly",
        schedule=events.Schedule.cron(hour="3", minute="0"),
        targets=[
            targets.EcsTask(
                cluster=cluster,
                task_definition=task,
                container_overrides=[override],
                launch_type=ecs.LaunchType.EC2,
            )
        ],
    )
    message = _refused(app, "GpuSteeringEnvironment")
    assert "scheduled task Gpu/Nightly" in message and "CUDA_VISIBLE_DEVICES" in message


def test_a_real_time_priority_limit_is_refused_on_the_construct_road() -> None:
    app, stack, cluster, capacity = _app()
    task = _model_task(stack, ulimits=[ecs.Ulimit(name=ecs.UlimitName.RTPRIO, soft_limit=99, hard_limit=99)])
    SharedGpuService(stack, "Model", cluster=cluster, task_definition=task, capacity=capacity, desired_count=1)
    assert "sets ulimit 'rtprio' to 99/99" in _refused(app, "RealtimePriority")


@pytest.mark.parametrize("action", ["runTask", "createService"])
def test_an_sdk_call_at_deploy_that_runs_a_task_on_the_gpu_cluster_is_judged(action: str) -> None:
    """AwsCustomResource calls ECS at deploy with whatever parameters it is given: runTask (with overrides) and
    createService run a task definition on the cluster as a scheduled task and a service do."""
    app, stack, cluster, _capacity = _app()
    task = _plain_task(stack)
    parameters: dict[str, Any] = {"cluster": cluster.cluster_name, "taskDefinition": task.task_definition_arn}
    if action == "runTask":
        environment = [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]
        parameters.update(
            launchType="EC2", overrides={"containerOverrides": [{"name": "app", "environment": environment}]}
        )
    else:
        parameters.update(serviceName="sneaky", desiredCount=1, launchType="EC2")
        task.node.default_child.add_property_override("ContainerDefinitions.0.Privileged", True)  # type: ignore[union-attr]
    cr.AwsCustomResource(
        stack,
        "Call",
        on_create=cr.AwsSdkCall(
            service="ECS", action=action, parameters=parameters, physical_resource_id=cr.PhysicalResourceId.of("x")
        ),
        policy=cr.AwsCustomResourcePolicy.from_sdk_calls(resources=["*"]),
    )
    message = _refused(app, "GpuSteeringEnvironment" if action == "runTask" else "PrivilegedContainer")
    assert f"SDK call {action} at deploy of Gpu/Call" in message


# What runs on a GPU capacity is what the fit plan counted (core.written_fit), by the same roads.


def test_an_mps_budget_given_by_an_escape_hatch_is_not_what_the_plan_counted() -> None:
    budget = [{"Type": "GPU", "Value": "1", "SharingStrategy": {"NvidiaMps": {"Memory": 30000}}}]
    app = _plain_service_overridden("ContainerDefinitions.0.ResourceRequirements", budget)
    message = _refused(app, "PlanNotAsWritten")
    assert "MPS budgets (MiB) none counted, 30000 written" in message


def test_an_l1_service_on_the_capacity_is_refused_until_allowed() -> None:
    def build(allow: bool) -> cdk.App:
        app, stack, cluster, capacity = _app(max_instances=4)  # given: the plan does not derive it without the service
        task = _model_task(stack)
        service = ecs.CfnService(
            stack,
            "L1Service",
            cluster=cluster.cluster_name,
            task_definition=task.task_definition_arn,
            desired_count=2,
            capacity_provider_strategy=[
                ecs.CfnService.CapacityProviderStrategyItemProperty(
                    capacity_provider=capacity.capacity_provider.capacity_provider_name, weight=1
                )
            ],
        )
        service.node.add_dependency(cluster)
        if allow:
            FleetPlan.of(stack).allow(service, "ecs-gpu-sharing:ServiceNotPlanned", "max_instances is ours")
        return app

    assert "runs on GPU capacity L4, but the fit plan does not count it" in _refused(build(False), "ServiceNotPlanned")
    assembly = build(True).synth()
    plan = json.loads((Path(assembly.directory) / "gpu-fleet-plan.json").read_text())
    assert "max_instances is ours" in json.dumps(plan)


def test_a_scheduled_task_that_no_host_can_hold_is_refused() -> None:
    app, stack, cluster, _capacity = _app()
    task = _model_task(stack, gpu=MpsShare(gpu_budget_mib=30000))
    rule = events.Rule(stack, "Hourly", schedule=events.Schedule.rate(cdk.Duration.hours(1)))
    rule.add_target(targets.EcsTask(cluster=cluster, task_definition=task, launch_type=ecs.LaunchType.EC2))
    message = _refused(app, "TaskExceedsGpuMemory")
    assert "scheduled task Gpu/Hourly" in message and "30000 MiB" in message


def test_a_service_changed_by_an_escape_hatch_is_not_what_the_plan_counted() -> None:
    app, _, service = _served(desired_count=2)
    service.service.node.default_child.add_property_override("DesiredCount", 40)  # type: ignore[union-attr]
    service.service.node.default_child.add_property_override(  # type: ignore[union-attr]
        "PlacementStrategies", [{"Type": "spread", "Field": "instanceId"}]
    )
    scaling = service.service.auto_scale_task_count(max_capacity=4)
    scaling.node.find_child("Target").node.default_child.add_property_override("MaxCapacity", 60)  # type: ignore[union-attr]
    message = _refused(app, "PlanNotAsWritten")
    assert "desired count at most 4 counted, 40 written" in message
    assert "task auto scaling maximum at most 4 counted, 60 written" in message
    assert "placement strategies spread(attribute:ecs.availability-zone), binpack(memory) counted," in message


def test_an_instance_type_changed_by_an_escape_hatch_is_not_what_the_plan_counted() -> None:
    app, capacity, _ = _served()
    group = capacity.auto_scaling_group.node.default_child
    group.add_property_override("MixedInstancesPolicy.LaunchTemplate.Overrides", [{"InstanceType": "g4dn.xlarge"}])  # type: ignore[union-attr]
    group.add_property_override("MaxSize", "0")  # type: ignore[union-attr]
    message = _refused(app, "CapacityNotAsWritten")
    assert "instance types g6.xlarge counted, g4dn.xlarge written" in message
    assert "MaxSize 0 written" in message


def test_user_data_that_lets_privileged_containers_back_is_refused() -> None:
    app, capacity, _ = _served()
    capacity.launch_template.user_data.add_commands("echo ECS_DISABLE_PRIVILEGED=false >> /etc/ecs/ecs.config")  # type: ignore[union-attr]
    assert "ECS_DISABLE_PRIVILEGED=false written last" in _refused(app, "HostSettingUndone")


def test_a_check_of_the_templates_that_fails_is_reported_never_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    from ecs_gpu_sharing.core import written_fit

    def broken(*_: Any, **__: Any) -> Any:
        raise KeyError("a bug")

    monkeypatch.setattr(written_fit, "judge", broken)
    app, _, _ = _served()
    message = _refused(app, "RuleFailed")
    assert "the plan as written failed while checking the templates (KeyError: 'a bug')" in message


@pytest.mark.parametrize("waits", [False, True])
def test_a_plain_service_beside_the_cluster_waits_for_its_provider(waits: bool) -> None:
    """aws-ecs orders an Ec2Service after its capacity provider (a reference) but not after the association that adds
    the provider to the cluster; ECS refuses a strategy naming a provider the cluster does not have yet."""
    app, stack, cluster, capacity = _app(path_metadata=True)  # as the CDK CLI runs an app
    service = ecs.Ec2Service(
        stack,
        "Svc",
        cluster=cluster,
        task_definition=_model_task(stack),
        desired_count=1,
        capacity_provider_strategies=capacity.capacity_provider_strategies(),
    )
    if waits:
        service.node.add_dependency(cluster)
        app.synth()
    else:
        message = _refused(app, "ServiceAfterItsProviderIsAssociated")
        assert "service.node.add_dependency(cluster)" in message
        assert "set on its cluster by Gpu/Cluster/Cluster" in message  # the association's construct path
