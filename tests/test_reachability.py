"""Who reaches whom in the synthesized templates: the security groups' rules read as EC2 applies them; and what
the stacks add to the region's quotas.

No emulator checks reachability, and a rule missing on a real account shows only as a call that times out. Service
Connect's proxies call each other's listeners: a bridge-mode task's listener takes a host port of the agent's dynamic
range on its host (amazon-ecs-agent, ``agent/api/task/task.go``, ``buildPortMapWithSCIngressConfig``), an awsvpc
task's listener is reached on its container port at the task's own interface (``InterceptPort``,
``agent/api/serviceconnect/service_connect.go``). A load balancer reaches its awsvpc targets on their ports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.fleet import SERVICE_TAG
from ecs_gpu_sharing.core.fleet.footprint import footprint, template_footprint
from ecs_gpu_sharing.core.template_limits import canonical, check_templates, security_group_rules
from stacks.fleet_app import build_app

from conftest import REPO, new_app

CONNECT = REPO / "tests" / "fleets" / "connect.toml"
DYNAMIC_PORT = 40000  # inside the agent's dynamic host port range, where a bridge-mode listener's host port lies

Templates = Mapping[str, Any]


def _build(path: Any) -> tuple[Any, Templates]:
    app = new_app()
    stacks = build_app(app, fleet.load(path))
    assembly = app.synth()
    return stacks, {s.stack_name: assembly.get_stack_artifact(s.artifact_id).template for s in stacks.all()}


@pytest.fixture(scope="module")
def connect_build() -> tuple[Any, Templates]:
    return _build(CONNECT)


@pytest.fixture(scope="module")
def connect(connect_build: tuple[Any, Templates]) -> Templates:
    return connect_build[1]


@pytest.fixture(scope="module")
def example() -> Templates:
    return _build(REPO / "fleet.toml")[1]


def _hosts(templates: Templates, capacity: str) -> list[str]:
    """The security groups of a capacity's hosts, from its launch template."""
    found = [
        [canonical(g, stack, templates) for g in r["Properties"]["LaunchTemplateData"]["SecurityGroupIds"]]
        for stack, t in templates.items()
        for lid, r in t["Resources"].items()
        if r["Type"] == "AWS::EC2::LaunchTemplate" and lid.startswith(f"Capacities{capacity}LaunchTemplate")
    ]
    assert len(found) == 1, (capacity, found)
    return found[0]


def _tasks(templates: Templates, service: str) -> list[str]:
    """The security groups of an awsvpc service's tasks."""
    found = [
        [
            canonical(g, stack, templates)
            for g in r["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]["SecurityGroups"]
        ]
        for stack, t in templates.items()
        for r in t["Resources"].values()
        if r["Type"] == "AWS::ECS::Service"
        and {"Key": SERVICE_TAG, "Value": service} in r["Properties"].get("Tags", [])
    ]
    assert len(found) == 1, (service, found)
    return found[0]


def _balancer(templates: Templates, name: str) -> list[str]:
    found = [
        [canonical(g, stack, templates) for g in r["Properties"]["SecurityGroups"]]
        for stack, t in templates.items()
        for lid, r in t["Resources"].items()
        if r["Type"] == "AWS::ElasticLoadBalancingV2::LoadBalancer" and lid.startswith(f"LoadBalancers{name}")
    ]
    assert len(found) == 1, (name, found)
    return found[0]


def _covers(rule: Mapping[str, Any], port: int) -> bool:
    if str(rule.get("IpProtocol")) == "-1":
        return True
    return rule.get("IpProtocol") == "tcp" and int(rule["FromPort"]) <= port <= int(rule["ToPort"])


def reachable(templates: Templates, sources: Iterable[str], targets: Iterable[str], port: int) -> bool:
    """Whether an interface with the groups ``sources`` can open a TCP connection to one with ``targets`` on
    ``port``, as EC2 judges it: some source group lets it out (to the address, or to some target group) and some
    target group admits some source group in."""
    sources, targets = set(sources), set(targets)
    rules = [r for r in security_group_rules(templates) if _covers(r.properties, port)]
    let_out = any(
        r.peer in targets or r.properties.get("CidrIp") == "0.0.0.0/0"
        for r in rules
        if r.group in sources and not r.ingress
    )
    admitted = any(r.peer in sources for r in rules if r.group in targets and r.ingress)
    return let_out and admitted


# --- Service Connect ------------------------------------------------------------------------------------------


def test_every_service_connect_client_reaches_a_bridge_mode_listener_on_another_host(connect: Templates) -> None:
    listeners = _hosts(connect, "l4")  # bridged runs there
    clients = (_hosts(connect, "l40s"), _hosts(connect, "l4"), _tasks(connect, "managed"), _tasks(connect, "web-c"))
    for client in clients:
        assert reachable(connect, client, listeners, DYNAMIC_PORT)


@pytest.mark.parametrize(("service", "port"), [("web-a", 8001), ("web-c", 8003), ("managed", 9000), ("web-n", 9100)])
def test_every_service_connect_client_reaches_an_awsvpc_listener_on_its_port(
    connect: Templates, service: str, port: int
) -> None:
    listener = _tasks(connect, service)
    clients = (_hosts(connect, "l40s"), _hosts(connect, "l4"), _tasks(connect, "managed"), _tasks(connect, "web-b"))
    for client in clients:
        assert reachable(connect, client, listener, port)
    assert not reachable(connect, _hosts(connect, "l40s"), listener, port + 1)


def test_service_connect_opens_no_other_port(connect: Templates) -> None:
    assert not reachable(connect, _hosts(connect, "l40s"), _hosts(connect, "l4"), 22)
    assert not reachable(connect, _tasks(connect, "web-a"), _tasks(connect, "web-b"), 22)
    # No bridge-mode server runs on l40s (caller has no port): its hosts' dynamic range stays closed.
    assert not reachable(connect, _hosts(connect, "l4"), _hosts(connect, "l40s"), DYNAMIC_PORT)


def test_the_example_fleets_models_reach_each_other_across_hosts(example: Templates) -> None:
    # The LLM on an L40S host calls the embedder on an L4 host, and the other way round, through Service Connect.
    assert reachable(example, _hosts(example, "l40s"), _hosts(example, "l4"), DYNAMIC_PORT)
    assert reachable(example, _hosts(example, "l4"), _hosts(example, "l40s"), DYNAMIC_PORT)
    assert check_templates(example) == []


# --- load balancers -------------------------------------------------------------------------------------------


def test_an_alb_reaches_each_awsvpc_target_on_its_own_port_through_one_egress_rule(connect: Templates) -> None:
    alb = _balancer(connect, "web")
    for service, port in (("web-a", 8001), ("web-b", 8002), ("web-c", 8003)):
        assert reachable(connect, alb, _tasks(connect, service), port)
        assert not reachable(connect, alb, _tasks(connect, service), port + 10)
    nlb = _balancer(connect, "tcp")
    assert reachable(connect, nlb, _tasks(connect, "web-n"), 9100)
    assert not reachable(connect, nlb, _tasks(connect, "web-a"), 8001)
    egress = [r for r in security_group_rules(connect) if r.group in alb and not r.ingress]
    # One rule however many targets: an ALB's group holds at most 60 outbound rules (Amazon VPC quotas).
    assert len(egress) == 1, egress
    assert check_templates(connect) == []


def test_a_service_with_no_health_check_to_ignore_has_no_grace_period(connect: Templates) -> None:
    # bridged has neither a load balancer nor a container check (web-a has a balancer: test_platform covers it).
    (bridged,) = [
        r
        for t in connect.values()
        for r in t["Resources"].values()
        if r["Type"] == "AWS::ECS::Service"
        and {"Key": SERVICE_TAG, "Value": "bridged"} in r["Properties"].get("Tags", [])
    ]
    assert "HealthCheckGracePeriodSeconds" not in bridged["Properties"]


def test_the_shard_estimate_bounds_the_rules_each_service_brings(connect_build: tuple[Any, Templates]) -> None:
    """Service Connect's and a balancer's rules are counted in the services stacks' shard estimate."""
    from test_layout_file import resource_counts

    from stacks.layout import service_resources

    spec = fleet.load(CONNECT)
    for name, count in resource_counts(connect_build[0]).items():
        estimate = service_resources(spec.services[name], service_connect=True)
        assert count <= estimate <= count + 2, (name, count, estimate)


def test_the_regional_footprint_is_what_the_templates_create(example: Templates, connect: Templates) -> None:
    # ``fleet limits`` counts what the stacks add to the region's quotas from the fleet file: the example makes a VPC,
    # an ALB and the telemetry's log policy; the connect fleet an ALB and an NLB, and no telemetry.
    for path, templates in ((REPO / "fleet.toml", example), (CONNECT, connect)):
        built = {name: template_footprint(t) for name, t in templates.items()}
        assert {name: counts for name, counts in built.items() if counts} == footprint(fleet.load(path)), path
