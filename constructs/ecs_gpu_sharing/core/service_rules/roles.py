"""A task definition's roles: ECS assumes its task role and its execution role as the service ``ecs-tasks``, so each
must trust that principal. IAM takes any trust policy, and moto starts no task; on a real host the task stops at its
start, unable to get credentials for the role."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..rule_family import PREFIX
from ..shape import camel_keys
from .base import (
    ECS_API,
    Finding,
    Resource,
    ServiceRule,
    Templates,
    _containers,
    cdk_path,
    construct_path,
    role_made_after,
    statements,
)

TASK_ROLE_TRUST = f"{PREFIX}TaskRolesTrustEcsTasks"
ECS_TASKS = "ecs-tasks.amazonaws.com"
_ECS_TASKS_TEXTS = (ECS_TASKS, "ecs-tasks.${AWS::URLSuffix}")  # as written, or as aws-iam writes a regional suffix
_ROLES = {"TaskRoleArn": "task role", "ExecutionRoleArn": "execution role"}
MANAGED_INSTANCES_ROLE_NAME = f"{PREFIX}ManagedInstancesHostRoleName"
TRUST_POLICY_PRINCIPALS = f"{PREFIX}TrustPolicyNamesNoMissingPrincipal"
EXECUTION_ROLE_FOR_SECRETS = f"{PREFIX}ExecutionRoleForSecrets"
MANAGED_INSTANCES_POLICY = "AmazonECSInfrastructureRolePolicyForManagedInstances"
HOST_ROLE_PREFIX = "ecsInstanceRole"  # the managed policy scopes iam:PassRole to arn:aws:iam::*:role/ecsInstanceRole*


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _trusts(ctx: Templates, role: Resource) -> bool | None:
    """Whether the role's trust policy lets ``ecs-tasks`` assume it; ``None`` where the policy cannot be read."""
    document = role.props.get("AssumeRolePolicyDocument")
    statements = document.get("Statement") if isinstance(document, Mapping) else None
    if statements is None:
        return None
    for statement in _listed(statements):
        if not isinstance(statement, Mapping) or statement.get("Effect") != "Allow":
            continue
        actions = [a for a in _listed(statement.get("Action")) if isinstance(a, str)]
        if not any(a.lower() in ("sts:assumerole", "sts:*", "*") for a in actions):
            continue
        principal = statement.get("Principal")
        if principal == "*" or (isinstance(principal, Mapping) and principal.get("AWS") == "*"):
            return True
        services = _listed(principal.get("Service")) if isinstance(principal, Mapping) else []
        if any(ctx.text(s, role.stack) in _ECS_TASKS_TEXTS for s in services):
            return True
    return False


def task_role_trust(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        for prop, what in _ROLES.items():
            role = ctx.target(task.props.get(prop), task.stack)
            if role is None or role.kind != "AWS::IAM::Role" or _trusts(ctx, role) is not False:
                continue  # a role named by ARN, or a policy that cannot be read: not judged
            yield (
                task,
                f"its {what} {construct_path(role)} does not trust {ECS_TASKS}, so ECS cannot "
                "assume it and each task stops as it starts; make the role with "
                f"assumed_by=iam.ServicePrincipal('{ECS_TASKS}'), or add that principal to its trust policy",
            )


def _fetched_before_start(container: Mapping[str, Any]) -> list[str]:
    """What the agent fetches for ``container`` with the task's execution role before it starts: its secrets (by
    variable name) and its private registry's credentials."""
    fetched = []
    secrets = container.get("secrets")
    entries = [camel_keys(s) for s in secrets if isinstance(s, Mapping)] if isinstance(secrets, list) else []
    names = [s.get("name") for s in entries if s.get("valueFrom") is not None]  # a token list: not judged
    if names:
        fetched.append(f"reads secrets ({', '.join(str(n) for n in names)})")
    if container.get("repositoryCredentials"):
        fetched.append("pulls from a private registry with credentials")
    return fetched


def execution_role_for_secrets(ctx: Templates) -> Iterator[Finding]:
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        if task.props.get("ExecutionRoleArn") not in (None, ""):
            continue  # a role, by reference or ARN: whether it may read them is IAM's, at run time
        for c in _containers(task):
            for what in _fetched_before_start(c):
                yield (
                    task,
                    f"container {c.get('name')} {what}, and the task definition names no execution role, which ECS "
                    "needs to fetch them; RegisterTaskDefinition refuses it. Give the task definition an "
                    "execution_role (aws-cdk-lib makes one when secrets are added through add_container(secrets=...)), "
                    "or set ExecutionRoleArn where the task definition is written by hand",
                )


def _policies_of(ctx: Templates, role: Resource) -> Iterator[Any]:
    """The policy documents the templates give ``role``: its inline ones, and the policies and managed policies of the
    templates that name it in their Roles or that it names in its ManagedPolicyArns."""
    for inline in role.props.get("Policies") or []:
        if isinstance(inline, Mapping):
            yield inline.get("PolicyDocument")
    for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for policy in ctx.of_type(kind):
            if any(ctx.target(r, policy.stack) is role for r in _listed(policy.props.get("Roles") or [])):
                yield policy.props.get("PolicyDocument")
    for arn in role.props.get("ManagedPolicyArns") or []:
        managed = ctx.target(arn, role.stack)
        if managed is not None and managed.kind == "AWS::IAM::ManagedPolicy":
            yield managed.props.get("PolicyDocument")


def _grants_pass_role(ctx: Templates, role: Resource) -> bool:
    for document in _policies_of(ctx, role):
        for statement in statements(document):
            actions = [a.lower() for a in _listed(statement.get("Action")) if isinstance(a, str)]
            if statement.get("Effect") == "Allow" and any(a in ("iam:passrole", "iam:*", "*") for a in actions):
                return True
    return False


def managed_instances_role_name(ctx: Templates) -> Iterator[Finding]:
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        config = provider.props.get("ManagedInstancesProvider")
        if not isinstance(config, Mapping):
            continue
        infra = ctx.target(config.get("InfrastructureRoleArn"), provider.stack)
        if infra is None or infra.kind != "AWS::IAM::Role" or _grants_pass_role(ctx, infra):
            continue  # a role named by ARN, or one the templates let pass roles themselves: not judged
        managed = [ctx.text(a, infra.stack) for a in infra.props.get("ManagedPolicyArns") or []]
        if not any(a.endswith(f"/{MANAGED_INSTANCES_POLICY}") for a in managed):
            continue  # its own policy, not AWS's: not judged
        template = config.get("InstanceLaunchTemplate")
        profile = ctx.target(
            template.get("Ec2InstanceProfileArn") if isinstance(template, Mapping) else None, provider.stack
        )
        roles = (
            profile.props.get("Roles") if profile is not None and profile.kind == "AWS::IAM::InstanceProfile" else None
        )
        host = ctx.target(_listed(roles)[0], profile.stack) if roles and profile is not None else None
        if host is None or host.kind != "AWS::IAM::Role":
            continue
        name = host.props.get("RoleName")
        if name is None:
            why = "has no RoleName, so CloudFormation names it (<stack>-<id>-<suffix>)"
        elif isinstance(name, str) and not name.startswith(HOST_ROLE_PREFIX):
            why = f"is named {name!r}"
        else:
            continue  # the prefix, or a name not known here
        yield (
            provider,
            f"its hosts' role {construct_path(host)} {why}, and its infrastructure role {construct_path(infra)} may "
            f"pass only roles named {HOST_ROLE_PREFIX}* ({MANAGED_INSTANCES_POLICY}), so ECS fails each task launch on "
            f"authorization; name the role {HOST_ROLE_PREFIX}<something>, or grant the infrastructure role "
            "iam:PassRole on it",
        )


def trust_policy_principals(ctx: Templates) -> Iterator[Finding]:
    for role in ctx.of_type("AWS::IAM::Role"):
        for statement in statements(role.props.get("AssumeRolePolicyDocument")):
            principal = statement.get("Principal")
            for name in _listed(principal.get("AWS")) if isinstance(principal, Mapping) else []:
                if ctx.target(name, role.stack) is not None:
                    continue  # a reference: CloudFormation creates what it names first
                arn = ctx.text(name, role.stack)
                named = role_made_after(ctx, role, arn)
                if named is None:
                    continue
                which = "itself" if named is role else f"a role the templates create after it ({cdk_path(named)})"
                yield (
                    role,
                    f"its trust policy names {arn}, {which}, by name; IAM saves a role principal as that role's "
                    "unique id, so it refuses one that does not exist yet (Invalid principal in policy): name the "
                    "role by reference (Fn::GetAtt, role.role_arn in CDK), make this role depend on it, or trust "
                    "the account with an aws:PrincipalArn condition",
                )


ROLE_RULES: tuple[ServiceRule, ...] = (
    ServiceRule(
        TASK_ROLE_TRUST,
        "Amazon ECS",
        f"a task definition's task role and execution role, where the templates make them, trust {ECS_TASKS}",
        f"Amazon ECS Developer Guide, 'Amazon ECS task IAM role' and 'Amazon ECS task execution IAM role': each "
        f'role\'s trust policy allows sts:AssumeRole to the service principal "{ECS_TASKS}"; {ECS_API}, '
        'RegisterTaskDefinition, taskRoleArn: "The short name or full Amazon Resource Name (ARN) of the IAM role that '
        'containers in this task can assume"',
        task_role_trust,
    ),
    ServiceRule(
        TRUST_POLICY_PRINCIPALS,
        "AWS IAM",
        "a role's trust policy names no role of its stack as text that CloudFormation may create after it, itself "
        "included",
        "IAM User Guide, 'AWS JSON policy elements: Principal' (IAM role principals): when the policy is saved, a "
        "role's ARN is transformed to the role's unique principal ID, so the role must exist; CreateRole fails with "
        'MalformedPolicyDocument "Invalid principal in policy" otherwise',
        trust_policy_principals,
    ),
    ServiceRule(
        EXECUTION_ROLE_FOR_SECRETS,
        "Amazon ECS",
        "a task definition whose containers read secrets or pull with private registry credentials names an "
        "execution role",
        f'{ECS_API}, RegisterTaskDefinition: ClientException "When you are specifying container secrets, you must '
        "also specify a value for 'executionRoleArn'\" and \"Private repository authentication requires that the task "
        "definition specify a value for executionRoleArn\"; Amazon ECS Developer Guide, 'Amazon ECS task execution "
        "IAM role' (secrets and private registry authentication are fetched with it)",
        execution_role_for_secrets,
    ),
    ServiceRule(
        MANAGED_INSTANCES_ROLE_NAME,
        "Amazon ECS (Managed Instances)",
        f"a Managed Instances host role is named {HOST_ROLE_PREFIX}*, where the infrastructure role has only AWS's "
        "managed policy to pass it",
        "Amazon ECS Developer Guide, 'Amazon ECS Managed Instances instance profile': \"If you use Amazon ECS Managed "
        f"Instances with the {MANAGED_INSTANCES_POLICY} managed policy, the instance role name must start with "
        f"{HOST_ROLE_PREFIX}. The policy scopes iam:PassRole to arn:aws:iam::*:role/{HOST_ROLE_PREFIX}*, so a "
        'mismatched name causes an authorization error at task launch"',
        managed_instances_role_name,
    ),
)
