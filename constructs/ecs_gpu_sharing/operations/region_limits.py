"""``fleet limits``: before deploy, whether the region has room for what the stacks create that AWS counts.

A new account holds five VPCs, five internet gateways, five Elastic IPs and five NAT gateways a zone in each region,
and its default VPC already takes one of each of the first two; CloudWatch Logs holds ten account-wide resource
policies a region, and that one cannot be raised. A stack that needs one more fails at deploy (VpcLimitExceeded,
AddressLimitExceeded, LimitExceededException) and rolls back; no synth and no emulator sees the account's own count.

What the fleet adds comes from ``core.fleet.footprint``, less what its stacks already hold (an update adds only what
is new): a resource is the stack's when its id is one of the stack's physical resource ids. Quotas are read from
Service Quotas (the account's value, else AWS's default); their codes are AWS's (Service Quotas console; moto carries
AWS's defaults for the VPC ones).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core.errors import AwsOperationError
from ..core.fleet import FleetSpec
from ..core.fleet import footprint as fp
from .aws import Clients, aws_errors
from .deployed import physical_ids
from .vcpu_quotas import applied_quota
from .zones import fleet_zones

Ids = frozenset[str]  # the ids one resource goes by (an Elastic IP: its allocation id and its address)


@dataclass(frozen=True)
class RegionalQuota:
    what: str  # a footprint key
    name: str  # the quota's name in Service Quotas
    service_code: str
    quota_code: str | None  # None: a limit Service Quotas does not hold (``fixed``)
    fix: str
    fixed: int | None = None
    per_zone: bool = False


_FREE = "request an increase in Service Quotas, release unused ones, or name an existing VPC with vpc_id"
QUOTAS: tuple[RegionalQuota, ...] = (
    RegionalQuota(fp.VPC, "VPCs per Region", "vpc", "L-F678F1CE", _FREE),
    RegionalQuota(fp.INTERNET_GATEWAY, "Internet gateways per Region", "vpc", "L-A4707A72", _FREE),
    RegionalQuota(fp.NAT_GATEWAY, "NAT gateways per Availability Zone", "vpc", "L-FE5A380F", _FREE, per_zone=True),
    RegionalQuota(fp.ELASTIC_IP, "EC2-VPC Elastic IPs", "ec2", "L-0263D0A3", _FREE),
    RegionalQuota(fp.GATEWAY_ENDPOINT, "Gateway VPC endpoints per Region", "vpc", "L-1B52E74A", _FREE),
    RegionalQuota(
        fp.APPLICATION_LOAD_BALANCER,
        "Application Load Balancers per Region",
        "elasticloadbalancing",
        "L-53DA6B97",
        "request an increase in Service Quotas, or delete unused load balancers",
    ),
    RegionalQuota(
        fp.NETWORK_LOAD_BALANCER,
        "Network Load Balancers per Region",
        "elasticloadbalancing",
        "L-69A177A2",
        "request an increase in Service Quotas, or delete unused load balancers",
    ),
    RegionalQuota(
        fp.LOGS_RESOURCE_POLICY,
        "CloudWatch Logs resource policies per Region",
        "logs",
        None,
        "this limit cannot be raised: delete a policy no longer used (aws logs describe-resource-policies), or set "
        "telemetry = false",
        fixed=10,  # CloudWatch Logs API Reference, PutResourcePolicy: "up to 10 resource policies per AWS Region"
    ),
)


@dataclass(frozen=True)
class LimitCheck:
    quota: RegionalQuota
    scope: str  # the region, or the zone of a per-zone quota
    in_use: int
    adds: int  # what the fleet's stacks add, less what they already hold
    stacks: tuple[str, ...]
    quota_value: float | None  # None: not read (``unread`` says why)
    unread: str | None = None

    @property
    def code(self) -> str:
        return self.quota.quota_code or "fixed"

    @property
    def problem(self) -> str | None:
        if self.quota_value is None or self.in_use + self.adds <= self.quota_value:
            return None
        return (
            f"{self.quota.name} ({self.code}) in {self.scope}: {self.in_use} in use and the fleet adds {self.adds} "
            f"({', '.join(self.stacks)}), over the quota of {self.quota_value:,.0f}; CloudFormation would fail the "
            f"stack and roll it back: {self.quota.fix}"
        )

    def line(self) -> str:
        quota = f"quota {self.quota_value:,.0f}" if self.quota_value is not None else f"quota not read: {self.unread}"
        return (
            f"{self.quota.name} ({self.code}) in {self.scope}: {self.in_use} in use, the fleet adds {self.adds}; "
            f"{quota}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "quota_name": self.quota.name,
            "quota_code": self.quota.quota_code,
            "scope": self.scope,
            "in_use": self.in_use,
            "adds": self.adds,
            "stacks": list(self.stacks),
            "quota": self.quota_value,
            "unread": self.unread,
            "problem": self.problem,
        }


def _pages(client: Any, operation: str, key: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
    for page in client.get_paginator(operation).paginate(**kwargs):
        yield from page[key]


def _in_use(clients: Clients, region: str | None, what: str, zone: str | None) -> list[Ids]:
    """The resources of one kind the region (or ``zone``) holds now, each by the ids it goes by."""
    ec2 = clients("ec2", region)
    if what == fp.VPC:
        return [frozenset([v["VpcId"]]) for v in _pages(ec2, "describe_vpcs", "Vpcs")]
    if what == fp.INTERNET_GATEWAY:
        return [
            frozenset([g["InternetGatewayId"]]) for g in _pages(ec2, "describe_internet_gateways", "InternetGateways")
        ]
    if what == fp.ELASTIC_IP:
        addresses = ec2.describe_addresses(Filters=[{"Name": "domain", "Values": ["vpc"]}])["Addresses"]
        return [frozenset(a[k] for k in ("AllocationId", "PublicIp") if k in a) for a in addresses]
    if what == fp.GATEWAY_ENDPOINT:
        gateway = [{"Name": "vpc-endpoint-type", "Values": ["Gateway"]}]
        endpoints = _pages(ec2, "describe_vpc_endpoints", "VpcEndpoints", Filters=gateway)
        return [frozenset([e["VpcEndpointId"]]) for e in endpoints if e.get("State", "").lower() != "deleted"]
    if what == fp.NAT_GATEWAY:
        live = [{"Name": "state", "Values": ["pending", "available"]}]
        gateways = list(_pages(ec2, "describe_nat_gateways", "NatGateways", Filter=live))
        if not gateways:
            return []
        subnets = sorted({g["SubnetId"] for g in gateways})
        zones = {s["SubnetId"]: s["AvailabilityZone"] for s in ec2.describe_subnets(SubnetIds=subnets)["Subnets"]}
        return [frozenset([g["NatGatewayId"]]) for g in gateways if zones.get(g["SubnetId"]) == zone]
    if what in (fp.APPLICATION_LOAD_BALANCER, fp.NETWORK_LOAD_BALANCER):
        kind = {v: k for k, v in fp.LOAD_BALANCER_KINDS.items()}[what]
        balancers = _pages(clients("elbv2", region), "describe_load_balancers", "LoadBalancers")
        return [frozenset([b["LoadBalancerArn"]]) for b in balancers if b["Type"] == kind]
    if what == fp.LOGS_RESOURCE_POLICY:  # account-wide ones only: a policy on one log group is not counted here
        policies = _pages(clients("logs", region), "describe_resource_policies", "resourcePolicies")
        return [frozenset([p["policyName"]]) for p in policies if not p.get("resourceArn")]
    raise ValueError(f"no reading of {what!r}")


def _stack_ids(clients: Clients, region: str | None, stack: str) -> set[str]:
    """The physical ids of a stack's resources; none for a stack not deployed."""
    return set((physical_ids(clients("cloudformation", region), stack) or {}).values())


def check(clients: Clients, region: str | None, spec: FleetSpec) -> list[LimitCheck]:
    """Each quota the fleet adds to, against what the region holds now; quotas it adds nothing to are not read."""
    where = clients("ec2", region).meta.region_name
    wanted = fp.footprint(spec)
    with aws_errors(f"{where}: reading the fleet's stacks"):
        held = {stack: _stack_ids(clients, region, stack) for stack in wanted}
    # The network stack's NAT gateways go in the first of its zones (CDK's Vpc: the first public subnets).
    zone = next(iter(fleet_zones(clients("ec2", region), spec)), None) if spec.vpc_id is None else None
    out = []
    for quota in QUOTAS:
        stacks = tuple(s for s, counts in wanted.items() if counts[quota.what])
        if not stacks:
            continue
        with aws_errors(f"{where}: reading the use of {quota.name}"):
            in_use = _in_use(clients, region, quota.what, zone)
        ours: Counter[str] = Counter(s for s in stacks for ids in in_use if ids & held[s])
        adds = sum(max(0, wanted[s][quota.what] - ours[s]) for s in stacks)
        if not adds:
            continue  # deployed already: nothing new to hold
        value, unread = _quota_value(clients, region, quota)
        scope = f"{where} ({zone})" if quota.per_zone and zone else where
        out.append(LimitCheck(quota, scope, len(in_use), adds, stacks, value, unread))
    return out


def _quota_value(clients: Clients, region: str | None, quota: RegionalQuota) -> tuple[float | None, str | None]:
    if quota.quota_code is None:
        return float(quota.fixed or 0), None
    try:
        return applied_quota(clients("service-quotas", region), quota.quota_code, quota.service_code), None
    except AwsOperationError as error:
        return None, str(error)
