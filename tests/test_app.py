"""The deployable app built from the example fleet: stacks, validators, snapshots, and clean failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from syrupy.assertion import SnapshotAssertion
from test_rehearsal import _rehearse

from ecs_gpu_sharing.core import cost
from ecs_gpu_sharing.core.service_rules import check_all
from ecs_gpu_sharing.testing import normalize_template
from stacks.fleet_app import build_app

from conftest import REPO, new_app
from validators import cfn_lint_errors, ecs_register_task_definition_errors

pytestmark = pytest.mark.long  # a synth, the CDK CLI and cfn-lint: started first (tests/conftest.py)


@pytest.fixture(scope="module")
def synthesized() -> dict[str, Any]:
    app = new_app()
    stacks = build_app(app)
    assembly = app.synth()
    templates = {s.stack_name: assembly.get_stack_artifact(s.artifact_id).template for s in stacks.all()}
    return {"stacks": stacks, "templates": templates, "dir": Path(assembly.directory), "assembly": assembly}


def test_default_app_has_network_cluster_and_services_stacks(synthesized: dict[str, Any]) -> None:
    assert list(synthesized["templates"]) == [
        "models-network",
        "models-cluster",
        "models-services-1",
        "models-observability-1",
    ]


def test_network_has_private_subnets_in_two_azs_and_flow_logs(synthesized: dict[str, Any]) -> None:
    network = Template.from_json(synthesized["templates"]["models-network"])
    network.resource_count_is("AWS::EC2::NatGateway", 1)
    assert len(network.find_resources("AWS::EC2::Subnet", {"Properties": {"MapPublicIpOnLaunch": False}})) == 2
    network.has_resource_properties("AWS::EC2::FlowLog", {"TrafficType": "ALL"})


def test_service_connect_task_definitions_carry_task_memory_and_cpu(synthesized: dict[str, Any]) -> None:
    """ECS requires task-level memory of an EC2 task definition whose service uses Service Connect: the containers'
    sum plus the proxy's share (64 MiB, 256 CPU units), as the plan counts it."""
    services = synthesized["templates"]["models-services-1"]["Resources"]
    tasks = {k: r["Properties"] for k, r in services.items() if r["Type"] == "AWS::ECS::TaskDefinition"}
    assert tasks
    for props in tasks.values():
        containers = props["ContainerDefinitions"]
        memory = sum(c.get("MemoryReservation", c.get("Memory", 0)) for c in containers)
        cpu = sum(c.get("Cpu", 0) for c in containers)
        assert (props["Memory"], props["Cpu"]) == (str(memory + 64), str(cpu + 256))


def test_the_topic_keys_policy_names_no_principal_that_may_not_exist(synthesized: dict[str, Any]) -> None:
    (key,) = [
        r["Properties"]["KeyPolicy"]
        for r in synthesized["templates"]["models-cluster"]["Resources"].values()
        if r["Type"] == "AWS::KMS::Key"
    ]
    principals = json.dumps([s["Principal"] for s in key["Statement"]])
    assert "role/" not in principals  # the account and services only
    (auto_scaling,) = [s for s in key["Statement"] if s.get("Sid") == "AutoScalingNotifications"]
    assert "AWSServiceRoleForAutoScaling" in json.dumps(auto_scaling["Condition"]["ArnEquals"]["aws:PrincipalArn"])


def test_the_example_breaks_no_rule_aws_enforces(synthesized: dict[str, Any]) -> None:
    assert [str(v) for v in check_all(synthesized["templates"])] == []


def test_the_example_cluster_key_deploys_into_a_new_account(synthesized: dict[str, Any]) -> None:
    """The cluster stack's key, as synthesized, into the rehearsal's account, which has no service-linked roles."""
    resources = synthesized["templates"]["models-cluster"]["Resources"]
    (key_id,) = [k for k, r in resources.items() if r["Type"] == "AWS::KMS::Key"]
    out = _rehearse({key_id: resources[key_id]})
    assert out["error"] is None and out["problems"] == [], out


def test_a_balancers_scheme_flipped_under_its_name_is_read_from_the_deployed_template(
    synthesized: dict[str, Any],
) -> None:
    """fleet balancers reads the deployed cluster template: the app names each balancer in its metadata."""
    from dataclasses import replace

    from ecs_gpu_sharing.core import fleet
    from ecs_gpu_sharing.operations.balancer_schemes import schemes

    spec = fleet.load(REPO / "fleet.toml")
    (internal,) = schemes(synthesized["templates"]["models-cluster"], spec)
    assert (internal.name, internal.deployed_internet_facing, internal.problem) == ("internal", False, None)
    public = {"internal": replace(spec.load_balancers["internal"], internet_facing=True)}
    (flipped,) = schemes(synthesized["templates"]["models-cluster"], replace(spec, load_balancers=public))
    assert flipped.problem is not None and "every route would answer 404" in flipped.problem


def test_cluster_has_container_insights_and_both_capacities(synthesized: dict[str, Any]) -> None:
    cluster = Template.from_json(synthesized["templates"]["models-cluster"])
    cluster.has_resource_properties(
        "AWS::ECS::Cluster",
        {"ClusterSettings": Match.array_with([{"Name": "containerInsights", "Value": "enabled"}])},
    )
    cluster.resource_count_is("AWS::ECS::CapacityProvider", 2)
    sizes = sorted(
        (r["Properties"]["MinSize"], r["Properties"]["MaxSize"])
        for r in cluster.find_resources("AWS::AutoScaling::AutoScalingGroup").values()
    )
    # max derived from the deployment surge as ECS places it (2 and 3), and ORDER_HEADROOM_PERCENT rounded up
    assert sizes == [("1", "3"), ("1", "4")]


def test_every_template_passes_cfn_lint(synthesized: dict[str, Any]) -> None:
    for name, template in synthesized["templates"].items():
        assert cfn_lint_errors(template) == [], name


def test_every_task_definition_passes_botocores_ecs_model(synthesized: dict[str, Any]) -> None:
    found = 0
    for template in synthesized["templates"].values():
        for resource in template["Resources"].values():
            if resource["Type"] == "AWS::ECS::TaskDefinition":
                found += 1
                assert ecs_register_task_definition_errors(resource["Properties"]) == ""
    assert found == 4  # three services and the telemetry daemon


def test_services_log_to_cloudwatch_with_retention(synthesized: dict[str, Any]) -> None:
    services = Template.from_json(synthesized["templates"]["models-services-1"])
    services.resource_count_is("AWS::Logs::LogGroup", 6)  # per service: its containers', Service Connect's
    services.all_resources_properties("AWS::Logs::LogGroup", {"RetentionInDays": 30})
    services.has_resource_properties(
        "AWS::ECS::TaskDefinition",
        {
            "ContainerDefinitions": [
                Match.object_like({"LogConfiguration": Match.object_like({"LogDriver": "awslogs"})})
            ]
        },
    )


def test_plan_is_written_with_the_templates(synthesized: dict[str, Any]) -> None:
    plan = json.loads((synthesized["dir"] / "gpu-fleet-plan.json").read_text())
    assert plan["summary"]["fits"] is True and plan["summary"]["instances"] == 3


@pytest.mark.parametrize("stack", ["models-network", "models-cluster", "models-services-1", "models-observability-1"])
def test_snapshot(synthesized: dict[str, Any], stack: str, gpu_snapshot: SnapshotAssertion) -> None:
    # The library's own pytest plugin (gpu_snapshot, from its pytest11 entry point) normalizes the template.
    assert gpu_snapshot == normalize_template(synthesized["templates"][stack])


def _run_app(tmp_path: Path, fleet: str) -> subprocess.CompletedProcess[str]:
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text(fleet)
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({"fleet": str(fleet_file)}),
        "CDK_OUTDIR": str(tmp_path / "out"),
    }
    return subprocess.run([sys.executable, "app.py"], cwd=REPO, env=env, capture_output=True, text=True)


def test_app_fails_on_a_fleet_that_does_not_fit_with_the_numbers_and_no_traceback(tmp_path: Path) -> None:
    text = (REPO / "fleet.toml").read_text().replace("gpu_budget_mib = 16384", "gpu_budget_mib = 48000")
    result = _run_app(tmp_path, text)
    assert result.returncode == 1
    # A fleet-file service that can never fit is refused with the file and the key to edit, before any synth.
    assert result.stderr.startswith(
        f"error: {tmp_path / 'fleet.toml'}: service.llm.gpu_budget_mib: one task needs 48000 MiB of GPU memory"
    )
    assert result.stderr.rstrip().endswith("[ecs-gpu-sharing:TaskExceedsGpuMemory]")
    assert "Traceback" not in result.stderr and "at Kernel" not in result.stderr


def test_app_fails_on_a_malformed_fleet_one_line_per_problem(tmp_path: Path) -> None:
    result = _run_app(tmp_path, 'name = "x"\n')
    assert result.returncode == 1
    source = tmp_path / "fleet.toml"
    assert result.stderr.splitlines() == [
        f"error: {source}: missing key capacity (a table): the GPU capacities, one table each",
        f"error: {source}: missing key service (a table): the services, one table each",
    ]


# --- gates and operator defaults -------------------------------------------------------------------------


def test_synth_leaves_no_warning_or_error_annotation(synthesized: dict[str, Any]) -> None:
    for stack in synthesized["stacks"].all():
        messages = synthesized["assembly"].get_stack_artifact(stack.artifact_id).messages
        assert [(m.level, m.entry.data) for m in messages if m.level != "info"] == [], stack.stack_name


def test_cdk_nag_runs_at_every_synth_and_fails_a_noncompliant_resource() -> None:
    from aws_cdk import aws_sns as sns

    app = new_app()
    stacks = build_app(app)
    sns.Topic(stacks.cluster, "Careless")  # no SSL enforcement, no encryption
    with pytest.raises(RuntimeError, match=r"(?s)AwsSolutions.*models-cluster/Careless"):
        app.synth()


def test_asg_scaling_events_go_to_an_encrypted_topic(synthesized: dict[str, Any]) -> None:
    cluster = Template.from_json(synthesized["templates"]["models-cluster"])
    cluster.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    (topic,) = cluster.find_resources("AWS::SNS::Topic")
    for group in cluster.find_resources("AWS::AutoScaling::AutoScalingGroup").values():
        (notification,) = group["Properties"]["NotificationConfigurations"]
        assert notification["TopicARN"] == {"Ref": topic}
        assert "autoscaling:EC2_INSTANCE_LAUNCH_ERROR" in notification["NotificationTypes"]


def test_stack_outputs_name_the_cluster_capacity_providers_and_services(synthesized: dict[str, Any]) -> None:
    cluster = synthesized["templates"]["models-cluster"]["Outputs"]
    assert {"ClusterName", "ScalingEventsTopic"} <= set(cluster)
    assert sum(key.startswith("Capacities") and "ProviderName" in key for key in cluster) == 2
    services = synthesized["templates"]["models-services-1"]["Outputs"]
    assert {key.split("ServiceName")[0] for key in services if "ServiceName" in key} == {
        "embedder",
        "reranker",
        "llm",
    }


def _big_fleet(services: int) -> dict[str, Any]:
    return {
        "name": "big",
        "capacity": {"l4": {"instance_types": ["g6.2xlarge"]}, "l40s": {"instance_types": ["g6e.12xlarge"]}},
        "service": {
            f"model-{i:03d}": {
                "capacity": "l4" if i % 3 else "l40s",
                "image": "public.ecr.aws/docker/library/python:3.12-slim",
                "desired_count": 1 + i % 3,
                "cpu_units": 256,
                "memory_mib": 1024,
                "gpu_budget_mib": 1024 + (i % 7) * 512,
                "environment": {"MODEL_ID": f"model-{i}"},
            }
            for i in range(services)
        },
    }


def test_a_100_service_fleet_shards_into_stacks_by_counted_resources() -> None:
    """About 60 services fill a shard: 100 make two, one filled to the budget and one partly."""
    from ecs_gpu_sharing.core import fleet

    app = new_app()
    stacks = build_app(app, fleet.parse(_big_fleet(100)))
    assembly = app.synth()
    counts = {s.stack_name: len(assembly.get_stack_artifact(s.artifact_id).template["Resources"]) for s in stacks.all()}
    from stacks.layout import SHARD_BUDGET

    # Shards are filled by counted resources to 80% of CloudFormation's 500, a dashboard per shard.
    assert len(stacks.services) == len(stacks.observability) > 1
    assert max(counts.values()) <= SHARD_BUDGET + 1, counts  # and the stack's own metadata
    services = sum(
        1
        for s in stacks.services
        for r in assembly.get_stack_artifact(s.artifact_id).template["Resources"].values()
        if r["Type"] == "AWS::ECS::Service"
    )
    assert services == 100


def test_an_existing_vpc_is_looked_up_in_an_environment_bound_app() -> None:
    from ecs_gpu_sharing.core import fleet

    doc = {**_big_fleet(1), "account": "123456789012", "region": "eu-west-1", "vpc_id": "vpc-0123456789abcdef0"}
    app = new_app()
    stacks = build_app(app, fleet.parse(doc))
    assert (stacks.cluster.account, stacks.cluster.region) == ("123456789012", "eu-west-1")
    # Without a cached answer CDK records the lookup (made by the CLI with credentials) instead of calling AWS.
    manifest = json.loads((Path(app.synth().directory) / "manifest.json").read_text())
    vpc_lookups = [m for m in manifest["missing"] if m["provider"] == "vpc-provider"]
    assert [m["props"]["filter"] for m in vpc_lookups] == [{"vpc-id": "vpc-0123456789abcdef0"}]


def test_an_environment_bound_app_keeps_balancer_access_logs_for_a_bounded_time() -> None:
    from ecs_gpu_sharing.core import fleet

    doc = {**_big_fleet(1), "account": "123456789012", "region": "eu-west-1", "load_balancer": {"web": {}}}
    doc["service"]["model-000"].update(port=8080, load_balancer="web", path=["/m"])
    app = new_app()
    stacks = build_app(app, fleet.parse(doc))
    template = Template.from_stack(stacks.cluster)
    (bucket,) = template.find_resources("AWS::S3::Bucket").values()
    # The bucket is versioned, so an expired log stays as a noncurrent version unless that expires too.
    assert bucket["Properties"]["LifecycleConfiguration"]["Rules"] == [
        {"ExpirationInDays": 90, "NoncurrentVersionExpiration": {"NoncurrentDays": 1}, "Status": "Enabled"}
    ]


def test_services_carry_their_fleet_name_as_a_tag(synthesized: dict[str, Any]) -> None:
    services = Template.from_json(synthesized["templates"]["models-services-1"])
    services.has_resource_properties(
        "AWS::ECS::Service", {"Tags": Match.array_with([{"Key": "ecs-gpu-sharing:service", "Value": "embedder"}])}
    )


def test_cdk_cli_synthesizes_the_default_app_offline(tmp_path: Path) -> None:
    cdk_cli = REPO / "node_modules" / ".bin" / "cdk"
    assert cdk_cli.exists(), "run through 'make test', which installs the pinned CDK CLI"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["CDK_DISABLE_CLI_TELEMETRY"] = "true"
    result = subprocess.run(
        [str(cdk_cli), "synth", "--quiet", "--no-notices", "-o", str(tmp_path / "out")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    # Without prices, the synth says how to get them once; the plan's Markdown only that it is not priced.
    assert (result.stdout + result.stderr).count("prices refresh") == 1, result.stdout + result.stderr
    markdown = (tmp_path / "out" / "gpu-fleet-plan.md").read_text()
    assert "prices refresh" not in markdown and cost.NOT_PRICED in markdown
    assert sorted(p.name for p in (tmp_path / "out").glob("*.template.json")) == [
        "models-cluster.template.json",
        "models-network.template.json",
        "models-observability-1.template.json",
        "models-services-1.template.json",
    ]
    assert "end-of-life" not in result.stderr and "GPU fleet plan: l4 (g6.2xlarge)" in result.stderr


def test_fleet_names_that_once_collided_with_construct_ids_synthesize() -> None:
    # A service "s" once made "s-logs", clashing with a service "s-logs"; a capacity "Cluster" clashed with the
    # cluster's own construct. Each fleet name now has its own scope.
    from ecs_gpu_sharing.core import fleet

    service = {"capacity": "Cluster", "image": "i:1", "desired_count": 1, "cpu_units": 256, "memory_mib": 512}
    doc = {
        "name": "names",
        "capacity": {"Cluster": {"instance_types": ["g6.xlarge"]}},
        "service": {"s": {**service, "gpu_budget_mib": 1024}, "s-logs": {**service, "gpu_budget_mib": 2048}},
    }
    app = new_app()
    stacks = build_app(app, fleet.parse(doc, source="names.toml"))
    assembly = app.synth()
    plan = json.loads((Path(assembly.directory) / "gpu-fleet-plan.json").read_text())
    assert sorted(s["name"] for s in plan["services"]) == ["s", "s-logs"]
    assert [c["name"] for c in plan["capacities"]] == ["Cluster"] and len(stacks.services) == 1


def test_a_fleet_file_refused_removes_the_plan_files_of_an_earlier_synth(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for name in ("gpu-fleet-plan.json", "gpu-fleet-plan.md"):
        (out / name).write_text("{}")  # an earlier synth's plan, of another fleet
    result = _run_app(tmp_path, 'name = "x"\n')
    assert result.returncode == 1
    assert not (out / "gpu-fleet-plan.json").exists() and not (out / "gpu-fleet-plan.md").exists()
