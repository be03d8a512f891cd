"""``stacks quotas`` and ``stacks zones``: a CDK app's GPU Auto Scaling groups against the account: at their MaxSize,
its On-Demand vCPU quotas (Service Quotas stubbed with botocore's Stubber); in their subnets' zones, EC2's offerings
(moto)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.operations import aws
from ecs_gpu_sharing.operations.vcpu_quotas import needed_by_groups

from conftest import write_assembly


def _group(lid: str, most: Any, template: str | None = None, overrides: list[str] | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {"MinSize": "0", "MaxSize": most}
    if overrides is not None:
        props["MixedInstancesPolicy"] = {
            "LaunchTemplate": {
                "LaunchTemplateSpecification": {"LaunchTemplateId": {"Ref": template}},
                "Overrides": [{"InstanceType": t} for t in overrides],
            }
        }
    else:
        props["LaunchTemplate"] = {"LaunchTemplateId": {"Ref": template}, "Version": "1"}
    return {lid: {"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": props}}


def _launch(lid: str, kind: str) -> dict[str, Any]:
    return {lid: {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {"InstanceType": kind}}}}


TEMPLATE = {
    "Resources": {
        **_launch("L4Template", "g6.2xlarge"),
        **_group("L4", "4", "L4Template"),
        **_launch("BigTemplate", "g6e.12xlarge"),
        **_group("Big", 2, "BigTemplate", overrides=["g6e.12xlarge", "g6e.24xlarge"]),
        **_launch("H100Template", "p5.48xlarge"),
        **_group("H100", "1", "H100Template"),
        **_launch("WebTemplate", "m7i.large"),
        **_group("Web", "10", "WebTemplate"),  # no GPU: another quota, not judged
        **_group("Sized", {"Ref": "MaxHosts"}, "L4Template"),
    }
}


def test_each_gpu_group_counts_its_largest_type_at_its_max_size() -> None:
    needs, skipped = needed_by_groups({"s": TEMPLATE})
    assert needs == {
        "L-DB2E81BA": (4 * 8 + 2 * 96, ["s/Big 2 x 96", "s/L4 4 x 8"]),
        "L-417A185B": (192, ["s/H100 1 x 192"]),
    }
    assert skipped == ["s/Sized: not counted: its MaxSize is not a number"]


def _quota(code: str, value: float) -> dict[str, Any]:
    return {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": code, "Value": value}}


def test_stacks_quotas_fails_a_class_past_the_accounts_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cdk_out = write_assembly(tmp_path, {"s": TEMPLATE})
    quotas = boto3.client("service-quotas", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    monkeypatch.setattr(aws, "client", lambda service, region: quotas)
    with Stubber(quotas) as stub:
        stub.add_response(
            "get_service_quota", _quota("L-417A185B", 192.0), {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"}
        )
        stub.add_response(
            "get_service_quota", _quota("L-DB2E81BA", 64.0), {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"}
        )
        assert main(["stacks", "quotas", "--cdk-out", str(cdk_out), "--region", "us-east-1", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(q["quota_code"], q["needed_vcpus"], q["quota_vcpus"], bool(q["problem"])) for q in report["quotas"]] == [
        ("L-417A185B", 192, 192.0, False),
        ("L-DB2E81BA", 224, 64.0, True),
    ]
    assert "the stacks' Auto Scaling groups need 224" in report["quotas"][1]["problem"]
    assert report["not_counted"] == ["s/Sized: not counted: its MaxSize is not a number"]


# --- stacks zones: moto carries AWS's published offerings by zone (in ca-central-1, p5.48xlarge in 1d only) --------


def _subnet(lid: str, index: int) -> dict[str, Any]:
    """A subnet as aws-ec2's Vpc writes it in an environment-agnostic stack."""
    zone = {"Fn::Select": [index, {"Fn::GetAZs": ""}]}
    return {lid: {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": "v", "CidrBlock": "c", "AvailabilityZone": zone}}}


@mock_aws
def test_stacks_zones_reads_each_gpu_groups_subnets_zones(
    tmp_path: Path, fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ec2 = boto3.client("ec2", region_name="ca-central-1")
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    in_d = ec2.create_subnet(VpcId=vpc, CidrBlock="10.1.0.0/24", AvailabilityZone="ca-central-1d")["Subnet"]["SubnetId"]
    made = _group("Made", "1", "P5Template")
    made["Made"]["Properties"]["VPCZoneIdentifier"] = [{"Ref": "SubnetA"}, {"Ref": "SubnetB"}]
    named = _group("Named", "1", "P5Template")
    named["Named"]["Properties"]["VPCZoneIdentifier"] = [in_d]
    unread = _group("Unread", "1", "P5Template")
    unread["Unread"]["Properties"]["VPCZoneIdentifier"] = {"Ref": "Subnets"}
    template = {
        "Resources": {
            **_launch("P5Template", "p5.48xlarge"),
            **_subnet("SubnetA", 0),
            **_subnet("SubnetB", 1),
            **made,
            **named,
            **unread,
        }
    }
    cdk_out = write_assembly(tmp_path, {"s": template})
    assert main(["stacks", "zones", "--cdk-out", str(cdk_out), "--region", "ca-central-1"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["s/Made: p5.48xlarge in no zone", "s/Named: p5.48xlarge in ca-central-1d"]
    assert out[2].startswith("s/Made: no zone of ca-central-1a, ca-central-1b offers p5.48xlarge in ca-central-1")
    assert out[3] == "s/Unread: not checked: its subnets' zones cannot be read before deploy"


def _nested(tmp_path: Path, parent: dict[str, Any], child: dict[str, Any], passed: dict[str, Any]) -> Path:
    """An assembly of one stack ``s`` holding a nested stack ``Models`` (its template a file beside it, as aws-cdk
    writes it), to which it passes ``passed``."""
    (tmp_path / "sModels.nested.template.json").write_text(json.dumps(child))
    resource = {
        "Type": "AWS::CloudFormation::Stack",
        "Properties": {"Parameters": passed, "TemplateURL": "x"},
        "Metadata": {"aws:asset:path": "sModels.nested.template.json"},
    }
    return write_assembly(tmp_path, {"s": {"Resources": {**parent["Resources"], "Models": resource}}})


def test_stacks_quotas_counts_a_group_in_a_nested_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    child = {"Parameters": {"refTemplate": {"Type": "String"}}, "Resources": _group("L4", "6", "refTemplate")}
    cdk_out = _nested(
        tmp_path, {"Resources": _launch("L4Template", "g6.2xlarge")}, child, {"refTemplate": {"Ref": "L4Template"}}
    )
    quotas = boto3.client("service-quotas", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    monkeypatch.setattr(aws, "client", lambda service, region: quotas)
    with Stubber(quotas) as stub:
        stub.add_response(
            "get_service_quota", _quota("L-DB2E81BA", 32.0), {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"}
        )
        assert main(["stacks", "quotas", "--cdk-out", str(cdk_out), "--region", "us-east-1", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(q["needed_vcpus"], q["capacities"]) for q in report["quotas"]] == [(48, ["s/Models/L4 6 x 8"])]


@mock_aws
def test_stacks_zones_reads_a_nested_groups_subnets_in_its_parent(
    tmp_path: Path, fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    group = _group("Gpu", "1", "refTemplate")
    group["Gpu"]["Properties"]["VPCZoneIdentifier"] = [{"Ref": "refSubnet"}]
    child = {"Parameters": {"refTemplate": {"Type": "String"}, "refSubnet": {"Type": "String"}}, "Resources": group}
    parent = {"Resources": {**_launch("P5Template", "p5.48xlarge"), **_subnet("SubnetA", 0)}}
    passed = {"refTemplate": {"Ref": "P5Template"}, "refSubnet": {"Ref": "SubnetA"}}
    cdk_out = _nested(tmp_path, parent, child, passed)
    assert main(["stacks", "zones", "--cdk-out", str(cdk_out), "--region", "ca-central-1"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == "s/Models/Gpu: p5.48xlarge in no zone"
