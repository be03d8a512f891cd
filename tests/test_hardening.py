"""Hardening by default: no privileged containers, no host network, no GPU-steering environment, ECR pulls granted."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Template

from ecs_gpu_sharing import (
    GpuSharingError,
    MpsShare,
    SharedGpuManagedInstancesTaskDefinition,
    SharedGpuTaskDefinition,
    TaskDefinitionError,
)
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.fleet import ecr_image
from ecs_gpu_sharing.core.plan_inputs import from_fleet
from stacks.fleet_app import build_app

from conftest import THREE_MODELS, new_app, plan_only
from validators import cfn_lint_errors, ecs_register_task_definition_errors

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/python:3.12-slim")
DIGEST = "sha256:" + "a" * 64


def _td() -> SharedGpuTaskDefinition:
    return SharedGpuTaskDefinition(cdk.Stack(new_app(), "Test"), "Td")


def test_privileged_containers_are_refused() -> None:
    with pytest.raises(TaskDefinitionError, match=r"Test/Td/model: privileged containers are refused"):
        _td().add_container("model", image=IMAGE, memory_limit_mib=512, privileged=True, gpu=MpsShare(1000))


@pytest.mark.parametrize(
    "name", ["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"]
)
def test_environment_that_steers_the_gpu_is_refused_in_the_api(name: str) -> None:
    with pytest.raises(TaskDefinitionError, match=rf"Test/Td/model: environment {name} would steer the GPU"):
        _td().add_container("model", image=IMAGE, memory_limit_mib=512, environment={name: "0"}, gpu=MpsShare(1000))


@pytest.mark.parametrize("cls", [SharedGpuTaskDefinition, SharedGpuManagedInstancesTaskDefinition])
def test_host_network_mode_is_refused(cls: Any) -> None:
    with pytest.raises(TaskDefinitionError, match=r"Test/Td: network_mode HOST is refused"):
        cls(cdk.Stack(new_app(), "Test"), "Td", network_mode=ecs.NetworkMode.HOST)


@pytest.mark.parametrize(
    ("image", "from_hub"),
    [
        ("vllm/vllm-openai:v0.11.0", True),
        ("python:3.12", True),
        ("docker.io/library/python", True),
        ("registry-1.docker.io/vllm/vllm-openai@sha256:" + "0" * 64, True),
        ("my-team/model", True),  # a Docker Hub account, as Docker reads it
        ("public.ecr.aws/docker/library/python:3.12-slim", False),
        ("ghcr.io/huggingface/text-embeddings-inference:1.8", False),
        ("123456789012.dkr.ecr.us-east-1.amazonaws.com/team/chat", False),
        ("localhost/model", False),
        ("registry:5000/model", False),
    ],
)
def test_docker_hub_is_read_from_an_image_name_as_docker_reads_it(image: str, from_hub: bool) -> None:
    from ecs_gpu_sharing.core.hardening import docker_hub

    assert docker_hub(image) is from_hub


def test_ecr_images_are_parsed_to_their_repository() -> None:
    ref = ecr_image(f"123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/embedder@{DIGEST}")
    assert ref is not None and (ref.repository, ref.reference) == ("team/embedder", DIGEST)
    assert ref.repository_arn == "arn:aws:ecr:eu-west-1:123456789012:repository/team/embedder"
    assert ecr_image("123456789012.dkr.ecr.us-east-1.amazonaws.com/llm:v2").reference == "v2"  # type: ignore[union-attr]
    assert ecr_image("public.ecr.aws/docker/library/python:3.12-slim") is None


@pytest.fixture(scope="module")
def ecr_fleet() -> dict[str, Any]:
    text = THREE_MODELS.read_text().replace(
        'image = "public.ecr.aws/docker/library/python:3.12-slim"',
        f'image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/models/embedder@{DIGEST}"',
        1,
    )
    # A secret in plain environment, as a hurried team would write it (section 3 of #22).
    text = text.replace(
        'environment = { MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }',
        'environment = { MODEL_ID = "Qwen/Qwen2.5-3B-Instruct", HF_TOKEN = "hf_abc", TOKENIZERS_PARALLELISM = "1" }',
        1,
    )
    # Root stated explicitly is still root (section 4).
    text = text.replace(
        'environment = { MODEL_ID = "BAAI/bge-reranker-base" }',
        'environment = { MODEL_ID = "BAAI/bge-reranker-base" }\nuser = "0:0"',
        1,
    )
    app = new_app()
    stacks = build_app(app, fleet.parse(tomllib.loads(text), source="ecr.toml"))  # cdk-nag runs at synth
    assembly = app.synth()
    return {
        "services": Template.from_json(assembly.get_stack_artifact(stacks.services[0].artifact_id).template),
        "cluster": Template.from_json(assembly.get_stack_artifact(stacks.cluster.artifact_id).template),
        "stacks": stacks,
    }


def test_a_secret_looking_environment_name_warns_and_loses_the_non_secret_acknowledgment(
    ecr_fleet: dict[str, Any],
) -> None:
    from aws_cdk.assertions import Annotations, Match

    (stack,) = ecr_fleet["stacks"].services
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("SecretInEnvironment"))
    assert len(warnings) == 1
    message = str(warnings[0].entry.data)
    assert "container model: environment HF_TOKEN looks like a secret" in message and "move it to secrets" in message
    assert warnings[0].id == "/models-services-1/small-llm/Task"
    assert "TOKENIZERS_PARALLELISM" not in message
    key = cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    acknowledged = {
        c.node.path.split("/")[1]: dict(e.data)
        for c in stack.node.find_all()
        for e in c.node.metadata
        if e.type == key and isinstance(e.data, dict) and "AwsSolutions::AwsSolutions-ECS2" in e.data
    }
    # The library's task definitions hand cdk-nag's blanket environment rule to their own, name by name.
    reasons = {name: a["AwsSolutions::AwsSolutions-ECS2"] for name, a in acknowledged.items()}
    assert "small-llm" in reasons
    assert all("judged by ecs-gpu-sharing:SecretInEnvironment" in reason for reason in reasons.values())


def test_root_stated_explicitly_still_warns(ecr_fleet: dict[str, Any]) -> None:
    from aws_cdk.assertions import Annotations, Match

    (stack,) = ecr_fleet["stacks"].services
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("runs as 0:0, which is root"))
    assert [w.id for w in warnings] == ["/models-services-1/reranker/Task"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            'task_role_managed_policies = ["AdministratorAccess"]',
            "task_role_managed_policies AdministratorAccess is refused",
        ),
        ('task_role_managed_policies = ["IAMFullAccess"]', "task_role_managed_policies IAMFullAccess is refused"),
        (
            'task_role_statements = [{ actions = ["iam:*"], resources = ["arn:aws:iam::123456789012:user/x"] }]',
            "action iam:* changes IAM, the task's own role included",
        ),
        (
            'task_role_statements = [{ actions = ["iam:PassRole"], resources = ["arn:aws:iam::123456789012:role/*"] }]',
            "action iam:PassRole on every role lets the task hand any role",
        ),
        (
            'task_role_statements = [{ actions = ["sts:AssumeRole"], resources = ["arn:aws:iam::*:role/admin"] }]',
            "action sts:AssumeRole takes another role's or a federated identity's permissions",
        ),
        (
            'task_role_statements = [{ actions = ["*"], resources = ["arn:aws:s3:::b"] }]',
            "actions item '*' is malformed",
        ),
        ('task_role_statements = [{ actions = [], resources = ["arn:aws:s3:::b"] }]', "actions and resources must"),
        ('task_role_statements = [{ actions = ["s3:GetObject"], resources = [] }]', "actions and resources must each"),
    ],
)
def test_a_task_role_that_could_raise_its_own_permissions_is_refused(edit: str, message: str) -> None:
    text = THREE_MODELS.read_text().replace(
        'environment = { MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }',
        f'environment = {{ MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }}\n{edit}',
        1,
    )
    with pytest.raises(GpuSharingError, match=re.escape(message)):
        fleet.parse(tomllib.loads(text), source="f.toml")


@pytest.mark.parametrize(
    "actions",
    [
        '["iam:PutRolePolicy"]',
        '["iam:Attach*"]',
        '["ssm:SendCommand"]',
        '["ecs:TagResource"]',
        '["iam:PassRole", "lambda:CreateFunction"]',
        "managed AmazonSSMFullAccess",
    ],
)
def test_an_escalating_grant_is_refused_unless_acknowledged_with_a_visible_reason(actions: str) -> None:
    edit = (
        'task_role_managed_policies = ["AmazonSSMFullAccess"]'
        if actions.startswith("managed")
        else f'task_role_statements = [{{ actions = {actions}, resources = ["arn:aws:iam::123456789012:role/x"] }}]'
    )
    base = THREE_MODELS.read_text().replace(
        'environment = { MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }',
        f'environment = {{ MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }}\n{edit}',
        1,
    )
    with pytest.raises(GpuSharingError, match=r"\[ecs-gpu-sharing:TaskRoleEscalation\]"):
        fleet.parse(tomllib.loads(base), source="f.toml")
    blank = base.replace(edit, edit + '\nacknowledge = { "ecs-gpu-sharing:TaskRoleEscalation" = "\u200b" }')
    with pytest.raises(GpuSharingError, match="needs a reason"):
        fleet.parse(tomllib.loads(blank), source="f.toml")
    stated = base.replace(  # iam:Attach* holds a wildcard too: TaskRoleWildcard's own acknowledgment (tested below)
        edit,
        edit + '\nacknowledge = { "ecs-gpu-sharing:TaskRoleEscalation" = "the launcher", '
        '"ecs-gpu-sharing:TaskRoleWildcard" = "the launcher" }',
    )
    spec = fleet.parse(tomllib.loads(stated), source="f.toml")
    assert any(s.acknowledge.get("ecs-gpu-sharing:TaskRoleEscalation") for s in spec.services.values())


WILDCARD = 'task_role_statements = [{ actions = ["s3:Get*"], resources = ["arn:aws:s3:::team-configs/prompts/*"] }]'


def _with_statement(extra: str = "") -> str:
    return THREE_MODELS.read_text().replace(
        'environment = { MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }',
        f'environment = {{ MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }}\n{WILDCARD}{extra}',
        1,
    )


def test_a_wildcard_statement_is_refused_unless_acknowledged_with_a_visible_reason() -> None:
    """A wildcard in task_role_statements fails the deployable app's cdk-nag check (AwsSolutions-IAM5): the parser
    names each finding and the way out; acknowledged with a reason, the file parses."""
    with pytest.raises(GpuSharingError) as refused:
        fleet.parse(tomllib.loads(_with_statement()), source="f.toml")
    assert "[ecs-gpu-sharing:TaskRoleWildcard]" in str(refused.value)
    assert "Action::s3:Get*, Resource::arn:aws:s3:::team-configs/prompts/*" in str(refused.value)
    blank = _with_statement('\nacknowledge = { "ecs-gpu-sharing:TaskRoleWildcard" = " " }')
    with pytest.raises(GpuSharingError, match="needs a reason"):
        fleet.parse(tomllib.loads(blank), source="f.toml")
    fleet.parse(
        tomllib.loads(_with_statement('\nacknowledge = { "ecs-gpu-sharing:TaskRoleWildcard" = "r" }')), source="f"
    )


def test_an_acknowledged_wildcard_statement_passes_cdk_nag_with_the_fleet_files_reason() -> None:
    """cdk-nag runs at every synth of the deployable app: each IAM5 finding of the statement is acknowledged with the
    reason the fleet file gave (without it, the synth fails on them)."""
    text = _with_statement('\nacknowledge = { "ecs-gpu-sharing:TaskRoleWildcard" = "the prompt templates" }')
    app = new_app()
    stacks = build_app(app, fleet.parse(tomllib.loads(text), source="wildcard.toml"))
    assembly = app.synth()
    template = assembly.get_stack_artifact(stacks.services[0].artifact_id).template
    policies = [r for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy"]
    assert any(s.get("Action") == "s3:Get*" for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"])
    report = (Path(assembly.directory) / "validation-report.json").read_text()
    for finding in ("Action::s3:Get*", "Resource::arn:aws:s3:::team-configs/prompts/*"):
        assert f'"acknowledgedId": "AwsSolutions::AwsSolutions-IAM5[{finding}]"' in report
    assert "acknowledged there: the prompt templates" in report


def test_a_pass_role_on_one_role_is_accepted() -> None:
    edit = 'task_role_statements = [{ actions = ["iam:PassRole"], resources = ["arn:aws:iam::123456789012:role/x"] }]'
    text = THREE_MODELS.read_text().replace(
        'environment = { MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }',
        f'environment = {{ MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }}\n{edit}',
        1,
    )
    fleet.parse(tomllib.loads(text), source="f.toml")


def test_a_private_ecr_image_gets_pull_rights_on_its_repository_only(ecr_fleet: dict[str, Any]) -> None:
    policies = ecr_fleet["services"].find_resources("AWS::IAM::Policy")
    statements = [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]
    pulls = [s for s in statements if "ecr:BatchGetImage" in json.dumps(s["Action"])]
    assert pulls and all("repository/models/embedder" in json.dumps(s["Resource"]) for s in pulls)
    tasks = ecr_fleet["services"].find_resources("AWS::ECS::TaskDefinition")
    (embedder,) = [t for name, t in tasks.items() if name.startswith("embedder")]
    image = json.dumps(embedder["Properties"]["ContainerDefinitions"][0]["Image"])
    assert f"/models/embedder@{DIGEST}" in image and "123456789012.dkr.ecr.us-east-1." in image


def test_hosts_refuse_privileged_containers(ecr_fleet: dict[str, Any]) -> None:
    templates = ecr_fleet["cluster"].find_resources("AWS::EC2::LaunchTemplate")
    user_data = json.dumps([t["Properties"]["LaunchTemplateData"]["UserData"] for t in templates.values()])
    assert "ECS_DISABLE_PRIVILEGED=true" in user_data and "ECS_AWSVPC_BLOCK_IMDS=true" in user_data


PLATFORM = THREE_MODELS.read_text().replace(
    'environment = { MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }',
    """environment = { MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }
command = ["vllm", "serve", "Qwen/Qwen2.5-3B-Instruct", "--port", "8000"]
health_check = ["CMD-SHELL", "curl -f http://localhost:8000/health || exit 1"]
shm_size_mib = 8192
stop_timeout_seconds = 60
secrets = { HF_TOKEN = "secretsmanager:models/hf-token", API_KEY = "ssm:/models/api-key" }
model_bucket = "team-model-weights\"""",
    1,
)


@pytest.fixture(scope="module")
def platform() -> dict[str, Any]:
    app = new_app()
    stacks = build_app(app, fleet.parse(tomllib.loads(PLATFORM), source="platform.toml"))  # cdk-nag runs at synth
    assembly = app.synth()
    return {"template": assembly.get_stack_artifact(stacks.services[0].artifact_id).template}


def test_a_model_server_gets_its_command_health_check_shm_stop_timeout_and_secrets(platform: dict[str, Any]) -> None:
    tasks = platform["template"]["Resources"]
    (llm,) = [
        t for name, t in tasks.items() if name.startswith("smallllmTask") and t["Type"] == "AWS::ECS::TaskDefinition"
    ]
    (container,) = llm["Properties"]["ContainerDefinitions"]
    assert container["Command"][:2] == ["vllm", "serve"]
    assert container["HealthCheck"]["Command"] == ["CMD-SHELL", "curl -f http://localhost:8000/health || exit 1"]
    assert container["LinuxParameters"]["SharedMemorySize"] == 8192 and container["StopTimeout"] == 60
    assert sorted(s["Name"] for s in container["Secrets"]) == ["API_KEY", "HF_TOKEN"]
    assert ecs_register_task_definition_errors(llm["Properties"]) == ""
    assert cfn_lint_errors(platform["template"]) == []


def test_secrets_and_the_model_bucket_get_exactly_their_reads(platform: dict[str, Any]) -> None:
    policies = {k: v for k, v in platform["template"]["Resources"].items() if v["Type"] == "AWS::IAM::Policy"}
    text = json.dumps(policies)
    assert "secretsmanager:GetSecretValue" in text and "models/hf-token" in text
    assert "ssm:GetParameters" in text and "parameter/models/api-key" in text
    assert "team-model-weights" in text and "s3:GetObject*" in text


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ('secrets = { HF_TOKEN = "vault:x" }', "service.small-llm.secrets.HF_TOKEN must be 'ssm:/parameter/name'"),
        ('secrets = { MODEL_ID = "ssm:/x" }', "service.small-llm.secrets.MODEL_ID is also in environment"),
        ("stop_timeout_seconds = 600", "stop_timeout_seconds must be from 2 to 120 (ECS's most for stopTimeout)"),
        ('command = ["vllm", 3]', "service.small-llm.command must be a list of non-empty strings"),
    ],
)
def test_platform_keys_are_checked(edit: str, message: str) -> None:
    text = THREE_MODELS.read_text().replace(
        'environment = { MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }',
        f'environment = {{ MODEL_ID = "Qwen/Qwen2.5-3B-Instruct" }}\n{edit}',
        1,
    )
    with pytest.raises(GpuSharingError, match=re.escape(message)):
        fleet.parse(tomllib.loads(text), source="f.toml")


def test_auto_scaling_from_the_fleet_file_is_planned_the_same_by_the_cli_and_synth(tmp_path: Any) -> None:
    from pathlib import Path

    from ecs_gpu_sharing.core.plan_report import document
    from ecs_gpu_sharing.core.rules import assess

    text = THREE_MODELS.read_text().replace(
        "desired_count = 4\n", "desired_count = 4\nmax_tasks = 12\nscale_on_cpu_percent = 60\n", 1
    )
    spec = fleet.parse(tomllib.loads(text), source="scaled.toml")
    cli_plan = document(assess(*from_fleet(spec))).to_json()
    app = new_app()
    stacks = build_app(app, spec)
    assembly = app.synth()
    synth_plan = json.loads((Path(assembly.directory) / "gpu-fleet-plan.json").read_text())
    assert plan_only(synth_plan) == plan_only(cli_plan)
    embedder = {s["name"]: s for s in synth_plan["services"]}["embedder"]
    assert (embedder["tasks"], embedder["count_source"]) == (12, "auto scaling maximum")
    template = Template.from_json(assembly.get_stack_artifact(stacks.services[0].artifact_id).template)
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget", {"MinCapacity": 4, "MaxCapacity": 12}
    )
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 1)


def test_max_tasks_below_the_desired_count_is_refused() -> None:
    text = THREE_MODELS.read_text().replace("desired_count = 4\n", "desired_count = 4\nmax_tasks = 2\n", 1)
    with pytest.raises(GpuSharingError, match=r"service\.embedder\.max_tasks 2 is below desired_count 4"):
        fleet.parse(tomllib.loads(text), source="f.toml")
