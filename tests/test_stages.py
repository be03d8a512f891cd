"""An app of stages (``cdk.Stage``: one per environment, as CDK Pipelines deploys them): each stage is one cloud
assembly, deployed on its own, so each has its own fleet plan, its own derived ``max_instances``, its own checks and
its own plan files in its assembly directory. The same stack code in every stage is the common case, so the same
capacity name in two stages is no clash."""

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
from ecs_gpu_sharing.cdk.fleet_plan import PLAN_FILE
from ecs_gpu_sharing.testing import fleet_plan

from conftest import new_app

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/x/model@sha256:" + "0" * 64)


class Environment(cdk.Stage):
    """A network-and-capacity stack and a models stack, the services on the other stack's capacity."""

    def __init__(self, scope: Any, id_: str, count: int, budget: int = 6000) -> None:
        super().__init__(scope, id_)
        self.platform = cdk.Stack(self, "Platform")
        vpc = ec2.Vpc(self.platform, "Vpc", max_azs=2, nat_gateways=1)
        self.cluster = ecs.Cluster(self.platform, "Cluster", vpc=vpc)
        self.capacity = GpuCapacity(self.platform, "L4", cluster=self.cluster, instance_types=["g6.xlarge"])
        self.models = cdk.Stack(self, "Models")
        task = SharedGpuTaskDefinition(self.models, "EmbedTask")
        task.add_container(
            "model",
            image=IMAGE,
            cpu=1024,
            memory_limit_mib=4096,
            gpu=MpsShare(budget),
            user="1000:1000",
            readonly_root_filesystem=True,
        )
        self.service = SharedGpuService(
            self.models,
            "Embed",
            cluster=self.cluster,
            capacity=self.capacity,
            task_definition=task,
            desired_count=count,
        )


@pytest.fixture(scope="module")
def stages() -> tuple[cdk.App, Environment, Environment]:
    app = new_app()
    dev, prod = Environment(app, "Dev", 2), Environment(app, "Prod", 9)
    app.synth()
    return app, dev, prod


def _plan(stage: cdk.Stage) -> dict[str, Any]:
    return dict(json.loads((Path(stage.outdir) / f"{PLAN_FILE}.json").read_text()))


def test_each_stage_plans_its_own_services(stages: tuple[cdk.App, Environment, Environment]) -> None:
    app, dev, prod = stages
    assert Path(dev.outdir) != Path(app.outdir)
    assert not (Path(app.outdir) / f"{PLAN_FILE}.json").exists()  # no stage's plan at the top
    counts = {
        name: {s["name"]: s["tasks"] for s in _plan(stage)["services"]}
        for name, stage in (("dev", dev), ("prod", prod))
    }
    assert counts == {"dev": {"Embed": 2}, "prod": {"Embed": 9}}


def test_each_stage_derives_its_own_max_instances(stages: tuple[cdk.App, Environment, Environment]) -> None:
    _, dev, prod = stages
    sizes = []
    for stage in (dev, prod):
        template = json.loads((Path(stage.outdir) / stage.platform.template_file).read_text())
        groups = [r for r in template["Resources"].values() if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"]
        sizes.append(int(groups[0]["Properties"]["MaxSize"]))
    planned = [_plan(stage)["capacities"][0]["max_instances"] for stage in (dev, prod)]
    assert sizes == planned
    assert sizes[0] < sizes[1]  # nine tasks of six GiB need more one-GPU hosts than two


def test_the_testing_helper_reads_a_stages_plan() -> None:
    app = new_app()
    stage = Environment(app, "Only", 3)
    assert [s["tasks"] for s in fleet_plan(stage)["services"]] == [3]  # synthesized through the app


def test_a_refusal_names_the_stage_it_is_in() -> None:
    app = new_app()
    Environment(app, "Dev", 2)
    Environment(app, "Prod", 2, budget=40_000)  # more than an L4 holds
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    message = str(raised.value)
    assert "Prod/Models/Embed" in message and "Dev/" not in message, message[:2000]


def test_the_aws_rules_check_a_stages_templates() -> None:
    app = new_app()
    stage = Environment(app, "Dev", 2)
    logs.CfnLogGroup(stage.models, "Group", retention_in_days=4)  # CloudWatch Logs offers 3 and 5, not 4
    with pytest.raises(RuntimeError, match=r"ecs-gpu-sharing:LogRetentionDays"):
        app.synth()


def test_a_stage_without_a_plan_is_checked_by_the_plan_around_it_and_each_finding_is_told_once() -> None:
    app = new_app()
    top = Environment(app, "Top", 2)  # stages in a stage: the outer one plans its own, the inner ones theirs
    dev = Environment(top, "Dev", 2)
    tools = cdk.Stack(cdk.Stage(top, "Tools"), "Jobs")  # no GPU capacity: no plan of its own
    logs.CfnLogGroup(tools, "Group", retention_in_days=4)
    logs.CfnLogGroup(dev.models, "Group", retention_in_days=4)
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    message = str(raised.value)
    assert message.count("ERROR [ecs-gpu-sharing:LogRetentionDays]") == 2, message[:3000]
    assert "Top/Tools/Jobs/Group" in message and "Top/Dev/Models/Group" in message, message[:3000]


def test_the_guards_judge_a_plain_task_in_a_stage() -> None:
    app = new_app()
    stage = Environment(app, "Dev", 2)
    task = ecs.Ec2TaskDefinition(stage.models, "Tenant")
    task.add_container("app", image=IMAGE, memory_limit_mib=256, privileged=True)
    service = ecs.Ec2Service(
        stage.models,
        "Plain",
        cluster=stage.cluster,
        task_definition=task,
        capacity_provider_strategies=stage.capacity.capacity_provider_strategies(),
    )
    service.node.add_dependency(stage.cluster)
    with pytest.raises(RuntimeError, match=r"Dev/Models/Tenant.*ecs-gpu-sharing:Privileged"):
        app.synth()


def test_what_the_apps_plan_is_told_about_a_stages_service_holds_there() -> None:
    app = new_app()
    stage = Environment(app, "Dev", 2)
    FleetPlan.of(app).acknowledge(stage.service, "ecs-gpu-sharing:BudgetIsAGuess", "measured next sprint")
    FleetPlan.of(app).plan_count(stage.service, 7)
    plan = fleet_plan(stage)
    assert [s["tasks"] for s in plan["services"]] == [7]
    guesses = [f for f in plan["findings"] if f["rule_id"] == "ecs-gpu-sharing:BudgetIsAGuess"]
    assert [f["acknowledged"] for f in guesses] == ["measured next sprint"]
