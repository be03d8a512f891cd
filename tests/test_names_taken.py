"""Names the stacks would create that the account has already, which CloudFormation refuses. ``fleet namespace`` (and
``stacks names``): a fleet in an existing VPC makes its Service Connect namespace there only where no private hosted
zone of that name is associated with the VPC (Route 53 refuses the one Cloud Map would make: ConflictingDomainExists).
``stacks names``: a log group named before deploy that the account has (one kept from an earlier deploy). moto serves
the VPC, its zones and the log groups; botocore's Stubber serves the case moto cannot build, a namespace the fleet's
own deployed cluster stack made (moto's CloudFormation has no model of it, and moto's namespace zone is not the
VPC's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.operations import deployed, names_taken, namespace_zone

from conftest import write_assembly

ACCOUNT = "123456789012"  # moto's


def _fleet(tmp_path: Path, vpc_id: str | None, namespace: str | None = "models.internal") -> Path:
    lines = ['name = "ns"']
    if vpc_id:
        lines += [f'vpc_id = "{vpc_id}"', f'account = "{ACCOUNT}"', 'region = "us-east-1"']
    if namespace:
        lines.append(f'service_connect_namespace = "{namespace}"')
    lines += [
        '[capacity.gpu]\ninstance_types = ["g6.2xlarge"]',
        '[service.m]\ncapacity = "gpu"\nimage = "r/m:1"\ndesired_count = 1\ncpu_units = 256\nmemory_mib = 512',
        "gpu_budget_mib = 1024\nport = 8080",
    ]
    path = tmp_path / "fleet.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _vpc_with_zone(name: str) -> tuple[str, str]:
    """A VPC, and a private hosted zone ``name`` associated with it (another team's): their ids."""
    vpc = boto3.client("ec2", region_name="us-east-1").create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    zone = boto3.client("route53", region_name="us-east-1").create_hosted_zone(
        Name=name,
        CallerReference=name,
        VPC={"VPCRegion": "us-east-1", "VPCId": vpc},
        HostedZoneConfig={"PrivateZone": True},
    )["HostedZone"]["Id"]
    return vpc, zone.rsplit("/", 1)[-1]


@mock_aws
def test_a_namespace_whose_name_a_zone_of_the_vpc_has_is_refused(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The zone's name in another case, with Route 53's trailing dot: the same DNS name."""
    vpc, zone = _vpc_with_zone("Models.Internal.")
    assert main(["fleet", "namespace", str(_fleet(tmp_path, vpc))]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"service_connect_namespace models.internal: taken in {vpc}\n")
    assert f"already has a private hosted zone of that name ({zone}): Route 53 refuses" in out
    assert "(ConflictingDomainExists), and the cluster stack would roll back" in out
    assert main(["fleet", "namespace", str(_fleet(tmp_path, vpc)), "--json"]) == 1
    (found,) = json.loads(capsys.readouterr().out)
    assert found["conflicting_zones"] == [zone] and found["own_zone"] is None


@mock_aws
def test_a_namespace_no_zone_of_the_vpc_has_is_free(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vpc, _ = _vpc_with_zone("internal")  # another name: no conflict (models.internal is not internal)
    assert main(["fleet", "namespace", str(_fleet(tmp_path, vpc))]) == 0
    assert capsys.readouterr().out.strip() == f"service_connect_namespace models.internal: free in {vpc}"


@pytest.mark.parametrize(("vpc", "namespace"), [(None, "models.internal"), ("vpc-0123456789abcdef0", None)])
@mock_aws
def test_a_fleet_that_makes_its_vpc_or_has_no_namespace_has_nothing_to_check(
    vpc: str | None, namespace: str | None, fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fleet", "namespace", str(_fleet(tmp_path, vpc, namespace))]) == 0
    assert capsys.readouterr().out.strip() == "no Service Connect namespace in an existing VPC"


def _stubbed(service: str) -> Any:
    return boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def test_the_namespace_the_fleets_own_cluster_stack_made_is_kept(tmp_path: Path) -> None:
    """An update: the VPC holds the zone of the namespace the cluster stack made (ns-own, zone Z0WN), kept; a second
    zone of the same name, another's, is still a conflict."""
    spec = fleet.load(_fleet(tmp_path, "vpc-0123456789abcdef0"))
    route53, cfn, sd = _stubbed("route53"), _stubbed("cloudformation"), _stubbed("servicediscovery")
    clients = {"route53": route53, "cloudformation": cfn, "servicediscovery": sd}
    cloud_map, team = {"OwningService": "servicediscovery.amazonaws.com"}, {"OwningAccount": ACCOUNT}
    zones = [
        {"HostedZoneId": "Z0WN", "Name": "models.internal.", "Owner": cloud_map},
        {"HostedZoneId": "Z0THER", "Name": "other.", "Owner": team},
    ]
    stack = spec.stack_name("cluster")
    resources = {
        "StackResourceSummaries": [
            {
                "LogicalResourceId": "ClusterDefaultServiceDiscoveryNamespace",
                "PhysicalResourceId": "ns-own",
                "ResourceType": "AWS::ServiceDiscovery::PrivateDnsNamespace",
                "LastUpdatedTimestamp": "2026-12-01T00:00:00Z",
                "ResourceStatus": "CREATE_COMPLETE",
            }
        ]
    }
    namespaces = {
        "Namespaces": [
            {"Id": "ns-other", "Name": "models.internal", "Properties": {"DnsProperties": {"HostedZoneId": "Z9"}}},
            {"Id": "ns-own", "Name": "models.internal", "Properties": {"DnsProperties": {"HostedZoneId": "Z0WN"}}},
        ]
    }
    by_vpc = {"VPCId": "vpc-0123456789abcdef0", "VPCRegion": "us-east-1"}
    with Stubber(route53) as r, Stubber(cfn) as c, Stubber(sd) as s:
        for extra in ([], [{"HostedZoneId": "Z2", "Name": "models.internal.", "Owner": team}]):
            r.add_response(
                "list_hosted_zones_by_vpc", {"HostedZoneSummaries": zones + extra, "MaxItems": "100"}, by_vpc
            )
            c.add_response("list_stack_resources", resources, {"StackName": stack})
            s.add_response("list_namespaces", namespaces, None)
        (kept,) = namespace_zone.check(lambda service, region: clients[service], "us-east-1", spec)
        (taken,) = namespace_zone.check(lambda service, region: clients[service], "us-east-1", spec)
    assert kept.problem is None and kept.own_zone == "Z0WN"
    assert kept.line().endswith("free in vpc-0123456789abcdef0 (the one its stack made, zone Z0WN, is kept)")
    assert taken.conflicts == ("Z2",) and "(Z2)" in (taken.problem or "")


NET = {  # another stack of the app: a VPC it makes, exported
    "Resources": {"Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.2.0.0/16"}}},
    "Outputs": {"VpcId": {"Value": {"Ref": "Vpc"}, "Export": {"Name": "net-vpc"}}},
}


def _assembly(tmp_path: Path, resources: dict[str, Any]) -> Path:
    out = write_assembly(tmp_path / "cdk.out", {"Models": {"Resources": resources}, "Net": NET})
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["artifacts"]["Models"]["environment"] = f"aws://{ACCOUNT}/us-east-1"
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def _namespace(vpc: Any, name: Any = "models.internal") -> dict[str, Any]:
    return {"Type": namespace_zone.PRIVATE_DNS_NAMESPACE, "Properties": {"Name": name, "Vpc": vpc}}


@mock_aws
def test_stacks_names_reads_each_namespace_of_cdk_out_in_a_looked_up_vpc(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A looked-up VPC (its id written literally) is checked; a VPC of the app's templates, in the namespace's own or
    read from another stack's output, is new (or the one it was made in) and is not; one another app exports is
    known only at deploy, and said so."""
    vpc, zone = _vpc_with_zone("models.internal")
    (tmp_path / "cdk.out").mkdir()
    out = _assembly(
        tmp_path,
        {
            "Looked": _namespace(vpc),
            "Made": _namespace({"Ref": "Vpc"}, "made.internal"),
            "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.1.0.0/16"}},
            "Imported": _namespace({"Fn::ImportValue": "shared-vpc"}, "imported.internal"),
            "AcrossStacks": _namespace({"Fn::ImportValue": "net-vpc"}, "across.internal"),
        },
    )
    assert main(["stacks", "names", "--cdk-out", str(out)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Models/Looked: namespace models.internal: taken in {vpc}"
    assert f"({zone}): Route 53 refuses" in lines[1]
    assert lines[2:] == ["Models/Imported: not checked: its name or VPC is known only at deploy"]


@mock_aws
def test_stacks_names_with_no_namespace_in_an_existing_vpc_and_no_named_log_group_passes(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cdk.out").mkdir()
    resources = {"Ns": _namespace({"Ref": "Vpc"}), "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {}}}
    assert main(["stacks", "names", "--cdk-out", str(_assembly(tmp_path, resources))]) == 0
    assert (
        capsys.readouterr().out.strip()
        == "the stacks name nothing before deploy that could be taken (no named resource it reads, no namespace)"
    )


def test_a_nested_stacks_deployed_namespace_is_found_through_its_parent() -> None:
    cfn = _stubbed("cloudformation")
    parent_arn = "arn:aws:cloudformation:us-east-1:123456789012:stack/Models-Net-1/abc"

    def summary(logical: str, physical: str, kind: str) -> dict[str, Any]:
        return {
            "LogicalResourceId": logical,
            "PhysicalResourceId": physical,
            "ResourceType": kind,
            "LastUpdatedTimestamp": "2026-12-01T00:00:00Z",
            "ResourceStatus": "CREATE_COMPLETE",
        }

    with Stubber(cfn) as stub:
        stub.add_response(
            "list_stack_resources",
            {"StackResourceSummaries": [summary("Net", parent_arn, "AWS::CloudFormation::Stack")]},
            {"StackName": "Models"},
        )
        stub.add_response(
            "list_stack_resources",
            {"StackResourceSummaries": [summary("Ns", "ns-nested", namespace_zone.PRIVATE_DNS_NAMESPACE)]},
            {"StackName": parent_arn},
        )
        assert deployed.deployed_ids(cfn, "Models/Net") == {"Ns": "ns-nested"}


def _log_group(name: Any) -> dict[str, Any]:
    return {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": name}}


@mock_aws
def test_a_log_group_kept_from_an_earlier_deploy_is_a_name_taken(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Named literally, with pseudo parameters (filled as the deploy will) or after a cluster named in code, the
    account's log group of that name is refused; one named after a resource of the templates whose name CloudFormation
    makes (a generated cluster name) is new with it and not read."""
    logs = boto3.client("logs", region_name="us-east-1")
    logs.create_log_group(logGroupName="/models/us-east-1/evidence")
    logs.create_log_group(logGroupName="/ecs-gpu-sharing/evidence/models")
    (tmp_path / "cdk.out").mkdir()
    resources = {
        "Kept": _log_group({"Fn::Sub": "/models/${AWS::Region}/evidence"}),
        "Free": _log_group("/models/other"),
        "Generated": _log_group({"Fn::Join": ["", ["/x/", {"Ref": "Cluster"}]]}),
        "Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {}},
        # GpuTelemetry's evidence log group of a cluster named in code: aws-ecs writes its name as a Ref
        "Evidence": _log_group({"Fn::Join": ["", ["/ecs-gpu-sharing/evidence/", {"Ref": "NamedCluster"}]]}),
        "NamedCluster": {"Type": "AWS::ECS::Cluster", "Properties": {"ClusterName": "models"}},
    }
    assert main(["stacks", "names", "--cdk-out", str(_assembly(tmp_path, resources))]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "Models/Evidence: log group /ecs-gpu-sharing/evidence/models: taken in us-east-1",
        "Models/Free: log group /models/other: free in us-east-1",
        "Models/Kept: log group /models/us-east-1/evidence: taken in us-east-1",
    ]
    assert lines[3].startswith("Models/Evidence: the log group '/ecs-gpu-sharing/evidence/models' exists in us-east-1")
    assert lines[4].startswith("Models/Kept: the log group '/models/us-east-1/evidence' exists in us-east-1 outside")
    assert "CloudFormation would refuse to create it and roll the stack back" in lines[4] and len(lines) == 5


@mock_aws
def test_a_log_group_the_deployed_stack_holds_is_its_own(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An update: the deployed stack made the log group under the same logical id (moto's CloudFormation makes it)."""
    template = {"Resources": {"Kept": _log_group("/models/evidence")}}
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="Models", TemplateBody=json.dumps(template)
    )
    (tmp_path / "cdk.out").mkdir()
    assert main(["stacks", "names", "--cdk-out", str(_assembly(tmp_path, template["Resources"]))]) == 0
    assert (
        capsys.readouterr().out.strip()
        == "Models/Kept: log group /models/evidence: the deployed stack's own in us-east-1"
    )


@mock_aws
def test_a_role_or_instance_profile_of_a_name_the_account_has_is_a_name_taken(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """IAM's names are the account's in every region: a role of the name (made by hand, or by the same app in another
    region) is taken; an instance profile of a free name is not; one the deployed stack made is its own."""
    trust = {"Version": "2012-10-17", "Statement": []}
    boto3.client("iam").create_role(RoleName="team-models-task", AssumeRolePolicyDocument=json.dumps(trust))
    role = {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "team-models-task", "AssumeRolePolicyDocument": trust}}
    own = {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "team-models-own", "AssumeRolePolicyDocument": trust}}
    profile = {"Type": "AWS::IAM::InstanceProfile", "Properties": {"InstanceProfileName": "team-hosts", "Roles": []}}
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="Models", TemplateBody=json.dumps({"Resources": {"Own": own}})
    )
    (tmp_path / "cdk.out").mkdir()
    resources = {"Task": role, "Own": own, "Hosts": profile}
    assert main(["stacks", "names", "--cdk-out", str(_assembly(tmp_path, resources))]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "Models/Own: role team-models-own: the deployed stack's own in us-east-1",
        "Models/Task: role team-models-task: taken in us-east-1",
        "Models/Hosts: instance profile team-hosts: free in us-east-1",
    ]
    assert lines[3].startswith("Models/Task: the role 'team-models-task' exists in us-east-1 outside the stack (IAM's")
    assert len(lines) == 4


@mock_aws
def test_a_bucket_repository_or_secret_of_a_name_taken_is_refused(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bucket of the name (this account's), a repository kept from an earlier deploy, a secret deleted but inside
    its recovery window: each is taken; a repository of a free name is not."""
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="team-model-weights")
    boto3.client("ecr", region_name="us-east-1").create_repository(repositoryName="team/llm")
    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    secrets.create_secret(Name="team/hf-token", SecretString="x")
    secrets.delete_secret(SecretId="team/hf-token", RecoveryWindowInDays=7)
    (tmp_path / "cdk.out").mkdir()
    resources = {
        "Weights": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "team-model-weights"}},
        "Llm": {"Type": "AWS::ECR::Repository", "Properties": {"RepositoryName": "team/llm"}},
        "Embedder": {"Type": "AWS::ECR::Repository", "Properties": {"RepositoryName": "team/embedder"}},
        "Token": {"Type": "AWS::SecretsManager::Secret", "Properties": {"Name": "team/hf-token"}},
    }
    assert main(["stacks", "names", "--cdk-out", str(_assembly(tmp_path, resources))]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "Models/Weights: bucket team-model-weights: taken in us-east-1",
        "Models/Embedder: repository team/embedder: free in us-east-1",
        "Models/Llm: repository team/llm: taken in us-east-1",
        "Models/Token: secret team/hf-token: taken in us-east-1",
    ]
    assert "a secret deleted keeps its name until its recovery window ends" in lines[-1] and len(lines) == 7


def test_a_bucket_name_another_account_holds_is_taken() -> None:
    """S3 answers HeadBucket 403 for a bucket of another account: its name is taken for every account."""
    s3 = _stubbed("s3")
    with Stubber(s3) as stub:
        stub.add_client_error("head_bucket", "403", "Forbidden", 403, expected_params={"Bucket": "shared-name"})
        stub.add_client_error("head_bucket", "404", "Not Found", 404, expected_params={"Bucket": "free-name"})
        assert names_taken._exists(s3, "AWS::S3::Bucket", "shared-name") is True
        assert names_taken._exists(s3, "AWS::S3::Bucket", "free-name") is False


def test_every_type_named_before_deploy_has_its_word_and_a_service_whose_model_has_its_lookup() -> None:
    """``stacks names`` looks up each type of ``core.outside_names.NAME_PROPERTIES``: a type added there without its
    entry in ``names_taken.KINDS`` would fail at run time, and one looked up in a service whose API has no such call
    would fail in a real account (botocore's own service models)."""
    import botocore.session

    from ecs_gpu_sharing.core.outside_names import NAME_PROPERTIES

    assert set(names_taken.KINDS) == set(NAME_PROPERTIES)
    lookups = {
        "AWS::Logs::LogGroup": "DescribeLogGroups",
        "AWS::IAM::Role": "GetRole",
        "AWS::IAM::InstanceProfile": "GetInstanceProfile",
        "AWS::S3::Bucket": "HeadBucket",
        "AWS::ECR::Repository": "DescribeRepositories",
        "AWS::SecretsManager::Secret": "DescribeSecret",
    }
    session = botocore.session.get_session()
    for kind, entry in names_taken.KINDS.items():
        assert entry.word and entry.why.startswith(" (")
        assert lookups[kind] in session.get_service_model(entry.service).operation_names, kind
