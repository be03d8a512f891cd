"""Updates AWS refuses in place, which no synth sees since they take the template that is deployed. Pure Python: a
deployed template and the new one in, findings out.

A Network Load Balancer made without security groups takes none later: "You can't perform this operation on a
Network Load Balancer unless you specified a security group for the load balancer when you created it" (Elastic Load
Balancing API Reference, SetSecurityGroups). CloudFormation updates ``SecurityGroups`` in place, so the update fails
there and rolls back; a balancer replaced in the same change (a create-only property changes) is created with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .replacement import replaced

Template = Mapping[str, Any]
_BALANCER = "AWS::ElasticLoadBalancingV2::LoadBalancer"


@dataclass(frozen=True)
class UpdateRefusal:
    stack: str
    logical_id: str
    kind: str
    problem_text: str

    @property
    def problem(self) -> str:
        return f"{self.stack}/{self.logical_id} ({self.kind}): {self.problem_text}"

    def to_json(self) -> dict[str, Any]:
        return {"stack": self.stack, "logical_id": self.logical_id, "type": self.kind, "problem": self.problem}


def _groups(props: Mapping[str, Any]) -> Any:
    groups = props.get("SecurityGroups")
    return groups if groups not in (None, []) else None


def update_refusals(stack: str, deployed: Template, new: Template) -> list[UpdateRefusal]:
    """Each resource of ``stack`` that the new template updates in a way AWS refuses."""
    old_resources, new_resources = deployed.get("Resources") or {}, new.get("Resources") or {}
    replacing = replaced(deployed, new)
    found = []
    for logical_id, resource in sorted(new_resources.items()):
        before = old_resources.get(logical_id)
        if resource.get("Type") != _BALANCER or not isinstance(before, Mapping) or before.get("Type") != _BALANCER:
            continue
        old_props, new_props = before.get("Properties") or {}, resource.get("Properties") or {}
        if new_props.get("Type") != "network" or logical_id in replacing:
            continue
        if _groups(old_props) is None and _groups(new_props) is not None:
            found.append(
                UpdateRefusal(
                    stack,
                    logical_id,
                    _BALANCER,
                    "this Network Load Balancer was created without security groups, and Elastic Load Balancing adds "
                    "none to it later (SetSecurityGroups), so the update fails and rolls back; keep it without "
                    "security groups, or give it a new construct id (a new balancer, created with them) and move "
                    "its listeners and DNS to it",
                )
            )
    return found
