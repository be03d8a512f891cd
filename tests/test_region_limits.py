"""``fleet limits``: what the stacks add that the region counts, against what it holds now and its quotas.

moto holds the region (VPCs, gateways, addresses, load balancers, CloudWatch Logs resource policies, stacks) and
AWS's default VPC quotas; it serves no Service Quotas for EC2 or Elastic Load Balancing, so there botocore's Stubber
answers, checked against the Service Quotas model. Whether the footprint is what the templates create is tested on
the synthesized fleets in ``test_reachability``.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.fleet import footprint as fp
from ecs_gpu_sharing.operations import aws

from conftest import REPO

EXAMPLE = REPO / "fleet.toml"  # a new VPC, one internal ALB, the telemetry
REGION = "us-east-1"


def _quotas(monkeypatch: pytest.MonkeyPatch, values: dict[str, float]) -> Stubber:
    """Service Quotas from a Stubber, in the order the check reads them; every other client is moto's."""
    quotas = boto3.client("service-quotas", region_name=REGION)
    real = aws.client
    monkeypatch.setattr(aws, "client", lambda s, r: quotas if s == "service-quotas" else real(s, r))
    stub = Stubber(quotas)
    for code, value in values.items():
        service = {"L-0263D0A3": "ec2", "L-53DA6B97": "elasticloadbalancing"}.get(code, "vpc")
        stub.add_response(
            "get_service_quota",
            {"Quota": {"ServiceCode": service, "QuotaCode": code, "Value": value}},
            {"ServiceCode": service, "QuotaCode": code},
        )
    return stub


EXAMPLE_QUOTAS = {
    "L-F678F1CE": 5.0,
    "L-A4707A72": 5.0,
    "L-FE5A380F": 5.0,
    "L-0263D0A3": 5.0,
    "L-1B52E74A": 20.0,
    "L-53DA6B97": 50.0,
}


def test_the_footprint_is_each_stacks_share_of_the_regions_quotas() -> None:
    spec = fleet.load(EXAMPLE)
    assert fp.footprint(spec) == {
        "models-network": {
            fp.VPC: 1,
            fp.INTERNET_GATEWAY: 1,
            fp.NAT_GATEWAY: 1,
            fp.ELASTIC_IP: 1,
            fp.GATEWAY_ENDPOINT: 1,
        },
        "models-cluster": {fp.APPLICATION_LOAD_BALANCER: 1, fp.LOGS_RESOURCE_POLICY: 1},
    }
    text = EXAMPLE.read_text().replace('name = "models"', 'name = "models"\ntelemetry = false', 1)
    quiet = fleet.parse(tomllib.loads(text), source="q.toml")
    assert fp.footprint(quiet)["models-cluster"] == {fp.APPLICATION_LOAD_BALANCER: 1}


@mock_aws
def test_fleet_limits_passes_with_room_and_fails_naming_the_full_quota(
    fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with _quotas(monkeypatch, EXAMPLE_QUOTAS):
        assert main(["fleet", "limits", str(EXAMPLE), "--region", REGION]) == 0
    out = capsys.readouterr().out.splitlines()
    # moto's region has its default VPC (and no gateway for it).
    assert out == [
        "VPCs per Region (L-F678F1CE) in us-east-1: 1 in use, the fleet adds 1; quota 5",
        "Internet gateways per Region (L-A4707A72) in us-east-1: 0 in use, the fleet adds 1; quota 5",
        "NAT gateways per Availability Zone (L-FE5A380F) in us-east-1 (us-east-1a): 0 in use, the fleet adds 1; "
        "quota 5",
        "EC2-VPC Elastic IPs (L-0263D0A3) in us-east-1: 0 in use, the fleet adds 1; quota 5",
        "Gateway VPC endpoints per Region (L-1B52E74A) in us-east-1: 0 in use, the fleet adds 1; quota 20",
        "Application Load Balancers per Region (L-53DA6B97) in us-east-1: 0 in use, the fleet adds 1; quota 50",
        "CloudWatch Logs resource policies per Region (fixed) in us-east-1: 0 in use, the fleet adds 1; quota 10",
    ]
    ec2 = boto3.client("ec2", region_name=REGION)
    for n in range(4):
        ec2.create_vpc(CidrBlock=f"10.{n}.0.0/16")
    for _ in range(5):
        ec2.allocate_address(Domain="vpc")
    with _quotas(monkeypatch, EXAMPLE_QUOTAS):
        assert main(["fleet", "limits", str(EXAMPLE), "--region", REGION, "--json"]) == 1
    problems = {r["quota_name"]: r["problem"] for r in json.loads(capsys.readouterr().out) if r["problem"]}
    assert problems == {
        "VPCs per Region": "VPCs per Region (L-F678F1CE) in us-east-1: 5 in use and the fleet adds 1 "
        "(models-network), over the quota of 5; CloudFormation would fail the stack and roll it back: request an "
        "increase in Service Quotas, release unused ones, or name an existing VPC with vpc_id",
        "EC2-VPC Elastic IPs": "EC2-VPC Elastic IPs (L-0263D0A3) in us-east-1: 5 in use and the fleet adds 1 "
        "(models-network), over the quota of 5; CloudFormation would fail the stack and roll it back: request an "
        "increase in Service Quotas, release unused ones, or name an existing VPC with vpc_id",
    }


@mock_aws
def test_what_a_deployed_stack_holds_already_is_not_added_again(
    fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The network stack deployed (here a VPC and its gateway, as moto's CloudFormation makes them): an update adds
    # neither, so a region at its quota of VPCs passes; the stack's NAT gateway and address are still to come.
    template = {
        "Resources": {
            "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.9.0.0/16"}},
            "Gateway": {"Type": "AWS::EC2::InternetGateway"},
        }
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName="models-network", TemplateBody=json.dumps(template)
    )
    ec2 = boto3.client("ec2", region_name=REGION)
    for n in range(3):
        ec2.create_vpc(CidrBlock=f"10.{n}.0.0/16")
    with _quotas(
        monkeypatch,
        {k: v for k, v in EXAMPLE_QUOTAS.items() if k in ("L-FE5A380F", "L-0263D0A3", "L-1B52E74A", "L-53DA6B97")},
    ):
        assert main(["fleet", "limits", str(EXAMPLE), "--region", REGION]) == 0
    out = capsys.readouterr().out
    assert "VPCs per Region" not in out and "Internet gateways" not in out
    assert "EC2-VPC Elastic IPs (L-0263D0A3) in us-east-1: 0 in use, the fleet adds 1; quota 5" in out


@mock_aws
def test_the_ten_log_policies_a_region_holds_fail_a_fleet_with_telemetry(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A fleet in an existing VPC with no balancer: the telemetry's policy is all it adds, and no quota is read.
    path = tmp_path / "fleet.toml"
    path.write_text(
        'name = "t"\naccount = "123456789012"\nregion = "us-east-1"\nvpc_id = "vpc-0123456789abcdef0"\n'
        '[capacity.gpu]\ninstance_types = ["g6.2xlarge"]\n[service.a]\ncapacity = "gpu"\nimage = "i"\n'
        "desired_count = 1\ncpu_units = 256\nmemory_mib = 512\ngpu_budget_mib = 1024\n"
    )
    logs = boto3.client("logs", region_name=REGION)
    for n in range(9):
        logs.put_resource_policy(policyName=f"p{n}", policyDocument="{}")
    assert main(["fleet", "limits", str(path)]) == 0
    assert capsys.readouterr().out.strip() == (
        "CloudWatch Logs resource policies per Region (fixed) in us-east-1: 9 in use, the fleet adds 1; quota 10"
    )
    logs.put_resource_policy(policyName="p9", policyDocument="{}")
    assert main(["fleet", "limits", str(path)]) == 1
    assert (
        "10 in use and the fleet adds 1 (t-cluster), over the quota of 10; CloudFormation would fail the stack and "
        "roll it back: this limit cannot be raised: delete a policy no longer used (aws logs "
        "describe-resource-policies), or set telemetry = false"
    ) in capsys.readouterr().out


@mock_aws
def test_a_quota_the_caller_may_not_read_is_said_and_not_failed(
    fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = _quotas(monkeypatch, {})
    for _ in EXAMPLE_QUOTAS:
        stub.add_client_error("get_service_quota", "AccessDeniedException", "not allowed", 400)
    with stub:
        assert main(["fleet", "limits", str(EXAMPLE), "--region", REGION]) == 0
    out = capsys.readouterr().out
    assert (
        "VPCs per Region (L-F678F1CE) in us-east-1: 1 in use, the fleet adds 1; quota not read: us-east-1: reading "
        "the vpc quota L-F678F1CE: AccessDeniedException: not allowed; grant"
    ) in out
    assert "quota 10" in out  # the log policies' limit is not Service Quotas'
