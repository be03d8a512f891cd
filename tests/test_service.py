"""SharedGpuService and the synth-time fleet plan: a fleet that fits, and each error and warning."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match, Template

from ecs_gpu_sharing import (
    AllocationNote,
    Evidence,
    FleetPlan,
    GpuCapacity,
    MpsShare,
    ServiceError,
    SharedGpuService,
    SharedGpuTaskDefinition,
    TaskDefinitionError,
)
from ecs_gpu_sharing.cdk.fleet_plan import PLAN_FILE
from ecs_gpu_sharing.core import cost
from ecs_gpu_sharing.core.rules import CLIENT_LIMIT_WARNING, FRACTION_WARNING, SURGE_WARNING

from conftest import new_app

MEASURED = AllocationNote(
    residency_mib=0,
    peak_working_mib=0,
    shared_failure="fails until ECS restarts it",
    evidence=Evidence(peak_mib=0, measured_on=datetime.date(2026, 11, 1), source="load-test"),
)
# Pinned by digest, so the only warnings are the ones a test is about (a tag would add MutableImageTag).
IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/python@sha256:" + "0" * 64)


class Fleet:
    def __init__(self, **capacity: Any) -> None:
        self.app = new_app()
        self.stack = cdk.Stack(self.app, "Test")
        self.cluster = ecs.Cluster(self.stack, "Cluster", vpc=ec2.Vpc(self.stack, "Vpc", max_azs=2, nat_gateways=1))
        self.capacity = GpuCapacity(
            self.stack,
            "L4",
            cluster=self.cluster,
            instance_types=capacity.pop("instance_types", ["g6.xlarge"]),
            **capacity,
        )

    def service(
        self,
        name: str,
        count: int,
        *budgets: int,
        cpu: int = 512,
        memory: int = 1024,
        command: list[str] | None = None,
        logging: ecs.LogDriver | None = None,
        container_names: tuple[str, ...] = (),
        **kwargs: Any,
    ) -> SharedGpuService:
        td = SharedGpuTaskDefinition(self.stack, f"{name}Task")
        for i, mib in enumerate(budgets):
            td.add_container(
                f"c{i}",
                **({"container_name": container_names[i]} if container_names else {}),
                image=IMAGE,
                cpu=cpu // len(budgets),
                memory_limit_mib=memory // len(budgets),
                gpu=MpsShare(mib),
                user="1000:1000",  # only the warnings a test is about, not the hardening ones
                readonly_root_filesystem=True,
                command=command,
                logging=logging,
            )
        kwargs.setdefault("allocation", MEASURED)  # only the warning a test is about, not BudgetIsAGuess
        return SharedGpuService(
            self.stack,
            name,
            cluster=self.cluster,
            capacity=self.capacity,
            task_definition=td,
            desired_count=count,
            **kwargs,
        )

    def synth(self) -> Any:
        assembly = self.app.synth()
        return assembly, assembly.get_stack_artifact(self.stack.artifact_id)


@pytest.fixture(scope="module")
def fitting() -> dict[str, Any]:
    fleet = Fleet()
    fleet.service("Embedder", 4, 6000)
    fleet.service("Reranker", 1, 3000, 2000)
    assembly, artifact = fleet.synth()
    return {"fleet": fleet, "dir": Path(assembly.directory), "template": Template.from_json(artifact.template)}


def test_service_runs_on_the_capacity_provider_with_rollback_and_no_member_of(fitting: dict[str, Any]) -> None:
    """The provider keeps the service on the capacity's hosts, all on a sharing AMI: a memberOf constraint would add
    nothing and can stop managed scaling from launching the first host ("Amazon ECS managed scaling behavior")."""
    fitting["template"].has_resource_properties(
        "AWS::ECS::Service",
        {
            "DesiredCount": 4,
            "CapacityProviderStrategy": [
                {"CapacityProvider": {"Ref": Match.string_like_regexp("L4Provider")}, "Weight": 1}
            ],
            "PlacementConstraints": Match.absent(),
            "DeploymentConfiguration": {
                "DeploymentCircuitBreaker": {"Enable": True, "Rollback": True},
                "MaximumPercent": 200,
                "MinimumHealthyPercent": 100,
            },
        },
    )


def test_service_waits_for_the_capacity_provider_association(fitting: dict[str, Any]) -> None:
    services = fitting["template"].find_resources("AWS::ECS::Service")
    associations = fitting["template"].find_resources("AWS::ECS::ClusterCapacityProviderAssociations")
    (association,) = associations
    assert all(association in s.get("DependsOn", []) for s in services.values())


def test_max_capacity_is_derived_so_the_surge_fits_as_ecs_places_it(fitting: dict[str, Any]) -> None:
    # steady: 4 x 6000 + 5000 on 22307-MiB GPUs -> 2 instances; surge (8 x 6000 + 2 x 5000) packed -> 3. ECS places
    # the new tasks one by one, spread over the zones: the reranker's second task finds no GPU with 5000 MiB left
    # beside three embedders and opens a fourth host (core.placement); with the headroom for arrival orders the
    # replays did not draw (ORDER_HEADROOM_PERCENT, rounded up), the group may grow to 5.
    plan = json.loads((fitting["dir"] / f"{PLAN_FILE}.json").read_text())
    (l4,) = plan["capacities"]
    assert (l4["surge_instances"], l4["ecs_placement_instances"], l4["max_instances"]) == (3, 4, 5)
    fitting["template"].has_resource_properties("AWS::AutoScaling::AutoScalingGroup", {"MaxSize": "5"})
    assert fitting["fleet"].capacity.max_instances == 5


def test_plan_files_are_written_next_to_the_templates(fitting: dict[str, Any]) -> None:
    plan = json.loads((fitting["dir"] / f"{PLAN_FILE}.json").read_text())
    assert plan["summary"] == {
        "instances": 2,
        "instance_lower_bound": 2,
        "gpus": 2,
        "gpu_lower_bound": 2,
        "whole_gpu_gpus": 5,
        "fits": True,
        "cost": None,
        "cost_note": cost.NO_PRICES,
    }
    assert {s["name"]: s["placed"] for s in plan["services"]} == {"Embedder": 4, "Reranker": 1}
    reranker = [
        t
        for c in plan["capacities"]
        for h in c["instances"]
        for g in h["gpus"]
        for t in g["tasks"]
        if "Reranker" in t["service"]
    ]
    assert reranker == [{"service": "Reranker", "tasks": 1, "task_gpu_budget_mib": 5000, "containers": 2}]
    markdown = (fitting["dir"] / f"{PLAN_FILE}.md").read_text()
    # instances 2, max 5, as ECS places it 4, expected after rollouts 2 (the median replay), GPUs 2
    assert "| L4 | g6.xlarge | 2 | 5 | 4 | 2 | 2 |" in markdown


def test_services_options_pass_through() -> None:
    fleet = Fleet()
    fleet.service("Emb", 1, 1000, max_healthy_percent=150, min_healthy_percent=50, service_name="emb")
    Template.from_stack(fleet.stack).has_resource_properties(
        "AWS::ECS::Service",
        {
            "ServiceName": "emb",
            "DeploymentConfiguration": Match.object_like({"MaximumPercent": 150, "MinimumHealthyPercent": 50}),
        },
    )


def test_az_rebalancing_is_off_unless_asked_for() -> None:
    """ECS turns Availability Zone rebalancing on for a new service left without a value (botocore's ECS model,
    CreateService availabilityZoneRebalancing; CloudFormation's schema default ENABLED): it stops and starts tasks
    between zones, which the plan's replay of ECS's placement does not do, and each move reloads a model. The
    library's services say DISABLED; a service that asks for ENABLED keeps it."""
    fleet = Fleet()
    fleet.service("Emb", 1, 1000)
    fleet.service("Rer", 1, 1000, availability_zone_rebalancing=ecs.AvailabilityZoneRebalancing.ENABLED)
    services = Template.from_stack(fleet.stack).find_resources("AWS::ECS::Service")
    chosen = {logical_id[:3]: r["Properties"].get("AvailabilityZoneRebalancing") for logical_id, r in services.items()}
    assert chosen == {"Emb": "DISABLED", "Rer": "ENABLED"}


def test_a_model_gets_the_fleet_files_startup_grace_unless_told_otherwise() -> None:
    """aws-ecs gives a load-balanced service 60 s before failed health checks count, and a model server still loading
    its weights is stopped and started again, over and over: the library's services behind a balancer (or with a
    container check) get the fleet file's default startup (300 s) unless the service gives its own; a service with no
    check to ignore gets none, as the fleet app writes none there."""
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    fleet = Fleet()
    balanced = fleet.service("Emb", 1, 1000)
    balanced.task_definition.default_container.add_port_mappings(ecs.PortMapping(container_port=8080))
    alb = elbv2.ApplicationLoadBalancer(fleet.stack, "Alb", vpc=fleet.cluster.vpc)
    alb.add_listener("Http", port=80, open=False).add_targets("Emb", port=8080, targets=[balanced])
    fleet.service("Rer", 1, 1000, health_check_grace_period=cdk.Duration.minutes(15))
    fleet.service("Bat", 1, 1000)  # no load balancer, no container check: nothing to ignore, and no grace written
    checked = SharedGpuTaskDefinition(fleet.stack, "ChkTask")
    checked.add_container(
        "model",
        image=IMAGE,
        cpu=512,
        memory_limit_mib=1024,
        gpu=MpsShare(1000),
        health_check=ecs.HealthCheck(command=["CMD-SHELL", "curl -f localhost:8080/health"]),
    )
    SharedGpuService(
        fleet.stack, "Chk", cluster=fleet.cluster, capacity=fleet.capacity, task_definition=checked, desired_count=1
    )
    services = Template.from_stack(fleet.stack).find_resources("AWS::ECS::Service")
    grace = {logical_id[:3]: r["Properties"].get("HealthCheckGracePeriodSeconds") for logical_id, r in services.items()}
    assert grace == {"Emb": 300, "Rer": 900, "Bat": None, "Chk": 300}


# --- errors ---------------------------------------------------------------------------------------------


def test_fails_when_a_task_exceeds_one_gpu() -> None:
    fleet = Fleet()
    fleet.service("Llm", 1, 15000, 8000)
    with pytest.raises(
        RuntimeError,
        match=r"\[Test/Llm\] \[ecs-gpu-sharing:TaskExceedsGpuMemory\] one task needs 23000 MiB of GPU memory on one "
        r"GPU, more than the 22307 MiB",
    ):
        fleet.synth()


def test_fails_when_desired_counts_exceed_max_instances() -> None:
    fleet = Fleet(max_instances=1)
    fleet.service("Emb", 4, 6000)
    with pytest.raises(
        RuntimeError,
        match=r"\[Test/L4\] \[ecs-gpu-sharing:CountsExceedMaxInstances\] the services' largest counts \(Emb 4 "
        r"\(desired count\)\) need 2 instances of g6.xlarge, more than max_instances 1",
    ):
        fleet.synth()


def test_fails_when_a_task_exceeds_a_hosts_cpu() -> None:
    fleet = Fleet()
    fleet.service("Cpu", 1, 1000, cpu=8192)
    with pytest.raises(
        RuntimeError,
        match=r"\[Test/Cpu\] \[ecs-gpu-sharing:TaskExceedsHostCpu\] one task needs 8192 CPU units, more than the 4096",
    ):
        fleet.synth()


def test_fails_when_a_task_exceeds_a_hosts_memory() -> None:
    fleet = Fleet()
    fleet.service("Mem", 1, 1000, memory=16000)
    with pytest.raises(
        RuntimeError, match=r"\[Test/Mem\] \[ecs-gpu-sharing:TaskExceedsHostMemory\] one task needs 16000 MiB"
    ):
        fleet.synth()


# --- warnings -------------------------------------------------------------------------------------------


def _warnings(fleet: Fleet) -> list[str]:
    fleet.synth()
    return [str(w.entry.data) for w in Annotations.from_stack(fleet.stack).find_warning("*", Match.any_value())]


def test_warns_when_the_surge_does_not_fit() -> None:
    fleet = Fleet(max_instances=2)
    fleet.service("Emb", 4, 6000)
    (warning,) = _warnings(fleet)
    assert SURGE_WARNING in warning and "needs 3 instances" in warning


def test_warns_when_budgets_allow_more_than_48_mps_clients() -> None:
    fleet = Fleet()
    fleet.service("Tiny", 2, 256)
    (warning,) = _warnings(fleet)
    assert CLIENT_LIMIT_WARNING in warning and "more than the 48 clients" in warning


def test_warns_when_a_command_asks_for_a_fraction_of_the_whole_gpu() -> None:
    """The construct road reads a GPU container's command as the fleet file's does (MemoryFractionOfWholeGpu)."""
    fleet = Fleet()
    fleet.service("Llm", 1, 8192, command=["--model", "m", "--gpu-memory-utilization=0.9"])
    (warning,) = _warnings(fleet)
    assert FRACTION_WARNING in warning and "--gpu-memory-utilization 0.9 asks for 20306 MiB" in warning


def test_an_image_from_docker_hub_without_credentials_warns_and_one_with_credentials_does_not() -> None:
    from aws_cdk import aws_secretsmanager as secretsmanager

    from ecs_gpu_sharing.core.hardening import DOCKER_HUB_WITHOUT_CREDENTIALS

    fleet = Fleet()
    pinned = "vllm/vllm-openai@sha256:" + "0" * 64
    login = secretsmanager.Secret.from_secret_name_v2(fleet.stack, "HubLogin", "docker-hub-login")
    for name, credentials in (("Anonymous", None), ("LoggedIn", login)):
        td = SharedGpuTaskDefinition(fleet.stack, f"{name}Task")
        td.add_container(
            "model",
            image=ecs.ContainerImage.from_registry(pinned, credentials=credentials),
            cpu=512,
            memory_limit_mib=1024,
            gpu=MpsShare(2048),
            user="1000:1000",
            readonly_root_filesystem=True,
        )
        SharedGpuService(
            fleet.stack, name, cluster=fleet.cluster, capacity=fleet.capacity, task_definition=td, desired_count=1
        )
    fleet.synth()
    found = Annotations.from_stack(fleet.stack).find_warning(
        "*", Match.string_like_regexp(DOCKER_HUB_WITHOUT_CREDENTIALS)
    )
    assert [w.id for w in found] == ["/Test/AnonymousTask"]
    assert "image vllm/vllm-openai@sha256:" in str(found[0].entry.data)
    assert "10 pulls an hour per IP address" in str(found[0].entry.data)


def test_a_measured_gpu_figure_replaces_the_table() -> None:
    fleet = Fleet(ecs_gpu_memory_mib=22000)
    fleet.service("Big", 1, 21800)
    with pytest.raises(
        RuntimeError,
        match=r"more than the 21744 MiB usable on a g6.xlarge GPU \(22000 MiB as ECS registers it \(measured\)",
    ):
        fleet.synth()


def _plan_findings(fleet: Fleet) -> list[tuple[str, str, str | None]]:
    plan = json.loads((Path(fleet.app.outdir) / f"{PLAN_FILE}.json").read_text())
    return [(f["rule_id"].split(":")[1], f["subject"], f["acknowledged"]) for f in plan["findings"]]


def test_a_capacity_warning_acknowledged_is_acknowledged_in_the_synth_and_the_plan_files() -> None:
    fleet = Fleet(max_instances=2)
    fleet.service("Emb", 4, 6000)
    FleetPlan.of(fleet.stack).acknowledge(fleet.capacity, SURGE_WARNING, "deployments may wait")
    assert _warnings(fleet) == []
    assert _plan_findings(fleet) == [("SurgeDoesNotFit", "L4", "deployments may wait")]
    markdown = (Path(fleet.app.outdir) / f"{PLAN_FILE}.md").read_text()
    assert "deployments may wait" in markdown


def test_a_service_warning_acknowledged_on_a_scope_above_it_is_acknowledged_in_the_plan_files() -> None:
    fleet = Fleet()
    fleet.service("Emb", 1, 6000, allocation=None)  # no note: BudgetIsAGuess
    FleetPlan.of(fleet.stack).acknowledge(fleet.stack, "ecs-gpu-sharing:BudgetIsAGuess", "a new model, measuring")
    assert _warnings(fleet) == []
    assert _plan_findings(fleet) == [("BudgetIsAGuess", "Emb", "a new model, measuring")]


def test_an_unacknowledged_warning_shows_unacknowledged_in_the_plan_files() -> None:
    fleet = Fleet(max_instances=2)
    fleet.service("Emb", 4, 6000)
    assert len(_warnings(fleet)) == 1
    assert _plan_findings(fleet) == [("SurgeDoesNotFit", "L4", None)]


@pytest.mark.parametrize(
    ("rule_id", "reason", "message"),
    [
        ("ecs-gpu-sharing:TaskExceedsGpuMemory", "x", "is not a warning that can be acknowledged"),
        ("AwsSolutions-IAM5", "x", "is not a warning that can be acknowledged"),
        (SURGE_WARNING, " ", "needs a reason"),
    ],
)
def test_acknowledging_takes_a_warning_of_the_rule_table_and_a_reason(rule_id: str, reason: str, message: str) -> None:
    fleet = Fleet()
    with pytest.raises(ServiceError, match=message):
        FleetPlan.of(fleet.stack).acknowledge(fleet.capacity, rule_id, reason)


# --- refusals -------------------------------------------------------------------------------------------


def test_takes_a_plain_ec2_task_definition_and_plans_it() -> None:
    fleet = Fleet()
    td = ecs.Ec2TaskDefinition(fleet.stack, "Plain")
    td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu_count=1)
    SharedGpuService(
        fleet.stack, "S", cluster=fleet.cluster, capacity=fleet.capacity, task_definition=td, desired_count=2
    )
    assembly, _ = fleet.synth()
    plan = json.loads((Path(assembly.directory) / f"{PLAN_FILE}.json").read_text())
    assert [(s["name"], s["tasks"], s["task"]["whole_gpus"]) for s in plan["services"]] == [("S", 2, 1)]


def test_refuses_an_imported_task_definition() -> None:
    fleet = Fleet()
    imported = ecs.TaskDefinition.from_task_definition_arn(
        fleet.stack, "Imported", "arn:aws:ecs:us-east-1:1:task-definition/x:1"
    )
    with pytest.raises(
        TaskDefinitionError,
        match="task_definition must be an EC2-compatible task definition of this app .* got an imported "
        r"aws_ecs\.ITaskDefinition;",  # not jsii's InterfaceDynamicProxy
    ):
        SharedGpuService(
            fleet.stack, "S", cluster=fleet.cluster, capacity=fleet.capacity, task_definition=imported, desired_count=1
        )  # type: ignore[arg-type]


def test_refuses_a_cluster_other_than_the_capacitys() -> None:
    fleet = Fleet()
    other = ecs.Cluster(fleet.stack, "Other", vpc=fleet.cluster.vpc)
    td = SharedGpuTaskDefinition(fleet.stack, "Td")
    td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(100))
    with pytest.raises(ServiceError, match="belongs to cluster Test/Cluster, not Test/Other"):
        SharedGpuService(fleet.stack, "S", cluster=other, capacity=fleet.capacity, task_definition=td, desired_count=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"desired_count": -1}, "desired_count must be an integer from 0 to 5000"),
        ({"desired_count": 1, "max_healthy_percent": 90}, "max_healthy_percent must be an integer >= 100"),
        (
            {"desired_count": 1, "capacity_provider_strategies": []},
            "capacity_provider_strategies is set by SharedGpuService",
        ),
        (
            {"desired_count": 1, "servce_name": "chat"},
            r"Test/S: servce_name is not an option of it or of aws_ecs.Ec2Service; did you mean service_name\?",
        ),
        (
            {"desired_count": 1, "xyzzy": 1},
            "Test/S: xyzzy is not an option of it or of aws_ecs.Ec2Service; its options are in SharedGpuServiceOptions",
        ),
    ],
)
def test_refuses_bad_options(kwargs: dict[str, Any], message: str) -> None:
    fleet = Fleet()
    td = SharedGpuTaskDefinition(fleet.stack, "Td")
    td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(100))
    with pytest.raises(ValueError, match=message):
        SharedGpuService(fleet.stack, "S", cluster=fleet.cluster, capacity=fleet.capacity, task_definition=td, **kwargs)


def test_a_subclass_without_its_own_init_still_names_a_misspelt_option() -> None:
    class TeamService(SharedGpuService):
        """A team's own service class, as CDK apps often write them."""

    fleet = Fleet()
    td = SharedGpuTaskDefinition(fleet.stack, "Td")
    td.add_container("a", image=IMAGE, memory_limit_mib=128, gpu=MpsShare(100))
    with pytest.raises(ServiceError, match=r"Test/S: servce_name is not an option .*did you mean service_name\?"):
        TeamService(
            fleet.stack,
            "S",
            cluster=fleet.cluster,
            capacity=fleet.capacity,
            task_definition=td,
            desired_count=1,
            servce_name="x",  # type: ignore[call-arg]
        )


def test_an_auto_scaling_maximum_above_ecs_tasks_per_service_fails_the_synth() -> None:
    fleet = Fleet(max_instances=5000)
    emb = fleet.service("Emb", 1, 1000)
    emb.service.auto_scale_task_count(min_capacity=1, max_capacity=6000)
    with pytest.raises(RuntimeError, match=r"\[ecs-gpu-sharing:TasksPerService\] it is planned at 6,000 tasks"):
        fleet.synth()


def test_an_auto_scaling_maximum_at_ecs_tasks_per_service_is_no_error() -> None:
    fleet = Fleet()
    emb = fleet.service("Emb", 1, 1000)
    emb.service.auto_scale_task_count(min_capacity=1, max_capacity=5000)
    fleet.synth()  # derives max_instances for 5,000 tasks; no TasksPerService


@pytest.mark.parametrize("given", [None, "other.internal"])
def test_service_connect_joins_the_clusters_namespace_by_its_arn(given: str | None) -> None:
    """Without a namespace, aws-ecs writes the cluster's default one by name, which ECS resolves among every namespace
    of the account and region (private DNS ones of one name may sit in other VPCs); SharedGpuService writes its ARN.
    A namespace the team names is kept as given."""
    fleet = Fleet()
    fleet.cluster.add_default_cloud_map_namespace(name="team.internal", use_for_service_connect=True)
    td = SharedGpuTaskDefinition(fleet.stack, "ModelTask", memory_mib=2048, cpu=1024)
    td.add_container(
        "model",
        image=IMAGE,
        cpu=512,
        memory_limit_mib=1024,
        gpu=MpsShare(4096),
        user="1000:1000",
        readonly_root_filesystem=True,
        port_mappings=[ecs.PortMapping(container_port=8080, name="http")],
    )
    SharedGpuService(
        fleet.stack,
        "Model",
        cluster=fleet.cluster,
        capacity=fleet.capacity,
        task_definition=td,
        desired_count=1,
        allocation=MEASURED,
        service_connect_configuration=ecs.ServiceConnectProps(
            namespace=given, services=[ecs.ServiceConnectService(port_mapping_name="http")]
        ),
    )
    _, artifact = fleet.synth()
    (service,) = [r for r in artifact.template["Resources"].values() if r["Type"] == "AWS::ECS::Service"]
    connect = service["Properties"]["ServiceConnectConfiguration"]
    (namespace,) = [
        k
        for k, r in artifact.template["Resources"].items()
        if r["Type"] == "AWS::ServiceDiscovery::PrivateDnsNamespace"
    ]
    assert connect["Namespace"] == (given or {"Fn::GetAtt": [namespace, "Arn"]})
    assert connect["Services"][0]["PortName"] == "http"  # the rest of the configuration as given


def test_a_distinct_instance_constraint_is_read_and_its_packing_refused() -> None:
    """AWS's managed scaling page recommends distinctInstance as the one constraint; a service that sets it runs one
    task an instance, so the plan, which packs three on one L4, is refused with the numbers."""
    fleet = Fleet()
    fleet.service("Model", 3, 4000, placement_constraints=[ecs.PlacementConstraint.distinct_instances()])
    with pytest.raises(Exception, match=r"DistinctInstancePacked.*3 of its tasks on one host"):
        fleet.synth()


@pytest.mark.parametrize("registered", [False, True])
def test_a_log_driver_the_hosts_do_not_register_fails_unless_their_user_data_registers_it(registered: bool) -> None:
    """The AMI's agent registers json-file, syslog, awslogs, fluentd, none and awsfirelens; a task logging with splunk
    needs com.amazonaws.ecs.capability.logging-driver.splunk and is never placed, unless the hosts' user data adds the
    driver to ECS_AVAILABLE_LOGGING_DRIVERS, which the plan reads when it runs."""
    fleet = Fleet()
    splunk = ecs.GenericLogDriver(log_driver="splunk", options={"splunk-url": "https://splunk.example.com:8088"})
    fleet.service("Model", 1, 4000, logging=splunk)
    if not registered:
        with pytest.raises(
            Exception,
            match=r"\[Test/Model\] \[ecs-gpu-sharing:TaskLogDriverNotOnHosts\] one task logs with the log driver splunk"
            r", which the hosts of L4 do not register .*logging-driver\.splunk, so ECS never places it",
        ):
            fleet.synth()
        return
    fleet.capacity.launch_template.user_data.add_commands(  # type: ignore[union-attr]
        """echo 'ECS_AVAILABLE_LOGGING_DRIVERS=["json-file","awslogs","splunk"]' >> /etc/ecs/ecs.config"""
    )
    fleet.synth()


@pytest.mark.parametrize("reserved", [None, "2048", "8192"])
def test_memory_and_ports_the_hosts_agent_reserves_are_not_offered_to_tasks(reserved: str | None) -> None:
    """A g6.xlarge offers tasks 15401 MiB a host; ECS_RESERVED_MEMORY in the hosts' user data takes that much off what
    the agent registers (amazon-ecs-agent, agent/config/types.go, ReservedMemory), and the plan offers it no more."""
    fleet = Fleet()
    fleet.service("Model", 1, 4000, memory=12288)
    if reserved is not None:
        fleet.capacity.launch_template.user_data.add_commands(  # type: ignore[union-attr]
            f"echo ECS_RESERVED_MEMORY={reserved} >> /etc/ecs/ecs.config"
        )
    if reserved == "8192":
        with pytest.raises(Exception, match=r"one task needs 12288 MiB of host memory, more than the 7209 MiB"):
            fleet.synth()
        return
    fleet.capacity.launch_template.user_data.add_commands(  # type: ignore[union-attr]
        "echo 'ECS_RESERVED_PORTS=[22, 9100]' >> /etc/ecs/ecs.config"
    )
    fleet.synth()
    planned = FleetPlan.of(fleet.stack).assessment.steady.capacities[0].capacity
    assert planned.host_memory_mib == 15401 - (int(reserved) if reserved else 0)
    assert planned.reserved_ports == (22, 9100)  # the user data's list takes the agent's defaults' place


@pytest.mark.parametrize(
    ("expression", "warned"),
    [
        ("attribute:ecs.instance-type == g6.xlarge", True),  # the capacity's type (another is refused, below)
        ("attribute:ecs.capability.gpu-sharing-mps exists", False),  # every host of a GPU capacity has it
        ("not(task:group == service:a) and not(task:group == service:b)", False),  # isolation groups, planned
        ("task:group == service:daemon", True),
    ],
)
def test_a_member_of_expression_the_plan_does_not_model_warns(expression: str, warned: bool) -> None:
    fleet = Fleet()
    fleet.service("Model", 2, 4000, placement_constraints=[ecs.PlacementConstraint.member_of(expression)])
    found = [w for w in _warnings(fleet) if "PlacementConstraintNotPlanned" in w]
    assert bool(found) is warned, found


def test_a_member_of_expression_naming_no_type_of_the_capacity_fails_the_synth() -> None:
    fleet = Fleet()
    expression = "attribute:ecs.instance-type == g6.2xlarge"  # the capacity is of g6.xlarge
    fleet.service("Model", 2, 4000, placement_constraints=[ecs.PlacementConstraint.member_of(expression)])
    with pytest.raises(RuntimeError, match=r"\[Test/Model\] \[ecs-gpu-sharing:TaskConstraintMatchesNoHost\]"):
        fleet.synth()


@pytest.mark.parametrize(
    ("controller", "refused"),
    [
        (ecs.DeploymentController(type=ecs.DeploymentControllerType.CODE_DEPLOY), "CODE_DEPLOY"),
        ({"type": ecs.DeploymentControllerType.EXTERNAL}, "EXTERNAL"),
        (ecs.DeploymentController(type=ecs.DeploymentControllerType.ECS), None),
    ],
)
def test_a_service_deploys_under_ecss_own_controller(controller: Any, refused: str | None) -> None:
    """The circuit breaker the construct sets, and the rolling deployments its plan replays, are ECS's controller's:
    another one is refused in the constructor, not by aws-ecs's annotation about an option the team never set."""
    fleet = Fleet()
    if refused is None:
        fleet.service("chat", 2, 4096, deployment_controller=controller)
        return
    with pytest.raises(
        ServiceError, match=rf"Test/chat: deployment_controller {refused} .*leave deployment_controller"
    ):
        fleet.service("chat", 2, 4096, deployment_controller=controller)


@pytest.mark.parametrize(
    ("strategy", "surge"),
    [(None, 2), (ecs.DeploymentStrategy.ROLLING, 2), (ecs.DeploymentStrategy.BLUE_GREEN, 3)],
)
def test_a_blue_green_deployment_is_planned_as_both_revisions_at_full_count(strategy: Any, surge: int) -> None:
    """Rolling at 150%: 4 tasks of 6000 MiB and 2 new ones, three to a 22307-MiB GPU, need 2 hosts. Blue/green runs
    "two identical production environments" (CloudFormation's schema, DeploymentConfiguration.Strategy), whatever the
    maximum percent: 8 tasks, 3 hosts."""
    fleet = Fleet()
    fleet.service("Emb", 4, 6000, max_healthy_percent=150, deployment_strategy=strategy)
    assembly, _ = fleet.synth()
    (capacity,) = json.loads((Path(assembly.directory) / f"{PLAN_FILE}.json").read_text())["capacities"]
    assert capacity["surge_instances"] == surge


def test_a_container_named_apart_from_its_id_is_planned_with_its_budget() -> None:
    """The plan reads the written container definitions by the name ECS sees (container_name); its budget once went
    missing there, and the synth failed as if an escape hatch had changed it."""
    fleet = Fleet()
    fleet.service("Vllm", 2, 6000, container_names=("vllm",))
    assembly, _ = fleet.synth()
    plan = json.loads((Path(assembly.directory) / f"{PLAN_FILE}.json").read_text())
    assert [(s["name"], s["task"]["gpu_budgets_mib"]) for s in plan["services"]] == [("Vllm", [6000])]


def test_a_load_balancer_takes_the_service_as_it_takes_an_ecs_service() -> None:
    """What a CDK team writes for an ECS service works on SharedGpuService: ``listener.add_targets(targets=[service])``
    (an ALB, and an NLB through ``load_balancer_target``), ``service.connections``, ``auto_scale_task_count``. The
    service depends on the listener, so CreateService finds its target group routed (ServiceAfterItsTargetGroupIsRouted),
    and the synth has no finding."""
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    fleet = Fleet()
    web = fleet.service("Web", 2, 6000)
    web.task_definition.default_container.add_port_mappings(ecs.PortMapping(container_port=8080))
    vpc = fleet.cluster.vpc
    alb = elbv2.ApplicationLoadBalancer(fleet.stack, "Alb", vpc=vpc)
    alb.add_listener("Http", port=80, open=False).add_targets("Web", port=8080, targets=[web])
    nlb = elbv2.NetworkLoadBalancer(fleet.stack, "Nlb", vpc=vpc)
    nlb.add_listener("Tcp", port=8080).add_targets(
        "Web", port=8080, targets=[web.load_balancer_target(container_name="c0", container_port=8080)]
    )
    web.connections.allow_from(ec2.Peer.ipv4("10.0.0.0/16"), ec2.Port.tcp(8080))
    web.auto_scale_task_count(max_capacity=3)
    _, artifact = fleet.synth()
    template = Template.from_json(artifact.template)
    (service,) = template.find_resources("AWS::ECS::Service").values()
    assert len(service["Properties"]["LoadBalancers"]) == 2
    listeners = template.find_resources("AWS::ElasticLoadBalancingV2::Listener")
    assert set(listeners) <= set(service["DependsOn"])
    template.has_resource_properties("AWS::ApplicationAutoScaling::ScalableTarget", {"MaxCapacity": 3})
    errors = Annotations.from_stack(fleet.stack).find_error("*", Match.any_value())
    assert errors == []
