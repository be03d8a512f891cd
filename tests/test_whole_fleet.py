"""The whole-fleet plan: every service on a GPU capacity is planned, however it was built, at its largest count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_ecs_patterns as patterns
from aws_cdk.assertions import Annotations, Match, Template

from ecs_gpu_sharing import FleetPlan, GpuCapacity, MpsShare, SharedGpuService, SharedGpuTaskDefinition
from ecs_gpu_sharing.cdk.fleet_plan import PLAN_FILE
from ecs_gpu_sharing.core.errors import ServiceError, TaskDefinitionError
from ecs_gpu_sharing.core.headroom import with_headroom
from ecs_gpu_sharing.core.rules import OUTSIDE_PLAN_WARNING
from stacks.fleet_app import build_app

from conftest import REPO, cdk_json_context, new_app, plan_only

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/python:3.12-slim")
MPS_REQUIREMENT = {"Type": "GPU", "SharingStrategy": {"NvidiaMps": {"Memory": 6000}}}


class App:
    """One stack with a cluster and an L4 capacity (g6.xlarge: 1 GPU, 20840 MiB usable, 4 vCPU)."""

    def __init__(self, **capacity: Any) -> None:
        self.app = new_app()
        self.stack = cdk.Stack(self.app, "Test")
        self.vpc = ec2.Vpc(self.stack, "Vpc", max_azs=2, nat_gateways=1)
        self.cluster = ecs.Cluster(self.stack, "Cluster", vpc=self.vpc)
        self.capacity = GpuCapacity(self.stack, "L4", cluster=self.cluster, instance_types=["g6.xlarge"], **capacity)

    def task(self, id_: str, budget: int = 6000, *, cpu: Any = 512, memory: Any = 1024) -> SharedGpuTaskDefinition:
        td = SharedGpuTaskDefinition(self.stack, id_)
        td.add_container(
            "model",
            image=IMAGE,
            cpu=cpu,
            memory_limit_mib=memory,
            gpu=MpsShare(budget),
            port_mappings=[ecs.PortMapping(container_port=8080)],
        )
        return td

    def strategy(self) -> list[ecs.CapacityProviderStrategy]:
        return [ecs.CapacityProviderStrategy(capacity_provider=self.capacity.capacity_provider.capacity_provider_name)]

    def synth(self) -> dict[str, Any]:
        assembly = self.app.synth()
        directory = Path(assembly.directory)
        return {
            "template": Template.from_json(assembly.get_stack_artifact(self.stack.artifact_id).template),
            "plan": json.loads((directory / f"{PLAN_FILE}.json").read_text()),
            "dir": directory,
        }


def _services(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in plan["services"]}


@pytest.fixture(scope="module")
def mixed() -> dict[str, Any]:
    """Every kind of service on one capacity, synthesized once."""
    a = App()
    # 1. task auto scaling on a SharedGpuService: planned at its maximum
    scaled = SharedGpuService(
        a.stack, "Scaled", cluster=a.cluster, capacity=a.capacity, task_definition=a.task("ScaledTask"), desired_count=2
    )
    scaled.service.auto_scale_task_count(min_capacity=2, max_capacity=20)
    # 2. a plain Ec2Service holding a whole GPU, on the capacity's provider, with its own maximum percent
    whole = ecs.Ec2TaskDefinition(a.stack, "WholeTask")
    whole.add_container("model", image=IMAGE, cpu=1024, memory_limit_mib=2048, gpu_count=1)
    whole_service = ecs.Ec2Service(
        a.stack,
        "Whole",
        cluster=a.cluster,
        task_definition=whole,
        desired_count=3,
        max_healthy_percent=150,
        capacity_provider_strategies=a.strategy(),
    )
    whole_service.node.add_dependency(a.cluster)  # created after the cluster has the capacity's provider
    # 3. aws-ecs-patterns' EC2 services with a shared-GPU task definition
    alb = patterns.ApplicationLoadBalancedEc2Service(
        a.stack,
        "Alb",
        cluster=a.cluster,
        task_definition=a.task("AlbTask", 3000),
        desired_count=2,
        capacity_provider_strategies=a.strategy(),
        public_load_balancer=False,
    )
    nlb = patterns.NetworkLoadBalancedEc2Service(
        a.stack,
        "Nlb",
        cluster=a.cluster,
        task_definition=a.task("NlbTask", 3000),
        desired_count=1,
        capacity_provider_strategies=a.strategy(),
        public_load_balancer=False,
    )
    for pattern in (alb, nlb):
        pattern.service.node.add_dependency(a.cluster)
    patterns.ScheduledEc2Task(
        a.stack,
        "Nightly",
        cluster=a.cluster,
        schedule=cdk.aws_applicationautoscaling.Schedule.expression("rate(1 day)"),
        scheduled_ec2_task_definition_options=patterns.ScheduledEc2TaskDefinitionOptions(
            task_definition=a.task("NightlyTask", 3000)
        ),
    )
    # 4. a token desired count, planned at a count stated for planning
    count = cdk.CfnParameter(a.stack, "Count", type="Number", default=2)
    SharedGpuService(
        a.stack,
        "Param",
        cluster=a.cluster,
        capacity=a.capacity,
        task_definition=a.task("ParamTask", 3000),
        desired_count=count.value_as_number,
        planned_count=5,
    )
    return {"app": a, **a.synth()}


def test_auto_scaling_maximum_is_planned_and_sizes_the_group(mixed: dict[str, Any]) -> None:
    scaled = _services(mixed["plan"])["Scaled"]
    assert (scaled["tasks"], scaled["count_source"], scaled["surge_tasks"]) == (20, "auto scaling maximum", 40)
    l4 = mixed["plan"]["capacities"][0]
    # 40 surge tasks of 6000 MiB, 3 per 20840-MiB GPU, packed; ECS's own placement may need more, and the derived
    # maximum adds the headroom for arrival orders the replays did not draw
    assert l4["max_instances"] == with_headroom(l4["ecs_placement_instances"])
    assert l4["ecs_placement_instances"] >= l4["surge_instances"] >= 14
    mixed["template"].has_resource_properties(
        "AWS::AutoScaling::AutoScalingGroup", {"MaxSize": str(l4["max_instances"])}
    )


def test_a_plain_whole_gpu_service_is_planned_with_its_own_maximum_percent(mixed: dict[str, Any]) -> None:
    whole = _services(mixed["plan"])["Whole"]
    assert whole["task"] == {"cpu_units": 1024, "memory_mib": 2048, "gpu_budgets_mib": [], "whole_gpus": 1}
    assert (whole["tasks"], whole["max_percent"], whole["surge_tasks"]) == (3, 150, 4)
    whole_gpus = sum(h["count"] for h in mixed["plan"]["capacities"][0]["instances"] for g in h["gpus"] if g["whole"])
    assert whole_gpus == 3


def test_patterns_take_a_shared_gpu_task_definition_and_are_planned(mixed: dict[str, Any]) -> None:
    services = _services(mixed["plan"])
    for name in ("Alb", "Nlb"):
        assert services[name]["task"]["gpu_budgets_mib"] == [3000], name
    assert services["Alb"]["tasks"] == 2
    definitions = mixed["template"].find_resources("AWS::ECS::TaskDefinition")
    assert len(definitions) == 6
    for logical_id, resource in definitions.items():
        if logical_id.startswith("Whole"):
            continue
        (container,) = resource["Properties"]["ContainerDefinitions"]
        assert container["ResourceRequirements"][0]["SharingStrategy"]["NvidiaMps"]["Memory"] in (3000, 6000)


def test_a_token_desired_count_is_planned_at_the_stated_count(mixed: dict[str, Any]) -> None:
    param = _services(mixed["plan"])["Param"]
    assert (param["tasks"], param["count_source"]) == (5, "stated for planning")
    mixed["template"].has_resource_properties("AWS::ECS::Service", {"DesiredCount": {"Ref": "Count"}})


def test_no_plan_output_shows_a_token_number(mixed: dict[str, Any]) -> None:
    text = (mixed["dir"] / f"{PLAN_FILE}.json").read_text() + (mixed["dir"] / f"{PLAN_FILE}.md").read_text()
    assert "e+" not in text and "Token" not in text


def test_plan_counts_every_service_on_the_capacity(mixed: dict[str, Any]) -> None:
    assert sorted(_services(mixed["plan"])) == ["Alb", "Nlb", "Param", "Scaled", "Whole"]
    assert mixed["plan"]["summary"]["fits"] is True


def test_multiple_target_group_patterns_take_it_and_are_reported_as_outside_the_plan() -> None:
    # These patterns take no capacity provider strategy: ECS places their tasks by launch type EC2, on any host of
    # the cluster, and the capacity provider does not scale for them.
    a = App(max_instances=4)
    patterns.ApplicationMultipleTargetGroupsEc2Service(
        a.stack,
        "AlbMulti",
        cluster=a.cluster,
        task_definition=a.task("AlbMultiTask", 3000),
        load_balancers=[
            patterns.ApplicationLoadBalancerProps(
                name="lb", public_load_balancer=False, listeners=[patterns.ApplicationListenerProps(name="l")]
            )
        ],
    )
    patterns.NetworkMultipleTargetGroupsEc2Service(
        a.stack,
        "NlbMulti",
        cluster=a.cluster,
        task_definition=a.task("NlbMultiTask", 3000),
        load_balancers=[
            patterns.NetworkLoadBalancerProps(
                name="lb", public_load_balancer=False, listeners=[patterns.NetworkListenerProps(name="l")]
            )
        ],
    )
    result = a.synth()
    result["template"].has_resource_properties(
        "AWS::ECS::TaskDefinition",
        {
            "ContainerDefinitions": [
                Match.object_like(
                    {"ResourceRequirements": [MPS_REQUIREMENT | {"SharingStrategy": {"NvidiaMps": {"Memory": 3000}}}]}
                )
            ]
        },
    )
    assert {o["name"] for o in result["plan"]["outside_plan"]} == {"AlbMulti", "NlbMulti"}
    warnings = [str(w.entry.data) for w in Annotations.from_stack(a.stack).find_warning("*", Match.any_value())]
    assert sum(OUTSIDE_PLAN_WARNING in w and "EC2 launch type" in w for w in warnings) == 2


# --- the cluster's default strategy ---------------------------------------------------------------------


def test_a_service_reaching_the_capacity_through_the_default_strategy_is_planned() -> None:
    a = App()
    a.cluster.add_default_capacity_provider_strategy(a.strategy())
    service = ecs.Ec2Service(
        a.stack,
        "ByDefault",
        cluster=a.cluster,
        task_definition=a.task("T"),
        desired_count=4,
        capacity_provider_strategies=[],
    )
    service.node.add_dependency(a.cluster)  # created once the cluster has its default strategy
    result = a.synth()
    assert _services(result["plan"])["ByDefault"]["tasks"] == 4


# --- tokens -----------------------------------------------------------------------------------------------


def test_a_token_count_without_a_planned_count_warns_and_asks_for_max_instances() -> None:
    a = App()
    count = cdk.CfnParameter(a.stack, "Count", type="Number")
    SharedGpuService(
        a.stack,
        "Param",
        cluster=a.cluster,
        capacity=a.capacity,
        task_definition=a.task("T"),
        desired_count=count.value_as_number,
    )
    with pytest.raises(RuntimeError) as raised:
        a.app.synth()
    message = str(raised.value)
    assert "[Test/L4] [ecs-gpu-sharing:MaxInstancesUnknown] max_instances is left to the plan, but Param" in message
    assert "e+" not in message
    # why, and the fix that applies to that reason, in the error itself: the synth stops before warnings show
    assert ": state a count for planning (SharedGpuService(planned_count=...)" in message
    assert "give the values literally" not in message and "run one service" not in message


def test_a_token_count_with_explicit_max_instances_is_an_acknowledgeable_warning() -> None:
    a = App(max_instances=3)
    count = cdk.CfnParameter(a.stack, "Count", type="Number")
    service = SharedGpuService(
        a.stack,
        "Param",
        cluster=a.cluster,
        capacity=a.capacity,
        task_definition=a.task("T"),
        desired_count=count.value_as_number,
    )
    a.synth()
    warnings = [str(w.entry.data) for w in Annotations.from_stack(a.stack).find_warning("*", Match.any_value())]
    (warning,) = [w for w in warnings if OUTSIDE_PLAN_WARNING in w]
    assert "its desired count is a CDK token" in warning or "desired count is a" in warning
    assert "e+" not in warning
    b = App(max_instances=3)
    count = cdk.CfnParameter(b.stack, "Count", type="Number")
    service = SharedGpuService(
        b.stack,
        "Param",
        cluster=b.cluster,
        capacity=b.capacity,
        task_definition=b.task("T"),
        desired_count=count.value_as_number,
    )
    cdk.Annotations.of(service).acknowledge_warning(OUTSIDE_PLAN_WARNING, "counted by hand")
    b.synth()
    assert not Annotations.from_stack(b.stack).find_warning("*", Match.string_like_regexp(OUTSIDE_PLAN_WARNING))


def test_token_cpu_or_memory_in_a_shared_gpu_container_is_refused_naming_the_field() -> None:
    a = App()
    memory = cdk.CfnParameter(a.stack, "Memory", type="Number")
    with pytest.raises(TaskDefinitionError, match=r"Test/T/model: memory_limit_mib is a CDK token") as raised:
        a.task("T", memory=memory.value_as_number)
    assert "e+" not in str(raised.value)


def test_token_memory_in_a_plain_task_on_the_capacity_fails_synth_naming_the_field() -> None:
    a = App()
    memory = cdk.CfnParameter(a.stack, "Memory", type="Number")
    td = ecs.Ec2TaskDefinition(a.stack, "PlainTask")
    td.add_container("model", image=IMAGE, memory_limit_mib=memory.value_as_number, gpu_count=1)
    ecs.Ec2Service(
        a.stack,
        "Plain",
        cluster=a.cluster,
        task_definition=td,
        desired_count=1,
        capacity_provider_strategies=a.strategy(),
    )
    with pytest.raises(
        RuntimeError,
        match=r"TaskShapeNotLiteral\] Test/Plain: container model memory_limit_mib is a deploy-time value \(Ref 'Memory'\)",
    ):
        a.app.synth()


def test_a_gpu_service_on_the_ec2_launch_type_is_reported_not_dropped() -> None:
    a = App(max_instances=2)
    td = ecs.Ec2TaskDefinition(a.stack, "Plain")
    td.add_container("model", image=IMAGE, memory_limit_mib=512, gpu_count=1)
    ecs.Ec2Service(a.stack, "Launched", cluster=a.cluster, task_definition=td, desired_count=1)
    a.synth()
    warnings = [str(w.entry.data) for w in Annotations.from_stack(a.stack).find_warning("*", Match.any_value())]
    assert any(OUTSIDE_PLAN_WARNING in w and "EC2 launch type" in w for w in warnings), warnings


# --- names ------------------------------------------------------------------------------------------------


def test_two_services_with_one_name_fail_naming_both() -> None:
    a = App()
    for scope_id in ("A", "B"):
        scope = cdk.Stack(a.app, scope_id)
        SharedGpuService(
            scope,
            "Embedder",
            cluster=a.cluster,
            capacity=a.capacity,
            task_definition=a.task(f"T{scope_id}"),
            desired_count=1,
        )
    with pytest.raises(
        RuntimeError, match=r"ServiceNameClash\] 2 services carry the name 'Embedder' \(A/Embedder, B/Embedder\)"
    ):
        a.app.synth()


def test_two_capacities_with_one_name_are_refused_when_built() -> None:
    a = App()
    with pytest.raises(Exception, match="already named 'L4'"):
        GpuCapacity(a.stack, "Other", name="L4", cluster=a.cluster, instance_types=["g6.xlarge"])


def test_plan_count_is_checked() -> None:
    a = App()
    task = a.task("CountedTask")
    with pytest.raises(ServiceError, match="tasks must be an integer from 0 to 5000"):
        FleetPlan.of(a.stack).plan_count(task, -1)


# --- plan files -------------------------------------------------------------------------------------------


def test_a_failed_synth_leaves_no_plan_file_from_an_earlier_run(tmp_path: Path) -> None:
    def synth(budget: int) -> None:
        app = cdk.App(outdir=str(tmp_path), context=cdk_json_context())
        stack = cdk.Stack(app, "Test")
        cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
        capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
        td = SharedGpuTaskDefinition(stack, "T")
        td.add_container("model", image=IMAGE, memory_limit_mib=512, gpu=MpsShare(budget))
        SharedGpuService(stack, "S", cluster=cluster, capacity=capacity, task_definition=td, desired_count=1)
        app.synth()

    synth(6000)
    assert (tmp_path / f"{PLAN_FILE}.json").exists()
    with pytest.raises(RuntimeError, match="TaskExceedsGpuMemory"):
        synth(30000)
    assert not (tmp_path / f"{PLAN_FILE}.json").exists()
    assert not (tmp_path / f"{PLAN_FILE}.md").exists()


# --- one road: the CLI and the synth plan agree ----------------------------------------------------------


def test_cli_json_and_synth_plan_carry_the_same_plan() -> None:
    app = new_app()
    build_app(app)
    assembly = app.synth()
    synth_plan = json.loads((Path(assembly.directory) / f"{PLAN_FILE}.json").read_text())
    cli = subprocess.run(
        [sys.executable, "-m", "ecs_gpu_sharing.cli", "plan", str(REPO / "fleet.toml"), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert plan_only(json.loads(cli.stdout)) == plan_only(synth_plan)
    assert [c["name"] for c in synth_plan["capacities"]] == ["l4", "l40s"]


# --- packaging ----------------------------------------------------------------------------------------------


def test_the_library_allows_newer_aws_cdk_lib_2x() -> None:
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    (cdk_req,) = [Requirement(r) for r in requires("cdk-ecs-gpu-sharing") or [] if r.startswith("aws-cdk-lib")]
    assert cdk_req.specifier.contains("2.275.0")
    assert cdk_req.specifier.contains("2.300.0")
    assert not cdk_req.specifier.contains("3.0.0")


def test_a_service_spread_over_two_gpu_capacities_is_told_to_split() -> None:
    """The plan places a service on one GPU capacity; a strategy over two is outside it, and the error says the fix
    that applies (a count stated for planning would not help)."""
    a = App()
    other = GpuCapacity(a.stack, "Other", cluster=a.cluster, instance_types=["g6.2xlarge"])
    service = ecs.Ec2Service(
        a.stack,
        "Split",
        cluster=a.cluster,
        task_definition=a.task("T"),
        desired_count=2,
        min_healthy_percent=100,
        capacity_provider_strategies=[
            *a.capacity.capacity_provider_strategies(),
            *other.capacity_provider_strategies(),
        ],
    )
    service.node.add_dependency(a.cluster)
    with pytest.raises(RuntimeError) as raised:
        a.app.synth()
    message = str(raised.value)
    assert "Split cannot be counted (its strategy spreads it over several GPU capacities (L4, Other)" in message
    assert ": run one service on each GPU capacity, or acknowledge it)" in message
    assert "planned_count" not in message
