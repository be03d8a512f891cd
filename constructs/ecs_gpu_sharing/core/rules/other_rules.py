"""The rules checked elsewhere (task definitions, templates, guards, hardening, limits), each naming where."""

from __future__ import annotations

from .. import container_guards, escalation, hardening, quotas, service_rules, tenancy
from .model import Level, Rule, Source

UNVERIFIED_INSTANCE_FAMILY = "ecs-gpu-sharing:UnverifiedInstanceFamily"
TASK_MIXES_GPU_OPTIONS = "ecs-gpu-sharing:TaskMixesGpuOptions"
RULE_FAILED = "ecs-gpu-sharing:RuleFailed"


def _elsewhere(rule_id: str, level: Level, about: str, source: Source, explanation: str) -> Rule:
    return Rule(rule_id, level, about, explanation, None, source)


_TD, _W, _E = Source.TASK_DEFINITION, Level.WARNING, Level.ERROR
OTHER_RULES: tuple[Rule, ...] = (
    _elsewhere(
        TASK_MIXES_GPU_OPTIONS,
        _E,
        "task definition",
        _TD,
        "ECS takes one GPU option for all GPU containers of a task: MPS budgets or whole GPUs, not both",
    ),
    *(_elsewhere(g.rule_id, _E, g.about, _TD, g.explanation) for g in container_guards.GUARDS),
    _elsewhere(
        tenancy.TASK_DEFINITION_NOT_READABLE,
        _E,
        "service",
        Source.TEMPLATE,
        "a service on a GPU capacity runs a task definition the app's templates do not hold: what it runs cannot be "
        "judged by the allow-list (FleetPlan.allow permits it, with a reason)",
    ),
    _elsewhere(
        tenancy.TASK_ROLE_NOT_READABLE,
        _E,
        "task definition",
        Source.TEMPLATE,
        "a task definition on a GPU capacity whose task role the app's templates do not hold (an ARN written as "
        "text): its policies cannot be judged (FleetPlan.allow permits it, with a reason)",
    ),
    _elsewhere(
        tenancy.SERVICE_NAME_CLAIMED,
        _E,
        "service",
        Source.TEMPLATE,
        "two services carry one plan name in the ecs-gpu-sharing:service tag, by which evaluate finds a plan's "
        "service: only the library sets it",
    ),
    _elsewhere(
        escalation.TASK_ROLE_ESCALATION,
        _E,
        "task definition",
        Source.TEMPLATE,
        "a task role on a GPU capacity may not change IAM, assume roles, pass a role to a service that runs code, run "
        "SSM commands, tag or act as the ECS agent, or write the evidence and stopped-task log groups "
        "(core.escalation); FleetPlan.allow, or the fleet file's acknowledge, permits it with a reason",
    ),
    _elsewhere(
        escalation.TASK_ROLE_REFUSED_POLICY,
        _E,
        "task definition",
        Source.TEMPLATE,
        "AdministratorAccess, PowerUserAccess and IAMFullAccess never go on a task role on a GPU capacity",
    ),
    _elsewhere(
        container_guards.MPS_ENVIRONMENT_IN_COMMAND,
        _W,
        "container",
        _TD,
        "a command or entry point that sets or unsets CUDA_MPS_* (or the visible devices) changes what MPS holds the "
        "process to, where no guard can judge it",
    ),
    _elsewhere(
        hardening.MUTABLE_IMAGE_TAG,
        _W,
        "container",
        _TD,
        "an image named by a tag can move to another build than the one its GPU budget was measured for",
    ),
    _elsewhere(
        hardening.ROOT_USER,
        _W,
        "container",
        _TD,
        "a container without a user (or with root) runs as root",
    ),
    _elsewhere(
        hardening.WRITABLE_ROOT_FILESYSTEM,
        _W,
        "container",
        _TD,
        "a container's root filesystem should be read-only, with writable paths where the server writes",
    ),
    _elsewhere(
        hardening.SECRET_IN_ENVIRONMENT,
        _W,
        "container",
        _TD,
        "environment values are written in plain text into the template and the task definition",
    ),
    _elsewhere(
        hardening.MANAGED_POLICY_ON_TASK_ROLE,
        _W,
        "task definition",
        _TD,
        "an AWS managed policy on a task role is broader than a model needs",
    ),
    _elsewhere(
        UNVERIFIED_INSTANCE_FAMILY,
        _W,
        "capacity",
        Source.CAPACITY,
        "an instance family AWS has not named for ECS GPU sharing should be tested before it is relied on",
    ),
    *(
        _elsewhere(
            limit.rule_id, _E, "stack", Source.TEMPLATE, f"at most {limit.number:,} {limit.what} ({limit.source})"
        )
        for limit in quotas.LIMITS
        # plan rules as well: the plan derives maxima, and counts a construct's auto scaling maximum
        if limit.rule_id not in (quotas.INSTANCES_PER_CLUSTER.rule_id, quotas.TASKS_PER_SERVICE.rule_id)
    ),
    _elsewhere(
        quotas.DUPLICATE_RULE_ID,
        _E,
        "stack",
        Source.TEMPLATE,
        "EC2 refuses a security group rule that already exists, and CloudFormation fails the stack",
    ),
    *(
        _elsewhere(r.rule_id, _E, "stack", Source.TEMPLATE, f"{r.requirement}, as {r.service} enforces it at deploy")
        for r in service_rules.SERVICE_RULES
    ),
    _elsewhere(
        RULE_FAILED,
        _E,
        "capacity",
        Source.PLAN,
        "a rule that fails while checking is reported as an error, naming the rule and the failure (a bug to report)",
    ),
)
