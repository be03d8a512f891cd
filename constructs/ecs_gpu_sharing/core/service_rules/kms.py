"""AWS KMS: key policies."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..rule_family import PREFIX
from .base import Finding, ServiceRule, Templates, cdk_path, role_made_after, statements

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


KMS_RULES: tuple[ServiceRule, ...] = (
    ServiceRule(
        KEY_POLICY_PRINCIPALS,
        "AWS KMS",
        "a key policy names no principal that may not exist yet: no service-linked role (a new account has none "
        "until the service's first use), and no role of its stack named as text rather than by reference, which "
        "CloudFormation may create after the key",
        'AWS KMS API Reference, CreateKey, Policy: "The principals in the key policy must exist and be visible to '
        'KMS", or CreateKey and PutKeyPolicy fail with MalformedPolicyDocumentException; the Auto Scaling '
        "service-linked role is created with an account's first Auto Scaling group (EC2 Auto Scaling User Guide, "
        "'Service-linked roles')",
        key_policy_principals,
        rehearsal="checked in the rehearsal's account too: a key policy naming a role the account lacks fails the "
        "deploy, as in AWS",
    ),
    ServiceRule(
        KEY_POLICY_SIZE,
        "AWS KMS",
        "a key policy document is at most 32 KB",
        "AWS KMS Developer Guide, 'Resource quotas': \"Key policy document size: 32 KB (32,768 bytes)\"",
        key_policy_size,
    ),
)
