"""AWS KMS: key policies."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..rule_family import PREFIX
from .base import Finding, Templates, cdk_path, role_made_after, statements

# --- AWS KMS -------------------------------------------------------------------------------------------------------

KEY_POLICY_PRINCIPALS = f"{PREFIX}KeyPolicyNamesNoMissingPrincipal"
KEY_POLICY_SIZE = f"{PREFIX}KeyPolicySize"

# A service-linked role: AWS makes it with the service's first use in an account, so a new account lacks it. Another
# role named by ARN may well exist (an imported one): the templates cannot tell, so only these are refused.
_SERVICE_LINKED_ROLE = re.compile(
    r":iam::([^:]*|\$\{[^}]*\}):role/aws-service-role/"
)  # an account, or ${AWS::AccountId}


def _principals(statement: Mapping[str, Any]) -> list[Any]:
    principal = statement.get("Principal")
    if not isinstance(principal, Mapping):
        return []
    names = principal.get("AWS")
    return names if isinstance(names, list) else [names] if names is not None else []


def key_policy_principals(ctx: Templates) -> Iterator[Finding]:
    for key in ctx.of_type("AWS::KMS::Key"):
        for statement in statements(key.props.get("KeyPolicy")):
            for name in _principals(statement):
                if ctx.target(name, key.stack) is not None:
                    continue  # a role of the templates: CloudFormation creates it before the key
                arn = ctx.text(name, key.stack)
                if _SERVICE_LINKED_ROLE.search(arn):
                    yield (
                        key,
                        (
                            f"its policy names the role {arn} as a principal; KMS refuses a policy whose principal "
                            "does not exist yet (a service-linked role appears only with the service's first use): "
                            "name the account and match the role with an aws:PrincipalArn condition"
                        ),
                    )
                elif (role := role_made_after(ctx, key, arn)) is not None:
                    yield (
                        key,
                        (
                            f"its policy names the role {arn} as a principal by its name, and the templates create "
                            f"that role ({cdk_path(role)}) without making the key wait for it; KMS refuses a policy "
                            "whose principal does not exist yet: name the role by reference (role.role_arn in CDK, "
                            "Fn::GetAtt in a template), or make the key depend on it"
                        ),
                    )


def key_policy_size(ctx: Templates) -> Iterator[Finding]:
    for key in ctx.of_type("AWS::KMS::Key"):
        policy = key.props.get("KeyPolicy")
        size = len(policy if isinstance(policy, str) else json.dumps(policy, separators=(",", ":")))
        if size > 32_768:
            yield key, f"its policy is {size:,} bytes; a key policy holds at most 32 KB"
