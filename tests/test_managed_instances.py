"""ECS Managed Instances: a GPU capacity AWS launches, planned like any other, from constructs and the fleet file."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from ecs_gpu_sharing import FleetSpecError
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.plan_inputs import from_fleet
from ecs_gpu_sharing.testing import normalize_template
from stacks.fleet_app import build_app

from conftest import THREE_MODELS, new_app, plan_only
from validators import cfn_lint_errors, ecs_create_capacity_provider_errors, ecs_register_task_definition_errors

MIXED = THREE_MODELS.read_text().replace(
    "[capacity.l40s]",
    '[capacity.l40s]\nkind = "managed-instances"\ninstance_types = ["g6e.xlarge", "g6e.2xlarge"]\ntask_volume_gib = 400',
    1,
)
MIXED = MIXED.replace(
    'instance_types = ["g6e.2xlarge"]     # 1 x NVIDIA L40S (45776 MiB), 8 vCPU, 64 GiB\nmin_instances = 1\n', ""
)


@pytest.fixture(scope="module")
def mixed() -> dict[str, Any]:
    app = new_app()
    stacks = build_app(app, fleet.parse(tomllib.loads(MIXED), source="mixed.toml"))  # cdk-nag runs at synth
    assembly = app.synth()
    templates = {s.stack_name: assembly.get_stack_artifact(s.artifact_id).template for s in stacks.all()}
    plan = json.loads((Path(assembly.directory) / "gpu-fleet-plan.json").read_text())
    return {"templates": templates, "plan": plan}


def test_one_ec2_and_one_managed_instances_capacity_are_planned(mixed: dict[str, Any]) -> None:
    kinds = {c["name"]: (c["kind"], c["instance_type"], c["max_instances"]) for c in mixed["plan"]["capacities"]}
    assert kinds["l4"][0] == "ec2" and kinds["l4"][2] is not None
    # Planned against the allowed type that holds the least; no instance limit to derive there.
    assert kinds["l40s"] == ("managed-instances", "g6e.xlarge", None)
    assert {s["name"]: s["capacity"] for s in mixed["plan"]["services"]}["small-llm"] == "l40s"
    assert mixed["plan"]["summary"]["fits"] is True


def test_the_managed_instances_provider_is_restricted_to_the_gpu_types(mixed: dict[str, Any]) -> None:
    cluster = Template.from_json(mixed["templates"]["models-cluster"])
    providers = cluster.find_resources(
        "AWS::ECS::CapacityProvider", {"Properties": {"ManagedInstancesProvider": Match.any_value()}}
    )
    (provider,) = providers.values()
    requirements = provider["Properties"]["ManagedInstancesProvider"]["InstanceLaunchTemplate"]["InstanceRequirements"]
    assert requirements["AllowedInstanceTypes"] == ["g6e.xlarge", "g6e.2xlarge"]
    assert requirements["AcceleratorManufacturers"] == ["nvidia"] and requirements["AcceleratorNames"] == ["l40s"]
    launch = provider["Properties"]["ManagedInstancesProvider"]["InstanceLaunchTemplate"]
    assert launch["StorageConfiguration"] == {"StorageSizeGiB": 400}  # the fleet's task_volume_gib
    assert ecs_create_capacity_provider_errors(provider["Properties"]) == ""
    groups = cluster.find_resources("AWS::EC2::SecurityGroup")
    assert all("SecurityGroupIngress" not in g["Properties"] for g in groups.values())


def test_gates_are_clean(mixed: dict[str, Any]) -> None:
    for name, template in mixed["templates"].items():
        assert cfn_lint_errors(template) == [], name
        for resource in template["Resources"].values():
            if resource["Type"] == "AWS::ECS::TaskDefinition":
                assert ecs_register_task_definition_errors(resource["Properties"]) == ""


def test_the_managed_service_runs_its_shared_gpu_task_on_the_provider(mixed: dict[str, Any]) -> None:
    services = Template.from_json(mixed["templates"]["models-services-1"])
    services.has_resource_properties(
        "AWS::ECS::TaskDefinition",
        {"RequiresCompatibilities": ["MANAGED_INSTANCES"], "NetworkMode": "awsvpc", "Cpu": "2048", "Memory": "16384"},
    )


@pytest.mark.parametrize("key", ['ami_release = "20261113"', "min_instances = 1"])
def test_ami_release_and_min_instances_do_not_apply_there(key: str) -> None:
    doc = tomllib.loads(MIXED.replace('kind = "managed-instances"', f'kind = "managed-instances"\n{key}', 1))
    with pytest.raises(
        FleetSpecError, match=rf'capacity.l40s.{key.split(" ")[0]} does not apply to kind = "managed-instances"'
    ):
        fleet.parse(doc, source="f.toml")


def test_snapshot_of_the_managed_instances_provider(mixed: dict[str, Any], gpu_snapshot: Any) -> None:
    cluster = mixed["templates"]["models-cluster"]["Resources"]
    managed = {k: v for k, v in cluster.items() if k.startswith("Capacitiesl40s")}
    assert gpu_snapshot == normalize_template({"Resources": managed})


def test_the_cli_plans_the_mixed_fleet_as_synth_does(mixed: dict[str, Any]) -> None:
    # The telemetry daemon runs on the EC2 hosts only: both plans take its share from l4, neither from l40s.
    from ecs_gpu_sharing.core import plan_report
    from ecs_gpu_sharing.core.rules import assess

    spec = fleet.parse(tomllib.loads(MIXED), source="mixed.toml")
    cli = plan_report.document(assess(*from_fleet(spec))).to_json()
    assert plan_only(cli) == plan_only(mixed["plan"])
    assert {c["name"]: c["daemons"] for c in cli["capacities"]} == {"l4": ["Telemetry"], "l40s": []}


# --- SharedGpuManagedInstancesService: the library's service for Managed Instances --------------------------


def _mi_app() -> tuple[Any, Any, Any, Any, Any]:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs

    from ecs_gpu_sharing import GpuManagedInstancesCapacity, MpsShare, SharedGpuManagedInstancesTaskDefinition

    app = new_app()
    stack = cdk.Stack(app, "Mi")
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
    capacity = GpuManagedInstancesCapacity(stack, "L40s", cluster=cluster, instance_types=["g6e.xlarge"])
    task = SharedGpuManagedInstancesTaskDefinition(
        stack, "Task", network_mode=ecs.NetworkMode.AWS_VPC, cpu="1024", memory_mib="4096"
    )
    task.add_container(
        "model",
        image=ecs.ContainerImage.from_registry("repo/model@sha256:" + "0" * 64),
        memory_limit_mib=4096,
        gpu=MpsShare(8192),
        user="1000:1000",
        readonly_root_filesystem=True,
    )
    return app, stack, cluster, capacity, task


def test_the_managed_instances_service_is_named_counted_and_planned() -> None:
    from ecs_gpu_sharing import SharedGpuManagedInstancesService

    app, stack, cluster, capacity, task = _mi_app()
    service = SharedGpuManagedInstancesService(
        stack,
        "Llm",
        name="llm",
        cluster=cluster,
        capacity=capacity,
        task_definition=task,
        desired_count=1,
        planned_count=3,
    )
    assembly = app.synth()
    plan = json.loads((Path(assembly.directory) / "gpu-fleet-plan.json").read_text())
    assert [(s["name"], s["capacity"], s["tasks"]) for s in plan["services"]] == [("llm", "L40s", 3)]
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::ECS::Service",
        {
            "DesiredCount": 1,
            "DeploymentConfiguration": Match.object_like(
                {"MinimumHealthyPercent": 100, "MaximumPercent": 200, "DeploymentCircuitBreaker": Match.any_value()}
            ),
            "CapacityProviderStrategy": [Match.object_like({"CapacityProvider": Match.any_value()})],
            "AvailabilityZoneRebalancing": "DISABLED",  # as the EC2 services: ECS would move models between zones
        },
    )
    assert service.service.node.default_child is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"placement_constraints": []}, "placement_constraints is set by SharedGpuManagedInstancesService"),
        ({"desired_count": -1}, "desired_count"),
        ({"capacity": None}, "capacity must be a GpuManagedInstancesCapacity"),
        ({"task_definition": "ec2"}, "task_definition must be a Managed Instances task definition"),
    ],
)
def test_the_managed_instances_service_refuses_bad_arguments(change: dict[str, Any], message: str) -> None:
    from ecs_gpu_sharing import GpuSharingError, SharedGpuManagedInstancesService, SharedGpuTaskDefinition

    _, stack, cluster, capacity, task = _mi_app()
    kwargs: dict[str, Any] = {"cluster": cluster, "capacity": capacity, "task_definition": task, "desired_count": 1}
    kwargs.update(change)
    if kwargs["task_definition"] == "ec2":
        kwargs["task_definition"] = SharedGpuTaskDefinition(stack, "Ec2Task")
    with pytest.raises(GpuSharingError, match=message):
        SharedGpuManagedInstancesService(stack, "Llm", **kwargs)


@pytest.mark.parametrize("size", [8, 20000, "400", True])
def test_the_task_volume_is_refused_outside_what_the_hosts_need_and_gp3_takes(size: Any) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs

    from ecs_gpu_sharing import CapacityError, GpuManagedInstancesCapacity

    stack = cdk.Stack(new_app(), "Mi")
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
    with pytest.raises(CapacityError, match=r"Mi/L40s: task_volume_gib must be an integer from 30 to 16384"):
        GpuManagedInstancesCapacity(stack, "L40s", cluster=cluster, instance_types=["g6e.xlarge"], task_volume_gib=size)


def test_an_option_of_another_type_is_refused_by_name() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs

    from ecs_gpu_sharing import CapacityError, GpuManagedInstancesCapacity

    stack = cdk.Stack(new_app(), "Mi")
    cluster = ecs.Cluster(stack, "C", vpc=ec2.Vpc(stack, "V", max_azs=2, nat_gateways=1))
    refused = r"Mi/L40s: capacity_option_type must be an aws_ecs.CapacityOptionType, got str"
    with pytest.raises(CapacityError, match=refused):
        GpuManagedInstancesCapacity(
            stack,
            "L40s",
            cluster=cluster,
            instance_types=["g6e.xlarge"],
            capacity_option_type="SPOT",  # type: ignore[arg-type]
        )


def test_a_security_group_admits_managed_instances_hosts_as_any_connectable() -> None:
    """``group.connections.allow_from(capacity, ...)``: the Managed Instances capacity is an ``ec2.IConnectable`` (its
    hosts' security group), as a GpuCapacity is."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs

    from ecs_gpu_sharing import GpuManagedInstancesCapacity

    app = new_app()
    stack = cdk.Stack(app, "S")
    vpc = ec2.Vpc(stack, "V", max_azs=2, nat_gateways=1)
    cluster = ecs.Cluster(stack, "C", vpc=vpc)
    capacity = GpuManagedInstancesCapacity(stack, "L40s", cluster=cluster, instance_types=["g6e.xlarge"])
    store = ec2.SecurityGroup(stack, "Store", vpc=vpc)
    store.connections.allow_from(capacity, ec2.Port.tcp(2049))
    group = {"Fn::GetAtt": [Match.string_like_regexp("L40sSecurityGroup"), "GroupId"]}
    Template.from_stack(stack).has_resource_properties(
        "AWS::EC2::SecurityGroupIngress", {"FromPort": 2049, "SourceSecurityGroupId": group}
    )
