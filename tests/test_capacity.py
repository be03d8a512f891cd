"""GpuCapacity: the launch template, group and capacity provider it writes, its GPU facts, and its refusals."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match, Template
from syrupy.assertion import SnapshotAssertion

from ecs_gpu_sharing import CapacityError, CatalogError, GpuAmi, GpuCapacity, GpuManagedInstancesCapacity
from ecs_gpu_sharing.cdk.capacity import UNVERIFIED_FAMILY_WARNING
from ecs_gpu_sharing.core.quotas import reserved_provider_prefix

from conftest import new_app
from validators import cfn_lint_errors


def _cluster(max_azs: int = 2) -> ecs.Cluster:
    stack = cdk.Stack(new_app(), "Test")
    return ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=max_azs, nat_gateways=1))


@pytest.fixture(scope="module")
def g6() -> dict[str, Any]:
    cluster = _cluster()
    capacity = GpuCapacity(cluster.stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
    return {"capacity": capacity, "template": Template.from_stack(cluster.stack)}


def test_launch_template_is_pinned_to_the_default_release_through_ssm(g6: dict[str, Any]) -> None:
    template: Template = g6["template"]
    parameters = template.find_parameters("*", {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"})
    ((name, parameter),) = parameters.items()
    assert parameter["Default"] == (
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/"
        "al2023-ami-ecs-gpu-hvm-2023.0.20261113-kernel-6.1-x86_64-ebs/image_id"
    )
    template.has_resource_properties(
        "AWS::EC2::LaunchTemplate", {"LaunchTemplateData": Match.object_like({"ImageId": {"Ref": name}})}
    )


def test_launch_template_security(g6: dict[str, Any]) -> None:
    template: Template = g6["template"]
    template.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 1},
                    "BlockDeviceMappings": [
                        {
                            "DeviceName": "/dev/xvda",
                            "Ebs": {
                                "Encrypted": True,
                                "VolumeType": "gp3",
                                "VolumeSize": 200,
                                "DeleteOnTermination": True,
                            },
                        }
                    ],
                    "IamInstanceProfile": Match.any_value(),
                    "KeyName": Match.absent(),
                }
            )
        },
    )
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "ManagedPolicyArns": Match.array_with(
                [
                    {
                        "Fn::Join": [
                            "",
                            [
                                "arn:",
                                {"Ref": "AWS::Partition"},
                                ":iam::aws:policy/AmazonSSMManagedInstanceCore",
                            ],
                        ]
                    }
                ]
            )
        },
    )


def test_user_data_joins_the_cluster_with_gpu_support_and_imds_blocked(g6: dict[str, Any]) -> None:
    (lt,) = g6["template"].find_resources("AWS::EC2::LaunchTemplate").values()
    parts = lt["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "<ref>" for p in parts)
    assert "echo ECS_ENABLE_GPU_SUPPORT=true >> /etc/ecs/ecs.config" in text
    assert "echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config" in text
    assert "echo ECS_CLUSTER=<ref> >> /etc/ecs/ecs.config" in text
    # AWS's second barrier for bridge-mode containers, beside the hop limit: no route to IMDS from docker's bridge.
    assert "iptables -I DOCKER-USER 1 -i docker+ -d 169.254.169.254/32 -j DROP" in text
    assert "iptables-save > /etc/sysconfig/iptables && systemctl enable iptables" in text


def _roll(min_instances: int, max_instances: int | None, services: int = 0) -> tuple[dict[str, Any], list[str]]:
    """The group's sizes and roll, and the warnings, of a capacity with ``services`` one-task services on it."""
    from ecs_gpu_sharing import MpsShare, SharedGpuService, SharedGpuTaskDefinition

    app = new_app()
    stack = cdk.Stack(app, "Roll")
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
    capacity = GpuCapacity(
        stack,
        "L4",
        cluster=cluster,
        instance_types=["g6.xlarge"],
        min_instances=min_instances,
        max_instances=max_instances,
    )
    for i in range(services):
        task = SharedGpuTaskDefinition(stack, f"T{i}")
        task.add_container(
            "m",
            image=ecs.ContainerImage.from_registry("r/m@sha256:" + "0" * 64),
            memory_limit_mib=8192,
            gpu=MpsShare(16000),
            user="1000",
            readonly_root_filesystem=True,
        )
        SharedGpuService(stack, f"S{i}", cluster=cluster, capacity=capacity, task_definition=task, desired_count=1)
    assembly = app.synth()
    artifact = assembly.get_stack_by_name("Roll")
    (group,) = [r for r in artifact.template["Resources"].values() if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"]
    warnings = [m.entry.data for m in artifact.messages if "RollTakesHostOutOfService" in str(m.entry.data)]
    return group, warnings


@pytest.mark.parametrize(
    ("min_instances", "max_instances", "services", "sizes", "in_service"),
    [
        (0, None, 0, ("0", "1"), 0),  # nothing to keep: a roll may replace the one host
        (2, None, 0, ("2", "3"), 2),  # derived above the minimum, so a roll keeps every minimum host in service
        (2, None, 3, ("2", "7"), 2),  # three one-GPU tasks at 200% need 6, and 7 with ORDER_HEADROOM_PERCENT
        (2, 4, 0, ("2", "4"), 2),
        (2, 2, 0, ("2", "2"), 1),  # a given max equal to the min: the roll keeps one fewer in service (a warning)
    ],
)
def test_a_roll_keeps_fewer_instances_in_service_than_max_size(
    min_instances: int, max_instances: int | None, services: int, sizes: tuple[str, str], in_service: int
) -> None:
    """CloudFormation launches a replacement only below MaxSize: MinInstancesInService must be less than it."""
    group, warnings = _roll(min_instances, max_instances, services)
    assert (group["Properties"]["MinSize"], group["Properties"]["MaxSize"]) == sizes
    assert group["UpdatePolicy"]["AutoScalingRollingUpdate"]["MinInstancesInService"] == in_service
    assert in_service < int(sizes[1])
    if max_instances is not None and max_instances == min_instances:
        (warning,) = warnings
        assert "raise max_instances to 3" in str(warning)
    else:
        assert warnings == []


def test_group_spans_the_private_subnets_with_the_instance_type(g6: dict[str, Any]) -> None:
    template: Template = g6["template"]
    template.has_resource_properties(
        "AWS::AutoScaling::AutoScalingGroup",
        {
            "MinSize": "0",
            "MaxSize": "1",
            "NewInstancesProtectedFromScaleIn": True,
            "VPCZoneIdentifier": [
                {"Ref": Match.string_like_regexp("VpcPrivateSubnet1")},
                {"Ref": Match.string_like_regexp("VpcPrivateSubnet2")},
            ],
            "MixedInstancesPolicy": Match.object_like(
                {"LaunchTemplate": Match.object_like({"Overrides": [{"InstanceType": "g6.xlarge"}]})}
            ),
        },
    )


def test_capacity_provider_has_managed_scaling_and_termination_protection(g6: dict[str, Any]) -> None:
    template: Template = g6["template"]
    template.has_resource_properties(
        "AWS::ECS::CapacityProvider",
        {
            "AutoScalingGroupProvider": Match.object_like(
                {
                    "ManagedScaling": Match.object_like({"Status": "ENABLED"}),
                    "ManagedTerminationProtection": "ENABLED",
                }
            )
        },
    )
    template.has_resource_properties(
        "AWS::ECS::ClusterCapacityProviderAssociations",
        {"CapacityProviders": Match.array_with([{"Ref": Match.string_like_regexp("L4Provider")}])},
    )


def test_exposes_gpu_and_host_facts(g6: dict[str, Any]) -> None:
    capacity: GpuCapacity = g6["capacity"]
    assert (capacity.gpu_name, capacity.gpus_per_instance, capacity.ec2_gpu_memory_mib) == ("L4", 1, 22888)
    assert capacity.usable_gpu_memory_mib == 22563 - 256  # ECS's figure for an L4, less the margin
    assert capacity.host_cpu_units == 4 * 1024
    assert capacity.host_memory_mib == 16384 - 983
    assert isinstance(capacity.launch_template, ec2.LaunchTemplate)
    assert capacity.auto_scaling_group and capacity.capacity_provider


def test_snapshot(g6: dict[str, Any], gpu_snapshot: SnapshotAssertion) -> None:
    resources = g6["template"].to_json()["Resources"]
    assert resources == gpu_snapshot


def test_cfn_lint_finds_no_error(g6: dict[str, Any]) -> None:
    assert cfn_lint_errors(g6["template"].to_json()) == []


def test_several_types_of_one_gpu_plan_with_the_smallest() -> None:
    cluster = _cluster()
    capacity = GpuCapacity(cluster, "L4", cluster=cluster, instance_types=["g6.2xlarge", "g6.xlarge"], max_instances=3)
    assert capacity.facts.instance_types == ("g6.xlarge", "g6.2xlarge")
    assert capacity.host_cpu_units == 4096 and capacity.max_instances == 3
    Template.from_stack(cluster.stack).has_resource_properties(
        "AWS::AutoScaling::AutoScalingGroup",
        {
            "MaxSize": "3",
            "MixedInstancesPolicy": Match.object_like(
                {
                    "LaunchTemplate": Match.object_like(
                        {"Overrides": [{"InstanceType": "g6.xlarge"}, {"InstanceType": "g6.2xlarge"}]}
                    )
                }
            ),
        },
    )


def test_gpu_reserve_is_configurable() -> None:
    cluster = _cluster()
    capacity = GpuCapacity(cluster, "L4", cluster=cluster, instance_types=["g6.xlarge"], gpu_margin_mib=512)
    assert capacity.usable_gpu_memory_mib == 22563 - 512


def test_explicit_ami_ids_pin() -> None:
    cluster = _cluster()
    GpuCapacity(
        cluster,
        "L4",
        cluster=cluster,
        instance_types=["g6.xlarge"],
        ami=GpuAmi.image_ids({"us-east-1": "ami-0123456789abcdef0"}),
    )
    template = Template.from_stack(cluster.stack)
    assert any("ami-0123456789abcdef0" in str(m) for m in template.to_json().get("Mappings", {}).values())


def test_unverified_family_synthesizes_with_an_acknowledgeable_warning() -> None:
    cluster = _cluster()
    GpuCapacity(cluster, "V100", cluster=cluster, instance_types=["p3dn.24xlarge"])
    warnings = Annotations.from_stack(cluster.stack).find_warning("*", Match.string_like_regexp("p3dn"))
    assert len(warnings) == 1 and UNVERIFIED_FAMILY_WARNING in warnings[0].entry.data


def test_unverified_warning_can_be_acknowledged() -> None:
    cluster = _cluster()
    capacity = GpuCapacity(cluster, "V100", cluster=cluster, instance_types=["p3dn.24xlarge"])
    cdk.Annotations.of(capacity).acknowledge_warning(UNVERIFIED_FAMILY_WARNING, "tested on p3dn")
    assert Annotations.from_stack(cluster.stack).find_warning("*", Match.any_value()) == []


# --- refusals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instance_type", "reason"),
    [
        ("g6f.large", "vGPU"),
        ("gr6f.4xlarge", "vGPU"),
        ("g5g.xlarge", "arm64"),
        ("m5.large", "not in the GPU catalog: it has no GPU"),
        ("inf2.xlarge", "not in the GPU catalog: it has no GPU"),
        ("g4ad.xlarge", "not in the GPU catalog"),
        ("dl1.24xlarge", "not in the GPU catalog"),
        ("g99.huge", "not in the GPU catalog"),
    ],
)
def test_refuses_instance_types_that_cannot_share(instance_type: str, reason: str) -> None:
    cluster = _cluster()
    with pytest.raises(CatalogError, match=rf"Test/Cluster/Gpu: .*{instance_type!r}.*{reason}"):
        GpuCapacity(cluster, "Gpu", cluster=cluster, instance_types=[instance_type])


def test_refuses_mixed_gpu_models() -> None:
    cluster = _cluster()
    with pytest.raises(
        CapacityError, match=r"same GPU model and memory, got g6.xlarge: L4 22888 MiB; g6e.xlarge: L40S"
    ):
        GpuCapacity(cluster, "Gpu", cluster=cluster, instance_types=["g6.xlarge", "g6e.xlarge"])


@pytest.mark.parametrize("instance_types", [[], "g6.xlarge"])
def test_refuses_instance_types_that_are_not_a_list(instance_types: Any) -> None:
    cluster = _cluster()
    with pytest.raises(CapacityError, match="instance_types must be a non-empty list"):
        GpuCapacity(cluster, "Gpu", cluster=cluster, instance_types=instance_types)


def test_refuses_a_single_az_vpc() -> None:
    cluster = _cluster(max_azs=1)
    with pytest.raises(CapacityError, match=r"span 1 availability zone\(s\); use subnets in at least two AZs"):
        GpuCapacity(cluster, "Gpu", cluster=cluster, instance_types=["g6.xlarge"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_instances": 1, "min_instances": 2}, "max_instances 1 is below min_instances 2"),
        ({"max_instances": 0}, "max_instances must be an integer from 1 to 5000"),
        ({"min_instances": -1}, "min_instances must be an integer from 0 to 5000"),
        ({"gpu_margin_mib": 22563}, "gpu_margin_mib 22563 leaves nothing of the 22563 MiB ECS registers"),
        ({"gpu_margin_mib": 1.5}, "gpu_margin_mib must be an integer"),
        ({"ecs_gpu_memory_mib": 30000}, "ecs_gpu_memory_mib 30000 is more than 10% above EC2's 22888 MiB"),
        ({"ecs_gpu_memory_mib": 0}, "ecs_gpu_memory_mib must be an integer >= 1"),
        ({"root_volume_gib": 8}, "root_volume_gib must be an integer from 30 to 16384, got 8"),
        ({"root_volume_gib": 20000}, "root_volume_gib must be an integer from 30 to 16384, got 20000"),
        ({"ami": "ami-0123456789abcdef0"}, "ami must be a GpuAmi"),
    ],
)
def test_refuses_bad_settings(kwargs: dict[str, Any], message: str) -> None:
    cluster = _cluster()
    with pytest.raises(ValueError, match=message):
        GpuCapacity(cluster, "Gpu", cluster=cluster, instance_types=["g6.xlarge"], **kwargs)


@pytest.mark.parametrize(
    ("stack_name", "kwargs", "refused"),
    [
        ("gpu-models", {}, None),
        ("ecsmodels", {}, None),  # CDK names the provider itself (cp-...) for a lowercase reserved prefix
        ("EcsModels", {"capacity_provider_name": "gpu-l4"}, None),
        ("EcsModels", {}, "the stack's name 'EcsModels' starts with 'Ecs', and CloudFormation names the capacity"),
        ("AWSGpu", {}, "the stack's name 'AWSGpu' starts with 'AWS'"),
        ("gpu-models", {"capacity_provider_name": "Fargate-l4"}, "capacity_provider_name 'Fargate-l4' starts with"),
    ],
)
@pytest.mark.parametrize("managed", [False, True], ids=["ec2", "managed-instances"])
def test_a_provider_name_ecs_refuses_at_deploy_is_refused_here(
    stack_name: str, kwargs: dict[str, Any], refused: str | None, managed: bool
) -> None:
    # ECS refuses a capacity provider name that starts with aws, ecs or fargate in any case; CloudFormation names an
    # unnamed provider after its stack, and CDK renames only a lowercase prefix, so "EcsModels" used to synthesize.
    stack = cdk.Stack(new_app(), "Stack", stack_name=stack_name)
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
    kind = GpuManagedInstancesCapacity if managed else GpuCapacity
    if refused is None:
        capacity = kind(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"], **kwargs)
        (provider,) = Template.from_stack(stack).find_resources("AWS::ECS::CapacityProvider").values()
        name = provider["Properties"].get("Name", stack_name)  # CloudFormation's name starts with the stack's
        assert reserved_provider_prefix(name) is None, name
        assert capacity.capacity_provider is not None
        return
    with pytest.raises(CapacityError, match=refused):
        kind(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"], **kwargs)


def test_refuses_an_imported_cluster() -> None:
    cluster = _cluster()
    imported = ecs.Cluster.from_cluster_attributes(cluster.stack, "Imported", cluster_name="x", vpc=cluster.vpc)
    with pytest.raises(CapacityError, match=r"cluster must be an aws_ecs\.Cluster created in this app") as error:
        GpuCapacity(cluster.stack, "Gpu", cluster=imported, instance_types=["g6.xlarge"])  # type: ignore[arg-type]
    assert cluster.stack.node.try_find_child("Gpu") is None
    assert "got an imported cluster ('x')" in str(error.value), str(error.value)  # not jsii's proxy class
    assert "the app that creates the cluster" in str(error.value)


def test_a_new_ami_release_rolls_the_hosts_one_at_a_time_with_draining() -> None:
    def template(release: str) -> Template:
        app = new_app()
        stack = cdk.Stack(app, "Roll")
        cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
        GpuCapacity(
            stack, "L4", cluster=cluster, instance_types=["g6.xlarge"], ami=GpuAmi.release(release), max_instances=4
        )
        return Template.from_stack(stack)

    old, new = template("20261031"), template("20261113")
    for t in (old, new):
        t.has_resource(
            "AWS::AutoScaling::AutoScalingGroup",
            {
                "UpdatePolicy": Match.object_like(
                    {
                        "AutoScalingRollingUpdate": {
                            "MaxBatchSize": 1,
                            "MinInstancesInService": 0,
                            # Each new host holds the roll until its ECS agent has registered (its signal).
                            "WaitOnResourceSignals": True,
                            "PauseTime": "PT20M",
                            # As AWS advises for a rolling update, AlarmNotification included.
                            "SuspendProcesses": [
                                "HealthCheck",
                                "ReplaceUnhealthy",
                                "AZRebalance",
                                "AlarmNotification",
                                "ScheduledActions",
                            ],
                        }
                    }
                )
            },
        )
        t.has_resource_properties(
            "AWS::ECS::CapacityProvider",
            {"AutoScalingGroupProvider": Match.object_like({"ManagedDraining": "ENABLED"})},
        )

    def image(t: Template) -> Any:
        (template_resource,) = t.find_resources("AWS::EC2::LaunchTemplate").values()
        parameter = template_resource["Properties"]["LaunchTemplateData"]["ImageId"]["Ref"]
        return t.to_json()["Parameters"][parameter]["Default"]

    # The host signals the group once its agent answers with a container instance, from a unit that runs after
    # cloud-init (the agent starts only after it): the signal names this stack and this group.
    (group_id,) = new.find_resources("AWS::AutoScaling::AutoScalingGroup")
    (launch,) = new.find_resources("AWS::EC2::LaunchTemplate").values()
    user_data = json.dumps(launch["Properties"]["LaunchTemplateData"]["UserData"])
    assert "systemd-run --no-block" in user_data and "http://localhost:51678/v1/metadata" in user_data
    assert "grep -q ContainerInstanceArn" in user_data
    assert f"/opt/aws/bin/cfn-signal -e $ok --stack Roll --resource {group_id} --region" in user_data

    # The pinned release is the launch template's image: a new release changes it, which starts the roll.
    assert "20261031" in image(old) and "20261113" in image(new)


def test_a_security_group_admits_the_capacity_as_it_admits_any_connectable() -> None:
    """``connections.allow_from(capacity, ...)`` (and aws-efs's ``allow_default_port_from(capacity)``): the capacity
    is an ``ec2.IConnectable`` to aws-cdk-lib, whose JavaScript side read no connections of it before."""
    app = new_app()
    stack = cdk.Stack(app, "S")
    vpc = ec2.Vpc(stack, "V", max_azs=2, nat_gateways=1)
    capacity = GpuCapacity(stack, "L4", cluster=ecs.Cluster(stack, "C", vpc=vpc), instance_types=["g6.xlarge"])
    store = ec2.SecurityGroup(stack, "Store", vpc=vpc)
    store.connections.allow_from(capacity, ec2.Port.tcp(2049))
    group = {"Fn::GetAtt": [Match.string_like_regexp("L4SecurityGroup"), "GroupId"]}
    Template.from_stack(stack).has_resource_properties(
        "AWS::EC2::SecurityGroupIngress", {"FromPort": 2049, "SourceSecurityGroupId": group}
    )
