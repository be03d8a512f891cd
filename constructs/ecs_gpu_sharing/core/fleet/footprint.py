"""What the app's stacks create that AWS counts per account and region, stack by stack. Pure Python.

A stack deploys, or fails, on a quota no template shows: a new account holds five VPCs, five internet gateways and
five Elastic IPs a region, and CloudWatch Logs ten account-wide resource policies. ``fleet limits``
(``operations.region_limits``) holds this footprint to what the region already uses; a test holds it to the
synthesized templates' resources, so the two cannot drift apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from .model import GATEWAY_ENDPOINTS, NAT_GATEWAYS, FleetSpec
from .values import APPLICATION, NETWORK

VPC = "vpc"
INTERNET_GATEWAY = "internet gateway"
NAT_GATEWAY = "NAT gateway"
ELASTIC_IP = "Elastic IP"
GATEWAY_ENDPOINT = "gateway VPC endpoint"
APPLICATION_LOAD_BALANCER = "application load balancer"
NETWORK_LOAD_BALANCER = "network load balancer"
LOGS_RESOURCE_POLICY = "CloudWatch Logs resource policy"

COUNTED: Mapping[str, str] = {
    "AWS::EC2::VPC": VPC,
    "AWS::EC2::InternetGateway": INTERNET_GATEWAY,
    "AWS::EC2::NatGateway": NAT_GATEWAY,
    "AWS::EC2::EIP": ELASTIC_IP,
    "AWS::Logs::ResourcePolicy": LOGS_RESOURCE_POLICY,
}
"""The CloudFormation types counted, each by what it is; load balancers by their ``Type`` (``LOAD_BALANCER_KINDS``)."""
LOAD_BALANCER_TYPE = "AWS::ElasticLoadBalancingV2::LoadBalancer"
LOAD_BALANCER_KINDS: Mapping[str, str] = {APPLICATION: APPLICATION_LOAD_BALANCER, NETWORK: NETWORK_LOAD_BALANCER}
ENDPOINT_TYPE = "AWS::EC2::VPCEndpoint"  # counted when of type Gateway (CloudFormation's default VpcEndpointType)


def footprint(spec: FleetSpec) -> dict[str, Counter[str]]:
    """Stack name -> what it creates of ``COUNTED`` and the load balancers (a stack that creates none is left out).

    The network stack (no ``vpc_id``): a VPC, its internet gateway, ``NAT_GATEWAYS`` NAT gateways with an Elastic
    IP each, and ``GATEWAY_ENDPOINTS`` gateway endpoints. The cluster stack: the fleet's load balancers, and the
    resource policy that lets EventBridge write the stopped-task events (``cdk.telemetry``) where the telemetry
    runs."""
    out: dict[str, Counter[str]] = {}
    if spec.vpc_id is None:
        out[spec.stack_name("network")] = Counter(
            {
                VPC: 1,
                INTERNET_GATEWAY: 1,
                NAT_GATEWAY: NAT_GATEWAYS,
                ELASTIC_IP: NAT_GATEWAYS,
                GATEWAY_ENDPOINT: GATEWAY_ENDPOINTS,
            }
        )
    cluster = Counter(LOAD_BALANCER_KINDS[b.type] for b in spec.load_balancers.values())
    if spec.runs_telemetry:
        cluster[LOGS_RESOURCE_POLICY] += 1
    if cluster:
        out[spec.stack_name("cluster")] = cluster
    return out


def template_footprint(template: Mapping[str, Any]) -> Counter[str]:
    """What one synthesized template creates of the same (the test's side, and a construct-road app's)."""
    out: Counter[str] = Counter()
    for resource in template.get("Resources", {}).values():
        kind = resource.get("Type")
        if kind == LOAD_BALANCER_TYPE:
            out[LOAD_BALANCER_KINDS[resource.get("Properties", {}).get("Type", APPLICATION)]] += 1
        elif kind == ENDPOINT_TYPE:
            if resource.get("Properties", {}).get("VpcEndpointType", "Gateway") == "Gateway":
                out[GATEWAY_ENDPOINT] += 1
        elif kind in COUNTED:
            out[COUNTED[kind]] += 1
    return out
