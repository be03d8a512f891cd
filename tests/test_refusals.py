"""A refusal in a consumer's synth is a few lines: the construct path, rule id, numbers and fix, with no JavaScript
or Python stack (ecs_gpu_sharing.cdk.refusals). Each case runs an app as `cdk synth` runs it: a Python process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HEAD = """
import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2, aws_ecs as ecs
from ecs_gpu_sharing import GpuCapacity, MpsShare, SharedGpuService, SharedGpuTaskDefinition
app = cdk.App(outdir={outdir!r})
stack = cdk.Stack(app, "Consumer")
image = ecs.ContainerImage.from_registry("public.ecr.aws/x/m@sha256:" + "0" * 64)
"""

CASES = {
    "in a constructor": (
        "MpsShare(0)",
        "gpu_budget_mib must be an integer >= 1",
    ),
    "in a construct's validation": (
        """
        td = SharedGpuTaskDefinition(stack, "Td", usable_gpu_memory_mib=8192)
        td.add_container("model", image=image, memory_limit_mib=1024, gpu=MpsShare(9000), user="1000",
                         readonly_root_filesystem=True)
        app.synth()
        """,
        "[Consumer/Td] [ecs-gpu-sharing:TaskExceedsGpuMemory]",
    ),
    "in the written templates": (
        """
        vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
        cluster = ecs.Cluster(stack, "Cluster", vpc=vpc)
        capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
        td = ecs.Ec2TaskDefinition(stack, "Plain")
        td.add_container("agent", image=image, memory_limit_mib=256, user="1000", readonly_root_filesystem=True)
        ecs.Ec2Service(stack, "Svc", cluster=cluster, task_definition=td, circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
                       capacity_provider_strategies=capacity.capacity_provider_strategies())
        td.node.default_child.add_property_override("NetworkMode", "host")
        app.synth()
        """,
        "[ecs-gpu-sharing:NetworkModeNotAllowed]",
    ),
    "by an aws-cdk construct a library construct makes": (
        """
        vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
        cluster = ecs.Cluster(stack, "Cluster", vpc=vpc)
        capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
        td = SharedGpuTaskDefinition(stack, "Td")
        td.add_container("model", image=image, memory_limit_mib=1024, gpu=MpsShare(2048), user="1000",
                         readonly_root_filesystem=True)
        SharedGpuService(stack, "Svc", cluster=cluster, capacity=capacity, task_definition=td, desired_count=2,
                         min_healthy_percent=50, max_healthy_percent=100,
                         availability_zone_rebalancing=ecs.AvailabilityZoneRebalancing.ENABLED)
        """,
        "error: [Consumer/Svc] AvailabilityZoneRebalancing.ENABLED requires maxHealthyPercent > 100",
    ),
    "a library option of a type it does not take": (
        """
        vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
        cluster = ecs.Cluster(stack, "Cluster", vpc=vpc)
        GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"], notification_topic="arn:aws:sns:x")
        """,
        "error: Consumer/L4: notification_topic must be an aws_sns.ITopic",
    ),
    "an option passed on to aws-cdk-lib of a type it does not take": (
        """
        vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
        cluster = ecs.Cluster(stack, "Cluster", vpc=vpc)
        capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
        td = SharedGpuTaskDefinition(stack, "Td")
        td.add_container("model", image=image, memory_limit_mib=1024, gpu=MpsShare(2048))
        SharedGpuService(stack, "Svc", cluster=cluster, capacity=capacity, task_definition=td, desired_count=2,
                         health_check_grace_period=60)
        """,
        "error: Consumer/Svc: a value passed on to aws_ecs.Ec2Service is not of the type it takes",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_refusal_is_a_few_lines_without_a_stack(case: str, tmp_path: Path) -> None:
    body, expected = CASES[case]
    script = tmp_path / "app.py"
    script.write_text(HEAD.format(outdir=str(tmp_path / "out")) + textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if k != "ECS_GPU_SHARING_TRACEBACK"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    output = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1
    assert any(expected in line for line in output), output
    assert len(output) <= 5, output
    assert not any("Traceback" in line or "program.js" in line or "jsii" in line for line in output), output


def test_a_struct_field_aws_cdk_lib_cannot_deserialize_is_named_with_the_construct() -> None:
    """jsii's SerializationError for a struct's field names only aws-cdk-lib's class; the field is in its reasons."""
    from ecs_gpu_sharing import ServiceError
    from ecs_gpu_sharing.cdk.refusals import passed_on

    cause = Exception(
        "@jsii/kernel.SerializationError: ...\n  Key 'deploymentAlarms': Unable to deserialize value as X"
    )
    refused = pytest.raises(ServiceError, match=r"^App/Svc: a value passed on to aws_ecs.Ec2Service is not of the type")
    with refused as raised, passed_on("App/Svc", "aws_ecs.Ec2Service", ServiceError):
        raise RuntimeError(
            "Passed to parameter props of new aws-cdk-lib.aws_ecs.Ec2Service: Unable to deserialize value"
        ) from cause
    assert "(deployment_alarms)" in str(raised.value)
    left = pytest.raises(RuntimeError, match="something else")  # any other error is left as it was
    with left, passed_on("App/Svc", "aws_ecs.Ec2Service", ServiceError):
        raise RuntimeError("something else")
