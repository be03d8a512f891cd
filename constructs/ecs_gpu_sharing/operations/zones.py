"""``fleet zones`` and ``stacks zones``: before deploy, whether each capacity's instance types are offered in the zones
its hosts use.

GPU types are offered in some Availability Zones of a region only, and which zones differs by account (zone names map
to different zones in each account). An Auto Scaling group whose types no zone of its subnets offers never launches a
host, and its services' tasks wait in PROVISIONING; no synth can see it. This reads EC2's offerings for the account.

The zones: for ``vpc_id``, the zones of that VPC's subnets; otherwise the first ``VPC_ZONES`` of the region, as the
network stack's ``Vpc(max_azs=...)`` takes them: CloudFormation's ``Fn::GetAZs`` in an environment-agnostic app (the
zones with a default subnet, when the account has any; all zones otherwise: AWS CloudFormation User Guide,
"Fn::GetAZs"), CDK's zone lookup (every available zone) in an environment-bound one; each in name order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import catalog
from ..core.fleet import FleetSpec
from ..core.fleet.model import VPC_ZONES
from ..core.service_rules.base import Templates, construct_path, literal_number
from ..core.written_fit import group_types
from .assembly import assembly_stacks, with_nested_stacks
from .aws import Clients, aws_errors


@dataclass(frozen=True)
class CapacityZones:
    capacity: str
    zones: tuple[str, ...]  # the zones its hosts may launch in
    offered: Mapping[str, tuple[str, ...]]  # instance type -> those of ``zones`` that offer it
    problems: tuple[str, ...]  # no host can launch, or a listed type never can
    warnings: tuple[str, ...]  # hosts can launch in fewer zones than the subnets span

    def line(self) -> str:
        return f"{self.capacity}: " + "; ".join(f"{t} in {', '.join(z) or 'no zone'}" for t, z in self.offered.items())

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
    return tuple(_get_azs(ec2, environment_agnostic=spec.account is None)[:VPC_ZONES])


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
    hint = "" if spec.vpc_id else ", or give vpc_id a VPC with subnets in a zone that offers it"
    region = ec2.meta.region_name
    return [
        judge(name, zones, capacity.instance_types, offered, region, hint, label=f"capacity.{name}")
        for name, capacity in spec.capacities.items()
    ]


def judge(
    name: str,
    zones: tuple[str, ...],
    types: Sequence[str],
    offered: Mapping[str, set[str]],
    region: str,
    hint: str = "",
    drop: str = "instance_types",
    label: str | None = None,
) -> CapacityZones:
    """One group of hosts: whether its types are offered in the zones it launches in (``label`` names it in the
    problems: ``name`` unless given)."""
    said = label or name
    here = {t: tuple(z for z in zones if z in offered.get(t, ())) for t in types}
    launchable = sorted({z for found in here.values() for z in found})
    problems, warnings = [], []
    if not launchable:
        where = "; ".join(f"{t}: {', '.join(sorted(offered.get(t, ()))) or 'no zone'}" for t in here)
        problems.append(
            f"{said}: no zone of {', '.join(zones)} offers {', '.join(here)} in {region}, so no host can "
            f"launch and its tasks would wait in PROVISIONING (offered in {where}); pick another type or region{hint}"
        )
    else:
        for t, found in here.items():
            if not found:
                problems.append(
                    f"{said}: {t} is offered in none of {', '.join(zones)} in {region}; the group never "
                    f"launches it: drop it from {drop}"
                )
        if len(launchable) < len(zones):
            warnings.append(
                f"{said}: hosts can launch only in {', '.join(launchable)} of {', '.join(zones)}: a "
                "zone's outage or shortage stops the whole capacity"
            )
    return CapacityZones(name, zones, here, tuple(problems), tuple(warnings))


def _get_azs(ec2: Any, environment_agnostic: bool) -> list[str]:
    """``Fn::GetAZs`` as the deploy will answer it (module docstring), in name order."""
    region = ec2.meta.region_name
    with aws_errors(f"{region}: describing the Availability Zones"):
        available = ec2.describe_availability_zones(
            Filters=[{"Name": "state", "Values": ["available"]}, {"Name": "zone-type", "Values": ["availability-zone"]}]
        )["AvailabilityZones"]
    zones = sorted(z["ZoneName"] for z in available)
    if environment_agnostic:
        with aws_errors(f"{region}: describing the default subnets"):
            defaults = ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
        with_default = {s["AvailabilityZone"] for s in defaults}
        zones = [z for z in zones if z in with_default] or zones
    return zones


def _subnet_zone(ctx: Templates, ec2: Any, value: Any, stack: str, get_azs: Callable[[], list[str]]) -> str | None:
    """The zone of one subnet a group names: a subnet of the templates (its ``AvailabilityZone``, literal or the
    ``Fn::Select`` of ``Fn::GetAZs`` CDK writes), or one named by id (``DescribeSubnets``); ``None``: unreadable."""
    subnet = ctx.target(value, stack)
    if subnet is None:
        text = ctx.text(value, stack)
        if not text.startswith("subnet-"):
            return None
        with aws_errors(f"{ec2.meta.region_name}: describing subnet {text}"):
            return str(ec2.describe_subnets(SubnetIds=[text])["Subnets"][0]["AvailabilityZone"])
    zone = subnet.props.get("AvailabilityZone")
    if isinstance(zone, str):
        return zone
    chosen = zone.get("Fn::Select") if isinstance(zone, Mapping) else None
    if isinstance(chosen, list) and len(chosen) == 2 and isinstance(chosen[1], Mapping) and "Fn::GetAZs" in chosen[1]:
        index = literal_number(chosen[0])
        zones = get_azs()
        return zones[index] if index is not None and index < len(zones) else None
    return None


def check_assembly(clients: Clients, cdk_out: Path, region: str | None) -> list[CapacityZones | str]:
    """``stacks zones``: each GPU Auto Scaling group of a CDK app's ``cdk.out`` against the zones of its subnets;
    a line for each group whose zones or types cannot be read before deploy."""
    stacks, templates = with_nested_stacks(assembly_stacks(cdk_out))
    ctx = Templates(templates)
    written = {s.name: s.region for s in stacks}  # None: environment-agnostic
    where = {name: found or region for name, found in written.items()}
    gpu = catalog.load()
    azs: dict[tuple[str | None, bool], Callable[[], list[str]]] = {}  # Fn::GetAZs, asked once a region
    out: list[CapacityZones | str] = []
    for group in sorted(ctx.of_type("AWS::AutoScaling::AutoScalingGroup"), key=lambda r: (r.stack, r.logical_id)):
        name = construct_path(group)
        types = group_types(ctx, group)
        if isinstance(types, str) or not any(t in gpu for t in types):
            out += [f"{name}: not checked: {types}"] if isinstance(types, str) else []
            continue
        ec2 = clients("ec2", where[group.stack])
        agnostic = written[group.stack] is None
        key = (where[group.stack], agnostic)
        if key not in azs:
            azs[key] = functools.cache(functools.partial(_get_azs, ec2, agnostic))
        subnets = group.props.get("VPCZoneIdentifier")
        listed = subnets if isinstance(subnets, list) else []
        found = [_subnet_zone(ctx, ec2, v, group.stack, azs[key]) for v in listed]
        if not found or None in found:
            out.append(f"{name}: not checked: its subnets' zones cannot be read before deploy")
            continue
        zones = tuple(sorted({z for z in found if z}))
        offered = offerings(ec2, sorted(types))
        out.append(judge(name, zones, sorted(types), offered, ec2.meta.region_name, drop="the group's types"))
    return out
