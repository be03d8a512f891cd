"""The platform keys of the fleet file (#13): routes, scaling, sidecars, volumes, permissions, hardening.

Each rule is tested at the parser (one fleet that passes, one case per way it fails) and in the synthesized
templates of ``tests/fleets/platform.toml``, which uses every key the example fleet does not; the gates (cdk-nag
AwsSolutions at every synth, NIST 800-53 rev 5 here), cfn-lint and botocore's ECS model run over both.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import NIST80053R5Checks
from syrupy.assertion import SnapshotAssertion

from ecs_gpu_sharing import FleetSpecError, MpsShare, SharedGpuTaskDefinition
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.hardening import MUTABLE_IMAGE_TAG, mutable_tag
from ecs_gpu_sharing.core.plan_inputs import from_fleet
from ecs_gpu_sharing.core.template_limits import check_templates
from ecs_gpu_sharing.testing import normalize_template
from stacks.fleet_app import build_app

from conftest import REPO, new_app
from validators import cfn_lint_errors, ecs_register_task_definition_errors

PLATFORM = REPO / "tests" / "fleets" / "platform.toml"


def _synth(path: Path) -> dict[str, Any]:
    app = new_app()
    stacks = build_app(app, fleet.load(path))
    # The NIST pack runs here, not at every synth: a finding neither fixed nor acknowledged fails the synth.
    cdk.Validations.of(app).add_plugins(NIST80053R5Checks(app))
    assembly = app.synth()
    return {
        "stacks": stacks,
        "templates": {s.stack_name: assembly.get_stack_artifact(s.artifact_id).template for s in stacks.all()},
        "dir": Path(assembly.directory),
    }


@pytest.fixture(scope="module")
def platform() -> dict[str, Any]:
    return _synth(PLATFORM)


def _resources(template: dict[str, Any], kind: str, prefix: str = "") -> list[dict[str, Any]]:
    return [r for k, r in template["Resources"].items() if r["Type"] == kind and k.startswith(prefix)]


def _containers(template: dict[str, Any], service: str) -> dict[str, dict[str, Any]]:
    (task,) = _resources(template, "AWS::ECS::TaskDefinition", f"{service}Task")
    return {c["Name"]: c for c in task["Properties"]["ContainerDefinitions"]}


# --- the gates ------------------------------------------------------------------------------------------------


def test_the_example_fleet_passes_the_nist_800_53_pack() -> None:
    stacks = _synth(REPO / "fleet.toml")["templates"]
    assert list(stacks) == ["models-network", "models-cluster", "models-services-1", "models-observability-1"]


def test_a_customer_managed_key_is_usable_by_each_role_through_its_own_service_only(platform: dict[str, Any]) -> None:
    # The chat's SSM secret and model bucket are encrypted with its kms_key_arn: the execution role fetches the secret,
    # the task role reads the bucket, each with kms:Decrypt on that key only through the service it reads with.
    template = platform["templates"]["plat-services-1"]
    key = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    grants = {}
    for lid, policy in template["Resources"].items():
        if policy["Type"] != "AWS::IAM::Policy" or not lid.startswith("chat"):
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Action"] == "kms:Decrypt":
                via = statement["Condition"]["StringEquals"]["kms:ViaService"]
                grants["Execution" if "Execution" in lid else "Task"] = (statement["Resource"], via)

    def endpoint(service: str) -> dict[str, Any]:
        return {"Fn::Join": ["", [f"{service}.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}

    assert grants == {
        "Execution": (key, [endpoint("secretsmanager"), endpoint("ssm")]),
        "Task": (key, [endpoint("s3")]),
    }


def test_platform_templates_pass_cfn_lint_and_botocore(platform: dict[str, Any]) -> None:
    tasks = 0
    for name, template in platform["templates"].items():
        assert cfn_lint_errors(template) == [], name
        for task in _resources(template, "AWS::ECS::TaskDefinition"):
            tasks += 1
            assert ecs_register_task_definition_errors(task["Properties"]) == ""
    assert tasks == 3  # two services and the telemetry daemon


def test_no_warning_is_left_unacknowledged(platform: dict[str, Any]) -> None:
    for stack in platform["stacks"].all():
        assert Annotations.from_stack(stack).find_warning("*", Match.any_value()) == []


# --- reachable --------------------------------------------------------------------------------------------


def test_an_internet_facing_alb_with_a_certificate_listens_on_https_and_redirects_http(
    platform: dict[str, Any],
) -> None:
    cluster = Template.from_json(platform["templates"]["plat-cluster"])
    cluster.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::LoadBalancer", {"Scheme": "internet-facing", "Type": "application"}
    )
    cluster.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::Listener",
        {"Port": 443, "Protocol": "HTTPS", "Certificates": [{"CertificateArn": Match.string_like_regexp("acm")}]},
    )
    cluster.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::Listener",
        {"Port": 80, "DefaultActions": [Match.object_like({"Type": "redirect"})]},
    )


def test_a_service_routed_by_host_in_awsvpc_mode_gets_ip_targets(platform: dict[str, Any]) -> None:
    services = platform["templates"]["plat-services-1"]
    (rule,) = _resources(services, "AWS::ElasticLoadBalancingV2::ListenerRule", "chat")
    assert rule["Properties"]["Conditions"] == [
        {"Field": "host-header", "HostHeaderConfig": {"Values": ["chat.example.com"]}}
    ]
    (group,) = _resources(services, "AWS::ElasticLoadBalancingV2::TargetGroup", "chat")
    assert group["Properties"]["TargetType"] == "ip" and group["Properties"]["HealthCheckPath"] == "/"
    (task,) = _resources(services, "AWS::ECS::TaskDefinition", "chatTask")
    assert task["Properties"]["NetworkMode"] == "awsvpc"
    (service,) = _resources(services, "AWS::ECS::Service", "chat")
    assert "AwsvpcConfiguration" in service["Properties"]["NetworkConfiguration"]


def test_a_leaving_task_keeps_serving_as_long_as_the_fleet_file_says(platform: dict[str, Any]) -> None:
    """ECS stops a task behind a balancer once its target has drained, after the deregistration delay: requests
    still running then are cut (ECS Developer Guide, "Optimize load balancer connection draining parameters")."""
    delays = {
        key: {a["Key"]: a["Value"] for a in group["Properties"]["TargetGroupAttributes"]}[
            "deregistration_delay.timeout_seconds"
        ]
        for key, group in platform["templates"]["plat-services-1"]["Resources"].items()
        if group["Type"] == "AWS::ElasticLoadBalancingV2::TargetGroup"
    }
    assert {k.split("Target")[0]: v for k, v in delays.items()} == {"chat": "300", "grpc": "30"}


def test_an_application_balancer_keeps_idle_connections_as_long_as_the_fleet_file_says(
    platform: dict[str, Any],
) -> None:
    """A model that answers a long generation at once sends nothing until it is done: past the idle timeout the ALB
    answers 504 instead (Elastic Load Balancing User Guide, "Connection idle timeout"; AWS's default 60 s)."""
    (public,) = [
        r
        for r in _resources(platform["templates"]["plat-cluster"], "AWS::ElasticLoadBalancingV2::LoadBalancer")
        if r["Properties"].get("Type", "application") == "application"
    ]
    attributes = {a["Key"]: a["Value"] for a in public["Properties"]["LoadBalancerAttributes"]}
    assert attributes["idle_timeout.timeout_seconds"] == "300"


def test_a_network_load_balancer_gives_the_service_a_tcp_listener_and_opens_bridge_ports(
    platform: dict[str, Any],
) -> None:
    services = Template.from_json(platform["templates"]["plat-services-1"])
    services.has_resource_properties("AWS::ElasticLoadBalancingV2::Listener", {"Port": 443, "Protocol": "TCP"})
    services.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::TargetGroup", {"Port": 9000, "Protocol": "TCP", "TargetType": "instance"}
    )
    cluster = Template.from_json(platform["templates"]["plat-cluster"])
    cluster.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::LoadBalancer", {"Type": "network", "Scheme": "internal"}
    )
    rules = [
        r
        for t in platform["templates"].values()
        for r in _resources(t, "AWS::EC2::SecurityGroupIngress")
        if r["Properties"].get("FromPort") == 32768 and "to bridge-mode host ports" in r["Properties"]["Description"]
    ]
    assert rules and all(r["Properties"]["ToPort"] == 65535 for r in rules)


# --- scaling, sidecars, permissions, hardening ----------------------------------------------------------------


def test_custom_metric_scaling_tracks_the_teams_metric(platform: dict[str, Any]) -> None:
    services = Template.from_json(platform["templates"]["plat-services-1"])
    services.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "CustomizedMetricSpecification": Match.object_like(
                        {
                            "Namespace": "Team/Queues",
                            "MetricName": "Backlog",
                            "Dimensions": [{"Name": "Queue", "Value": "chat"}],
                        }
                    ),
                    "TargetValue": 10,
                }
            )
        },
    )
    services.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget", {"MinCapacity": 1, "MaxCapacity": 4}
    )


def test_a_gpu_sidecar_shares_the_tasks_gpu_and_the_plan_counts_both_budgets(platform: dict[str, Any]) -> None:
    containers = _containers(platform["templates"]["plat-services-1"], "chat")
    guard = containers["guard"]
    assert guard["Essential"] is True
    assert guard["ResourceRequirements"] == [MpsShare(2048, 30).cfn_requirement()]
    plan = json.loads((platform["dir"] / "gpu-fleet-plan.json").read_text())
    (chat,) = [s for s in plan["services"] if s["name"] == "chat"]
    assert chat["task"]["gpu_budgets_mib"] == [6144, 2048]


def test_task_role_gets_managed_policies_and_statements(platform: dict[str, Any]) -> None:
    services = platform["templates"]["plat-services-1"]
    roles = [r for r in _resources(services, "AWS::IAM::Role", "chatTaskTaskRole")]
    (role,) = roles
    assert "AmazonBedrockReadOnly" in json.dumps(role["Properties"]["ManagedPolicyArns"])
    policies = json.dumps(_resources(services, "AWS::IAM::Policy", "chatTaskTaskRole"))
    assert "sqs:ReceiveMessage" in policies and "arn:aws:sqs:us-east-1:123456789012:chat" in policies


def test_user_read_only_root_and_writable_paths(platform: dict[str, Any]) -> None:
    services = platform["templates"]["plat-services-1"]
    model = _containers(services, "chat")["model"]
    assert model["User"] == "1000:1000" and model["ReadonlyRootFilesystem"] is True
    assert sorted(m["ContainerPath"] for m in model["MountPoints"]) == ["/home/app/.cache", "/tmp"]
    (task,) = _resources(services, "AWS::ECS::TaskDefinition", "chatTask")
    volumes = {v["Name"]: v for v in task["Properties"]["Volumes"]}
    assert all("Host" not in v and "DockerVolumeConfiguration" not in v for v in volumes.values())  # empty, per task
    assert _containers(services, "grpc")["model"]["ReadonlyRootFilesystem"] is False


def test_the_fleet_files_root_volume_reaches_the_launch_template(platform: dict[str, Any]) -> None:
    (template,) = _resources(platform["templates"]["plat-cluster"], "AWS::EC2::LaunchTemplate", "Capacitiesl4")
    (root,) = template["Properties"]["LaunchTemplateData"]["BlockDeviceMappings"]
    assert root["Ebs"]["VolumeSize"] == 400 and root["Ebs"]["VolumeType"] == "gp3"


def test_tags_reach_the_services_resources(platform: dict[str, Any]) -> None:
    services = Template.from_json(platform["templates"]["plat-services-1"])
    services.has_resource_properties(
        "AWS::ECS::Service",
        {"Tags": Match.array_with([{"Key": "cost-center", "Value": "42"}, {"Key": "team", "Value": "chat"}])},
    )


# --- the example fleet's platform, read from its templates ----------------------------------------------------


@pytest.fixture(scope="module")
def example_build() -> tuple[Any, dict[str, Any]]:
    app = new_app()
    stacks = build_app(app)
    assembly = app.synth()
    return stacks, {s.stack_name: assembly.get_stack_artifact(s.artifact_id).template for s in stacks.all()}


@pytest.fixture(scope="module")
def example(example_build: tuple[Any, dict[str, Any]]) -> dict[str, Any]:
    return example_build[1]


@pytest.fixture(scope="module")
def example_stacks(example_build: tuple[Any, dict[str, Any]]) -> Any:
    return example_build[0]


def test_the_example_routes_three_services_by_path_on_one_internal_alb(example: dict[str, Any]) -> None:
    cluster = Template.from_json(example["models-cluster"])
    cluster.resource_count_is("AWS::ElasticLoadBalancingV2::LoadBalancer", 1)
    cluster.has_resource_properties("AWS::ElasticLoadBalancingV2::LoadBalancer", {"Scheme": "internal"})
    cluster.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::Listener",
        {"Port": 80, "DefaultActions": [Match.object_like({"Type": "fixed-response"})]},
    )
    rules = sorted(
        (r["Properties"]["Priority"], r["Properties"]["Conditions"][0]["PathPatternConfig"]["Values"])
        for r in _resources(example["models-services-1"], "AWS::ElasticLoadBalancingV2::ListenerRule")
    )
    assert rules == [(10, ["/embed", "/embed_all"]), (20, ["/rerank"]), (30, ["/v1/*"])]


def test_the_example_uses_service_connect(example: dict[str, Any]) -> None:
    cluster = Template.from_json(example["models-cluster"])
    cluster.has_resource_properties("AWS::ServiceDiscovery::PrivateDnsNamespace", {"Name": "models.internal"})
    (llm,) = _resources(example["models-services-1"], "AWS::ECS::Service", "llm")
    connect = llm["Properties"]["ServiceConnectConfiguration"]
    assert connect["Enabled"] is True
    assert connect["Services"][0]["ClientAliases"] == [{"DnsName": "llm", "Port": 8000}]
    # A generation of a minute through the proxy: past its per-request timeout (Envoy's 15 s when unset) it ends in
    # a 504; the idle timeout is raised with it, or it would close the connection first (TimeoutConfiguration).
    assert connect["Services"][0]["Timeout"] == {"PerRequestTimeoutSeconds": 600, "IdleTimeoutSeconds": 600}
    (embedder,) = _resources(example["models-services-1"], "AWS::ECS::Service", "embedder")
    assert "Timeout" not in embedder["Properties"]["ServiceConnectConfiguration"]["Services"][0]


def test_each_service_joins_the_clusters_namespace_by_its_arn(example: dict[str, Any]) -> None:
    """ECS takes a Service Connect namespace by name or ARN (botocore's ECS model, ServiceConnectConfiguration), and
    private DNS namespaces of one name may sit in several VPCs of an account (a second fleet, a staging copy): by name,
    a service could join another VPC's namespace. Each names the cluster stack's own namespace by its ARN."""
    (namespace,) = [
        k
        for k, r in example["models-cluster"]["Resources"].items()
        if r["Type"] == "AWS::ServiceDiscovery::PrivateDnsNamespace"
    ]
    outputs = example["models-cluster"]["Outputs"]
    services = _resources(example["models-services-1"], "AWS::ECS::Service")
    assert len(services) == 3
    for service in services:
        named = service["Properties"]["ServiceConnectConfiguration"]["Namespace"]
        assert set(named) == {"Fn::GetStackOutput"}, named  # the app's references between stacks are weak
        assert named["Fn::GetStackOutput"]["StackName"] == "models-cluster"
        assert outputs[named["Fn::GetStackOutput"]["OutputName"]]["Value"] == {"Fn::GetAtt": [namespace, "Arn"]}


def test_each_services_model_cache_is_its_own_volume_on_a_host(example: dict[str, Any]) -> None:
    """The agent names a shared-scope Docker volume after the task definition's volume (amazon-ecs-agent,
    agent/api/task/task.go, addSharedVolumes): one name is one volume for every task on the host that names it. The
    example's embedder and reranker both cache weights on L4 hosts; each gets a volume of its own name."""
    shared = {
        task["Properties"]["Family"]: [
            v["Name"] for v in task["Properties"].get("Volumes", []) if "DockerVolumeConfiguration" in v
        ]
        for task in _resources(example["models-services-1"], "AWS::ECS::TaskDefinition")
    }
    names = [n for volumes in shared.values() for n in volumes]
    assert sorted(names) == ["embedder-model-cache", "llm-model-cache", "reranker-model-cache"], shared


def test_service_connect_discovery_names_are_unique_in_the_namespace(example: dict[str, Any]) -> None:
    templates = example
    names = [
        item.get("DiscoveryName", item["PortName"])
        for t in templates.values()
        for service in _resources(t, "AWS::ECS::Service")
        for item in (service["Properties"].get("ServiceConnectConfiguration") or {}).get("Services", [])
    ]
    assert names and len(names) == len(set(names)), names


@pytest.mark.parametrize("fleet_name", ["example", "platform"])
def test_each_balancer_reaches_each_capacitys_host_ports_by_one_rule(
    fleet_name: str, example: dict[str, Any], platform: dict[str, Any]
) -> None:
    templates = example if fleet_name == "example" else platform["templates"]
    assert check_templates(templates) == []  # no limit broken, no security group rule twice
    spec = fleet.load(REPO / "fleet.toml" if fleet_name == "example" else PLATFORM)
    pairs = {
        (s.load_balancer, s.capacity)
        for s in spec.services.values()
        if s.load_balancer is not None and s.network_mode == "bridge"
    }
    host_rules = [
        name
        for name, t in templates.items()
        for r in _resources(t, "AWS::EC2::SecurityGroupIngress")
        if r["Properties"].get("FromPort") == 32768 and "to bridge-mode host ports" in r["Properties"]["Description"]
    ]
    # Only the cluster stack opens host ports: once per (balancer, capacity) pair its bridge-mode services use.
    assert pairs and host_rules == [f"{spec.name}-cluster"] * len(pairs)


def test_a_model_gets_its_startup_time_before_failed_health_checks_count(
    example: dict[str, Any], platform: dict[str, Any]
) -> None:
    """ECS stops a task whose checks fail past the service's grace period (botocore's ECS model:
    healthCheckGracePeriodSeconds covers load balancer and container checks), and a container check's failures count
    only after its start period (at most 300 s): a model still loading must have both, or it restarts forever."""
    services = example["models-services-1"]
    (llm,) = _resources(services, "AWS::ECS::Service", "llm")
    assert llm["Properties"]["HealthCheckGracePeriodSeconds"] == 600  # startup_seconds in fleet.toml
    assert _containers(services, "llm")["model"]["HealthCheck"]["StartPeriod"] == 300  # ECS's most
    (embedder,) = _resources(services, "AWS::ECS::Service", "embedder")
    assert embedder["Properties"]["HealthCheckGracePeriodSeconds"] == fleet.DEFAULT_STARTUP_SECONDS
    # A service with neither a load balancer nor a container check has no check to ignore.
    (grpc,) = _resources(platform["templates"]["plat-services-1"], "AWS::ECS::Service", "grpc")
    assert grpc["Properties"]["HealthCheckGracePeriodSeconds"] == fleet.DEFAULT_STARTUP_SECONDS  # an NLB checks it
    assert (
        _parse(BASE.replace('path = ["/a/*"]', 'path = ["/a/*"]\nstartup_seconds = 0')).services["a"].startup_seconds
        == 0
    )


def test_the_example_llm_is_a_real_model_server(example: dict[str, Any]) -> None:
    services = example["models-services-1"]
    model = _containers(services, "llm")["model"]
    assert model["LinuxParameters"]["SharedMemorySize"] == 2048
    assert model["HealthCheck"]["Command"][0] == "CMD-SHELL"
    assert [s["Name"] for s in model["Secrets"]] == ["HF_TOKEN"]
    assert model["ReadonlyRootFilesystem"] is True
    (task,) = _resources(services, "AWS::ECS::TaskDefinition", "llmTask")
    (cache,) = [v for v in task["Properties"]["Volumes"] if v["Name"] == "llm-model-cache"]
    assert cache["DockerVolumeConfiguration"] == {"Autoprovision": True, "Driver": "local", "Scope": "shared"}
    Template.from_json(services).has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "PredefinedMetricSpecification": Match.object_like(
                        {"PredefinedMetricType": "ALBRequestCountPerTarget"}
                    ),
                    "TargetValue": 20,
                }
            )
        },
    )


# --- the parser's rules -------------------------------------------------------------------------------------

BASE = """
name = "t"
[capacity.l4]
instance_types = ["g6.2xlarge"]
[capacity.mi]
kind = "managed-instances"
instance_types = ["g6.2xlarge"]
[load_balancer.web]
[load_balancer.tcp]
type = "network"
[service.a]
capacity = "l4"
image = "img"
desired_count = 1
cpu_units = 512
memory_mib = 1024
gpu_budget_mib = 2048
port = 8080
load_balancer = "web"
path = ["/a/*"]
[service.b]
capacity = "l4"
image = "img"
desired_count = 1
cpu_units = 512
memory_mib = 1024
gpu_budget_mib = 2048
port = 9000
load_balancer = "tcp"
listener_port = 9000
"""


def _parse(text: str) -> fleet.FleetSpec:
    import tomllib

    return fleet.parse(tomllib.loads(text), source="f.toml")


def test_the_base_fleet_parses() -> None:
    spec = _parse(BASE)
    assert spec.services["a"].paths == ("/a/*",) and spec.services["b"].listener_port == 9000
    assert spec.services["a"].read_only_root_filesystem is True and spec.services["a"].network_mode == "bridge"


def test_the_platform_fleet_parses() -> None:
    spec = fleet.load(PLATFORM)
    chat = spec.services["chat"]
    assert chat.scale_on_metric == fleet.MetricTarget(
        namespace="Team/Queues", metric_name="Backlog", target=10, statistic="Average", dimensions={"Queue": "chat"}
    )
    assert chat.task_role_statements[0].actions == ("sqs:ReceiveMessage", "sqs:DeleteMessage")
    assert chat.shape("x").gpu_budgets_mib == (6144, 2048)


def _svc(key_lines: str, service: str = "a") -> str:
    return BASE.replace(f"[service.{service}]\n", f"[service.{service}]\n{key_lines}\n", 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            BASE.replace('load_balancer = "web"', 'load_balancer = "nope"'),
            "service.a.load_balancer names 'nope', which is not defined",
        ),
        (BASE.replace("port = 8080\n", ""), "service.a.load_balancer needs port"),
        (BASE.replace('load_balancer = "web"\n', ""), "service.a.path needs load_balancer"),
        (_svc("listener_port = 80"), "service.a.listener_port is for a network load balancer"),
        (BASE.replace("listener_port = 9000\n", ""), "service.b.listener_port is needed on the network load balancer"),
        (_svc('path = ["/b"]', "b"), "service.b.path is for an application load balancer"),
        (_svc('health_check_path = "/h"', "b"), "service.b.health_check_path is for an application load balancer"),
        (
            BASE.replace('load_balancer = "tcp"\nlistener_port = 9000', 'load_balancer = "web"'),
            "service.b: shares load_balancer 'web' with a; give it path or host",
        ),
        (
            BASE.replace('load_balancer = "tcp"\nlistener_port = 9000', 'load_balancer = "web"\npath = ["/a/*"]'),
            "service.b: routes on load_balancer 'web' exactly as service.a does",
        ),
        (BASE + "[load_balancer.idle]\n", "load_balancer.idle is used by no service"),
        (
            BASE.replace(
                "[load_balancer.tcp]\n",
                '[load_balancer.tcp]\ncertificate_arn = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666"\n',
            ),
            "load_balancer.tcp.certificate_arn is for an application load balancer",
        ),
        (_svc("request_timeout_seconds = 60"), "service.a.request_timeout_seconds is for a service called through "),
        (
            BASE.replace('load_balancer = "web"\npath = ["/a/*"]', "drain_seconds = 60"),
            "service.a.drain_seconds needs load_balancer",
        ),
        (_svc("drain_seconds = 3601"), "service.a.drain_seconds must be from 0 to 3600"),
        (
            BASE.replace("[load_balancer.tcp]\n", "[load_balancer.tcp]\nidle_timeout_seconds = 300\n"),
            "load_balancer.tcp.idle_timeout_seconds is for an application load balancer",
        ),
        (
            BASE.replace("[load_balancer.web]\n", "[load_balancer.web]\nidle_timeout_seconds = 4001\n"),
            "load_balancer.web.idle_timeout_seconds must be from 1 to 4000",
        ),
        (_svc("path = ['embed']").replace('path = ["/a/*"]\n', ""), "service.a.path item 'embed' is malformed"),
        (
            _svc('path = ["/1", "/2", "/3", "/4", "/5"]\nhost = "x.example.com"').replace('path = ["/a/*"]\n', ""),
            "an ALB rule takes at most 5",
        ),
        (_svc("scale_on_requests_per_target = 10"), "service.a.scale_on_requests_per_target needs max_tasks"),
        (_svc("startup_seconds = -1"), "service.a.startup_seconds"),
        (
            _svc("max_tasks = 3\nscale_on_requests_per_target = 10", "b"),
            "service.b.scale_on_requests_per_target is for an application load balancer",
        ),
        (
            _svc('max_tasks = 3\nscale_on_metric = { namespace = "N", metric_name = "M" }'),
            "missing key service.a.scale_on_metric.target",
        ),
        (
            BASE + '[[service.b.sidecar]]\nname = "model"\nimage = "i"\ncpu_units = 0\nmemory_mib = 64\n',
            "service.b.sidecar[0].name 'model' is taken",
        ),
        (
            _svc('sidecar = [{ name = "s", image = "i", cpu_units = 0, memory_mib = 64, max_compute_percent = 10 }]'),
            "service.a.sidecar[0].max_compute_percent needs gpu_budget_mib",
        ),
        (
            _svc(
                'sidecar = [{ name = "s", image = "i", cpu_units = 0, memory_mib = 64, environment = { CUDA_VISIBLE_DEVICES = "0" } }]'
            ),
            "service.a.sidecar[0].environment.CUDA_VISIBLE_DEVICES would steer the GPU",
        ),
        (
            _svc('sidecar = [{ name = "s", image = "i", cpu_units = 0, memory_mib = 64, gpu_budget_mib = 21000 }]'),
            "service.a.gpu_budget_mib: one task needs 23048 MiB of GPU memory",
        ),
        (
            _svc('capacity = "mi"\nmodel_cache_path = "/models"').replace('capacity = "l4"\n', "", 1),
            "service.a.model_cache_path is a Docker volume, which ECS supports only on EC2",
        ),
        (
            _svc('capacity = "mi"\nnetwork_mode = "bridge"').replace('capacity = "l4"\n', "", 1),
            'service.a.network_mode must be "awsvpc" on Managed Instances: of its modes (awsvpc, host), host would',
        ),
        (
            _svc('capacity = "mi"\nshm_size_mib = 1024').replace('capacity = "l4"\n', "", 1),
            "service.a.shm_size_mib sets the container's sharedMemorySize, which ECS does not accept on Managed",
        ),
        (
            _svc('model_cache_path = "/models"\nwritable_paths = ["/models/tmp"]'),
            "service.a.writable_paths '/models/tmp' is under model_cache_path",
        ),
        (
            _svc('read_only_root_filesystem = false\nwritable_paths = ["/tmp"]'),
            "service.a.writable_paths is for a read-only root filesystem",
        ),
        (_svc('writable_paths = ["/tmp", "/tmp"]'), "service.a.writable_paths names an item twice"),
        (
            _svc('acknowledge = { "AwsSolutions-IAM5" = "x" }'),
            "service.a.acknowledge 'AwsSolutions-IAM5' is not a service warning that can be acknowledged",
        ),
        (_svc('acknowledge = { "ecs-gpu-sharing:MutableImageTag" = " " }'), "needs a reason"),
        (_svc('tags = { "aws:x" = "y" }'), "service.a.tags.'aws:x': a tag is a name of 1..128 characters"),
        (_svc('tags = { "cost-center" = "ml#42" }'), "service.a.tags.'cost-center': 'ml#42' has '#'"),
        (
            BASE.replace('name = "t"', 'name = "ML_Team"'),
            "name 'ML_Team' is malformed (a letter, then letters, digits and dashes, 40 at most); write it like",
        ),
        (_svc('tags = { "team (ml)" = "search" }'), "service.a.tags.'team (ml)': its name has '(', ')'"),
        (
            _svc('task_role_statements = [{ actions = ["s3:GetObject"], resources = ["*"] }]'),
            "service.a.task_role_statements[0].resources item '*' is malformed",
        ),
        (
            _svc('task_role_managed_policies = ["Admin Access"]'),
            "service.a.task_role_managed_policies item 'Admin Access' is malformed",
        ),
    ],
)
def test_platform_keys_are_refused_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(FleetSpecError) as error:
        _parse(text)
    assert message in str(error.value), str(error.value)


def test_many_services_sharing_a_balancer_without_routes_are_each_told_in_one_short_line() -> None:
    """Each unrouted service gets its own line, naming a few of the others: 70 such services are 70 short lines,
    not 70 lines of 69 names each."""
    services = "".join(
        f'[service.s{i:02d}]\ncapacity = "l4"\nimage = "img"\ndesired_count = 1\ncpu_units = 256\n'
        f'memory_mib = 512\ngpu_budget_mib = 512\nport = {8000 + i}\nload_balancer = "web"\n'
        for i in range(70)
    )
    text = BASE.replace('load_balancer = "web"\npath = ["/a/*"]\n', "") + services
    with pytest.raises(FleetSpecError) as error:
        _parse(text)
    lines = [line for line in str(error.value).splitlines() if "give it path or host" in line]
    assert len(lines) == 70, str(error.value)
    assert "service.s69: shares load_balancer 'web' with s00, s01, s02 and 66 more; give it path or host" in lines[-1]
    assert max(len(line) for line in lines) < 160


# --- a tag is not a digest (the library's own warning) ---------------------------------------------------------


def test_tags_of_every_character_the_tagged_resources_take_parse() -> None:
    """Letters, digits and spaces of any script, and _ . : / = + - @, as IAM's and ECS's tags take them."""
    text = _svc('tags = { "équipe:nom" = "recherche sémantique", "owner@example.com" = "a_b.c:d/e=f+g-h@i 42" }')
    assert _parse(text).services["a"].tags["équipe:nom"] == "recherche sémantique"


def test_the_tag_characters_are_those_of_cloudformations_schemas_for_the_tagged_types() -> None:
    """The fleet file's tags go on the service's IAM roles, task definition and service (and target group): the
    character set the fleet check allows is the one each of those types' registry schema gives (cfn-lint ships them)."""
    import json
    from importlib import resources

    from ecs_gpu_sharing.core.fleet.fleet_checks import TAG_PATTERN

    schemas = resources.files("cfnlint") / "data" / "schemas"
    index = json.loads((schemas / "providers" / "us-east-1.json").read_text())
    for kind in (
        "AWS::IAM::Role",
        "AWS::ECS::Service",
        "AWS::ECS::TaskDefinition",
        "AWS::ElasticLoadBalancingV2::TargetGroup",
    ):
        tag = json.loads((schemas / "resources" / f"{index[kind]}.json").read_text())["definitions"]["Tag"]
        for part in ("Key", "Value"):
            pattern = tag["properties"][part]["pattern"]
            assert TAG_PATTERN in pattern, (kind, part, pattern)


def test_mutable_tags_are_told_from_digests_and_deploy_time_images() -> None:
    assert mutable_tag("vllm/vllm-openai:v0.11.0") is not None
    assert mutable_tag("vllm/vllm-openai") is not None  # no tag: latest
    assert mutable_tag("vllm/vllm-openai@sha256:" + "a" * 64) is None


@pytest.mark.parametrize(
    ("image", "acknowledged", "warned"),
    [
        ("repo/model:1.0", False, True),
        ("repo/model:1.0", True, False),
        ("repo/model@sha256:" + "a" * 64, False, False),
        (None, False, False),
    ],
)
def test_a_task_definition_warns_of_a_mutable_tag(image: str | None, acknowledged: bool, warned: bool) -> None:
    app = new_app()
    stack = cdk.Stack(app, "S")
    task = SharedGpuTaskDefinition(stack, "Task")
    name = image if image is not None else cdk.CfnParameter(stack, "Image").value_as_string  # chosen at deploy
    task.add_container("c", image=ecs.ContainerImage.from_registry(name), memory_limit_mib=512, gpu=MpsShare(1024))
    if acknowledged:
        cdk.Annotations.of(stack).acknowledge_warning(MUTABLE_IMAGE_TAG, "measured on every push")
    app.synth()
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("tag, not a digest"))
    assert bool(warnings) is warned


def test_isolation_groups_become_placement_constraints_on_named_services(platform: dict[str, Any]) -> None:
    services = platform["templates"]["plat-services-1"]
    (chat,) = _resources(services, "AWS::ECS::Service", "chat")
    (grpc,) = _resources(services, "AWS::ECS::Service", "grpc")
    assert chat["Properties"]["ServiceName"] == "plat-chat" and grpc["Properties"]["ServiceName"] == "plat-grpc"
    assert {"Type": "memberOf", "Expression": "not(task:group == service:plat-grpc)"} in chat["Properties"][
        "PlacementConstraints"
    ]
    assert {"Type": "memberOf", "Expression": "not(task:group == service:plat-chat)"} in grpc["Properties"][
        "PlacementConstraints"
    ]
    plan = json.loads((platform["dir"] / "gpu-fleet-plan.json").read_text())
    (entry,) = [s for s in plan["services"] if s["name"] == "chat"]
    assert entry["allocation"]["isolation_group"] == "chat" and entry["allocation"]["evidence"]["peak_mib"] == 5400


@pytest.mark.parametrize("stack", ["plat-cluster", "plat-services-1", "plat-observability-1"])
def test_snapshot(platform: dict[str, Any], stack: str, gpu_snapshot: SnapshotAssertion) -> None:
    # Notes, an isolation group, the daemon, the dashboard and alarms, as the platform fleet synthesizes them.
    assert gpu_snapshot == normalize_template(platform["templates"][stack])


def test_telemetry_off_builds_no_daemon_and_plans_whole_hosts() -> None:
    spec = fleet.parse({**tomllib.loads(PLATFORM.read_text()), "telemetry": False}, source="plat.toml")
    assert [c.daemons for c in from_fleet(spec)[0]] == [()]
    stacks = build_app(new_app(), spec)
    assert stacks.cluster.telemetry is None and stacks.observability == []


def test_the_alarm_topic_uses_a_key_cloudwatch_may_use(example: dict[str, Any]) -> None:
    cluster = example["models-cluster"]
    (topic,) = _resources(cluster, "AWS::SNS::Topic")
    key_ref = topic["Properties"]["KmsMasterKeyId"]
    assert "alias/aws/sns" not in json.dumps(key_ref)  # the AWS managed key admits no CloudWatch alarm
    (key,) = _resources(cluster, "AWS::KMS::Key")
    assert key["Properties"]["EnableKeyRotation"] is True
    (statement,) = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if s.get("Sid") == "CloudWatchAlarmsPublish"]
    assert statement["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert set(statement["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}


@pytest.mark.parametrize("fleet_name", ["example", "platform"])
def test_the_shard_estimate_bounds_each_services_resources(
    fleet_name: str, example_stacks: Any, platform: dict[str, Any]
) -> None:
    from test_layout_file import resource_counts

    from stacks.layout import service_resources

    stacks = example_stacks if fleet_name == "example" else platform["stacks"]
    spec = fleet.load(REPO / "fleet.toml" if fleet_name == "example" else PLATFORM)
    for name, count in resource_counts(stacks).items():
        estimate = service_resources(spec.services[name], service_connect=spec.service_connect_namespace is not None)
        assert count <= estimate <= count + 2, (name, count, estimate)


def test_the_plan_counts_the_service_connect_proxy_in_every_task_on_both_roads(example_build: Any) -> None:
    """ECS adds a proxy to each task of a service with Service Connect; AWS suggests 256 CPU units and 64 MiB."""
    from ecs_gpu_sharing.core.shape import SERVICE_CONNECT_PROXY_CPU_UNITS, SERVICE_CONNECT_PROXY_MEMORY_MIB

    spec = fleet.load(REPO / "fleet.toml")
    without = fleet.parse(
        tomllib.loads(
            re.sub(
                r"^request_timeout_seconds = .*\n",  # a Service Connect key: refused without the namespace
                "",
                (REPO / "fleet.toml").read_text().replace('service_connect_namespace = "models.internal"\n', ""),
                flags=re.M,
            )
        ),
        source="no-connect.toml",
    )
    for name, service in spec.services.items():
        with_proxy = {i.name: i.shape for i in from_fleet(spec)[1]}[name]
        plain = {i.name: i.shape for i in from_fleet(without)[1]}[name]
        assert with_proxy.cpu_units == plain.cpu_units + SERVICE_CONNECT_PROXY_CPU_UNITS, name
        assert with_proxy.memory_mib == plain.memory_mib + SERVICE_CONNECT_PROXY_MEMORY_MIB, name
        assert plain.cpu_units == service.cpu_units + sum(s.cpu_units for s in service.sidecars)
    # The synth road reads the same figures from the services' Service Connect configuration.
    stacks, _ = example_build
    plan = json.loads((Path(stacks.cluster.node.root.outdir) / "gpu-fleet-plan.json").read_text())
    fleet_shapes = {i.name: i.shape for i in from_fleet(spec)[1]}
    for service in plan["services"]:
        assert service["task"]["cpu_units"] == fleet_shapes[service["name"]].cpu_units, service["name"]
