"""``fleet ebs``: before deploy, whether the hosts' encrypted root volumes can use the account's default EBS key.

Each EC2 capacity's launch template asks for an encrypted root volume without naming a key, so EC2 uses the
region's default EBS key: AWS's own ``alias/aws/ebs`` unless the account set a customer managed key
(``ModifyEbsDefaultKmsKeyId``, common where policy demands it). Auto Scaling launches the hosts as its service-linked
role, which has no KMS permission of its own: a customer managed key must admit that role in its key policy or by a
grant, or every launch fails with ``Client.InternalError: Client error on launch`` and the tasks wait in
PROVISIONING while every stack deploys (Amazon EC2 Auto Scaling User Guide, "Required AWS KMS key policy for use with
encrypted volumes").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.fleet import MANAGED_INSTANCES, FleetSpec
from ..core.hardening import AUTO_SCALING_SERVICE_ROLE_PATH
from ..core.service_rules.base import listed, statements
from .aws import Clients, aws_errors, customer_key

# What the role must be allowed to do with the key (the Auto Scaling user guide's key policy statements).
NEEDED = ("kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt", "kms:GenerateDataKey", "kms:DescribeKey", "kms:CreateGrant")


@dataclass(frozen=True)
class EbsKeyCheck:
    key: str  # the default EBS key as the account names it
    customer_managed: bool
    admitted_by: str | None  # "key policy" or "grant"; None: not admitted (or AWS's own key)
    problem: str | None

    def line(self) -> str:
        if not self.customer_managed:
            return f"default EBS key {self.key}: AWS managed; Auto Scaling may use it"
        if self.admitted_by:
            return f"default EBS key {self.key}: customer managed; its {self.admitted_by} admits Auto Scaling's role"
        return f"default EBS key {self.key}: customer managed; nothing admits Auto Scaling's role"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "customer_managed": self.customer_managed,
            "admitted_by": self.admitted_by,
            "problem": self.problem,
        }


def _names_role(policy: str, role_arn: str) -> bool:
    """Whether an Allow statement names the role: as a principal, or the account with an aws:PrincipalArn condition."""
    for statement in statements(policy):
        if statement.get("Effect") != "Allow":
            continue
        principal = statement.get("Principal")
        names = listed(principal.get("AWS") if isinstance(principal, Mapping) else principal)
        condition = json.dumps(statement.get("Condition") or {})
        if role_arn in names or (role_arn in condition and "aws:PrincipalArn" in condition):
            return True
    return False


def _admitted_by(kms: Any, key_arn: str, role_arn: str) -> str | None:
    if _names_role(kms.get_key_policy(KeyId=key_arn, PolicyName="default")["Policy"], role_arn):
        return "key policy"
    grants = kms.get_paginator("list_grants").paginate(KeyId=key_arn)
    if any(g.get("GranteePrincipal") == role_arn for page in grants for g in page["Grants"]):
        return "grant"
    return None


def check(clients: Clients, region: str | None, spec: FleetSpec) -> list[EbsKeyCheck]:
    """The default EBS key against Auto Scaling's service-linked role; nothing to check without an EC2 capacity."""
    if all(c.kind == MANAGED_INSTANCES for c in spec.capacities.values()):
        return []
    ec2 = clients("ec2", region)
    where = ec2.meta.region_name
    with aws_errors(f"{where}: reading the default EBS key"):
        key_id = ec2.get_ebs_default_kms_key_id()["KmsKeyId"]
    kms = clients("kms", region)
    with aws_errors(f"{where}: describing the default EBS key {key_id}"):
        key_arn = customer_key(kms, key_id)
    if key_arn is None:
        return [EbsKeyCheck(key_id, False, None, None)]
    _, partition, _, _, account, _ = key_arn.split(":", 5)
    role_arn = f"arn:{partition}:iam::{account}:role/{AUTO_SCALING_SERVICE_ROLE_PATH}"
    with aws_errors(f"{where}: reading the policy and grants of the default EBS key {key_arn}"):
        admitted = _admitted_by(kms, key_arn, role_arn)
    problem = None
    if admitted is None:
        problem = (
            f"the region's default EBS key {key_arn} is customer managed and neither its key policy nor a grant "
            f"admits {role_arn}: every host launch would fail (Client.InternalError: Client error on launch); add "
            f"the Auto Scaling user guide's key policy statements for that role ({', '.join(NEEDED)}), or a grant"
        )
    return [EbsKeyCheck(key_arn, True, admitted, problem)]
