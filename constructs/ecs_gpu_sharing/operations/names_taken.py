"""``stacks names``: before a deploy, whether a name a CDK app's stacks would create is taken in the account already,
which CloudFormation refuses, rolling the stack back:

- a Cloud Map private DNS namespace in a looked-up VPC whose name a private hosted zone of that VPC has
  (``namespace_zone``: Route 53 refuses the zone Cloud Map makes for it);
- a log group of a name known before deploy that the account has: one kept from an earlier deploy of the same app
  is the common case, since CDK keeps log groups when their stack is deleted (``core.outside_names.log_groups_named``).
  CloudFormation makes a resource of a given name only where none of that name exists ("Resource of type
  'AWS::Logs::LogGroup' with identifier '...' already exists").

A name the deployed stack holds already (its physical id under the same logical id) is the stack's own: an update
keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.outside_names import log_groups_named
from .assembly import assembly_stacks, with_nested_stacks
from .aws import Clients, aws_errors
from .deployed import deployed_ids
from .namespace_zone import NamespaceZone
from .namespace_zone import check_assembly as namespaces_in_vpcs
from .stack_references import pseudo_parameters


@dataclass(frozen=True)
class LogGroupTaken:
    owner: str  # the construct path of the log group
    name: str
    region: str
    taken: bool  # the account has a log group of this name that the deployed stack does not hold
    own: bool = False  # the deployed stack holds it under the same logical id: an update keeps it

    @property
    def problem(self) -> str | None:
        if not self.taken:
            return None
        return (
            f"{self.owner}: the log group {self.name!r} exists in {self.region} outside the stack (one kept from an "
            "earlier deploy: CDK keeps log groups when their stack is deleted): CloudFormation would refuse to "
            "create it and roll the stack back; delete it if its logs are not needed, or give the log group another "
            "name (or none)"
        )

    def line(self) -> str:
        state = "taken" if self.taken else "the deployed stack's own" if self.own else "free"
        return f"{self.owner}: log group {self.name}: {state} in {self.region}"

    def to_json(self) -> dict[str, Any]:
        return {"log_group": self.owner, "name": self.name, "region": self.region, "problem": self.problem}


def check_assembly(clients: Clients, cdk_out: Path, region: str | None) -> list[NamespaceZone | LogGroupTaken | str]:
    """Every namespace in a looked-up VPC (``namespace_zone.check_assembly``) and every log group named before deploy,
    each against the account, in its stack's region (else ``region``)."""
    out: list[NamespaceZone | LogGroupTaken | str] = list(namespaces_in_vpcs(clients, cdk_out, region))
    stacks, templates = with_nested_stacks(assembly_stacks(cdk_out))
    if not any(
        isinstance(r, dict)
        and r.get("Type") == "AWS::Logs::LogGroup"
        and (r.get("Properties") or {}).get("LogGroupName")
        for t in templates.values()
        for r in (t.get("Resources") or {}).values()
    ):
        return out
    with aws_errors("reading the caller's account (sts GetCallerIdentity)"):
        caller = pseudo_parameters(clients, region)
    where = {s.name: s.region or region for s in stacks}
    pseudo = {s.name: {**caller, **({"AWS::Region": s.region} if s.region else {})} for s in stacks}
    for made in log_groups_named(templates, pseudo):
        logs = clients("logs", where.get(made.stack))
        name = logs.meta.region_name
        with aws_errors(f"{name}: looking up the log group {made.name}"):
            groups = logs.describe_log_groups(logGroupNamePrefix=made.name)["logGroups"]
        exists = any(g["logGroupName"] == made.name for g in groups)
        own = False
        if exists:
            cloudformation = clients("cloudformation", where.get(made.stack))
            with aws_errors(f"{name}: reading the deployed stack {made.stack}"):
                own = deployed_ids(cloudformation, made.stack).get(made.logical_id) == made.name
        out.append(LogGroupTaken(made.owner, made.name, name, exists and not own, own))
    return out
