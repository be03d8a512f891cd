"""``fleet balancers``: before deploy, whether a deployed load balancer's scheme changes under its name.

CloudFormation replaces a load balancer whose scheme changes (``Scheme`` is a create-only property of
``AWS::ElasticLoadBalancingV2::LoadBalancer``), and its listener with it. The services stacks reach the listener
through ``Fn::GetStackOutput``, which CloudFormation reads only when a stack deploys (AWS CloudFormation Template
Reference, ``Fn::GetStackOutput``: "The referenced value is resolved at stack create or update time"); their
templates do not change, so ``cdk deploy`` skips them, their rules go with the old listener, and the new balancer
answers 404 to every route. The fleet app refuses the change at synth when its layout file recorded the scheme; this
reads the deployed template instead, for a checkout without that file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.fleet import LOAD_BALANCER_METADATA, FleetSpec
from .aws import Clients, aws_errors
from .deployed import deployed_template

INTERNET_FACING = "internet-facing"  # CloudFormation's Scheme value (its default); the other is "internal"


@dataclass(frozen=True)
class BalancerScheme:
    name: str
    deployed_internet_facing: bool
    internet_facing: bool

    @property
    def problem(self) -> str | None:
        if self.deployed_internet_facing == self.internet_facing:
            return None
        return (
            f"load_balancer.{self.name}: deployed {self._scheme(self.deployed_internet_facing)}, and the fleet file "
            f"makes it {self._scheme(self.internet_facing)}: CloudFormation would replace it and its listener, and "
            "the services stacks, whose templates do not change, would not be deployed again: every route would "
            "answer 404. Give the balancer a new name instead (its services move to it through new target groups)"
        )

    @staticmethod
    def _scheme(facing: bool) -> str:
        return INTERNET_FACING if facing else "internal"

    def line(self) -> str:
        return f"load_balancer.{self.name}: deployed {self._scheme(self.deployed_internet_facing)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "load_balancer": self.name,
            "deployed_internet_facing": self.deployed_internet_facing,
            "internet_facing": self.internet_facing,
            "problem": self.problem,
        }


def _balancer_name(metadata: Any) -> str | None:
    """The fleet balancer a deployed load balancer is: its metadata, else its construct path
    (``<stack>/LoadBalancers/<name>/Resource``, as the app builds it, for a stack deployed before the metadata)."""
    if isinstance(metadata.get(LOAD_BALANCER_METADATA), str):
        return str(metadata[LOAD_BALANCER_METADATA])
    parts = str(metadata.get("aws:cdk:path", "")).split("/")
    return parts[2] if len(parts) == 4 and parts[1] == "LoadBalancers" and parts[3] == "Resource" else None


def schemes(template: Any, spec: FleetSpec) -> list[BalancerScheme]:
    """The fleet's balancers as a deployed cluster template has them, beside the fleet file's. Pure: no AWS call."""
    out = []
    for resource in (template.get("Resources") or {}).values():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::ElasticLoadBalancingV2::LoadBalancer":
            continue
        name = _balancer_name(resource.get("Metadata") or {})
        wanted = spec.load_balancers.get(name) if name is not None else None
        if wanted is None:
            continue  # not the fleet's, or one the fleet file drops
        scheme = (resource.get("Properties") or {}).get("Scheme", INTERNET_FACING)
        out.append(BalancerScheme(wanted.name, scheme == INTERNET_FACING, wanted.internet_facing))
    return sorted(out, key=lambda b: b.name)


def check(clients: Clients, region: str | None, spec: FleetSpec) -> list[BalancerScheme]:
    """Each of the fleet's balancers the deployed cluster stack holds; nothing for a first deploy."""
    stack = spec.stack_name("cluster")
    cloudformation = clients("cloudformation", region)
    with aws_errors(f"{cloudformation.meta.region_name}: reading the deployed stack {stack}"):
        deployed = deployed_template(cloudformation, stack)
    return [] if deployed is None else schemes(deployed[0], spec)
