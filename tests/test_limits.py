"""AWS's limits as rules (core.quotas, core.template_limits): each passes at its limit and fails one past it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ecs_gpu_sharing.core import quotas
from ecs_gpu_sharing.core.plan_inputs import capacity_input
from ecs_gpu_sharing.core.template_limits import check_templates, duplicate_security_group_rules, template_bytes


def _stack(*resources: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"Resources": {lid: {"Type": kind, "Properties": props} for lid, kind, props in resources}}


def _ids(templates: dict[str, Any]) -> list[str]:
    return [v.rule_id for v in check_templates(templates)]


def _resources(n: int) -> dict[str, Any]:
    return _stack(*((f"R{i}", "AWS::SNS::Topic", {}) for i in range(n)))


def _containers(n: int) -> dict[str, Any]:
    return _stack(("Td", "AWS::ECS::TaskDefinition", {"ContainerDefinitions": [{"Name": f"c{i}"} for i in range(n)]}))


def _task_bytes(n: int) -> dict[str, Any]:
    """A task definition whose properties are exactly ``n`` bytes of compact JSON."""
    base = len('{"ContainerDefinitions":[{"Name":"a","Command":[""]}]}')
    return _stack(
        ("Td", "AWS::ECS::TaskDefinition", {"ContainerDefinitions": [{"Name": "a", "Command": ["x" * (n - base)]}]})
    )


def _condition_values(n: int) -> dict[str, Any]:
    return _stack(
        (
            "Rule",
            "AWS::ElasticLoadBalancingV2::ListenerRule",
            {"Conditions": [{"Field": "path-pattern", "PathPatternConfig": {"Values": [f"/p{i}" for i in range(n)]}}]},
        )
    )


def _path_length(n: int) -> dict[str, Any]:
    return _stack(
        (
            "Rule",
            "AWS::ElasticLoadBalancingV2::ListenerRule",
            {"Conditions": [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/" + "a" * (n - 1)]}}]},
        )
    )


def _instance_types(n: int) -> dict[str, Any]:
    overrides = [{"InstanceType": f"g6.{i}xlarge"} for i in range(n)]
    return _stack(
        (
            "Group",
            "AWS::AutoScaling::AutoScalingGroup",
            {"MixedInstancesPolicy": {"LaunchTemplate": {"Overrides": overrides}}},
        )
    )


def _providers(n: int) -> dict[str, Any]:
    return _stack(
        ("Assoc", "AWS::ECS::ClusterCapacityProviderAssociations", {"CapacityProviders": [f"p{i}" for i in range(n)]})
    )


def _tags(n: int) -> dict[str, Any]:
    return _stack(("Topic", "AWS::SNS::Topic", {"Tags": [{"Key": f"k{i}", "Value": "v"} for i in range(n)]}))


def _alarm_dimensions(n: int) -> dict[str, Any]:
    return _stack(
        ("Alarm", "AWS::CloudWatch::Alarm", {"Dimensions": [{"Name": f"d{i}", "Value": "v"} for i in range(n)]})
    )


def _scaling_dimensions(n: int) -> dict[str, Any]:
    spec = {"CustomizedMetricSpecification": {"Dimensions": [{"Name": f"d{i}", "Value": "v"} for i in range(n)]}}
    return _stack(
        ("Policy", "AWS::ApplicationAutoScaling::ScalingPolicy", {"TargetTrackingScalingPolicyConfiguration": spec})
    )


def _egress_rules(n: int) -> dict[str, Any]:
    """``n`` outbound rules on one group: one inline, the rest resources of their own, one in another stack."""
    lb = {"Fn::GetAtt": ["Lb", "GroupId"]}
    inline = [{"IpProtocol": "tcp", "FromPort": 1, "ToPort": 1, "DestinationSecurityGroupId": "sg-0"}]
    own = [
        (f"E{i}", "AWS::EC2::SecurityGroupEgress", {"GroupId": lb, "IpProtocol": "tcp", "FromPort": i, "ToPort": i})
        for i in range(2, n + 1)
    ]
    return _stack(("Lb", "AWS::EC2::SecurityGroup", {"SecurityGroupEgress": inline}), *own)


def _outputs(n: int) -> dict[str, Any]:
    return {"Resources": {}, "Outputs": {f"O{i}": {"Value": "v"} for i in range(n)}}


def _parameters(n: int) -> dict[str, Any]:
    return {"Resources": {}, "Parameters": {f"P{i}": {"Type": "String"} for i in range(n)}}


CASES: list[tuple[quotas.Limit, Callable[[int], dict[str, Any]]]] = [
    (quotas.RESOURCES_PER_STACK, _resources),
    (quotas.OUTPUTS_PER_STACK, _outputs),
    (quotas.PARAMETERS_PER_STACK, _parameters),
    (quotas.CONTAINERS_PER_TASK_DEFINITION, _containers),
    (quotas.TASK_DEFINITION_BYTES, _task_bytes),
    (quotas.CONDITION_VALUES_PER_RULE, _condition_values),
    (quotas.PATH_PATTERN_CHARACTERS, _path_length),
    (quotas.INSTANCE_TYPES_PER_GROUP, _instance_types),
    (quotas.CAPACITY_PROVIDERS_PER_CLUSTER, _providers),
    (quotas.TAGS_PER_RESOURCE, _tags),
    (quotas.DIMENSIONS_PER_METRIC, _alarm_dimensions),
    (quotas.DIMENSIONS_PER_METRIC, _scaling_dimensions),
    (quotas.RULES_PER_SECURITY_GROUP, _egress_rules),
]


@pytest.mark.parametrize(("limit", "build"), CASES, ids=[f"{c[0].rule_id}-{c[1].__name__}" for c in CASES])
def test_each_template_limit_passes_at_the_limit_and_fails_one_past(
    limit: quotas.Limit, build: Callable[[int], dict[str, Any]]
) -> None:
    assert limit.rule_id not in _ids({"s": build(limit.number)})
    violations = [v for v in check_templates({"s": build(limit.number + 1)}) if v.rule_id == limit.rule_id]
    assert len(violations) == 1
    assert f"{limit.number + 1:,} {limit.what}, over AWS's limit of {limit.number:,}" in violations[0].message


def test_template_size_is_measured_as_cdk_writes_it() -> None:
    limit = quotas.TEMPLATE_BYTES
    template: dict[str, Any] = {"Description": ""}
    template["Description"] = "x" * (limit.number - template_bytes(template))
    assert template_bytes(template) == limit.number
    assert limit.rule_id not in _ids({"s": template})
    template["Description"] += "x"
    assert limit.rule_id in _ids({"s": template})


def test_every_limit_names_its_source_and_a_unique_id() -> None:
    ids = [limit.rule_id for limit in quotas.LIMITS]
    assert len(ids) == len(set(ids))
    assert all(limit.source and limit.number > 0 for limit in quotas.LIMITS)


# --- duplicate security group rules -------------------------------------------------------------------------------


def _ingress(group: Any, source: Any, port: int = 32768) -> dict[str, Any]:
    return {"GroupId": group, "SourceSecurityGroupId": source, "IpProtocol": "tcp", "FromPort": port, "ToPort": 65535}


def test_a_rule_repeated_across_stacks_through_outputs_is_a_duplicate() -> None:
    hosts = {"Fn::GetAtt": ["Hosts", "GroupId"]}
    lb = {"Fn::GetAtt": ["Lb", "GroupId"]}
    cluster = _stack(("First", "AWS::EC2::SecurityGroupIngress", _ingress(hosts, lb)))
    cluster["Outputs"] = {"HostsOut": {"Value": hosts}, "LbOut": {"Value": lb}}

    def out(name: str) -> dict[str, Any]:
        return {"Fn::GetStackOutput": {"StackName": "cluster", "OutputName": name, "Region": {"Ref": "AWS::Region"}}}

    services = _stack(("Again", "AWS::EC2::SecurityGroupIngress", _ingress(out("HostsOut"), out("LbOut"))))
    (violation,) = duplicate_security_group_rules({"cluster": cluster, "services": services})
    assert violation.rule_id == quotas.DUPLICATE_RULE_ID and violation.logical_id == "Again"
    assert "repeats cluster/First" in violation.message and "InvalidPermission.Duplicate" in violation.message


def test_a_groups_rules_are_counted_per_direction_and_family_across_stacks() -> None:
    limit = quotas.RULES_PER_SECURITY_GROUP
    lb = {"Fn::GetAtt": ["Lb", "GroupId"]}
    cluster = _stack(("Lb", "AWS::EC2::SecurityGroup", {}))
    cluster["Outputs"] = {"LbOut": {"Value": lb}}
    lb_there = {"Fn::GetStackOutput": {"StackName": "cluster", "OutputName": "LbOut", "Region": {"Ref": "AWS::Region"}}}

    def rule(kind: str, i: int, **peer: Any) -> tuple[str, str, dict[str, Any]]:
        return (
            f"{kind}{i}",
            f"AWS::EC2::SecurityGroup{kind}",
            {"GroupId": lb_there, "IpProtocol": "tcp", "FromPort": i, "ToPort": i, **peer},
        )

    # 60 of each: inbound IPv4, inbound IPv6, outbound IPv4: at the limit each way, so no violation.
    services = _stack(
        *(rule("Ingress", i, CidrIp="10.0.0.0/8") for i in range(60)),
        *(rule("Ingress", 100 + i, CidrIpv6="::/0") for i in range(60)),
        *(rule("Egress", i, DestinationSecurityGroupId="sg-1") for i in range(60)),
    )
    assert limit.rule_id not in _ids({"cluster": cluster, "services": services})
    services["Resources"].update(_stack(rule("Egress", 999, DestinationSecurityGroupId="sg-1"))["Resources"])
    (violation,) = [
        v for v in check_templates({"cluster": cluster, "services": services}) if v.rule_id == limit.rule_id
    ]
    # Named by the group it fills, in the stack that declares it, though the rules are written in another.
    assert (violation.stack, violation.logical_id) == ("cluster", "Lb")
    assert "security group Lb, outbound IPv4: 61 rules one way on one security group" in violation.message


def test_rules_that_differ_in_a_port_or_a_group_are_not_duplicates() -> None:
    hosts = {"Fn::GetAtt": ["Hosts", "GroupId"]}
    other = {"Fn::GetAtt": ["Other", "GroupId"]}
    lb = {"Fn::GetAtt": ["Lb", "GroupId"]}
    stack = _stack(
        ("A", "AWS::EC2::SecurityGroupIngress", _ingress(hosts, lb)),
        ("B", "AWS::EC2::SecurityGroupIngress", _ingress(hosts, lb, port=80)),
        ("C", "AWS::EC2::SecurityGroupIngress", _ingress(other, lb)),
    )
    assert duplicate_security_group_rules({"s": stack}) == []
    # The same reference in two stacks is two different resources: not a duplicate either.
    assert duplicate_security_group_rules({"s": stack, "t": stack}) == []


# --- at synth -------------------------------------------------------------------------------------------------------


def test_the_plugin_fails_a_synth_that_repeats_a_security_group_rule_across_stacks() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from ecs_gpu_sharing import AwsLimitsChecks

    from conftest import new_app

    app = new_app()
    cdk.Validations.of(app).add_plugins(AwsLimitsChecks())
    base = cdk.Stack(app, "base")
    vpc = ec2.Vpc(base, "Vpc", max_azs=2, nat_gateways=0)
    hosts = ec2.SecurityGroup(base, "Hosts", vpc=vpc)
    lb = ec2.SecurityGroup(base, "Lb", vpc=vpc)
    for name in ("one", "two"):  # each stack imports the groups and adds the same rule, as two services would
        stack = cdk.Stack(app, name)
        imported = ec2.SecurityGroup.from_security_group_id(stack, "Hosts", hosts.security_group_id, mutable=True)
        imported.add_ingress_rule(lb, ec2.Port.tcp_range(32768, 65535), "load balancer to hosts")
    with pytest.raises(RuntimeError, match=r"DuplicateSecurityGroupRule"):
        app.synth()


# --- in the fleet file ------------------------------------------------------------------------------------------------

_SERVICE = """
[service.s{i}]
capacity = "l4"
image = "public.ecr.aws/docker/library/python:3.12-slim"
desired_count = 1
cpu_units = 128
memory_mib = 128
gpu_budget_mib = 64
{extra}
"""


def _fleet(services: int = 1, *, balancer: str | None = None, extra: str = "", top: str = "") -> dict[str, Any]:
    import tomllib

    text = 'name = "lim"\n' + top + '[capacity.l4]\ninstance_types = ["g6.xlarge"]\n'
    if balancer:
        text += f'[load_balancer.lb]\ntype = "{balancer}"\n'
    for i in range(services):
        route = ""
        if balancer == "application":
            route = f'port = 8080\nload_balancer = "lb"\npath = ["/s{i}"]\n'
        elif balancer == "network":
            route = f'port = 8080\nload_balancer = "lb"\nlistener_port = {1000 + i}\n'
        text += _SERVICE.format(i=i, extra=route + extra)
    return tomllib.loads(text)


def _refusal(doc: dict[str, Any]) -> str:
    from ecs_gpu_sharing import FleetSpecError
    from ecs_gpu_sharing.core import fleet

    try:
        fleet.parse(doc, source="f.toml")
    except FleetSpecError as error:
        return str(error)
    return ""


def _sidecars(n: int) -> str:
    return "".join(
        f'[[service.s0.sidecar]]\nname = "c{i}"\nimage = "public.ecr.aws/docker/library/busybox:1"\ncpu_units = 0\nmemory_mib = 16\n'
        for i in range(n)
    )


FLEET_CASES: list[tuple[quotas.Limit, Callable[[int], dict[str, Any]], str]] = [
    (quotas.RULES_PER_ALB, lambda n: _fleet(n, balancer="application"), "load_balancer.lb"),
    (quotas.TARGET_GROUPS_PER_ALB, lambda n: _fleet(n, balancer="application"), "load_balancer.lb"),
    (quotas.LISTENERS_PER_NLB, lambda n: _fleet(n, balancer="network"), "load_balancer.lb"),
    # A deployment doubles a service's targets (ECS's maximum percent of 200): n targets are n / 2 tasks, rounded up.
    (
        quotas.TARGETS_PER_ALB,
        lambda n: {
            **(doc := _fleet(1, balancer="application")),
            "service": {"s0": {**doc["service"]["s0"], "desired_count": (n + 1) // 2}},
        },
        "load_balancer.lb (s0)",
    ),
    (
        quotas.CONTAINERS_PER_TASK_DEFINITION,
        lambda n: _fleet(1, extra="\n" + _sidecars(n - 1)),
        "service.s0.sidecar",
    ),
    (
        quotas.TAGS_PER_RESOURCE,
        lambda n: _fleet(1, extra="tags = { " + ", ".join(f't{i} = "v"' for i in range(n)) + " }"),
        "service.s0.tags",
    ),
    (
        quotas.PATH_PATTERN_CHARACTERS,
        lambda n: {
            **(doc := _fleet(1, balancer="application")),
            "service": {"s0": {**doc["service"]["s0"], "path": ["/" + "p" * (n - 1)]}},
        },
        "service.s0.path",
    ),
    (
        quotas.DIMENSIONS_PER_METRIC,
        lambda n: _fleet(
            1,
            extra='max_tasks = 2\nscale_on_metric = { namespace = "N", metric_name = "M", target = 1, dimensions = { '
            + ", ".join(f'd{i} = "v"' for i in range(n))
            + " } }",
        ),
        "service.s0.scale_on_metric.dimensions",
    ),
]


@pytest.mark.parametrize(("limit", "build", "key"), FLEET_CASES, ids=[c[0].rule_id for c in FLEET_CASES])
def test_the_fleet_parser_refuses_one_past_each_limit_naming_the_key(
    limit: quotas.Limit, build: Callable[[int], dict[str, Any]], key: str
) -> None:
    assert _refusal(build(limit.number)) == ""
    message = _refusal(build(limit.number + 1))
    assert f"[{limit.rule_id}] {key}" in message, message
    assert f"over AWS's limit of {limit.number:,}" in message


def test_the_rules_page_lists_every_limit_with_its_number_and_source() -> None:
    from conftest import REPO

    rules_page = (REPO / "docs" / "rules.md").read_text()
    for limit in quotas.LIMITS:
        row = next(line for line in rules_page.splitlines() if f"`{limit.rule_id}`" in line)
        assert f"at most {limit.number:,} " in row and limit.source.split(",")[0] in row, limit.rule_id


def test_a_derived_max_instances_is_held_to_the_clusters_instance_quota() -> None:
    """#24: 3,000 tasks of 20 GiB on g6.2xlarge (one L4 each) surge to 6,000 hosts; derived, that passed without a
    word, though a given max_instances of 6,000 is refused."""
    from ecs_gpu_sharing.core.capacity_facts import host_facts
    from ecs_gpu_sharing.core.planner import ServiceInput
    from ecs_gpu_sharing.core.rules import assess
    from ecs_gpu_sharing.core.shape import TaskShape

    cap = capacity_input("l4", host_facts(["g6.2xlarge"]))
    big = ServiceInput("llm", "l4", TaskShape(1024, 4096, (20480,)), 3000)
    result = assess([cap], [big])
    (finding,) = [f for f in result.findings if f.rule_id == "ecs-gpu-sharing:InstancesPerCluster"]
    assert finding.error and "max_instances would be derived as 6000" in finding.message
    assert "5,000 container instances per cluster" in finding.message
    small = ServiceInput("llm", "l4", TaskShape(1024, 4096, (20480,)), 2000)
    assert not [f for f in assess([cap], [small]).findings if f.rule_id == "ecs-gpu-sharing:InstancesPerCluster"]
