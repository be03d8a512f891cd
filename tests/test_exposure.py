"""#22 section 2: plain text from the internet is refused unless the fleet file says why, and each acknowledgment the
app gives cdk-nag says what is true of that balancer's configuration."""

from __future__ import annotations

import tomllib
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from constructs import IConstruct

from ecs_gpu_sharing import FleetSpecError
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.fleet import LoadBalancerSpec
from stacks.ingress import build_load_balancers

from conftest import new_app

CERT = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666"
BASE = """
name = "x"
[capacity.l4]
instance_types = ["g6.xlarge"]
[service.a]
capacity = "l4"
image = "repo/a@sha256:{digest}"
desired_count = 1
cpu_units = 1024
memory_mib = 2048
gpu_budget_mib = 2048
""".replace("{digest}", "a" * 64)


def _parse(balancer: str) -> fleet.FleetSpec:
    route = "listener_port = 9000" if "network" in balancer else 'path = ["/a/*"]'
    text = BASE + f'port = 8080\nload_balancer = "lb"\n{route}\n[load_balancer.lb]\n' + balancer
    return fleet.parse(tomllib.loads(text), source="fleet.toml")


@pytest.mark.parametrize(
    ("balancer", "said"),
    [
        ("internet_facing = true", "without certificate_arn it serves plain HTTP on port 80"),
        ('type = "network"\ninternet_facing = true', "a network load balancer passes TCP through without TLS"),
    ],
)
def test_plain_text_from_the_internet_is_refused_without_a_reason(balancer: str, said: str) -> None:
    with pytest.raises(FleetSpecError, match=f"load_balancer.lb: internet_facing = true, and {said}") as error:
        _parse(balancer)
    assert "plaintext_reason" in str(error.value) and "certificate_arn" in str(error.value)


def test_plain_text_from_the_internet_with_a_stated_reason_is_accepted() -> None:
    spec = _parse('internet_facing = true\nplaintext_reason = "a public demo of an open model; no user data"')
    assert spec.load_balancers["lb"].plaintext_from_internet


@pytest.mark.parametrize(
    ("balancer", "said"),
    [
        ("internet_facing = false", "is internal to the VPC"),
        (f'internet_facing = true\ncertificate_arn = "{CERT}"', "serves HTTPS"),
    ],
)
def test_a_reason_for_plain_text_that_does_not_happen_is_refused(balancer: str, said: str) -> None:
    with pytest.raises(FleetSpecError, match=f"load_balancer.lb.plaintext_reason: this balancer {said}"):
        _parse(balancer + '\nplaintext_reason = "a public demo of an open model"')


def _acknowledgments(scope: IConstruct) -> dict[str, str]:
    key = cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    out: dict[str, str] = {}
    for construct in scope.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == key and isinstance(entry.data, dict):
                out.update(entry.data)
    return out


def _build(spec: LoadBalancerSpec) -> dict[str, str]:
    stack = cdk.Stack(new_app(), "S")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0)
    build_load_balancers(stack, vpc, {spec.name: spec})
    return _acknowledgments(stack)


def _balancer(**keys: Any) -> LoadBalancerSpec:
    given = {
        "type": "application",
        "internet_facing": False,
        "certificate_arn": None,
        "plaintext_reason": None,
        "idle_timeout_seconds": None,
    }
    return LoadBalancerSpec(name="lb", **{**given, **keys})


def test_each_acknowledgment_says_what_is_true_of_its_balancer() -> None:
    internal = _build(_balancer())
    public_tls = _build(_balancer(internet_facing=True, certificate_arn=CERT))
    public_plain = _build(_balancer(internet_facing=True, plaintext_reason="a public demo, no user data"))
    tls_rule = "NIST.800.53.R5::NIST.800.53.R5-ELBTlsHttpsListenersOnly"
    assert "internal to the VPC" in internal[tls_rule]
    assert tls_rule not in public_tls  # HTTPS: nothing to excuse
    assert public_plain[tls_rule].endswith("as the fleet file states: a public demo, no user data")
    open_rule = "AwsSolutions::AwsSolutions-EC23"
    assert "open only to the VPC" in internal[open_rule]
    assert "HTTPS only" in public_tls[open_rule]
    assert "without TLS, because: a public demo, no user data" in public_plain[open_rule]
    waf = "NIST.800.53.R5::NIST.800.53.R5-ALBWAFEnabled"
    assert internal[waf].startswith("internal to the VPC") and public_tls[waf].startswith("internet-facing")
