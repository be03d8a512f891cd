"""``fleet capacities`` and ``cluster unprotect --provider``: a capacity the deploy takes off the cluster must be free to
leave. CloudFormation and ECS answer through botocore's Stubber (moto's CloudFormation makes no capacity provider, and
its ECS keeps no service's capacity provider strategy), Auto Scaling through moto; both check each call against AWS's
models."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.service_rules.base import CAPACITY_METADATA
from ecs_gpu_sharing.operations import aws, leaving_capacities

from conftest import REPO, THREE_MODELS

STACK = "models-cluster"
CLUSTER = "models-cluster-Cluster-1A2B3C"
REGION = "us-east-1"


def _provider(name: str, *, kind: str = fleet.EC2, metadata: bool = True) -> dict[str, Any]:
    properties: dict[str, Any] = (
        {"ManagedInstancesProvider": {"InfrastructureRoleArn": "arn:aws:iam::123456789012:role/infra"}}
        if kind == fleet.MANAGED_INSTANCES
        else {"AutoScalingGroupProvider": {"AutoScalingGroupArn": {"Ref": f"Capacities{name}Group"}}}
    )
    meta: dict[str, Any] = {"aws:cdk:path": f"{STACK}/Capacities/{name}/Provider/Provider"}
    if metadata:
        meta[CAPACITY_METADATA] = name
    return {"Type": leaving_capacities.CAPACITY_PROVIDER, "Metadata": meta, "Properties": properties}


def _template(**providers: dict[str, Any]) -> dict[str, Any]:
    return {
        "Resources": {
            "Cluster": {"Type": "AWS::ECS::Cluster"},
            **{f"Capacities{name}Provider": resource for name, resource in providers.items()},
        },
        "Outputs": {"ClusterName": {"Value": {"Ref": "Cluster"}}},
    }


SPEC = fleet.parse(tomllib.loads(THREE_MODELS.read_text()))  # name "models"; capacities l4 and l40s, both EC2


# --- which capacities leave: pure ---------------------------------------------------------------------------


def test_a_deployed_capacity_the_fleet_drops_or_changes_in_kind_leaves() -> None:
    template = _template(
        l4=_provider("l4"),
        l40s=_provider("l40s", kind=fleet.MANAGED_INSTANCES),
        old=_provider("old", metadata=False),  # an older deploy without the metadata: its construct path names it
    )
    left = leaving_capacities.leaving(template, SPEC)
    assert [(c.capacity, c.why) for c in left] == [("l40s", "now ec2"), ("old", "not in the fleet file")]


def test_a_capacity_of_another_kind_is_told_to_take_another_name() -> None:
    # The same name keeps the same output, which a services stack whose template did not change would not read again.
    left = leaving_capacities.LeavingCapacity(
        "l40s", "now managed-instances", STACK, "p", ("llm",), 1, "group-l40s", 1, 1
    )
    assert left.problem is not None and left.problem.endswith(
        "Deploy in two steps: keep [capacity.l40s] as it was (with min_instances = 0), add the new kind as a "
        "capacity of another name, and move its services there; once they run there, remove [capacity.l40s]"
    )


def test_nothing_leaves_when_every_deployed_capacity_stays_as_it_is() -> None:
    template = _template(l4=_provider("l4"), l40s=_provider("l40s"))
    template["Resources"]["Theirs"] = {"Type": leaving_capacities.CAPACITY_PROVIDER, "Properties": {}}  # not ours
    assert leaving_capacities.leaving(template, SPEC) == []


# --- against the account ---------------------------------------------------------------------------------------


def _group(autoscaling: Any, name: str, hosts: int) -> str:
    ec2 = boto3.client("ec2", region_name=REGION)
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    if not ec2.describe_launch_templates()["LaunchTemplates"]:
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        ec2.create_launch_template(LaunchTemplateName="hosts", LaunchTemplateData={"ImageId": image})
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateName": "hosts"},
        MinSize=hosts,
        MaxSize=max(hosts, 1),
        DesiredCapacity=hosts,
        VPCZoneIdentifier=subnet,
        NewInstancesProtectedFromScaleIn=True,
    )
    found = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    return str(found[0]["AutoScalingGroupARN"])


class _Account:
    """A deployed cluster stack (Stubber) whose capacity ``old`` the example fleet no longer has; ECS (Stubber)
    answers with ``services`` on its provider; the groups of both providers are moto's."""

    def __init__(self, services: list[dict[str, Any]], tasks: int) -> None:
        self.autoscaling = boto3.client("autoscaling", region_name=REGION)
        arns = {"old": _group(self.autoscaling, "group-old", 3), "l4": _group(self.autoscaling, "group-l4", 1)}
        self.cloudformation = boto3.client("cloudformation", region_name=REGION)
        self.ecs = boto3.client("ecs", region_name=REGION)
        cfn, ecs = Stubber(self.cloudformation), Stubber(self.ecs)
        template = _template(l4=_provider("l4"), l40s=_provider("l40s"), old=_provider("old"))
        cfn.add_response(
            "get_template", {"TemplateBody": json.dumps(template)}, {"StackName": STACK, "TemplateStage": "Original"}
        )
        summaries = [
            {
                "LogicalResourceId": logical,
                "PhysicalResourceId": physical,
                "ResourceType": resource["Type"],
                "LastUpdatedTimestamp": "2026-12-01T00:00:00Z",
                "ResourceStatus": "CREATE_COMPLETE",
            }
            for logical, resource in template["Resources"].items()
            for physical in [CLUSTER if logical == "Cluster" else f"{STACK}-{logical}-XYZ"]
        ]
        cfn.add_response("list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": STACK})
        outputs = [{"OutputKey": "ClusterName", "OutputValue": CLUSTER}]
        stack = {"StackName": STACK, "CreationTime": "2026-12-01T00:00:00Z", "StackStatus": "UPDATE_COMPLETE"}
        cfn.add_response("describe_stacks", {"Stacks": [{**stack, "Outputs": outputs}]}, {"StackName": STACK})
        service_arns = [f"arn:aws:ecs:{REGION}:123456789012:service/{CLUSTER}/{s['serviceName']}" for s in services]
        ecs.add_response("list_services", {"serviceArns": service_arns}, {"cluster": CLUSTER})
        if services:
            ecs.add_response(
                "describe_services", {"services": services}, {"cluster": CLUSTER, "services": service_arns}
            )
        task_arns = [f"arn:aws:ecs:{REGION}:123456789012:task/{CLUSTER}/{n:032x}" for n in range(tasks)]
        ecs.add_response("list_tasks", {"taskArns": task_arns}, {"cluster": CLUSTER})
        if tasks:
            described = [{"taskArn": a, "capacityProviderName": self.old} for a in task_arns]
            ecs.add_response("describe_tasks", {"tasks": described}, {"cluster": CLUSTER, "tasks": task_arns})
        provider = {"name": self.old, "autoScalingGroupProvider": {"autoScalingGroupArn": arns["old"]}}
        ecs.add_response(
            "describe_capacity_providers", {"capacityProviders": [provider]}, {"capacityProviders": [self.old]}
        )
        cfn.activate()
        ecs.activate()
        self.stubbers = (cfn, ecs)

    old = f"{STACK}-CapacitiesoldProvider-XYZ"

    def client(self, service: str, region: str | None) -> Any:
        return {"cloudformation": self.cloudformation, "ecs": self.ecs, "autoscaling": self.autoscaling}[service]


def _service(name: str, provider: str, desired: int) -> dict[str, Any]:
    return {
        "serviceName": name,
        "status": "ACTIVE",
        "desiredCount": desired,
        "runningCount": desired,
        "schedulingStrategy": "REPLICA",
        "capacityProviderStrategy": [{"capacityProvider": provider, "weight": 1}],
    }


@mock_aws
def test_a_capacity_whose_services_still_run_there_cannot_leave_in_the_same_deploy(fake_credentials: None) -> None:
    services = [_service("embedder", _Account.old, 2), _service("llm", "other-provider", 1)]
    account = _Account(services, tasks=2)
    (result,) = leaving_capacities.check(account.client, REGION, SPEC)
    assert (result.capacity, result.services, result.tasks, result.hosts, result.protected) == (
        "old",
        ("embedder",),
        2,
        3,
        3,
    )
    assert result.problem == (
        "capacity old (not in the fleet file) leaves the cluster in this deploy, but services embedder still run on "
        f"its capacity provider {_Account.old} (2 tasks): ECS takes a capacity provider off a cluster only when no "
        "task uses it, and the cluster stack deploys before the services stacks, so it would fail and roll back. "
        "Deploy in two steps: keep [capacity.old] as it was (with min_instances = 0) while its services move to "
        "their new capacity; once they run there, remove [capacity.old]"
    )
    for stubber in account.stubbers:
        stubber.assert_no_pending_responses()


@mock_aws
def test_an_idle_capacity_whose_hosts_are_protected_is_unprotected_by_provider_then_passes(
    fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    account = _Account([_service("embedder", _Account.old, 0)], tasks=0)
    monkeypatch.setattr(aws, "client", account.client)
    assert main(["fleet", "capacities", str(THREE_MODELS), "--region", REGION]) == 1
    out = capsys.readouterr().out
    assert f"capacity old (not in the fleet file) leaves: provider {_Account.old}: 0 services and 0 tasks" in out
    assert (
        "but 3 of the 3 hosts of its Auto Scaling group group-old are protected from scale-in, so CloudFormation "
        f"cannot delete the group (it waits for hours, and the hosts keep running): run `ecs-gpu-sharing cluster "
        f"unprotect --stack {STACK} --provider {_Account.old}` first"
    ) in out

    # The command it names, for that provider only: the group that stays keeps its protection.
    ecs = account.stubbers[1]  # the same client: its Stubber answers the next calls too
    arn = f"arn:aws:ecs:{REGION}:123456789012:service/{CLUSTER}/embedder"
    ecs.add_response("list_services", {"serviceArns": [arn]}, {"cluster": CLUSTER})
    described = {"services": [_service("embedder", _Account.old, 0)]}
    ecs.add_response("describe_services", described, {"cluster": CLUSTER, "services": [arn]})
    group = account.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=["group-old"])["AutoScalingGroups"]
    provider = {
        "name": _Account.old,
        "autoScalingGroupProvider": {"autoScalingGroupArn": group[0]["AutoScalingGroupARN"]},
    }
    ecs.add_response(
        "describe_capacity_providers", {"capacityProviders": [provider]}, {"capacityProviders": [_Account.old]}
    )
    assert main(["cluster", "unprotect", "--cluster", CLUSTER, "--provider", _Account.old, "--region", REGION]) == 0
    assert capsys.readouterr().out.strip() == "group-old: new instances unprotected; 3 instances unprotected"
    protection = {
        g["AutoScalingGroupName"]: [i["ProtectedFromScaleIn"] for i in g["Instances"]]
        for g in account.autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]
    }
    assert protection == {"group-old": [False] * 3, "group-l4": [True]}


@mock_aws
def test_unprotect_by_provider_refuses_while_a_service_on_it_wants_tasks(
    fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ecs_client = boto3.client("ecs", region_name=REGION)
    ecs = Stubber(ecs_client)
    arns = [f"arn:aws:ecs:{REGION}:123456789012:service/{CLUSTER}/{n}" for n in ("embedder", "llm")]
    ecs.add_response("list_services", {"serviceArns": arns}, {"cluster": CLUSTER})
    services = [_service("embedder", "old-provider", 2), _service("llm", "l4-provider", 1)]
    ecs.add_response("describe_services", {"services": services}, {"cluster": CLUSTER, "services": arns})
    ecs.activate()
    monkeypatch.setattr(
        aws, "client", lambda service, region: {"ecs": ecs_client}.get(service) or boto3.client(service)
    )
    assert main(["cluster", "unprotect", "--cluster", CLUSTER, "--provider", "old-provider", "--region", REGION]) == 1
    assert capsys.readouterr().err.strip() == (
        f"error: capacity providers old-provider of cluster {CLUSTER} still run 1 services (embedder): move them to "
        "another capacity first (deploy), or ECS protects their hosts again"
    )


def test_a_first_deploy_has_nothing_to_leave(fake_credentials: None) -> None:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    with Stubber(cloudformation) as cfn:
        cfn.add_client_error(
            "get_template",
            "ValidationError",
            f"Stack with id {STACK} does not exist",
            400,
            {"StackName": STACK, "TemplateStage": "Original"},
        )
        assert leaving_capacities.check(lambda service, region: cloudformation, REGION, SPEC) == []


# --- fleet balancers -------------------------------------------------------------------------------------------------


def test_fleet_balancers_fails_a_scheme_the_fleet_file_flips_under_a_deployed_name(
    fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The example's balancer "internal", deployed as internet-facing: the fleet file now makes it internal.
    deployed = {
        "Resources": {
            "LoadBalancersinternal1234": {
                "Type": "AWS::ElasticLoadBalancingV2::LoadBalancer",
                # Deployed before the app named its balancers in metadata: the construct path names it.
                "Metadata": {"aws:cdk:path": f"{STACK}/LoadBalancers/internal/Resource"},
                "Properties": {"Scheme": "internet-facing", "Type": "application"},
            }
        }
    }
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    monkeypatch.setattr(aws, "client", lambda service, region: cloudformation)
    with Stubber(cloudformation) as cfn:
        cfn.add_response(
            "get_template", {"TemplateBody": json.dumps(deployed)}, {"StackName": STACK, "TemplateStage": "Original"}
        )
        cfn.add_response("list_stack_resources", {"StackResourceSummaries": []}, {"StackName": STACK})
        assert main(["fleet", "balancers", str(REPO / "fleet.toml"), "--region", REGION]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "load_balancer.internal: deployed internet-facing",
        "load_balancer.internal: deployed internet-facing, and the fleet file makes it internal: CloudFormation would "
        "replace it and its listener, and the services stacks, whose templates do not change, would not be deployed "
        "again: every route would answer 404. Give the balancer a new name instead (its services move to it through "
        "new target groups)",
    ]
