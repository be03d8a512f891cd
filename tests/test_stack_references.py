"""What a CDK app's task definitions name outside their templates (core.outside_names), and ``stacks references``,
which looks each one up (moto)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core.outside_names import outside_names

from conftest import write_assembly

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's
PSEUDO = {"AWS::AccountId": ACCOUNT, "AWS::Region": REGION, "AWS::URLSuffix": "amazonaws.com", "AWS::Partition": "aws"}
ECR = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/models/embed"


def _task(*containers: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    resources = {"Td": {"Type": "AWS::ECS::TaskDefinition", "Properties": {"ContainerDefinitions": list(containers)}}}
    return {"Resources": {**resources, **(extra or {})}}


def _logs(group: Any, **options: str) -> dict[str, Any]:
    return {"LogDriver": "awslogs", "Options": {"awslogs-group": group, "awslogs-stream-prefix": "m", **options}}


def _names(template: dict[str, Any], pseudo: dict[str, str] | None = None) -> list[tuple[str, str, str | None]]:
    return [
        (n.kind, n.name, n.region) for n in outside_names({"s": template}, {"s": PSEUDO if pseudo is None else pseudo})
    ]


@pytest.mark.parametrize(
    ("container", "named"),
    [
        ({"Name": "m", "Image": f"{ECR}:1.4"}, [("image", f"{ECR}:1.4", REGION)]),
        ({"Name": "m", "Image": "ghcr.io/huggingface/text-embeddings-inference:1.8"}, []),  # not ECR: not looked up
        # aws-ecs's ContainerImage.from_ecr_repository of an imported repository, filled in with the caller's account
        (
            {
                "Name": "m",
                "Image": {
                    "Fn::Join": [
                        "",
                        [
                            {"Ref": "AWS::AccountId"},
                            ".dkr.ecr.",
                            {"Ref": "AWS::Region"},
                            ".",
                            {"Ref": "AWS::URLSuffix"},
                            "/models/embed:1.4",
                        ],
                    ]
                },
            },
            [("image", f"{ECR}:1.4", REGION)],
        ),
        (
            {
                "Name": "m",
                "Image": "x",
                "Secrets": [
                    {
                        "Name": "TOKEN",
                        "ValueFrom": f"arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:hf-AbCdEf:token::",
                    },
                    {"Name": "A", "ValueFrom": "/models/a"},
                    {"Name": "B", "ValueFrom": f"arn:aws:ssm:eu-west-1:{ACCOUNT}:parameter/models/b"},
                    {"Name": "C", "ValueFrom": {"Ref": "Made"}},  # a resource of the templates
                ],
            },
            [
                ("secret", f"arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:hf-AbCdEf", "eu-west-1"),
                ("parameter", "/models/a", REGION),
                ("parameter", f"arn:aws:ssm:eu-west-1:{ACCOUNT}:parameter/models/b", "eu-west-1"),
            ],
        ),
        ({"Name": "m", "Image": "x", "LogConfiguration": _logs("/ecs/models")}, [("log group", "/ecs/models", REGION)]),
        (
            {"Name": "m", "Image": "x", "LogConfiguration": _logs("/ecs/m", **{"awslogs-region": "eu-west-1"})},
            [("log group", "/ecs/m", "eu-west-1")],
        ),
        ({"Name": "m", "Image": "x", "LogConfiguration": _logs("/ecs/m", **{"awslogs-create-group": "true"})}, []),
        ({"Name": "m", "Image": "x", "LogConfiguration": _logs({"Ref": "Group"})}, []),  # made by the templates
        (
            {"Name": "m", "Image": "x", "LogConfiguration": _logs("/ecs/made")},
            [],
        ),  # a log group of the templates names it
    ],
)
def test_what_a_container_names_outside_the_templates(container: dict[str, Any], named: list[Any]) -> None:
    made = {"Made": {"Type": "AWS::SecretsManager::Secret", "Properties": {}}}
    made["Named"] = {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/ecs/made"}}
    assert _names(_task(container, extra=made)) == named


def test_a_name_that_needs_an_unknown_account_is_not_looked_up() -> None:
    image = {"Fn::Join": ["", [{"Ref": "AWS::AccountId"}, f".dkr.ecr.{REGION}.amazonaws.com/models/embed:1.4"]]}
    assert _names(_task({"Name": "m", "Image": image}), {"AWS::Region": REGION}) == []


@mock_aws
def test_stacks_references_fails_what_the_account_lacks(
    tmp_path: Path, fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    boto3.client("logs", region_name=REGION).create_log_group(logGroupName="/ecs/models")
    boto3.client("ssm", region_name=REGION).put_parameter(Name="/models/a", Value="v", Type="String")
    ecr = boto3.client("ecr", region_name=REGION)
    ecr.create_repository(repositoryName="models/embed")
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"})
    ecr.put_image(repositoryName="models/embed", imageManifest=manifest, imageTag="1.4")
    template = _task(
        {
            "Name": "model",
            "Image": f"{ECR}:1.4",
            "Secrets": [{"Name": "A", "ValueFrom": "/models/a"}, {"Name": "B", "ValueFrom": "/models/b"}],
            "LogConfiguration": _logs("/ecs/models"),
        },
        {"Name": "side", "Image": f"{ECR}:2.0", "LogConfiguration": _logs("/ecs/side")},
    )
    cdk_out = write_assembly(tmp_path, {"models": template})
    assert main(["stacks", "references", "--cdk-out", str(cdk_out), "--region", REGION]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        f"models/Td container model: image {ECR}:1.4: found",
        "models/Td container model: parameter /models/a: found",
        "models/Td container model: parameter /models/b: no SSM parameter '/models/b' in us-east-1: the task would "
        "not start",
    ]
    assert out[3] == "models/Td container model: log group /ecs/models: found"
    assert out[4].startswith(f"models/Td container side: image {ECR}:2.0: no image 2.0")
    assert out[5].startswith("models/Td container side: log group /ecs/side: no log group '/ecs/side' in us-east-1")


@mock_aws
def test_an_image_asset_the_deploy_publishes_first_is_not_looked_up(
    tmp_path: Path, fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_ecs as ecs

    source = tmp_path / "image"
    source.mkdir()
    (source / "Dockerfile").write_text("FROM scratch\n")
    app = cdk.App(outdir=str(tmp_path / "cdk.out"))
    task = ecs.Ec2TaskDefinition(cdk.Stack(app, "Models"), "Td")
    task.add_container(
        "model",
        image=ecs.ContainerImage.from_asset(str(source)),
        memory_limit_mib=512,
        logging=ecs.GenericLogDriver(log_driver="awslogs", options={"awslogs-group": "/ecs/models"}),
    )
    app.synth()
    assert main(["stacks", "references", "--cdk-out", str(tmp_path / "cdk.out"), "--region", REGION]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "container model: log group /ecs/models: no log group" in out[0]  # the image is not there


def _role(*arns: Any) -> dict[str, Any]:
    return {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}, "ManagedPolicyArns": list(arns)}}


def _aws_policy(name: str) -> dict[str, Any]:
    """An AWS managed policy's ARN as aws-iam writes it (ManagedPolicy.from_aws_managed_policy_name)."""
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":iam::aws:policy/{name}"]]}


def test_the_aws_managed_policies_a_role_attaches_are_named_and_others_are_not() -> None:
    made = {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": {}}}
    template = _task(
        {"Name": "m", "Image": "ghcr.io/x/y:1"},
        extra={
            "Role": _role(
                _aws_policy("AmazonBedrockReadOnly"),
                "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy",
                {"Ref": "Made"},  # one the templates make
                f"arn:aws:iam::{ACCOUNT}:policy/team-policy",  # a customer's: not AWS's list
            ),
            "Made": made,
        },
    )
    assert [n for n in _names(template) if n[0] == "policy"] == [
        ("policy", "arn:aws:iam::aws:policy/AmazonBedrockReadOnly", None),
        ("policy", "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy", None),
    ]
    # The partition not known, the ARN that reads it is not looked up; one written whole is.
    assert _names(template, {"AWS::Region": REGION}) == [
        ("policy", "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy", None)
    ]


def test_stacks_references_fails_an_aws_managed_policy_that_does_not_exist(
    tmp_path: Path, fake_credentials: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")  # moto's copy of AWS's managed policies
    template = {
        "Resources": {"Role": _role(_aws_policy("AmazonBedrockReadOnly"), _aws_policy("AmazonBedrockReadOnlyy"))}
    }
    cdk_out = write_assembly(tmp_path, {"models": template})
    with mock_aws():
        assert main(["stacks", "references", "--cdk-out", str(cdk_out), "--region", REGION]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "models/Role: policy arn:aws:iam::aws:policy/AmazonBedrockReadOnly: found",
        "models/Role: policy arn:aws:iam::aws:policy/AmazonBedrockReadOnlyy: no AWS managed policy "
        "AmazonBedrockReadOnlyy: IAM would refuse the role and the stack would not deploy; check its name in the IAM "
        "console's list of AWS managed policies",
    ]


def _listener(*arns: Any) -> dict[str, Any]:
    certificates = [{"CertificateArn": a} for a in arns]
    return {"Type": "AWS::ElasticLoadBalancingV2::Listener", "Properties": {"Port": 443, "Certificates": certificates}}


def test_a_listeners_certificates_are_named_where_the_templates_do_not_make_them() -> None:
    cert = f"arn:aws:acm:eu-west-1:{ACCOUNT}:certificate/0a1b2c3d-1111-2222-3333-444455556666"
    extra = {
        "Listener": _listener(cert, {"Ref": "Made"}),
        "More": {
            "Type": "AWS::ElasticLoadBalancingV2::ListenerCertificate",
            "Properties": {"ListenerArn": {"Ref": "Listener"}, "Certificates": [{"CertificateArn": cert}]},
        },
        "Made": {"Type": "AWS::CertificateManager::Certificate", "Properties": {"DomainName": "models.example.com"}},
    }
    named = [n for n in _names(_task({"Name": "m", "Image": "ghcr.io/x/y:1"}, extra=extra)) if n[0] == "certificate"]
    assert named == [("certificate", cert, "eu-west-1"), ("certificate", cert, "eu-west-1")]


@mock_aws
def test_stacks_references_fails_a_listener_certificate_that_is_not_issued(
    tmp_path: Path, fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    acm = boto3.client("acm", region_name=REGION)
    pending = acm.request_certificate(DomainName="models.example.com", ValidationMethod="DNS")["CertificateArn"]
    cdk_out = write_assembly(tmp_path, {"models": {"Resources": {"Listener": _listener(pending)}}})
    assert main(["stacks", "references", "--cdk-out", str(cdk_out), "--region", REGION]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"models/Listener: certificate {pending}: its status is PENDING_VALIDATION, not ISSUED: ELB would create no "
        "listener with it and the stack would not deploy; finish its validation (or import it again) first"
    ]
