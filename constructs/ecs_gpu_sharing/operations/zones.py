"""``fleet zones``: before deploy, whether each capacity's instance types are offered in the zones its hosts use.

GPU types are offered in some Availability Zones of a region only, and which zones differs by account (zone names map
to different zones in each account). An Auto Scaling group whose types no zone of its subnets offers never launches a
host, and its services' tasks wait in PROVISIONING; no synth can see it. This reads EC2's offerings for the account.

The zones: for ``vpc_id``, the zones of that VPC's subnets; otherwise the first ``VPC_ZONES`` of the region, as the
network stack's ``Vpc(max_azs=...)`` takes them: CloudFormation's ``Fn::GetAZs`` in an environment-agnostic app (the
zones with a default subnet, when the account has any; all zones otherwise: AWS CloudFormation User Guide,
"Fn::GetAZs"), CDK's zone lookup (every available zone) in an environment-bound one; each in name order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.fleet import FleetSpec
from ..core.fleet.model import VPC_ZONES
from .aws import aws_errors


@dataclass(frozen=True)
class CapacityZones:
    capacity: str
    zones: tuple[str, ...]  # the zones its hosts may launch in
    offered: Mapping[str, tuple[str, ...]]  # instance type -> those of ``zones`` that offer it
    problems: tuple[str, ...]  # no host can launch, or a listed type never can
    warnings: tuple[str, ...]  # hosts can launch in fewer zones than the subnets span

    def to_json(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "zones": list(self.zones),
            "offered": {t: list(z) for t, z in self.offered.items()},
            "problems": list(self.problems),
            "warnings": list(self.warnings),
        }


def fleet_zones(ec2: Any, spec: FleetSpec) -> tuple[str, ...]:
    """The zones the fleet's hosts use (module docstring)."""
    region = ec2.meta.region_name
    if spec.vpc_id:
        with aws_errors(f"{region}: describing the subnets of {spec.vpc_id}"):
            pages = ec2.get_paginator("describe_subnets").paginate(
                Filters=[{"Name": "vpc-id", "Values": [spec.vpc_id]}]
            )
            subnet_zones = {s["AvailabilityZone"] for page in pages for s in page["Subnets"]}
        return tuple(sorted(subnet_zones))
    with aws_errors(f"{region}: describing the Availability Zones"):
        available = ec2.describe_availability_zones(
            Filters=[{"Name": "state", "Values": ["available"]}, {"Name": "zone-type", "Values": ["availability-zone"]}]
        )["AvailabilityZones"]
    zones = sorted(z["ZoneName"] for z in available)
    if spec.account is None:  # Fn::GetAZs: the zones with a default subnet, when there are any
        with aws_errors(f"{region}: describing the default subnets"):
            defaults = ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
        with_default = {s["AvailabilityZone"] for s in defaults}
        zones = [z for z in zones if z in with_default] or zones
    return tuple(zones[:VPC_ZONES])


def offerings(ec2: Any, types: list[str]) -> dict[str, set[str]]:
    """Instance type -> the zones of the region that offer it (``DescribeInstanceTypeOfferings``, paginated)."""
    out: dict[str, set[str]] = {t: set() for t in types}
    with aws_errors(f"{ec2.meta.region_name}: describing instance type offerings"):
        pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": types}]
        )
        for page in pages:
            for offer in page["InstanceTypeOfferings"]:
                out.setdefault(offer["InstanceType"], set()).add(offer["Location"])
    return out


def check(ec2: Any, spec: FleetSpec) -> list[CapacityZones]:
    """Each capacity's types against the fleet's zones."""
    zones = fleet_zones(ec2, spec)
    offered = offerings(ec2, sorted({t for c in spec.capacities.values() for t in c.instance_types}))
    region = ec2.meta.region_name
    out = []
    for name, capacity in spec.capacities.items():
        here = {t: tuple(z for z in zones if z in offered.get(t, ())) for t in capacity.instance_types}
        launchable = sorted({z for found in here.values() for z in found})
        problems, warnings = [], []
        if not launchable:
            where = "; ".join(f"{t}: {', '.join(sorted(offered.get(t, ()))) or 'no zone'}" for t in here)
            problems.append(
                f"capacity.{name}: no zone of {', '.join(zones)} offers {', '.join(here)} in {region}, so no host can "
                f"launch and its tasks would wait in PROVISIONING (offered in {where}); pick another type or region"
                + ("" if spec.vpc_id else ", or give vpc_id a VPC with subnets in a zone that offers it")
            )
        else:
            for t, found in here.items():
                if not found:
                    problems.append(
                        f"capacity.{name}: {t} is offered in none of {', '.join(zones)} in {region}; the group never "
                        "launches it: drop it from instance_types"
                    )
            if len(launchable) < len(zones):
                warnings.append(
                    f"capacity.{name}: hosts can launch only in {', '.join(launchable)} of {', '.join(zones)}: a "
                    "zone's outage or shortage stops the whole capacity"
                )
        out.append(CapacityZones(name, zones, here, tuple(problems), tuple(warnings)))
    return out
