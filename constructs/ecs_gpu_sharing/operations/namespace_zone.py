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

from dataclasses import dataclass
from typing import Any

from ..core.fleet import FleetSpec
from .aws import Clients, aws_errors
from .deployed import physical_ids


@dataclass(frozen=True)
class NamespaceZone:
    namespace: str
    vpc_id: str
    conflicts: tuple[str, ...]  # hosted zones of the namespace's name associated with the VPC, the fleet's own left out
    own_zone: str | None = None  # the zone of the namespace the fleet's cluster stack made, if deployed

    @property
    def problem(self) -> str | None:
        if not self.conflicts:
            return None
        return (
            f"service_connect_namespace {self.namespace}: the VPC {self.vpc_id} already has a private hosted zone of "
            f"that name ({', '.join(self.conflicts)}): Route 53 refuses the one Cloud Map would make for the namespace "
            "(ConflictingDomainExists), and the cluster stack would roll back; choose a namespace name no zone of the "
            "VPC has"
        )

    def line(self) -> str:
        if self.conflicts:
            return f"service_connect_namespace {self.namespace}: taken in {self.vpc_id}"
        kept = f" (the fleet's own, zone {self.own_zone}, is kept)" if self.own_zone else ""
        return f"service_connect_namespace {self.namespace}: free in {self.vpc_id}{kept}"

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
    """The namespace of a fleet in an existing VPC, with the zones of its name already associated with that VPC
    (``ListHostedZonesByVPC``), less the one of the namespace the fleet's deployed cluster stack holds (its physical
    id, matched to its zone by ``ListNamespaces``). Nothing for a fleet without ``vpc_id`` or without a namespace."""
    if not spec.vpc_id or not spec.service_connect_namespace:
        return []
    route53 = clients("route53", region)
    where = route53.meta.region_name if region is None else region
    name = _dns_name(spec.service_connect_namespace)
    with aws_errors(f"{where}: listing the private hosted zones of {spec.vpc_id}"):
        same = _zones_named(route53, spec.vpc_id, where, name)
    if not same:
        return [NamespaceZone(spec.service_connect_namespace, spec.vpc_id, ())]
    stack = spec.stack_name("cluster")
    cloudformation = clients("cloudformation", region)
    with aws_errors(f"{where}: reading the deployed stack {stack}"):
        deployed = set((physical_ids(cloudformation, stack) or {}).values())
    own = None
    if deployed:
        servicediscovery = clients("servicediscovery", region)
        with aws_errors(f"{where}: listing the Cloud Map namespaces"):
            own = _own_zone(servicediscovery, deployed, name)
    conflicts = tuple(sorted(z for z in same if z != own))
    return [NamespaceZone(spec.service_connect_namespace, spec.vpc_id, conflicts, own if own in same else None)]


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
