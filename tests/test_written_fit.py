"""The fit plan against the written templates (core.written_fit): what runs on a GPU capacity is what the plan
counted. Pure Python: the templates are CloudFormation as CDK writes it, made by hand here; tests/test_guards_app.py
synthesizes the same roads through aws-cdk-lib."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from ecs_gpu_sharing.core import tenancy, written_fit
from ecs_gpu_sharing.core.capacity_facts import HARDENED_SETTINGS, host_facts
from ecs_gpu_sharing.core.plan_inputs import capacity_input
from ecs_gpu_sharing.core.shape import TaskShape
from ecs_gpu_sharing.core.task_rules import TASK_EXCEEDS_GPU_MEMORY, TASK_EXCEEDS_HOST_MEMORY

L4 = capacity_input("l4", host_facts(["g6.xlarge"]))  # 22307 MiB usable, 4096 CPU units, 15401 MiB a host
CAPACITIES = {"l4": L4}
ON_L4 = {"CapacityProviderStrategy": [{"CapacityProvider": {"Ref": "Provider"}, "Weight": 1}]}


def _task(budget: int | None = 4096, memory: int = 2048, cpu: int = 1024) -> dict[str, Any]:
    container: dict[str, Any] = {"Name": "model", "Image": "i", "Memory": memory, "Cpu": cpu}
    if budget is not None:
        container["ResourceRequirements"] = [
            {"Type": "GPU", "Value": "1", "SharingStrategy": {"NvidiaMps": {"Memory": budget}}}
        ]
    return {"Type": "AWS::ECS::TaskDefinition", "Properties": {"ContainerDefinitions": [container]}}


def _templates(*runners: tuple[str, dict[str, Any]], task: dict[str, Any] | None = None, **cluster: Any) -> Any:
    resources: dict[str, Any] = {
        "Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {}},
        "Provider": {
            "Type": "AWS::ECS::CapacityProvider",
            "Properties": {"AutoScalingGroupProvider": {}},
            "Metadata": {tenancy.CAPACITY_METADATA: "l4"},
        },
        "Assoc": {
            "Type": "AWS::ECS::ClusterCapacityProviderAssociations",
            "Properties": {"Cluster": {"Ref": "Cluster"}, "CapacityProviders": [{"Ref": "Provider"}], **cluster},
        },
        "Other": {"Type": "AWS::ECS::Cluster", "Properties": {}},
        "Task": copy.deepcopy(task or _task()),
    }
    resources.update(dict(runners))
    return {"s": {"Resources": resources}}


def _service(**props: Any) -> tuple[str, dict[str, Any]]:
    return "Svc", {
        "Type": "AWS::ECS::Service",
        "Properties": {"Cluster": {"Ref": "Cluster"}, "TaskDefinition": {"Ref": "Task"}, **props},
    }


SHAPE = TaskShape(cpu_units=1024, memory_mib=2048, gpu_budgets_mib=(4096,))
PLANNED = {("s", "Svc"): written_fit.Counted("svc", SHAPE, tasks=4)}


def _rules(templates: Any, counted: Any = None, allowed: Any = None) -> list[str]:
    judged = written_fit.judge(templates, CAPACITIES, PLANNED if counted is None else counted, allowed)
    return [v.rule_id for v in judged.violations]


def test_a_planned_service_written_as_planned_passes() -> None:
    assert _rules(_templates(_service(**ON_L4))) == []


@pytest.mark.parametrize(
    "task",
    [
        pytest.param(_task(budget=30000), id="a-larger-budget"),
        pytest.param(_task(budget=None), id="no-budget"),
        pytest.param(_task(memory=100000), id="more-memory"),
        pytest.param(_task(cpu=512), id="less-cpu"),
    ],
)
def test_a_planned_service_written_otherwise_is_refused(task: dict[str, Any]) -> None:
    assert _rules(_templates(_service(**ON_L4), task=task)) == [written_fit.PLAN_NOT_AS_WRITTEN]


@pytest.mark.parametrize(
    ("service", "refused"),
    [
        pytest.param({"DesiredCount": 4}, False, id="the-count-planned"),
        pytest.param({"DesiredCount": 2}, False, id="fewer-than-planned"),
        pytest.param({}, False, id="ecs-default-count"),
        pytest.param({"DesiredCount": 5}, True, id="more-than-planned"),
        pytest.param({"DeploymentConfiguration": {"MaximumPercent": 200}}, False, id="the-surge-planned"),
        pytest.param({"DeploymentConfiguration": {"MaximumPercent": 300}}, True, id="a-larger-surge"),
        pytest.param(
            {"DeploymentConfiguration": {"MaximumPercent": 150, "Strategy": "BLUE_GREEN"}}, False, id="blue-green-whole"
        ),
        pytest.param({"ServiceConnectConfiguration": {"Enabled": False}}, False, id="service-connect-off"),
        pytest.param({"ServiceConnectConfiguration": {"Enabled": True}}, True, id="service-connect-unplanned"),
        pytest.param({"PlacementStrategies": [{"Type": "spread", "Field": "instanceId"}]}, True, id="other-placement"),
        pytest.param({"PlacementConstraints": [{"Type": "distinctInstance"}]}, True, id="distinct-instance"),
    ],
)
def test_a_planned_service_runs_as_the_plan_counted(service: dict[str, Any], refused: bool) -> None:
    rules = _rules(_templates(_service(**ON_L4, **service)))
    assert rules == ([written_fit.PLAN_NOT_AS_WRITTEN] if refused else [])


def test_a_strategy_changed_to_blue_green_after_the_plan_is_refused_naming_it() -> None:
    """Counted as a rolling deployment at 150%, written as blue/green: both revisions run whole, a larger surge."""
    planned = {("s", "Svc"): written_fit.Counted("svc", SHAPE, tasks=4, max_percent=150)}
    service = _service(**ON_L4, DeploymentConfiguration={"MaximumPercent": 150, "Strategy": "BLUE_GREEN"})
    judged = written_fit.judge(_templates(service), CAPACITIES, planned, None)
    (violation,) = judged.violations
    assert "maximum percent 150 counted, 200 written (its BLUE_GREEN deployment runs both revisions whole)" in str(
        violation.message
    )


MEMBER_OF = [{"Type": "memberOf", "Expression": "attribute:ecs.instance-type == g6.xlarge"}]


@pytest.mark.parametrize("counted", [False, True])
@pytest.mark.parametrize("on", ["service", "task definition"])
def test_member_of_constraints_as_the_plan_read_them(on: str, counted: bool) -> None:
    task = _task()
    service = _service(**ON_L4)
    (service[1] if on == "service" else task)["Properties"]["PlacementConstraints"] = MEMBER_OF
    planned = {("s", "Svc"): written_fit.Counted("svc", SHAPE, tasks=4, member_of=written_fit.member_of(MEMBER_OF))}
    rules = _rules(_templates(service, task=task), counted=planned if counted else None)
    assert rules == ([] if counted else [written_fit.PLAN_NOT_AS_WRITTEN])


def _scaling(most: int) -> tuple[str, dict[str, Any]]:
    resource_id = {"Fn::Join": ["", ["service/", {"Ref": "Cluster"}, "/", {"Fn::GetAtt": ["Svc", "Name"]}]]}
    props = {"MaxCapacity": most, "MinCapacity": 1, "ResourceId": resource_id}
    props |= {"ScalableDimension": "ecs:service:DesiredCount", "ServiceNamespace": "ecs"}
    return "Target", {"Type": "AWS::ApplicationAutoScaling::ScalableTarget", "Properties": props}


@pytest.mark.parametrize(("most", "refused"), [(4, False), (3, False), (12, True)])
def test_a_planned_service_scales_to_no_more_than_the_plan_counted(most: int, refused: bool) -> None:
    rules = _rules(_templates(_service(**ON_L4), _scaling(most)))
    assert rules == ([written_fit.PLAN_NOT_AS_WRITTEN] if refused else [])


def test_a_service_the_plan_does_not_count_is_refused_and_allowed_only_within_a_given_max_instances() -> None:
    templates = _templates(_service(**ON_L4))
    assert _rules(templates, counted={}) == [written_fit.SERVICE_NOT_PLANNED]
    allowed = {("s", "Svc"): {written_fit.SERVICE_NOT_PLANNED: "max_instances is given for it"}}
    judged = written_fit.judge(templates, {"l4": replace(L4, max_instances=4)}, {}, allowed)
    assert judged.violations == []
    assert [rule for _, rule, _ in judged.allowed] == [written_fit.SERVICE_NOT_PLANNED]
    (derived,) = written_fit.judge(templates, CAPACITIES, {}, allowed).violations  # l4 derives max_instances
    assert "max_instances of l4 is derived from a plan without its tasks: give it first" in derived.message


def test_an_uncounted_service_whose_task_never_fits_says_both() -> None:
    templates = _templates(_service(**ON_L4), task=_task(budget=30000, memory=20000))
    assert _rules(templates, counted={}) == [
        written_fit.SERVICE_NOT_PLANNED,
        TASK_EXCEEDS_GPU_MEMORY,
        TASK_EXCEEDS_HOST_MEMORY,
    ]


def test_a_service_listed_outside_the_plan_is_not_refused_but_its_task_must_fit() -> None:
    outside = {("s", "Svc"): written_fit.Counted("svc")}
    assert _rules(_templates(_service(**ON_L4)), counted=outside) == []
    templates = _templates(_service(**ON_L4), task=_task(budget=30000))
    assert _rules(templates, counted=outside) == [TASK_EXCEEDS_GPU_MEMORY]


def test_an_uncounted_gpu_service_on_the_ec2_launch_type_is_refused() -> None:
    """ECS may place it on the GPU hosts, whose provider does not scale for it; one without a GPU may run elsewhere."""
    on_ec2 = _service(LaunchType="EC2")
    assert _rules(_templates(on_ec2), counted={}) == [written_fit.SERVICE_NOT_PLANNED]
    assert _rules(_templates(on_ec2, task=_task(budget=None)), counted={}) == []


def test_the_clusters_default_strategy_names_the_capacity() -> None:
    default = {"DefaultCapacityProviderStrategy": [{"CapacityProvider": {"Ref": "Provider"}}]}
    assert _rules(_templates(_service(), **default), counted={}) == [written_fit.SERVICE_NOT_PLANNED]


def test_task_sets_and_services_an_sdk_call_makes_are_not_counted() -> None:
    task_set = {
        "Type": "AWS::ECS::TaskSet",
        "Properties": {"Cluster": {"Ref": "Cluster"}, "Service": "x", "TaskDefinition": {"Ref": "Task"}, **ON_L4},
    }
    assert _rules(_templates(("Set", task_set)), counted={}) == [written_fit.SERVICE_NOT_PLANNED]
    call = (
        '{"service":"ECS","action":"createService","parameters":{"cluster":"c","taskDefinition":"Task",'
        '"serviceName":"x","capacityProviderStrategy":[{"capacityProvider":"gpu-l4"}]}}'
    )
    sdk = {"Type": "Custom::AWS", "Properties": {"Create": call}}
    templates = _templates(("Call", sdk))
    templates["s"]["Resources"]["Provider"]["Properties"]["Name"] = "gpu-l4"
    templates["s"]["Resources"]["Task"]["Properties"]["Family"] = "Task"
    assert _rules(templates, counted={}) == [written_fit.SERVICE_NOT_PLANNED]


def _rule(**ecs: Any) -> tuple[str, dict[str, Any]]:
    target = {
        "Arn": {"Fn::GetAtt": ["Cluster", "Arn"]},
        "Id": "t",
        "EcsParameters": {"TaskDefinitionArn": {"Ref": "Task"}, **ecs},
    }
    return "Rule", {"Type": "AWS::Events::Rule", "Properties": {"Targets": [target]}}


@pytest.mark.parametrize(
    "runner",
    [
        pytest.param(_rule(LaunchType="EC2"), id="ec2-launch-type"),
        pytest.param(_rule(CapacityProviderStrategy=[{"CapacityProvider": {"Ref": "Provider"}}]), id="strategy"),
    ],
)
def test_a_scheduled_task_runs_only_what_fits_a_host(runner: tuple[str, dict[str, Any]]) -> None:
    assert _rules(_templates(runner), counted={}) == []
    assert _rules(_templates(runner, task=_task(budget=30000)), counted={}) == [TASK_EXCEEDS_GPU_MEMORY]


def test_a_task_without_a_gpu_on_the_ec2_launch_type_may_run_on_other_hosts() -> None:
    runner = _rule(LaunchType="EC2")
    assert _rules(_templates(runner, task=_task(budget=None, memory=100000)), counted={}) == []
    strategy = _rule(CapacityProviderStrategy=[{"CapacityProvider": {"Ref": "Provider"}}])
    assert _rules(_templates(strategy, task=_task(budget=None, memory=100000)), counted={}) == [
        TASK_EXCEEDS_HOST_MEMORY
    ]


def test_runners_elsewhere_are_not_judged() -> None:
    elsewhere = _service(Cluster={"Ref": "Other"}, LaunchType="EC2")
    fargate = _service(CapacityProviderStrategy=[{"CapacityProvider": "FARGATE"}])
    for runner in (elsewhere, fargate):
        assert _rules(_templates(runner, task=_task(budget=30000)), counted={}) == []


HOSTS_KEEP = "".join(f"echo {s}=true >> /etc/ecs/ecs.config\n" for s in HARDENED_SETTINGS)


LT = {"LaunchTemplateSpecification": {"LaunchTemplateId": {"Ref": "Lt"}}}


def _user_data(*lines: Any, cluster: Any = None) -> Any:
    """User data as CDK writes it: the library's settings, the cluster (a Ref to the capacity's), then ``lines``."""
    cluster = {"Ref": "Cluster"} if cluster is None else cluster
    parts = ["#!/bin/bash\n" + HOSTS_KEEP + "echo ECS_CLUSTER=", cluster, " >> /etc/ecs/ecs.config\n", *lines]
    return {"Fn::Base64": {"Fn::Join": ["", parts]}}


def _group(user_data: Any = None, **props: Any) -> Any:
    """The L4 capacity's Auto Scaling group (g6.xlarge, as the plan counts it) and its launch template, with
    ``props`` written over the group."""
    policy = {"LaunchTemplate": {**LT, "Overrides": [{"InstanceType": "g6.xlarge"}]}}
    templates = _templates()
    resources = templates["s"]["Resources"]
    group = {"MinSize": "0", "MaxSize": "3", "MixedInstancesPolicy": policy, **props}
    resources["Group"] = {"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": group}
    data = {"UserData": _user_data() if user_data is None else user_data}
    resources["Lt"] = {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": data}}
    resources["Provider"]["Properties"]["AutoScalingGroupProvider"] = {"AutoScalingGroupArn": {"Ref": "Group"}}
    return templates


def _capacity_rules(templates: Any, max_instances: int = 3) -> list[str]:
    judged = written_fit.judge(templates, CAPACITIES, {}, None, {"l4": max_instances})
    return [v.rule_id for v in judged.violations]


def test_a_capacity_written_as_planned_passes() -> None:
    assert _capacity_rules(_group()) == []
    assert _capacity_rules(_group(MaxSize="5")) == []


def _launch_template_group(kind: Any) -> Any:
    templates = _group(LaunchTemplate={"LaunchTemplateId": {"Ref": "Lt"}, "Version": "1"})
    del templates["s"]["Resources"]["Group"]["Properties"]["MixedInstancesPolicy"]
    templates["s"]["Resources"]["Lt"]["Properties"]["LaunchTemplateData"]["InstanceType"] = kind
    return templates


@pytest.mark.parametrize(
    "templates",
    [
        pytest.param(_group(MaxSize="2"), id="fewer-instances-than-planned"),
        pytest.param(
            _group(MixedInstancesPolicy={"LaunchTemplate": {**LT, "Overrides": [{"InstanceType": "g6.2xlarge"}]}}),
            id="another-instance-type",
        ),
        pytest.param(
            _group(MixedInstancesPolicy={"LaunchTemplate": {**LT, "Overrides": [{"InstanceRequirements": {}}]}}),
            id="instance-requirements",
        ),
        pytest.param(_launch_template_group("g5.xlarge"), id="a-launch-templates-type"),
        pytest.param(_launch_template_group({"Ref": "Type"}), id="a-type-chosen-at-deploy"),
    ],
)
def test_a_capacity_written_otherwise_is_refused(templates: Any) -> None:
    assert _capacity_rules(templates) == [written_fit.CAPACITY_NOT_AS_WRITTEN]


def test_a_launch_templates_own_type_as_planned_passes() -> None:
    assert _capacity_rules(_launch_template_group("g6.xlarge")) == []


def _managed(allowed: Any) -> Any:
    templates = _templates()
    requirements = {"AcceleratorNames": ["l4"]} | ({} if allowed is None else {"AllowedInstanceTypes": allowed})
    provider = {"InstanceLaunchTemplate": {"InstanceRequirements": requirements}}
    templates["s"]["Resources"]["Provider"]["Properties"] = {"ManagedInstancesProvider": provider}
    return templates


@pytest.mark.parametrize(
    ("allowed", "refused"),
    [
        pytest.param(["g6.xlarge"], False, id="the-planned-type"),
        pytest.param(["g6.xlarge", "g6.48xlarge"], True, id="another-type-too"),
        pytest.param(None, True, id="any-type-the-requirements-match"),
        pytest.param({"Ref": "Types"}, True, id="types-chosen-at-deploy"),
    ],
)
def test_a_managed_instances_provider_allows_only_the_types_planned(allowed: Any, refused: bool) -> None:
    assert _capacity_rules(_managed(allowed)) == ([written_fit.CAPACITY_NOT_AS_WRITTEN] if refused else [])


@pytest.mark.parametrize(
    "user_data",
    [
        pytest.param(_user_data("echo ECS_DISABLE_PRIVILEGED=false >> /etc/ecs/ecs.config\n"), id="privileged-again"),
        pytest.param(_user_data('echo "ECS_ENABLE_GPU_SUPPORT=false" >> /etc/ecs/ecs.config\n'), id="no-gpu-support"),
        pytest.param(_user_data("echo ECS_CLUSTER=elsewhere >> /etc/ecs/ecs.config\n"), id="another-cluster"),
        pytest.param(_user_data(cluster={"Ref": "Other"}), id="another-clusters-reference"),
        pytest.param({"Fn::Base64": "#!/bin/bash\n" + HOSTS_KEEP}, id="the-default-cluster"),
        pytest.param({"Fn::Base64": "echo ECS_CLUSTER=x"}, id="none-of-the-settings"),
    ],
)
def test_user_data_that_undoes_what_the_hosts_keep_is_refused(user_data: Any) -> None:
    assert _capacity_rules(_group(user_data)) == [written_fit.HOST_SETTING_UNDONE]


def test_user_data_that_keeps_the_settings_passes_and_an_undone_one_can_be_allowed() -> None:
    assert _capacity_rules(_group(_user_data("echo ECS_ENABLE_GPU_SUPPORT=true >> /etc/ecs/ecs.config\n"))) == []
    undone = _group(_user_data("echo ECS_AWSVPC_BLOCK_IMDS=false >> /etc/ecs/ecs.config\n"))
    allowed = {("s", "Group"): {written_fit.HOST_SETTING_UNDONE: "no awsvpc tasks here"}}
    judged = written_fit.judge(undone, CAPACITIES, {}, allowed, {"l4": 3})
    assert judged.violations == [] and [r for _, r, _ in judged.allowed] == [written_fit.HOST_SETTING_UNDONE]


def _with_input(overrides: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    name, rule = _rule(LaunchType="EC2")
    rule["Properties"]["Targets"][0]["Input"] = json.dumps(overrides)
    return name, rule


@pytest.mark.parametrize(
    ("overrides", "refused"),
    [
        pytest.param({"containerOverrides": [{"name": "model", "command": ["x"]}]}, [], id="nothing-counted"),
        pytest.param({"containerOverrides": [{"name": "model", "memory": 4096}]}, [], id="more-memory-that-fits"),
        pytest.param(
            {"containerOverrides": [{"name": "model", "memory": 20000}]}, [TASK_EXCEEDS_HOST_MEMORY], id="too-much"
        ),
        pytest.param({"memory": "20000"}, [TASK_EXCEEDS_HOST_MEMORY], id="task-level-memory"),
        pytest.param({"containerOverrides": [{"name": "other", "memory": 20000}]}, [], id="another-containers-name"),
    ],
)
def test_a_scheduled_task_is_held_to_the_hosts_as_its_overrides_make_it(
    overrides: dict[str, Any], refused: list[str]
) -> None:
    assert _rules(_templates(_with_input(overrides)), counted={}) == refused


@pytest.mark.parametrize(
    ("line", "counted"),
    [
        ("echo ECS_RESERVED_MEMORY=2048 >> /etc/ecs/ecs.config\n", {"agent_reserved_memory_mib": 2048}),
        ("echo 'ECS_RESERVED_PORTS=[22, 9100]' >> /etc/ecs/ecs.config\n", {"reserved_ports": (22, 9100)}),
        (
            "echo 'ECS_AVAILABLE_LOGGING_DRIVERS=[\"awslogs\"]' >> /etc/ecs/ecs.config\n",
            {"log_drivers": ("awslogs", "awsfirelens")},
        ),
    ],
)
def test_agent_settings_the_plan_reads_are_held_to_the_user_data_as_written(line: str, counted: dict[str, Any]) -> None:
    """The plan reads them from the construct's user data; an escape hatch over the launch template's UserData writes
    other hosts."""
    templates = _group(_user_data(line))
    judged = written_fit.judge(templates, {"l4": replace(L4, **counted)}, {}, None, {"l4": 3})
    assert judged.violations == []
    assert _capacity_rules(templates) == [written_fit.CAPACITY_NOT_AS_WRITTEN]
