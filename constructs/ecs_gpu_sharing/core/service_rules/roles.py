"""A task definition's roles: ECS assumes its task role and its execution role as the service ``ecs-tasks``, so each
must trust that principal. IAM takes any trust policy, and moto starts no task; on a real host the task stops at its
start, unable to get credentials for the role."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..rule_family import PREFIX
from .base import ECS_API, Finding, Resource, ServiceRule, Templates, construct_path

TASK_ROLE_TRUST = f"{PREFIX}TaskRolesTrustEcsTasks"
ECS_TASKS = "ecs-tasks.amazonaws.com"
_ECS_TASKS_TEXTS = (ECS_TASKS, "ecs-tasks.${AWS::URLSuffix}")  # as written, or as aws-iam writes a regional suffix
_ROLES = {"TaskRoleArn": "task role", "ExecutionRoleArn": "execution role"}


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
)
