"""Nested stacks (``cdk.NestedStack``): what a nested template holds is judged as what its parent holds, since its
parent deploys it. aws-cdk writes a nested stack's template to a file of its own and passes each value of the parent it
reads as a parameter; the written-template checks (the allow-list, the plan as written, AWS's rules) read it there,
with those parameters read back to the parent's values (``core.nested_stacks``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs

from ecs_gpu_sharing import FleetPlan, GpuCapacity, MpsShare, SharedGpuService, SharedGpuTaskDefinition
from ecs_gpu_sharing.core.nested_stacks import joined, template_file
from ecs_gpu_sharing.core.service_rules.base import Templates

from conftest import new_app

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/x/model@sha256:" + "0" * 64)


def _app() -> tuple[cdk.App, ecs.Cluster, GpuCapacity, cdk.NestedStack]:
    app = new_app()
    stack = cdk.Stack(app, "Gpu")
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
    capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"], max_instances=4)
    return app, cluster, capacity, cdk.NestedStack(stack, "Models")


def _privileged_l1_service(scope: Any, cluster: ecs.Cluster, capacity: GpuCapacity) -> ecs.CfnService:
    """A task and service written as L1 resources: only the written templates show them."""
    task = ecs.CfnTaskDefinition(
        scope,
        "Tenant",
        requires_compatibilities=["EC2"],
        container_definitions=[
            ecs.CfnTaskDefinition.ContainerDefinitionProperty(name="app", image="x", memory=256, privileged=True)
        ],
    )
    service = ecs.CfnService(
        scope,
        "TenantService",
        cluster=cluster.cluster_name,
        task_definition=task.ref,
        desired_count=1,
        capacity_provider_strategy=[
            ecs.CfnService.CapacityProviderStrategyItemProperty(
                capacity_provider=capacity.capacity_provider.capacity_provider_name, weight=1
            )
        ],
    )
    service.node.add_dependency(cluster)
    return service


def _refused(app: cdk.App) -> str:
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    return str(raised.value)


def test_a_privileged_l1_task_in_a_nested_stack_on_the_capacity_is_refused() -> None:
    app, cluster, capacity, nested = _app()
    _privileged_l1_service(nested, cluster, capacity)
    message = _refused(app)
    assert "[ecs-gpu-sharing:PrivilegedContainer]" in message, message[:2000]
    assert "Gpu/Models/Tenant" in message, message[:2000]


def test_a_nested_stack_inside_a_nested_stack_is_judged_too() -> None:
    app, cluster, capacity, nested = _app()
    _privileged_l1_service(cdk.NestedStack(nested, "Deeper"), cluster, capacity)
    assert "[ecs-gpu-sharing:PrivilegedContainer]" in _refused(app)


def test_an_allowance_reaches_a_nested_stacks_resources() -> None:
    app, cluster, capacity, nested = _app()
    service = _privileged_l1_service(nested, cluster, capacity)
    for rule in ("ecs-gpu-sharing:PrivilegedContainer", "ecs-gpu-sharing:ServiceNotPlanned"):
        FleetPlan.of(nested).allow(nested, rule, "the vendor's agent, reviewed")
    assembly = app.synth()
    plan = json.loads((Path(assembly.directory) / "gpu-fleet-plan.json").read_text())
    assert "the vendor's agent, reviewed" in json.dumps(plan)
    assert service.node.path == "Gpu/Models/TenantService"


def test_aws_rules_read_a_nested_stacks_template() -> None:
    app, _cluster, _capacity, nested = _app()
    logs.CfnLogGroup(nested, "Group", retention_in_days=4)
    assert "[ecs-gpu-sharing:LogRetentionDays]" in _refused(app)


def test_a_planned_service_in_a_nested_stack_passes_as_planned() -> None:
    app, cluster, capacity, nested = _app()
    task = SharedGpuTaskDefinition(nested, "EmbedTask")
    task.add_container(
        "model",
        image=IMAGE,
        cpu=1024,
        memory_limit_mib=4096,
        gpu=MpsShare(6000),
        user="1000",
        readonly_root_filesystem=True,
    )
    SharedGpuService(nested, "Embed", cluster=cluster, capacity=capacity, task_definition=task, desired_count=3)
    assembly = app.synth()
    plan = json.loads((Path(assembly.directory) / "gpu-fleet-plan.json").read_text())
    assert [(s["name"], s["tasks"]) for s in plan["services"]] == [("Embed", 3)]


PARENT = {
    "Resources": {
        "Provider": {"Type": "AWS::ECS::CapacityProvider", "Properties": {}},
        "Group": {"Type": "AWS::Logs::LogGroup", "Properties": {}},
        "Child": {
            "Type": "AWS::CloudFormation::Stack",
            "Properties": {"Parameters": {"refProvider": {"Ref": "Provider"}}, "TemplateURL": "x"},
        },
        "Reader": {
            "Type": "AWS::SSM::Parameter",
            "Properties": {
                "Value": {"Fn::GetAtt": ["Child", "Outputs.TaskArn"]},
                "Name": {"Fn::Sub": "arn-${Child.Outputs.TaskArn}"},
            },
        },
    }
}
CHILD = {
    "Parameters": {"refProvider": {"Type": "String"}},
    "Resources": {
        "Task": {"Type": "AWS::ECS::TaskDefinition", "Properties": {}},
        "Service": {
            "Type": "AWS::ECS::Service",
            "Properties": {
                "CapacityProviderStrategy": [{"CapacityProvider": {"Ref": "refProvider"}}],
                "ServiceName": {"Fn::Sub": "svc-${refProvider}"},
            },
        },
    },
    "Outputs": {"TaskArn": {"Value": {"Ref": "Task"}}},
}


def test_references_across_the_nesting_are_followed_both_ways() -> None:
    templates = joined({"Parent": PARENT}, {("Parent", "Child"): ("Parent.Child.nested", CHILD)})
    ctx = Templates(templates)
    service = ctx.resource("Parent.Child.nested", "Service")
    assert service is not None
    provider = ctx.target(service.props["CapacityProviderStrategy"][0]["CapacityProvider"], service.stack)
    assert (provider.stack, provider.logical_id) == ("Parent", "Provider")  # type: ignore[union-attr]
    assert ctx.text(service.props["ServiceName"], service.stack) == "svc-${Parent/Provider}"
    reader = ctx.resource("Parent", "Reader")
    task = ctx.target(reader.props["Value"], "Parent")  # type: ignore[union-attr]
    assert (task.stack, task.logical_id) == ("Parent.Child.nested", "Task")  # type: ignore[union-attr]
    assert ctx.text(reader.props["Name"], "Parent") == "arn-${Parent.Child.nested/Task}"  # type: ignore[union-attr]
    assert PARENT["Resources"]["Reader"]["Properties"]["Value"] == {
        "Fn::GetAtt": ["Child", "Outputs.TaskArn"]
    }  # as given
    assert "Outputs" not in PARENT


def test_a_parameter_the_parent_does_not_pass_stays_a_parameter() -> None:
    child = {
        "Parameters": {"Other": {"Type": "String", "Default": "x"}},
        "Resources": {"A": {"Type": "T", "Properties": {"V": {"Ref": "Other"}}}},
    }
    templates = joined({"Parent": PARENT}, {("Parent", "Child"): ("Parent.Child.nested", child)})
    assert templates["Parent.Child.nested"]["Resources"]["A"]["Properties"]["V"] == {"Ref": "Other"}


def test_a_nested_template_is_found_by_its_metadata_or_else_by_its_asset() -> None:
    url = {"Fn::Join": ["", ["https://s3.", {"Ref": "AWS::Region"}, "/", {"Fn::Sub": "bucket"}, "/abc123.json"]]}
    resource: dict[str, Any] = {"Type": "AWS::CloudFormation::Stack", "Properties": {"TemplateURL": url}}
    assets = {"abc123.json": "GpuModels.nested.template.json"}
    assert template_file(resource, assets) == "GpuModels.nested.template.json"
    assert template_file(resource, {}) is None  # not in the assembly: not judged
    resource["Metadata"] = {"aws:asset:path": "Other.nested.template.json"}
    assert template_file(resource, assets) == "Other.nested.template.json"


def test_evaluate_finds_a_service_of_a_nested_stack_through_its_parent(tmp_path: Path) -> None:
    """A nested stack's name is made at deploy, so the plan records the top stack's name and the nested stack
    resources on the way; evaluate reads each one's physical id (the nested stack's ARN) down to the service."""
    import boto3
    from botocore.stub import Stubber

    from ecs_gpu_sharing.core import plan_document
    from ecs_gpu_sharing.operations.evaluate import deployed_names

    app, cluster, capacity, nested = _app()
    deeper = cdk.NestedStack(nested, "Serving")
    task = SharedGpuTaskDefinition(deeper, "EmbedTask")
    task.add_container("model", image=IMAGE, memory_limit_mib=4096, gpu=MpsShare(6000))
    SharedGpuService(deeper, "Embed", cluster=cluster, capacity=capacity, task_definition=task, desired_count=2)
    assembly = app.synth()
    doc = json.loads((Path(assembly.directory) / "gpu-fleet-plan.json").read_text())
    (deployed,) = [s["deployed_as"] for s in doc["services"]]
    assert deployed["stack"] == "Gpu" and len(deployed["nested_stacks"]) == 2, deployed

    cloudformation = boto3.client(
        "cloudformation", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    arns = [
        "arn:aws:cloudformation:us-east-1:123456789012:stack/Gpu-Models-1/a",
        "arn:aws:cloudformation:us-east-1:123456789012:stack/Gpu-Models-1-Serving-2/b",
    ]
    service = "arn:aws:ecs:us-east-1:123456789012:service/gpu/Gpu-Embed-XYZ"
    with Stubber(cloudformation) as cfn:
        for stack, logical, physical in zip(
            ["Gpu", *arns], [*deployed["nested_stacks"], deployed["logical_id"]], [*arns, service], strict=True
        ):
            detail = {
                "LogicalResourceId": logical,
                "PhysicalResourceId": physical,
                "ResourceType": "x",
                "LastUpdatedTimestamp": "2026-12-01T00:00:00Z",
                "ResourceStatus": "CREATE_COMPLETE",
            }
            cfn.add_response(
                "describe_stack_resource",
                {"StackResourceDetail": detail},
                {"StackName": stack, "LogicalResourceId": logical},
            )
        names = deployed_names(cloudformation, plan_document.load(doc, source="test"), {})
        cfn.assert_no_pending_responses()
    assert names == {"Embed": "Gpu-Embed-XYZ"}
