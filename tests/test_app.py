"""The deployable app synthesizes offline into a network and a cluster stack."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from stacks.app_builder import build_app

from conftest import new_app


@pytest.fixture(scope="module")
def templates() -> dict[str, Template]:
    app = new_app()
    stacks = build_app(app)
    return {role: Template.from_stack(stack) for role, stack in stacks.items()}


def test_network_has_private_subnets_in_two_azs_and_flow_logs(templates: dict[str, Any]) -> None:
    network = templates["network"]
    network.resource_count_is("AWS::EC2::VPC", 1)
    network.resource_count_is("AWS::EC2::NatGateway", 1)
    network.has_resource_properties("AWS::EC2::Subnet", {"MapPublicIpOnLaunch": False})
    assert len(network.find_resources("AWS::EC2::Subnet")) == 4
    network.has_resource_properties("AWS::EC2::FlowLog", {"TrafficType": "ALL"})


def test_cluster_has_container_insights(templates: dict[str, Any]) -> None:
    templates["cluster"].has_resource_properties(
        "AWS::ECS::Cluster",
        {"ClusterSettings": Match.array_with([{"Name": "containerInsights", "Value": "enabled"}])},
    )


def test_app_is_environment_agnostic() -> None:
    app = new_app()
    stacks = build_app(app)
    assert all(s.environment == "aws://unknown-account/unknown-region" for s in stacks.values())
