"""``fleet egress``: the private subnets of an existing VPC, each with its way out for the GPU hosts (a default
route through a NAT device, or the VPC's endpoints), read from EC2 through moto."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.operations.egress import NEEDED_ENDPOINTS, egress

REGION = "us-east-1"


def _fleet(tmp_path: Path, vpc_id: str | None) -> Path:
    path = tmp_path / "fleet.toml"
    network = f'account = "123456789012"\nregion = "{REGION}"\nvpc_id = "{vpc_id}"\n' if vpc_id else ""
    path.write_text(
        f'name = "e"\n{network}[capacity.gpu]\ninstance_types = ["g6.2xlarge"]\n'
        '[service.llm]\ncapacity = "gpu"\nimage = "public.ecr.aws/x/llm:1"\ndesired_count = 1\ncpu_units = 256\n'
        "memory_mib = 512\ngpu_budget_mib = 1024\n"
    )
    return path


def _subnet(ec2: Any, vpc: str, cidr: str, zone: str, tags: dict[str, str] | None = None) -> str:
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
    if tags:
        ec2.create_tags(Resources=[subnet], Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
    return subnet


def _routed(ec2: Any, vpc: str, subnet: str, **target: str) -> None:
    table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", **target)
    ec2.associate_route_table(RouteTableId=table, SubnetId=subnet)


@mock_aws
def test_a_private_subnet_without_a_way_out_fails_until_the_vpc_has_the_endpoints(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
    public = _subnet(ec2, vpc, "10.0.0.0/24", "us-east-1a")
    _routed(ec2, vpc, public, GatewayId=gateway)
    address = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public, AllocationId=address)["NatGateway"]["NatGatewayId"]
    through_nat = _subnet(ec2, vpc, "10.0.1.0/24", "us-east-1a")
    _routed(ec2, vpc, through_nat, NatGatewayId=nat)
    closed = _subnet(ec2, vpc, "10.0.2.0/24", "us-east-1b")  # the main route table: the VPC's own range only
    _subnet(ec2, vpc, "10.0.3.0/24", "us-east-1b", {"aws-cdk:subnet-type": "Isolated"})  # not where hosts go

    fleet_file = _fleet(tmp_path, vpc)
    assert main(["fleet", "egress", str(fleet_file), "--region", REGION]) == 1
    out = capsys.readouterr().out
    assert f"{through_nat} (us-east-1a): out through {nat}" in out
    assert f"{closed} (us-east-1b): no default route through a NAT gateway" in out
    assert "ecs-agent (the agent polls for tasks)" in out
    assert public not in out  # a public subnet is not where the hosts go

    for name in NEEDED_ENDPOINTS:
        kind = "Gateway" if name == "s3" else "Interface"
        ec2.create_vpc_endpoint(VpcId=vpc, ServiceName=f"com.amazonaws.{REGION}.{name}", VpcEndpointType=kind)
    assert main(["fleet", "egress", str(fleet_file), "--region", REGION, "--json"]) == 0
    results = {r["subnet"]: r for r in json.loads(capsys.readouterr().out)}
    assert results[closed]["route"] is None and results[closed]["missing_endpoints"] == []


@mock_aws
def test_a_fleet_that_makes_its_own_vpc_has_nothing_to_check(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fleet", "egress", str(_fleet(tmp_path, None)), "--region", REGION]) == 0
    assert "the fleet makes its own VPC" in capsys.readouterr().out


def _table(*routes: dict[str, Any], subnet: str | None = None, main_table: bool = False) -> dict[str, Any]:
    associations: list[dict[str, Any]] = [{"SubnetId": subnet}] if subnet else []
    if main_table:
        associations.append({"Main": True})
    return {"Routes": list(routes), "Associations": associations}


def _default(**target: str) -> dict[str, Any]:
    return {"DestinationCidrBlock": "0.0.0.0/0", "State": "active", **target}


@pytest.mark.parametrize(
    ("subnet", "tables", "route"),
    [
        # the main route table serves a subnet with no table of its own
        ({}, [_table(_default(TransitGatewayId="tgw-1"), main_table=True)], "tgw-1"),
        # a route whose target is gone goes nowhere
        ({}, [_table({**_default(NatGatewayId="nat-1"), "State": "blackhole"}, subnet="subnet-1")], None),
        # a subnet tagged Private by CDK is judged even where it maps public addresses
        ({"MapPublicIpOnLaunch": True, "Tags": [{"Key": "aws-cdk:subnet-type", "Value": "Private"}]}, [], None),
    ],
)
def test_a_subnets_way_out_is_read_as_cdks_lookup_reads_its_type(
    subnet: dict[str, Any], tables: list[dict[str, Any]], route: str | None
) -> None:
    (found,) = egress([{"SubnetId": "subnet-1", "AvailabilityZone": "us-east-1a", **subnet}], tables, [], REGION)
    assert found.route == route


@pytest.mark.parametrize(
    "subnet",
    [
        {"MapPublicIpOnLaunch": True},  # public: its instances get public addresses
        {"Tags": [{"Key": "aws-cdk:subnet-type", "Value": "Isolated"}]},
    ],
)
def test_subnets_the_hosts_do_not_go_in_are_not_judged(subnet: dict[str, Any]) -> None:
    assert egress([{"SubnetId": "subnet-1", "AvailabilityZone": "us-east-1a", **subnet}], [], [], REGION) == []


def test_an_internet_gateway_route_makes_a_subnet_public() -> None:
    tables = [_table(_default(GatewayId="igw-1"), subnet="subnet-1")]
    assert egress([{"SubnetId": "subnet-1", "AvailabilityZone": "us-east-1a"}], tables, [], REGION) == []
