"""MpsShare and SharedGpuTaskDefinition: the exact rendered shape, real validators, and every refusal."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import aws_cdk.cx_api as cxapi
import pytest
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Match, Template
from syrupy.assertion import SnapshotAssertion

from ecs_gpu_sharing import (
    BudgetError,
    FleetPlan,
    GpuCapacity,
    MpsShare,
    SharedGpuManagedInstancesTaskDefinition,
    SharedGpuTaskDefinition,
    TaskDefinitionError,
)
from ecs_gpu_sharing.cdk import task_definition as td_module
from ecs_gpu_sharing.core.shape import no_gpu_taken

from conftest import new_app
from validators import cfn_lint_errors, ecs_register_task_definition_errors

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/python:3.12-slim")


def _stack() -> cdk.Stack:
    return cdk.Stack(new_app(), "Test")


def _synth(stack: cdk.Stack) -> Any:
    """Synthesizes the whole app (validations included) and returns the stack's artifact."""
    app = stack.node.root
    assert isinstance(app, cdk.App)
    return app.synth().get_stack_artifact(stack.artifact_id)


# --- MpsShare ---------------------------------------------------------------------------------------


def test_mps_share_accepts_integers() -> None:
    assert MpsShare(6144, 40) == MpsShare(gpu_budget_mib=6144, max_compute_percent=40)
    assert MpsShare(1).max_compute_percent is None and MpsShare(1, 100).max_compute_percent == 100


@pytest.mark.parametrize("memory", [0, -1, 1.5, 6144.0, True, "6144", None])
def test_mps_share_refuses_bad_memory(memory: Any) -> None:
    with pytest.raises(BudgetError, match="gpu_budget_mib must be an integer >= 1"):
        MpsShare(memory)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -float("inf")])
def test_mps_share_calls_infinity_a_bad_number_not_a_token(value: float) -> None:
    with pytest.raises(BudgetError, match=r"gpu_budget_mib must be an integer >= 1, got (inf|nan|-inf) \(float\)"):
        MpsShare(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("percent", [0, 101, 50.0, False, "40"])
def test_mps_share_refuses_bad_compute_cap(percent: Any) -> None:
    with pytest.raises(BudgetError, match="max_compute_percent must be an integer from 1 to 100"):
        MpsShare(1024, percent)


def test_mps_share_refuses_tokens_with_a_clear_message() -> None:
    stack = _stack()
    token = cdk.CfnParameter(stack, "Budget", type="Number").value_as_number
    with pytest.raises(BudgetError, match=r"gpu_budget_mib is a CDK token \(a value known only at deploy time\)"):
        MpsShare(token)  # type: ignore[arg-type]
    with pytest.raises(BudgetError, match="max_compute_percent is a CDK token"):
        MpsShare(1024, cdk.Token.as_number(cdk.Aws.ACCOUNT_ID))  # type: ignore[arg-type]


def test_mps_share_is_immutable() -> None:
    share = MpsShare(1024)
    with pytest.raises(AttributeError):
        share.gpu_budget_mib = 2048  # type: ignore[misc]


# --- the representative task definition -----------------------------------------------------------


@pytest.fixture(scope="module")
def representative() -> dict[str, Any]:
    stack = _stack()
    td = SharedGpuTaskDefinition(stack, "Models", usable_gpu_memory_mib=22000)
    td.add_container("sidecar", image=IMAGE, memory_limit_mib=256)
    td.add_container("embedder", image=IMAGE, memory_limit_mib=4096, gpu=MpsShare(6144, 40))
    td.add_container("reranker", image=IMAGE, memory_limit_mib=2048, gpu=MpsShare(3072))
    td.add_container("logger", image=IMAGE, memory_limit_mib=128)
    artifact = _synth(stack)
    return {"template": artifact.template, "messages": artifact.messages}


def _containers(template: dict[str, Any]) -> dict[str, Any]:
    (resource,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"]
    return {c["Name"]: c for c in resource["Properties"]["ContainerDefinitions"]}


def test_renders_exact_mps_requirements_at_each_containers_index(representative: dict[str, Any]) -> None:
    containers = _containers(representative["template"])
    assert containers["embedder"]["ResourceRequirements"] == [
        {"Type": "GPU", "SharingStrategy": {"NvidiaMps": {"Memory": 6144, "MaxComputePercent": 40}}}
    ]
    assert containers["reranker"]["ResourceRequirements"] == [
        {"Type": "GPU", "SharingStrategy": {"NvidiaMps": {"Memory": 3072}}}
    ]
    assert "ResourceRequirements" not in containers["sidecar"]
    assert "ResourceRequirements" not in containers["logger"]


def test_representative_snapshot(representative: dict[str, Any], gpu_snapshot: SnapshotAssertion) -> None:
    resources = {k: v for k, v in representative["template"]["Resources"].items()}
    assert resources == gpu_snapshot


def test_cfn_lint_finds_no_error(representative: dict[str, Any]) -> None:
    assert cfn_lint_errors(representative["template"]) == []


def test_each_container_passes_botocores_register_task_definition_model(
    representative: dict[str, Any],
) -> None:
    (resource,) = [
        r for r in representative["template"]["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"
    ]
    assert ecs_register_task_definition_errors(resource["Properties"]) == ""


def test_botocore_model_would_catch_a_bad_shape(representative: dict[str, Any]) -> None:
    (resource,) = [
        r for r in representative["template"]["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"
    ]
    broken = {**resource["Properties"]}
    broken["ContainerDefinitions"] = [
        {**c, "ResourceRequirements": [{"Type": "GPU", "SharingStrategy": {"NvidiaMps": {"Memory": "lots"}}}]}
        for c in broken["ContainerDefinitions"]
    ]
    assert "Invalid type for parameter" in ecs_register_task_definition_errors(broken)


def test_synth_reports_no_schema_warning(representative: dict[str, Any]) -> None:
    texts = [str(m.entry.data) for m in representative["messages"]]
    assert not [t for t in texts if "F3002" in t or "F3003" in t or "SharingStrategy" in t], texts


def _acknowledged(stack: cdk.Stack) -> dict[str, list[str]]:
    """Rule ids acknowledged per construct path, read from construct metadata."""
    found: dict[str, list[str]] = {}
    for construct in stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                found.setdefault(construct.node.path, []).extend(sorted(entry.data))
    return found


def test_schema_rules_are_acknowledged_only_on_mps_task_definitions() -> None:
    stack = _stack()
    mps = SharedGpuTaskDefinition(stack, "Mps")
    mps.add_container("a", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(512))
    plain = SharedGpuTaskDefinition(stack, "Plain")
    plain.add_container("a", image=IMAGE, memory_limit_mib=128)
    assert _acknowledged(stack) == {
        "Test/Mps/Resource": [
            "AwsSolutions::AwsSolutions-ECS2",
            "CloudFormation-Validate::F3002",
            "CloudFormation-Validate::F3003",
        ],
        "Test/Plain/Resource": ["AwsSolutions::AwsSolutions-ECS2"],  # SecretInEnvironment judges names instead
    }


def test_no_acknowledgment_once_aws_cdk_lib_types_the_property(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(td_module, "typed_sharing_strategy", lambda: True)
    stack = _stack()
    td = SharedGpuTaskDefinition(stack, "Mps")
    td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(512))
    assert _acknowledged(stack) == {"Test/Mps/Resource": ["AwsSolutions::AwsSolutions-ECS2"]}


def test_installed_aws_cdk_lib_lacks_the_typed_property() -> None:
    # When this fails, aws-cdk-lib was upgraded: render through the typed property and drop the override.
    assert td_module.typed_sharing_strategy() is False


def test_exposes_budgets_for_the_planner() -> None:
    td = SharedGpuTaskDefinition(_stack(), "Td")
    td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(1000))
    td.add_container("b", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(2000, 10))
    assert td.task_gpu_budget_mib == 3000
    assert [name for name, _ in td.mps_shares] == ["a", "b"]


def test_budgets_are_kept_under_the_container_name_ecs_sees() -> None:
    """aws-ecs names a container by container_name when given, else by its id; the plan reads the written container
    definitions by that name, so a budget kept under the id would be lost to it."""
    td = SharedGpuTaskDefinition(_stack(), "Td")
    td.add_container("model", container_name="vllm", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(1000))
    td.add_container("metrics", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(500))
    assert [name for name, _ in td.mps_shares] == ["vllm", "metrics"]


@pytest.mark.parametrize(("first", "name"), [({"container_name": "vllm"}, "vllm"), ({}, "model")])
def test_a_second_container_of_one_name_is_refused(first: dict[str, Any], name: str) -> None:
    """RegisterTaskDefinition refuses it ("Container names must be unique within a Task Definition"), and the plan
    would read both containers as one."""
    td = SharedGpuTaskDefinition(_stack(), "Td")
    td.add_container("model", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(1000), **first)
    with pytest.raises(TaskDefinitionError, match=rf"Test/Td/again: container name '{name}' is already taken"):
        td.add_container("again", container_name=name, image=IMAGE, memory_limit_mib=64)


@pytest.mark.parametrize(
    ("given", "ok"), [({"container_name": "vllm_2-a"}, True), ({"container_name": "m:odd"}, False), ({}, False)]
)
def test_a_container_name_ecs_refuses_is_refused_where_it_is_given(given: dict[str, Any], ok: bool) -> None:
    """RegisterTaskDefinition takes up to 255 letters, digits, underscores and hyphens (ContainerDefinition, name);
    the synth's ContainerNames rule would find it later, for any task definition."""
    td = SharedGpuTaskDefinition(_stack(), "Td")
    add = lambda: td.add_container("model server", image=IMAGE, memory_limit_mib=128, **given)  # noqa: E731
    if ok:
        add()
    else:
        with pytest.raises(TaskDefinitionError, match=r"Test/Td/model server: container name '.+' is not up to 255"):
            add()


def test_whole_gpu_task_renders_the_l2s_gpu_count() -> None:
    stack = _stack()
    td = SharedGpuTaskDefinition(stack, "Td")
    td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu_count=1)
    assert td.whole_gpu_count == 1
    Template.from_stack(stack).has_resource_properties(
        "AWS::ECS::TaskDefinition",
        {"ContainerDefinitions": [{"Name": "a", "ResourceRequirements": [{"Type": "GPU", "Value": "1"}]}]},
    )


def test_managed_instances_is_accepted_through_its_own_class() -> None:
    td = SharedGpuManagedInstancesTaskDefinition(_stack(), "Td", network_mode=ecs.NetworkMode.AWS_VPC)
    assert td.compatibility == ecs.Compatibility.MANAGED_INSTANCES


# --- refusals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "compatibility",
    [ecs.Compatibility.FARGATE, ecs.Compatibility.EC2_AND_FARGATE, ecs.Compatibility.EXTERNAL],
)
def test_refuses_any_compatibility_option(compatibility: ecs.Compatibility) -> None:
    # Fargate and EXTERNAL cannot share GPUs; each class fixes its own compatibility (EC2, Managed Instances).
    with pytest.raises(TaskDefinitionError, match=r"Test/Td: compatibility is not an option here"):
        SharedGpuTaskDefinition(_stack(), "Td", compatibility=compatibility)
    with pytest.raises(TaskDefinitionError, match=r"Test/Td: compatibility is not an option here"):
        SharedGpuManagedInstancesTaskDefinition(_stack(), "Td", compatibility=compatibility)


def test_refuses_an_option_neither_it_nor_aws_ecs_takes_naming_the_nearest() -> None:
    with pytest.raises(
        TaskDefinitionError, match=r"Test/Td: famly is not an option .*Ec2TaskDefinition; did you mean family\?"
    ):
        SharedGpuTaskDefinition(_stack(), "Td", famly="chat")  # type: ignore[call-arg]
    with pytest.raises(
        TaskDefinitionError, match=r"Test/Td: cpus is not an option .*aws_ecs.TaskDefinition; did you mean cpu"
    ):
        SharedGpuManagedInstancesTaskDefinition(_stack(), "Td", cpus=1024)  # type: ignore[call-arg]
    SharedGpuTaskDefinition(_stack(), "Td", family="chat")  # an option aws-ecs takes passes through


def test_refuses_gpu_count_and_mps_share_on_one_container() -> None:
    td = SharedGpuTaskDefinition(_stack(), "Td")
    with pytest.raises(TaskDefinitionError, match=r"Test/Td/a: .*gpu_count=1.*MpsShare\(512 MiB\) at once"):
        td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu_count=1, gpu=MpsShare(512))


def test_refuses_a_gpu_that_is_not_an_mps_share() -> None:
    td = SharedGpuTaskDefinition(_stack(), "Td")
    with pytest.raises(TaskDefinitionError, match="gpu must be an MpsShare, got 512"):
        td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu=512)  # type: ignore[arg-type]


def test_refuses_mixing_whole_gpus_and_mps_in_one_task_at_synth() -> None:
    stack = _stack()
    td = SharedGpuTaskDefinition(stack, "Td")
    td.add_container("whole", image=IMAGE, memory_limit_mib=128, gpu_count=1)
    td.add_container("shared", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(512))
    with pytest.raises(
        RuntimeError,
        match=r"Test/Td\] \[ecs-gpu-sharing:TaskMixesGpuOptions\] GPU containers mix whole GPUs \(whole: gpu_count=1\)",
    ):
        _synth(stack)


def test_refuses_mps_containers_that_do_not_fit_one_gpu_at_synth() -> None:
    stack = _stack()
    td = SharedGpuTaskDefinition(stack, "Td", usable_gpu_memory_mib=8000)
    td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(5000))
    td.add_container("b", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(4000))
    with pytest.raises(
        RuntimeError,
        match=r"one task needs 9000 MiB of GPU memory on one GPU, more than the 8000 MiB usable on one GPU "
        r"\(usable_gpu_memory_mib\): its MPS containers share that GPU \(a 5000 \+ b 4000\)",
    ):
        _synth(stack)


def test_reports_every_problem_at_once() -> None:
    stack = _stack()
    td = SharedGpuTaskDefinition(stack, "Td", usable_gpu_memory_mib=100)
    td.add_container("whole", image=IMAGE, memory_limit_mib=128, gpu_count=1)
    td.add_container("shared", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(512))
    with pytest.raises(RuntimeError, match=r"(?s)mix whole GPUs.*one task needs 512 MiB"):
        _synth(stack)


def test_a_fitting_task_synthesizes() -> None:
    stack = _stack()
    td = SharedGpuTaskDefinition(stack, "Td", usable_gpu_memory_mib=8000)
    td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(8000))
    _synth(stack)


@pytest.mark.parametrize("limit", [0, 1.5, "8000"])
def test_refuses_bad_usable_gpu_memory_mib(limit: Any) -> None:
    with pytest.raises(TaskDefinitionError, match="Test/Td: usable_gpu_memory_mib must be an integer >= 1"):
        SharedGpuTaskDefinition(_stack(), "Td", usable_gpu_memory_mib=limit)


def test_refuses_usable_gpu_memory_mib_token() -> None:
    stack = _stack()
    token = cdk.CfnParameter(stack, "Limit", type="Number").value_as_number
    with pytest.raises(TaskDefinitionError, match="usable_gpu_memory_mib is a CDK token"):
        SharedGpuTaskDefinition(stack, "Td", usable_gpu_memory_mib=token)  # type: ignore[arg-type]


def test_is_an_ec2_task_definition_with_optional_task_level_figures() -> None:
    """ECS takes task-level cpu and memory on EC2 (and requires memory with Service Connect): they are rendered, and
    the plan counts them instead of the containers' sum."""
    td = SharedGpuTaskDefinition(_stack(), "Td")
    assert isinstance(td, ecs.Ec2TaskDefinition)
    stack = _stack()
    SharedGpuTaskDefinition(stack, "Td", cpu=2048, memory_mib="4096").add_container(
        "a", image=IMAGE, memory_limit_mib=512, gpu=MpsShare(100)
    )
    Template.from_stack(stack).has_resource_properties("AWS::ECS::TaskDefinition", {"Cpu": "2048", "Memory": "4096"})
    with pytest.raises(
        TaskDefinitionError, match=r"Test/Td: task-level memory_mib must be a whole number >= 1, got 'x'"
    ):
        SharedGpuTaskDefinition(_stack(), "Td", memory_mib="x")
    with pytest.raises(TaskDefinitionError, match=r"Test/Td: task-level cpu is a CDK token"):
        SharedGpuTaskDefinition(_stack(), "Td", cpu=cdk.Aws.ACCOUNT_ID)
    with pytest.raises(TaskDefinitionError, match=r"Test/Td: compatibility is not an option here"):
        SharedGpuTaskDefinition(_stack(), "Td", compatibility=ecs.Compatibility.EC2)


def test_managed_instances_variant_has_that_compatibility_and_refuses_task_level_tokens() -> None:
    stack = _stack()
    td = SharedGpuManagedInstancesTaskDefinition(stack, "Mi", cpu="2048", memory_mib="4096")
    td.add_container("a", image=IMAGE, memory_limit_mib=512, gpu=MpsShare(100))
    assert td.compatibility == ecs.Compatibility.MANAGED_INSTANCES and td.task_gpu_budget_mib == 100
    with pytest.raises(TaskDefinitionError, match=r"Test/Td: task-level cpu is a CDK token"):
        SharedGpuManagedInstancesTaskDefinition(stack, "Td", cpu=cdk.Aws.ACCOUNT_ID)
    assert stack.node.try_find_child("Td") is None


def test_managed_instances_accepts_a_plain_task_volume() -> None:
    stack = _stack()
    td = SharedGpuManagedInstancesTaskDefinition(
        stack, "Td", network_mode=ecs.NetworkMode.AWS_VPC, cpu="1024", memory_mib="2048"
    )
    td.add_volume(name="scratch")
    td.add_container("a", image=IMAGE, memory_limit_mib=512, gpu=MpsShare(gpu_budget_mib=512))
    _synth(stack)


def _shared_memory(scope: cdk.Stack, td: Any) -> None:
    td.add_container(
        "a", image=IMAGE, memory_limit_mib=512, linux_parameters=ecs.LinuxParameters(scope, "L", shared_memory_size=256)
    )


def _tmpfs(scope: cdk.Stack, td: Any) -> None:
    linux = ecs.LinuxParameters(scope, "L")
    linux.add_tmpfs(ecs.Tmpfs(container_path="/t", size=64))
    td.add_container("b", image=IMAGE, memory_limit_mib=512, linux_parameters=linux)


def _docker_volume(scope: cdk.Stack, td: Any) -> None:
    td.add_volume(
        name="cache",
        docker_volume_configuration=ecs.DockerVolumeConfiguration(
            scope=ecs.Scope.SHARED, autoprovision=True, driver="local"
        ),
    )


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (_shared_memory, r"container a: linux_parameters sharedMemorySize is not valid on ECS Managed Instances"),
        (_docker_volume, r"DockerVolumeConfiguration is not supported for tasks running on Managed Instances"),
    ],
)
def test_managed_instances_refuses_what_aws_does_not_accept_there(setup: Any, message: str) -> None:
    stack = _stack()
    td = SharedGpuManagedInstancesTaskDefinition(
        stack, "Td", network_mode=ecs.NetworkMode.AWS_VPC, cpu="1024", memory_mib="2048"
    )
    with pytest.raises(RuntimeError, match=message):  # aws-ecs refuses a Docker volume as it is added
        setup(stack, td)
        _synth(stack)


def test_managed_instances_takes_tmpfs() -> None:
    """tmpfs is valid on Managed Instances since 2026-01-06 (AWS What's New); sharedMemorySize still is not."""
    stack = _stack()
    td = SharedGpuManagedInstancesTaskDefinition(
        stack, "Td", network_mode=ecs.NetworkMode.AWS_VPC, cpu="1024", memory_mib="2048"
    )
    _tmpfs(stack, td)
    _synth(stack)
    Template.from_stack(stack).has_resource_properties(
        "AWS::ECS::TaskDefinition",
        {
            "ContainerDefinitions": [
                Match.object_like({"LinuxParameters": Match.object_like({"Tmpfs": Match.any_value()})})
            ]
        },
    )


# --- guards on the final task definition (#22, section 1) ---------------------------------------------------------


def _mps_task(stack: cdk.Stack, **task_options: Any) -> tuple[SharedGpuTaskDefinition, ecs.ContainerDefinition]:
    td = SharedGpuTaskDefinition(stack, "Td", **task_options)
    model = td.add_container("model", image=IMAGE, memory_limit_mib=1024, gpu=MpsShare(gpu_budget_mib=1024))
    return td, model


def _env_later(stack: cdk.Stack) -> None:
    _, model = _mps_task(stack)
    model.add_environment("NVIDIA_VISIBLE_DEVICES", "all")


def _secret_later(stack: cdk.Stack) -> None:
    from aws_cdk import aws_ssm as ssm

    _, model = _mps_task(stack)
    parameter = ssm.StringParameter.from_secure_string_parameter_attributes(stack, "P", parameter_name="/x")
    model.add_secret("CUDA_VISIBLE_DEVICES", ecs.Secret.from_ssm_parameter(parameter))


def _sidecar_env(stack: cdk.Stack) -> None:
    td, _ = _mps_task(stack)
    sidecar = td.add_container("sidecar", image=IMAGE, memory_limit_mib=64)
    sidecar.add_environment("NVIDIA_VISIBLE_DEVICES", "all")


def _device(stack: cdk.Stack) -> None:
    td = SharedGpuTaskDefinition(stack, "Td")
    linux = ecs.LinuxParameters(stack, "L")
    td.add_container(
        "model", image=IMAGE, memory_limit_mib=1024, gpu=MpsShare(gpu_budget_mib=1024), linux_parameters=linux
    )
    linux.add_devices(ecs.Device(host_path="/dev/nvidia0"))


def _capability(capability: ecs.Capability) -> Any:
    def build(stack: cdk.Stack) -> None:
        td = SharedGpuTaskDefinition(stack, "Td")
        linux = ecs.LinuxParameters(stack, "L")
        td.add_container(
            "model", image=IMAGE, memory_limit_mib=1024, gpu=MpsShare(gpu_budget_mib=1024), linux_parameters=linux
        )
        linux.add_capabilities(capability)

    return build


def _namespace(key: str) -> Any:
    def build(stack: cdk.Stack) -> None:
        _mps_task(stack, **{key: getattr(ecs, "PidMode" if key == "pid_mode" else "IpcMode").HOST})

    return build


@pytest.mark.parametrize(
    ("build", "rule"),
    [
        (_env_later, r"\[ecs-gpu-sharing:GpuSteeringEnvironment\] container model: environment NVIDIA_VISIBLE_DEVICES"),
        (_secret_later, r"\[ecs-gpu-sharing:GpuSteeringEnvironment\] container model: secrets CUDA_VISIBLE_DEVICES"),
        (_sidecar_env, r"\[ecs-gpu-sharing:GpuSteeringEnvironment\] container sidecar: environment NVIDIA_VISIBLE"),
        (_device, r"\[ecs-gpu-sharing:GpuDeviceMapped\] container model maps /dev/nvidia0"),
        (
            _capability(ecs.Capability.SYS_ADMIN),
            r"\[ecs-gpu-sharing:HostCapability\] container model adds capability SYS_ADMIN",
        ),
        (
            _capability(ecs.Capability.SYS_PTRACE),
            r"\[ecs-gpu-sharing:HostCapability\] container model adds capability SYS_PTRACE",
        ),
        (_namespace("pid_mode"), r"\[ecs-gpu-sharing:HostNamespace\] the task's pidMode is 'host'"),
        (_namespace("ipc_mode"), r"\[ecs-gpu-sharing:HostNamespace\] the task's ipcMode is 'host'"),
    ],
)
def test_a_guard_walked_around_after_add_container_fails_synth(build: Any, rule: str) -> None:
    stack = _stack()
    build(stack)
    with pytest.raises(RuntimeError, match=rule):
        _synth(stack)


def test_a_default_capability_added_back_passes_and_any_device_is_refused() -> None:
    stack = _stack()
    td = SharedGpuTaskDefinition(stack, "Td")
    linux = ecs.LinuxParameters(stack, "L")
    model = td.add_container(
        "model", image=IMAGE, memory_limit_mib=1024, gpu=MpsShare(gpu_budget_mib=1024), linux_parameters=linux
    )
    linux.drop_capabilities(ecs.Capability.ALL)
    linux.add_capabilities(ecs.Capability.NET_BIND_SERVICE)
    model.add_environment("MODEL_ID", "bge-small")
    _synth(stack)
    refused = _stack()
    td = SharedGpuTaskDefinition(refused, "Td")
    linux = ecs.LinuxParameters(refused, "L")
    td.add_container("model", image=IMAGE, memory_limit_mib=1024, gpu=MpsShare(1024), linux_parameters=linux)
    linux.add_devices(ecs.Device(host_path="/dev/fuse"))
    with pytest.raises(RuntimeError, match=r"\[ecs-gpu-sharing:DeviceMapped\] container model maps the host device"):
        _synth(refused)


# Any task definition a service runs in a cluster with a GPU capacity is judged the same way, not only shared ones.


def _plain_on_gpu_cluster(stack: cdk.Stack, *, gpu_cluster: bool = True) -> tuple[ecs.Ec2TaskDefinition, Any]:
    from aws_cdk import aws_ec2 as ec2

    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    cluster = ecs.Cluster(stack, "Cluster", vpc=vpc)
    if gpu_cluster:
        GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
    td = ecs.Ec2TaskDefinition(stack, "Plain")
    linux = ecs.LinuxParameters(stack, "L")
    container = td.add_container("agent", image=IMAGE, memory_limit_mib=256, linux_parameters=linux)
    ecs.Ec2Service(stack, "Svc", cluster=cluster, task_definition=td, daemon=True)
    return td, (container, linux)


@pytest.mark.parametrize(
    ("walk_around", "rule"),
    [
        (lambda c, linux: c.add_environment("NVIDIA_VISIBLE_DEVICES", "all"), "GpuSteeringEnvironment"),
        (lambda c, linux: linux.add_devices(ecs.Device(host_path="/dev/nvidia0")), "GpuDeviceMapped"),
        (lambda c, linux: linux.add_capabilities(ecs.Capability.SYS_PTRACE), "HostCapability"),
    ],
)
def test_a_plain_task_definition_on_gpu_hosts_is_held_to_the_guards(walk_around: Any, rule: str) -> None:
    stack = _stack()
    _, (container, linux) = _plain_on_gpu_cluster(stack)
    walk_around(container, linux)
    with pytest.raises(RuntimeError, match=rf"\[ecs-gpu-sharing:{rule}\] container agent.*runs on the GPU hosts"):
        _synth(stack)


def test_a_plain_privileged_task_on_gpu_hosts_is_refused_and_one_elsewhere_is_not_judged() -> None:
    stack = _stack()
    td, _ = _plain_on_gpu_cluster(stack)
    td.node.default_child.add_property_override("ContainerDefinitions.0.Privileged", True)  # type: ignore[union-attr]
    with pytest.raises(
        RuntimeError, match=r"\[ecs-gpu-sharing:PrivilegedContainer\] \S+: container agent is privileged \(True\)"
    ):
        _synth(stack)
    elsewhere = _stack()
    _, (container, _linux) = _plain_on_gpu_cluster(elsewhere, gpu_cluster=False)
    container.add_environment("NVIDIA_VISIBLE_DEVICES", "all")  # no GPU host in this cluster: not the library's
    _synth(elsewhere)


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("ecs-gpu-sharing:BudgetIsAGuess", "no"),
        ("ecs-gpu-sharing:GpuDeviceMapped", " "),
        ("ecs-gpu-sharing:GpuDeviceMapped", "\u200b"),
        ("ecs-gpu-sharing:GpuDeviceMapped", "\u00a0\u3000"),
    ],
)
def test_only_an_allow_list_rule_with_a_visible_reason_can_be_allowed(rule: str, reason: str) -> None:
    stack = _stack()
    td, _ = _plain_on_gpu_cluster(stack)
    with pytest.raises(ValueError, match="allow takes a rule id of the allow-list"):
        FleetPlan.of(stack).allow(td, rule, reason)


def test_an_escape_hatch_is_judged_in_the_written_template() -> None:
    """add_property_override is applied when the template is written: the guards read that template again."""
    stack = _stack()
    td, _ = _mps_task(stack)
    td.node.default_child.add_property_override("ContainerDefinitions.0.Privileged", "true")  # type: ignore[union-attr]
    with pytest.raises(
        RuntimeError, match=r"\[ecs-gpu-sharing:PrivilegedContainer\] \S+: container model is privileged"
    ):
        _synth(stack)


def test_a_secret_looking_variable_warns_on_the_construct_road() -> None:
    from aws_cdk.assertions import Annotations, Match

    stack = _stack()
    _, model = _mps_task(stack)
    model.add_environment("OPENAI_API_KEY", "sk-x")
    model.add_environment("TOKENIZERS_PARALLELISM", "false")
    _synth(stack)
    (warning,) = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("SecretInEnvironment"))
    assert "container model: environment OPENAI_API_KEY looks like a secret" in str(warning.entry.data)


def test_an_option_of_a_type_add_container_does_not_take_is_refused_naming_the_container() -> None:
    td = SharedGpuTaskDefinition(_stack(), "Td")
    with pytest.raises(
        TaskDefinitionError, match=r"Test/Td/model: a value passed on to .*type of argument port_mappings"
    ):
        td.add_container("model", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(1000), port_mappings=[8080])


# --- a shared-GPU task definition whose containers take no GPU --------------------------------------


def _no_gpu_warnings(stack: cdk.Stack) -> list[Any]:
    return [
        m
        for m in _synth(stack).messages
        if m.level == cxapi.SynthesisMessageLevel.WARNING and "so ECS assigns the task no GPU" in str(m.entry.data)
    ]


@pytest.mark.parametrize(
    ("gpu", "warned"),
    [
        ({"gpu": MpsShare(2048)}, False),
        ({"gpu_count": 1}, False),
        ({}, True),  # the model's container was given no gpu: ECS assigns the task none
    ],
)
def test_a_task_whose_containers_take_no_gpu_is_warned_of(gpu: dict[str, Any], warned: bool) -> None:
    stack = _stack()
    td = SharedGpuTaskDefinition(stack, "Td")
    td.add_container("model", image=IMAGE, memory_limit_mib=512, user="1000", **gpu)
    td.add_container("sidecar", image=IMAGE, memory_limit_mib=128, user="1000")
    found = _no_gpu_warnings(stack)
    assert bool(found) is warned
    if warned:
        (message,) = found
        text = str(message.entry.data)
        assert message.id == "/Test/Td"
        assert "gpu=MpsShare" in text and "Ec2TaskDefinition" in text and "agent/api/task/task.go" in text


@pytest.mark.parametrize("acknowledged", [False, True])
def test_no_gpu_can_be_acknowledged_with_a_reason(acknowledged: bool) -> None:
    stack = _stack()
    told = SharedGpuTaskDefinition(stack, "Told")
    told.add_container("router", image=IMAGE, memory_limit_mib=512, user="1000")
    if acknowledged:
        FleetPlan.of(stack).acknowledge(told, "ecs-gpu-sharing:TaskTakesNoGpu", "a router beside the models")
    assert bool(_no_gpu_warnings(stack)) is not acknowledged


def test_a_managed_instances_task_taking_no_gpu_is_pointed_at_its_own_plain_task_definition() -> None:
    """On Managed Instances a task that needs no GPU is an aws_ecs.TaskDefinition of that compatibility, not an
    Ec2TaskDefinition: the warning names the one that runs there."""
    stack = _stack()
    td = SharedGpuManagedInstancesTaskDefinition(stack, "Mi", cpu="1024", memory_mib="2048")
    td.add_container("model", image=IMAGE, memory_limit_mib=512, user="1000")
    (message,) = _no_gpu_warnings(stack)
    text = str(message.entry.data)
    assert "Compatibility.MANAGED_INSTANCES" in text and "Ec2TaskDefinition" not in text


def test_a_task_without_containers_is_not_told_it_takes_no_gpu() -> None:
    assert no_gpu_taken([], "aws_ecs.Ec2TaskDefinition") is None
