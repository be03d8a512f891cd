"""Text the library writes from a team's names, fitted to the AWS field it goes into (``core.aws_text``): an id with
a character EC2 or IAM refuses, or a long path, synthesizes to values the real services take."""

from __future__ import annotations

import re
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Template

from ecs_gpu_sharing import (
    GpuCapacity,
    GpuFleetDashboard,
    GpuManagedInstancesCapacity,
    MpsShare,
    SharedGpuService,
    SharedGpuTaskDefinition,
)
from ecs_gpu_sharing.core.aws_text import (
    DASHBOARD_NAME,
    IAM_ROLE_DESCRIPTION,
    SECURITY_GROUP_DESCRIPTION,
    TextField,
)

from conftest import new_app

ODD = "Pool ä 中 " + "x" * 300  # a character past ASCII, one past Latin-1, and a path past every field's length


def _takes(field: TextField, value: Any) -> bool:
    return isinstance(value, str) and len(value) <= field.max_length and re.fullmatch(f"{field.characters}*", value)


def test_a_text_the_field_takes_is_kept() -> None:
    assert SECURITY_GROUP_DESCRIPTION.fitted("ECS GPU hosts of Models/L4") == "ECS GPU hosts of Models/L4"


@pytest.mark.parametrize("field", [SECURITY_GROUP_DESCRIPTION, IAM_ROLE_DESCRIPTION, DASHBOARD_NAME])
def test_a_text_the_field_refuses_is_fitted(field: TextField) -> None:
    fitted = field.fitted(ODD * 4)
    assert _takes(field, fitted) and len(fitted) == field.max_length


def test_a_cut_name_stays_apart_from_another_cut_alike() -> None:
    a, b = (DASHBOARD_NAME.fitted("y" * 300 + end, unique=True, room=105) for end in ("a", "b"))
    assert a != b and len(a) == len(b) == 105 and _takes(DASHBOARD_NAME, a)


def test_what_the_constructs_write_from_an_odd_id_is_taken_by_aws() -> None:
    app = new_app()
    stack = cdk.Stack(app, "Models")
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
    capacity = GpuCapacity(stack, ODD, cluster=cluster, instance_types=["g6.xlarge"], name="L4")
    GpuManagedInstancesCapacity(stack, ODD + "mi", cluster=cluster, instance_types=["g6e.xlarge"], name="L40S")
    task = SharedGpuTaskDefinition(stack, "Task")
    task.add_container(
        "model",
        image=ecs.ContainerImage.from_registry("x@sha256:" + "0" * 64),
        memory_limit_mib=2048,
        gpu=MpsShare(4000),
    )
    service = SharedGpuService(
        stack, "Embed", cluster=cluster, capacity=capacity, task_definition=task, desired_count=1
    )
    GpuFleetDashboard(stack, ODD + "dash", cluster=cluster, services={"Embed": service.service})
    app.synth()
    template = Template.from_stack(stack).to_json()["Resources"]
    groups = [r["Properties"]["GroupDescription"] for r in template.values() if r["Type"] == "AWS::EC2::SecurityGroup"]
    roles = [r["Properties"].get("Description") for r in template.values() if r["Type"] == "AWS::IAM::Role"]
    (dashboard,) = [
        r["Properties"]["DashboardName"] for r in template.values() if r["Type"] == "AWS::CloudWatch::Dashboard"
    ]
    assert len(groups) >= 2 and all(_takes(SECURITY_GROUP_DESCRIPTION, g) for g in groups), groups
    assert any(roles) and all(_takes(IAM_ROLE_DESCRIPTION, d) for d in roles if d is not None), roles
    # env-agnostic: the stack's name, the region at deploy, then the construct's path fitted
    literal = "".join(part for part in dashboard["Fn::Join"][1] if isinstance(part, str))
    assert _takes(DASHBOARD_NAME, literal) and len(literal) + len("ap-southeast-5-") <= DASHBOARD_NAME.max_length
