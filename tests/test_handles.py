"""Every handle a team holds on a service works with FleetPlan: the pattern, its ``.service``, the task definition;
anything else is refused in one line, never a silent no-op."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_ecs_patterns as patterns
from aws_cdk import aws_s3 as s3

from ecs_gpu_sharing import AllocationNote, FleetPlan, GpuCapacity, MpsShare, ServiceError, SharedGpuTaskDefinition

from conftest import new_app

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/x/model@sha256:" + "0" * 64)
NEEDS_MORE = AllocationNote(8192, 808, shared_failure="requests fail until ECS restarts the task")  # 9000 > 8192


def _pattern() -> tuple[cdk.App, patterns.ApplicationLoadBalancedEc2Service, SharedGpuTaskDefinition]:
    app = new_app()
    stack = cdk.Stack(app, "Handles")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    cluster = ecs.Cluster(stack, "Cluster", vpc=vpc)
    capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
    task = SharedGpuTaskDefinition(stack, "Task")
    task.add_container(
        "model",
        image=IMAGE,
        cpu=512,
        memory_limit_mib=1024,
        gpu=MpsShare(8192),
        port_mappings=[ecs.PortMapping(container_port=8080)],
    )
    pattern = patterns.ApplicationLoadBalancedEc2Service(
        stack,
        "Chat",
        cluster=cluster,
        task_definition=task,
        desired_count=1,
        capacity_provider_strategies=capacity.capacity_provider_strategies(),
        public_load_balancer=False,
    )
    pattern.service.node.add_dependency(cluster)  # created after the cluster has the capacity's provider
    return app, pattern, task


@pytest.mark.parametrize("handle", ["pattern", "service", "task"])
def test_set_allocation_works_on_every_handle(handle: str) -> None:
    app, pattern, task = _pattern()
    given: Any = {"pattern": pattern, "service": pattern.service, "task": task}[handle]
    FleetPlan.of(pattern).set_allocation(given, NEEDS_MORE)
    with pytest.raises(RuntimeError, match=r"BudgetBelowNeed[\s\S]*9000"):
        app.synth()


def test_acknowledge_on_a_patterns_service_reaches_the_pattern() -> None:
    app, pattern, _ = _pattern()
    FleetPlan.of(pattern).acknowledge(pattern.service, "ecs-gpu-sharing:BudgetIsAGuess", "measured next week")
    plan = json.loads((Path(app.synth().directory) / "gpu-fleet-plan.json").read_text())
    guess = [f for f in plan["findings"] if f["rule_id"] == "ecs-gpu-sharing:BudgetIsAGuess"]
    assert guess and all(f["acknowledged"] == "measured next week" for f in guess)


def test_anything_else_is_refused_in_one_line() -> None:
    _, pattern, _ = _pattern()
    bucket = s3.Bucket(cdk.Stack.of(pattern), "Bucket")
    for method, args in (("set_allocation", (NEEDS_MORE,)), ("plan_count", (3,)), ("name_service", ("x",))):
        with pytest.raises(ServiceError, match=rf"Handles/Bucket: FleetPlan.{method} takes a service"):
            getattr(FleetPlan.of(pattern), method)(bucket, *args)


def test_evidence_without_a_note_makes_a_budget_measured_not_a_guess() -> None:
    import datetime

    from ecs_gpu_sharing import Evidence

    app, pattern, _ = _pattern()
    FleetPlan.of(pattern).set_evidence(
        pattern.service, Evidence(peak_mib=7000, measured_on=datetime.date(2026, 11, 30), source="evaluate")
    )
    plan = json.loads((Path(app.synth().directory) / "gpu-fleet-plan.json").read_text())
    (chat,) = plan["services"]
    assert chat["allocation"] is None and chat["evidence"]["peak_mib"] == 7000
    # What CloudFormation will record of it: evaluate --plan finds the service by this, not by its tag alone.
    logical = cdk.Stack.of(pattern).get_logical_id(pattern.service.node.default_child)  # type: ignore[arg-type]
    assert chat["deployed_as"] == {"stack": "Handles", "logical_id": logical, "nested_stacks": []}
    assert not [f for f in plan["findings"] if f["rule_id"] == "ecs-gpu-sharing:BudgetIsAGuess"]
