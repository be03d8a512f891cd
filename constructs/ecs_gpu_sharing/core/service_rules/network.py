"""The container instances' way out: a host the templates put in a subnet they make with no route out and no VPC
endpoints never registers with ECS. Pure Python, over the templates; ``fleet egress`` reads an existing VPC's
subnets in the account instead.

A host reaches the ECS endpoints through a route out of its subnet (a NAT gateway or instance, a transit gateway, a
peering, a virtual private gateway; an internet gateway where the subnet gives the host a public address), or
through the VPC's interface endpoints (Amazon ECS Developer Guide, "Amazon ECS interface VPC endpoints (AWS
PrivateLink)": ``ecs-agent``, ``ecs-telemetry`` and ``ecs``), with those of the services it pulls from and writes to.
moto starts no host, so the emulator cannot see it: the deploy waits for instances that never register, and the
rolling update for their signal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..rule_family import PREFIX
from .base import ECS_API, Finding, Resource, ServiceRule, Templates, construct_path

HOSTS_REACH_ECS = f"{PREFIX}HostSubnetsReachEcs"

NEEDED_ENDPOINTS: Mapping[str, str] = {
    "ecs": "the agent registers the host",
    "ecs-agent": "the agent polls for tasks",
    "ecs-telemetry": "the agent reports",
    "ecr.api": "images from ECR, the telemetry daemon's among them",
    "ecr.dkr": "images from ECR",
    "s3": "image layers and the packages the user data installs",
    "logs": "the awslogs driver; a container whose log stream cannot be made does not start",
    "cloudformation": "the host's signal to a rolling update",
}
"""What a host without a route out needs a VPC endpoint for, each with why (the services its user data, agent and
tasks call at start)."""

ROUTE_OUT = ("NatGatewayId", "InstanceId", "NetworkInterfaceId", "TransitGatewayId", "VpcPeeringConnectionId")
"""Route targets that carry a default route out of a private subnet (``GatewayId`` is judged by what it names)."""


def _same(ctx: Templates, a: Resource, value: object, stack: str) -> bool:
    found = ctx.target(value, stack)
    return found is not None and (found.stack, found.logical_id) == (a.stack, a.logical_id)


def _routes_out(ctx: Templates, subnet: Resource) -> bool:
    """Whether the templates give the subnet a default route a host can leave by."""
    tables = [
        ctx.target(a.props.get("RouteTableId"), a.stack)
        for a in ctx.of_type("AWS::EC2::SubnetRouteTableAssociation")
        if _same(ctx, subnet, a.props.get("SubnetId"), a.stack)
    ]
    public = subnet.props.get("MapPublicIpOnLaunch") in (True, "true")
    for route in ctx.of_type("AWS::EC2::Route"):
        if route.props.get("DestinationCidrBlock") != "0.0.0.0/0":
            continue
        if not any(t is not None and _same(ctx, t, route.props.get("RouteTableId"), route.stack) for t in tables):
            continue
        if any(route.props.get(k) is not None for k in ROUTE_OUT):
            return True
        gateway = route.props.get("GatewayId")
        named = ctx.target(gateway, route.stack)
        if gateway is not None and (public or named is None or named.kind != "AWS::EC2::InternetGateway"):
            return True
    return False


def _endpoints(ctx: Templates, subnet: Resource) -> set[str]:
    """The services the subnet's VPC has endpoints for in the templates (``com.amazonaws.<region>.<service>``)."""
    vpc = ctx.text(subnet.props.get("VpcId"), subnet.stack)
    found = set()
    for endpoint in ctx.of_type("AWS::EC2::VPCEndpoint"):
        if ctx.text(endpoint.props.get("VpcId"), endpoint.stack) != vpc:
            continue
        name = ctx.text(endpoint.props.get("ServiceName"), endpoint.stack)
        parts = name.split(".", 3)
        if len(parts) == 4 and parts[:2] == ["com", "amazonaws"]:
            found.add(parts[3])
    return found


def hosts_reach_ecs(ctx: Templates) -> Iterator[Finding]:
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        arn = (provider.props.get("AutoScalingGroupProvider") or {}).get("AutoScalingGroupArn")
        group = ctx.target(arn, provider.stack)
        if group is None:
            continue  # a group of the account: fleet egress reads its subnets
        subnets = group.props.get("VPCZoneIdentifier")
        for value in subnets if isinstance(subnets, list) else []:
            subnet = ctx.target(value, group.stack)
            if subnet is None or subnet.kind != "AWS::EC2::Subnet" or _routes_out(ctx, subnet):
                continue  # a subnet of the account (fleet egress reads it), or one with a way out
            missing = [name for name in NEEDED_ENDPOINTS if name not in _endpoints(ctx, subnet)]
            if missing:
                yield (
                    group,
                    f"its hosts go in subnet {construct_path(subnet)}, which has no route out "
                    f"and no VPC endpoint for {', '.join(missing)}: they would never register with ECS, and the "
                    "deploy waits for them; put the capacity in subnets with egress (PRIVATE_WITH_EGRESS: a NAT "
                    "gateway), or add the interface and gateway endpoints",
                )
                break  # one finding a group


NETWORK_RULES: tuple[ServiceRule, ...] = (
    ServiceRule(
        HOSTS_REACH_ECS,
        "Amazon ECS (the container agent)",
        "the subnets of a capacity provider's Auto Scaling group, where the templates make them, have a route out or "
        "VPC endpoints for " + ", ".join(NEEDED_ENDPOINTS),
        "Amazon ECS Developer Guide, 'Amazon ECS interface VPC endpoints (AWS PrivateLink)': container instances in "
        f"subnets without internet access reach ECS through the ecs-agent, ecs-telemetry and ecs endpoints; {ECS_API}, "
        "RegisterContainerInstance (called by the agent at start)",
        hosts_reach_ecs,
    ),
)
