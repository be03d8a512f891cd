"""``fleet namespace``: before deploy, whether a fleet in an existing VPC (``vpc_id``) can make its Service Connect
namespace there.

The cluster stack makes the fleet's ``service_connect_namespace`` a Cloud Map private DNS namespace in the fleet's
VPC, and Cloud Map makes for it a Route 53 private hosted zone of the same name, associated with that VPC (AWS
CloudFormation Template Reference, ``AWS::ServiceDiscovery::PrivateDnsNamespace``, Name: "AWS Cloud Map automatically
creates an Amazon Route 53 private hosted zone that has the same name as the namespace"). Route 53 refuses a private
hosted zone whose name a zone already associated with the VPC has (Route 53 API Reference, ``ConflictingDomainExists``:
"Create a private hosted zone: A hosted zone with the specified name already exists and is already associated with the
Amazon VPC that you specified"), so the cluster stack fails and rolls back. A VPC the fleet makes has no zone before
it; a shared one often has (another team's namespace, the network team's ``internal`` zone). The zone of the namespace
the fleet's own cluster stack already made is not a conflict: an update keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.fleet import FleetSpec
from ..core.service_rules.base import Templates, construct_path
from .assembly import assembly_stacks, with_nested_stacks
from .aws import Clients, aws_errors
from .deployed import deployed_ids

PRIVATE_DNS_NAMESPACE = "AWS::ServiceDiscovery::PrivateDnsNamespace"


@dataclass(frozen=True)
class NamespaceZone:
    namespace: str
    vpc_id: str
    conflicts: tuple[str, ...]  # hosted zones of the namespace's name associated with the VPC, the fleet's own left out
    own_zone: str | None = None  # the zone of the namespace the fleet's cluster stack made, if deployed
    label: str = "service_connect_namespace"  # what names it: the fleet file's key, or the namespace's construct path

    @property
    def problem(self) -> str | None:
        if not self.conflicts:
            return None
        return (
            f"{self.label} {self.namespace}: the VPC {self.vpc_id} already has a private hosted zone of "
            f"that name ({', '.join(self.conflicts)}): Route 53 refuses the one Cloud Map would make for the namespace "
            "(ConflictingDomainExists), and the cluster stack would roll back; choose a namespace name no zone of the "
            "VPC has"
        )

    def line(self) -> str:
        if self.conflicts:
            return f"{self.label} {self.namespace}: taken in {self.vpc_id}"
        kept = f" (the one its stack made, zone {self.own_zone}, is kept)" if self.own_zone else ""
        return f"{self.label} {self.namespace}: free in {self.vpc_id}{kept}"

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "vpc_id": self.vpc_id,
            "conflicting_zones": list(self.conflicts),
            "own_zone": self.own_zone,
            "problem": self.problem,
        }


def _zone_id(value: str) -> str:
    """A hosted zone id as Route 53 lists it by VPC (``Z...``), from either spelling (``/hostedzone/Z...``)."""
    return value.rsplit("/", 1)[-1]


def _dns_name(value: str) -> str:
    return value.rstrip(".").lower()


def check(clients: Clients, region: str | None, spec: FleetSpec) -> list[NamespaceZone]:
    """``fleet namespace``: the namespace of a fleet in an existing VPC (``in_vpc``); nothing for a fleet without
    ``vpc_id`` or without a namespace."""
    if not spec.vpc_id or not spec.service_connect_namespace:
        return []
    return [in_vpc(clients, region, spec.service_connect_namespace, spec.vpc_id, spec.stack_name("cluster"))]


def in_vpc(clients: Clients, region: str | None, namespace: str, vpc_id: str, stack: str) -> NamespaceZone:
    """``namespace`` in the VPC, with the private hosted zones of its name already associated with the VPC
    (``ListHostedZonesByVPC``), less the one of the namespace of that name the deployed ``stack`` holds (its physical
    id, matched to its zone by ``ListNamespaces``), which an update keeps. ``stack``: a stack's name, or a nested
    stack's path (``<parent>/<its logical id>``...)."""
    route53 = clients("route53", region)
    where = route53.meta.region_name if region is None else region
    name = _dns_name(namespace)
    with aws_errors(f"{where}: listing the private hosted zones of {vpc_id}"):
        same = _zones_named(route53, vpc_id, where, name)
    if not same:
        return NamespaceZone(namespace, vpc_id, ())
    cloudformation = clients("cloudformation", region)
    with aws_errors(f"{where}: reading the deployed stack {stack}"):
        deployed = set(deployed_ids(cloudformation, stack).values())
    own = None
    if deployed:
        servicediscovery = clients("servicediscovery", region)
        with aws_errors(f"{where}: listing the Cloud Map namespaces"):
            own = _own_zone(servicediscovery, deployed, name)
    conflicts = tuple(sorted(z for z in same if z != own))
    return NamespaceZone(namespace, vpc_id, conflicts, own if own in same else None)


def check_assembly(clients: Clients, cdk_out: Path, region: str | None) -> list[NamespaceZone | str]:
    """For ``stacks names``: each private DNS namespace of a CDK app's ``cdk.out`` in a VPC it names by id (a looked
    up VPC: ``ec2.Vpc.from_lookup`` writes its id), in its stack's region (else ``region``); a line for each whose
    name or VPC cannot be read before deploy. One in a VPC the app's templates make has no zone before it."""
    stacks, templates = with_nested_stacks(assembly_stacks(cdk_out))
    where = {s.name: s.region or region for s in stacks}
    ctx = Templates(templates)
    out: list[NamespaceZone | str] = []
    for resource in sorted(ctx.of_type(PRIVATE_DNS_NAMESPACE), key=lambda r: (r.stack, r.logical_id)):
        name, vpc = resource.props.get("Name"), resource.props.get("Vpc")
        made = ctx.target(vpc, resource.stack)
        if made is not None and made.kind == "AWS::EC2::VPC":
            continue  # a VPC of the app's templates (here, or read from another stack): new, or its namespace's own
        if not isinstance(name, str) or not isinstance(vpc, str):
            out.append(f"{construct_path(resource)}: not checked: its name or VPC is known only at deploy")
            continue
        found = in_vpc(clients, where.get(resource.stack), name, vpc, resource.stack)
        out.append(replace(found, label=f"{construct_path(resource)}: namespace"))
    return out


def _zones_named(route53: Any, vpc_id: str, region: str, name: str) -> list[str]:
    """The ids of the private hosted zones named ``name`` associated with the VPC (every page)."""
    found, token = [], None
    while True:
        page = route53.list_hosted_zones_by_vpc(
            VPCId=vpc_id, VPCRegion=region, **({"NextToken": token} if token else {})
        )
        found += [
            _zone_id(z["HostedZoneId"]) for z in page.get("HostedZoneSummaries", []) if _dns_name(z["Name"]) == name
        ]
        token = page.get("NextToken")
        if not token:
            return found


def _own_zone(servicediscovery: Any, deployed: set[str], name: str) -> str | None:
    """The hosted zone of the private DNS namespace named ``name`` that the fleet's cluster stack made (its id among
    the stack's physical ids), if any."""
    for page in servicediscovery.get_paginator("list_namespaces").paginate(
        Filters=[{"Name": "TYPE", "Values": ["DNS_PRIVATE"], "Condition": "EQ"}]
    ):
        for namespace in page.get("Namespaces", []):
            zone = ((namespace.get("Properties") or {}).get("DnsProperties") or {}).get("HostedZoneId")
            if namespace.get("Id") in deployed and _dns_name(namespace.get("Name", "")) == name and zone:
                return _zone_id(zone)
    return None
