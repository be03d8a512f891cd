"""Resource policies whose principals their service checks when the policy is written: AWS KMS key policies, S3
bucket policies, SNS topic policies; and a key policy's size."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..rule_family import PREFIX
from .base import Finding, Resource, ServiceRule, Templates, cdk_path, role_made_after, statements

# --- AWS KMS -------------------------------------------------------------------------------------------------------

KEY_POLICY_PRINCIPALS = f"{PREFIX}KeyPolicyNamesNoMissingPrincipal"
KEY_POLICY_SIZE = f"{PREFIX}KeyPolicySize"
RESOURCE_POLICY_PRINCIPALS = f"{PREFIX}ResourcePolicyNamesNoMissingPrincipal"
# A bucket's and a topic's policy, each with how its service answers a principal that does not exist.
_RESOURCE_POLICIES = {  # resource type -> its policy property, what it is, its service, how that answers
    "AWS::S3::BucketPolicy": ("PolicyDocument", "bucket policy", "S3", 'MalformedPolicy "Invalid principal in policy"'),
    "AWS::SNS::TopicPolicy": ("PolicyDocument", "topic policy", "SNS", 'InvalidParameter "PrincipalNotFound"'),
    "AWS::ECR::Repository": ("RepositoryPolicyText", "repository", "ECR", 'InvalidParameter "Principal not found"'),
}

_NOUN = {kind: noun for kind, (_, noun, _, _) in _RESOURCE_POLICIES.items()}

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


def _missing_principals(ctx: Templates, owner: Resource, document: Any, service: str, what: str) -> Iterator[Finding]:
    """``owner``'s policy ``document`` naming, by text, a principal ``service`` may find missing when it saves it: a
    service-linked role, or a role of the stack that nothing creates before ``owner``."""
    for statement in statements(document):
        for name in _principals(statement):
            if ctx.target(name, owner.stack) is not None:
                continue  # a role of the templates: CloudFormation creates it before the policy
            arn = ctx.text(name, owner.stack)
            if _SERVICE_LINKED_ROLE.search(arn):
                yield (
                    owner,
                    f"its policy names the role {arn} as a principal; {service} refuses a policy whose principal "
                    f"does not exist yet ({what}), and a service-linked role appears only with the service's first "
                    "use: name the account and match the role with an aws:PrincipalArn condition",
                )
            elif (role := role_made_after(ctx, owner, arn)) is not None:
                yield (
                    owner,
                    f"its policy names the role {arn} as a principal by its name, and the templates create that role "
                    f"({cdk_path(role)}) without making the {_NOUN.get(owner.kind, 'key')} wait for it; {service} "
                    f"refuses a policy whose principal does not exist yet ({what}): name the role by reference "
                    "(role.role_arn in CDK, Fn::GetAtt in a template), or make it depend on the role",
                )


def key_policy_principals(ctx: Templates) -> Iterator[Finding]:
    for key in ctx.of_type("AWS::KMS::Key"):
        yield from _missing_principals(ctx, key, key.props.get("KeyPolicy"), "KMS", "MalformedPolicyDocumentException")


def resource_policy_principals(ctx: Templates) -> Iterator[Finding]:
    for kind, (prop, _, service, answer) in _RESOURCE_POLICIES.items():
        for owner in ctx.of_type(kind):
            yield from _missing_principals(ctx, owner, owner.props.get(prop), service, answer)


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
    ServiceRule(
        RESOURCE_POLICY_PRINCIPALS,
        "Amazon S3, Amazon SNS and Amazon ECR",
        "a bucket, topic or repository policy names no principal that may not exist yet: no service-linked role, and "
        "no role of its stack named as text rather than by reference, which CloudFormation may create after the policy",
        'PutBucketPolicy answers MalformedPolicy "Invalid principal in policy" and SetTopicAttributes '
        'InvalidParameter "Policy Error: PrincipalNotFound" for a principal that does not exist '
        '(AWS Knowledge Center, \'Why do I get the error "Invalid principal in policy" when I try to update my '
        "Amazon S3 bucket policy?'; hashicorp/terraform-provider-aws#26041)",
        resource_policy_principals,
    ),
)
