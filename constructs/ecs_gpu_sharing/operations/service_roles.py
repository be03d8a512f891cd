"""``fleet roles``: before a first deploy, whether the account has the service-linked role ECS needs.

A capacity provider cannot be made in an account without Amazon ECS's service-linked role (``AWSServiceRoleForECS``):
CreateCapacityProvider fails with "ECS Service Linked Role does not exist. Please create a Service linked role for
ECS and try again", and the cluster stack rolls back. ECS creates the role when a cluster is made, but only for a
caller who may create it (ECS API Reference, CreateCluster), and the stack makes its cluster and its capacity
providers side by side; a cluster made in an account without the role can fail too ("Unable to assume the service
linked role"; cloudformation-coverage-roadmap issue 818: a second try succeeds). An account that has run ECS before
has the role; a new one may not. No synth and no emulator sees which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.fleet import FleetSpec
from ..core.hardening import ECS_SERVICE_ROLE_PATH
from .aws import Clients, aws_errors

CREATE = "aws iam create-service-linked-role --aws-service-name ecs.amazonaws.com"


@dataclass(frozen=True)
class ServiceRoleCheck:
    role: str  # the role's name
    exists: bool

    @property
    def problem(self) -> str | None:
        if self.exists:
            return None
        return (
            f"the account has no {self.role} (Amazon ECS's service-linked role): the cluster stack's capacity "
            "providers would fail ('ECS Service Linked Role does not exist') and the stack roll back; create it once "
            f"for the account: {CREATE}"
        )

    def line(self) -> str:
        return f"{self.role}: {'present' if self.exists else 'missing'}"

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "exists": self.exists, "problem": self.problem}


def check(clients: Clients, region: str | None, spec: FleetSpec) -> list[ServiceRoleCheck]:
    """Whether ECS's service-linked role exists (IAM is global: the region only picks the endpoint)."""
    iam = clients("iam", region)
    name = ECS_SERVICE_ROLE_PATH.rsplit("/", 1)[-1]
    with aws_errors(f"reading IAM role {name}"):
        try:
            iam.get_role(RoleName=name)
        except iam.exceptions.NoSuchEntityException:
            return [ServiceRoleCheck(name, False)]
    return [ServiceRoleCheck(name, True)]
