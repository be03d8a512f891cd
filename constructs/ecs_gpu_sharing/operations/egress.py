"""``fleet egress``: before deploy, whether the GPU hosts of a fleet in an existing VPC (``vpc_id``) can reach AWS.

The hosts go in the VPC's private subnets, and the CDK CLI's VPC lookup calls every subnet private that is neither
tagged otherwise (``aws-cdk:subnet-type``), nor maps public IPs, nor routes to an internet gateway: a subnet with no
way out at all is "private" too (aws-cdk, the CLI's VPC context provider). A host there reaches the ECS endpoints only
through a NAT device or a transit route, or through the VPC's interface endpoints (Amazon ECS Developer Guide, "Amazon
ECS interface VPC endpoints (AWS PrivateLink)": ``com.amazonaws.region.ecs-agent``, ``ecs-telemetry`` and ``ecs``).
Without either it never registers: the rolling update waits for its signal, fails and rolls back, and a first deploy
waits for tasks that never start. A fleet with its own network stack makes its NAT gateways; nothing to check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.fleet import FleetSpec
from ..core.service_rules.network import NEEDED_ENDPOINTS, ROUTE_OUT
from .aws import Clients, aws_errors


@dataclass(frozen=True)
class SubnetEgress:
    subnet: str
    zone: str
    route: str | None  # what the subnet's default route goes through; None: no default route out
    missing: tuple[str, ...]  # NEEDED_ENDPOINTS the VPC has no endpoint for

    @property
    def problem(self) -> str | None:
        if self.route is not None or not self.missing:
            return None
        needs = "; ".join(f"{name} ({NEEDED_ENDPOINTS[name]})" for name in self.missing)
        return (
            f"{self.subnet} ({self.zone}): no default route through a NAT gateway or other device, and the VPC has "
            f"no endpoint for {needs}: GPU hosts launched there cannot reach ECS and never register. Route 0.0.0.0/0 "
            "through a NAT gateway, add the endpoints, or tag the subnet aws-cdk:subnet-type=Isolated so the hosts "
            "are not placed in it"
        )

    def line(self) -> str:
        if self.route is not None:
            return f"{self.subnet} ({self.zone}): out through {self.route}"
        if not self.missing:
            return f"{self.subnet} ({self.zone}): no route out; the VPC has every endpoint the hosts need"
        return f"{self.subnet} ({self.zone}): no route out"

    def to_json(self) -> dict[str, Any]:
        return {
            "subnet": self.subnet,
            "zone": self.zone,
            "route": self.route,
            "missing_endpoints": list(self.missing),
            "problem": self.problem,
        }


def _tag(resource: Mapping[str, Any], key: str) -> str | None:
    return next((t.get("Value") for t in resource.get("Tags") or [] if t.get("Key") == key), None)


def _default_route(table: Mapping[str, Any] | None) -> tuple[str | None, bool]:
    """What a route table's active default route goes through, and whether that is an internet gateway."""
    for route in (table or {}).get("Routes") or []:
        if route.get("DestinationCidrBlock") != "0.0.0.0/0" or route.get("State") == "blackhole":
            continue
        gateway = str(route.get("GatewayId") or "")
        if gateway.startswith("igw-"):
            return gateway, True
        for key in ROUTE_OUT:
            if route.get(key):
                return str(route[key]), False
        if gateway.startswith("vgw-"):
            return gateway, False
    return None, False


def egress(subnets: list[Any], tables: list[Any], endpoints: list[Any], region: str) -> list[SubnetEgress]:
    """Each subnet the CDK CLI's lookup calls private, with its way out. Pure: DescribeSubnets',
    DescribeRouteTables' and DescribeVpcEndpoints' answers in, no AWS call."""
    by_subnet = {a["SubnetId"]: t for t in tables for a in t.get("Associations") or [] if a.get("SubnetId") is not None}
    main = next((t for t in tables for a in t.get("Associations") or [] if a.get("Main")), None)
    prefix = f"com.amazonaws.{region}."
    served = {
        str(e.get("ServiceName", "")).removeprefix(prefix)
        for e in endpoints
        if str(e.get("State", "available")).lower() == "available"
    }
    missing = tuple(name for name in NEEDED_ENDPOINTS if name not in served)
    out = []
    for subnet in sorted(subnets, key=lambda s: (s["AvailabilityZone"], s["SubnetId"])):
        route, public = _default_route(by_subnet.get(subnet["SubnetId"], main))
        kind = _tag(subnet, "aws-cdk:subnet-type")
        if kind is None and (subnet.get("MapPublicIpOnLaunch") or public):
            kind = "Public"
        if (kind or "Private") != "Private":
            continue  # not where the hosts go
        out.append(SubnetEgress(subnet["SubnetId"], subnet["AvailabilityZone"], route, missing))
    return out


def check(clients: Clients, region: str | None, spec: FleetSpec) -> list[SubnetEgress]:
    """The private subnets of the fleet's existing VPC; nothing where the fleet makes its own network."""
    if not spec.vpc_id:
        return []
    ec2 = clients("ec2", region)
    name = ec2.meta.region_name
    in_vpc = [{"Name": "vpc-id", "Values": [spec.vpc_id]}]
    with aws_errors(f"{name}: reading the subnets, route tables and endpoints of {spec.vpc_id}"):
        subnets = [s for p in ec2.get_paginator("describe_subnets").paginate(Filters=in_vpc) for s in p["Subnets"]]
        tables = [
            t for p in ec2.get_paginator("describe_route_tables").paginate(Filters=in_vpc) for t in p["RouteTables"]
        ]
        endpoints = [
            e for p in ec2.get_paginator("describe_vpc_endpoints").paginate(Filters=in_vpc) for e in p["VpcEndpoints"]
        ]
    return egress(subnets, tables, endpoints, name)
