"""The fit rules, as a table: one function per rule, each with an id, a level and an explanation. Pure Python.

``assess`` plans every service on its capacity together and runs every rule over the plan. The CDK layer
turns its findings into synth errors (on the construct concerned) and warnings acknowledgeable by id; the
CLI prints them. Every finding carries its rule's id, errors included.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum

from . import container_guards, escalation, hardening, quotas, service_rules, tenancy
from .allocation import digest_of
from .markdown import table
from .mps import MAX_CLIENTS_PER_GPU
from .placement import DEFAULT_PRESET, CapacityPlacement, place_capacity, scatters, strategy_label
from .planner import MANAGED_INSTANCES, TASK_RULES, CapacityInput, Plan, ServiceInput, TaskRule, plan


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Source(StrEnum):
    """Where a rule is checked."""

    PLAN = "fit plan"  # by ``assess``, over the plan of every service on a GPU capacity
    TASK_DEFINITION = "task definition"  # on the task definition as rendered (shared-GPU ones, and any on GPU hosts)
    CAPACITY = "capacity"  # by the capacity construct, on its instance types
    FLEET_FILE = "fleet file"  # by the fleet-file parser, before anything is built
    TEMPLATE = "templates"  # on the synthesized templates (AwsLimitsChecks), and by the fleet-file parser


BUDGET_BELOW_NEED = "ecs-gpu-sharing:BudgetBelowNeed"
SURGE_WARNING = "ecs-gpu-sharing:SurgeDoesNotFit"
CLIENT_LIMIT_WARNING = "ecs-gpu-sharing:MpsClientLimit"
OUTSIDE_PLAN_WARNING = "ecs-gpu-sharing:ServiceOutsidePlan"


@dataclass(frozen=True)
class OutsideService:
    """A service on a GPU capacity that the plan cannot count, and why; it is reported, never dropped."""

    name: str
    capacity: str
    reason: str
    fix: str


@dataclass(frozen=True)
class NameClash:
    """Two constructs of one kind that would carry the same name in the plan."""

    about: str  # "service" or "capacity"
    name: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Finding:
    """One rule's verdict about a service or a capacity."""

    rule_id: str
    level: Level
    about: str  # what the subject is: "service" or "capacity"
    subject: str  # its name in the plan
    message: str
    acknowledged: str | None = None  # the reason a warning was accepted for its service

    @property
    def error(self) -> bool:
        return self.level is Level.ERROR

    def __str__(self) -> str:
        return finding_line(self.rule_id, str(self.level), self.about, self.subject, self.message, self.acknowledged)


def finding_line(rule_id: str, level: str, about: str, subject: str, message: str, acknowledged: str | None) -> str:
    """One finding on one line, the same from a fleet file's plan and from a plan JSON read back."""
    if acknowledged is not None:
        return f"acknowledged [{rule_id}]: {about} {subject}: {acknowledged}"
    return f"{level} [{rule_id}]: {about} {subject}: {message}"


@dataclass(frozen=True)
class Context:
    """What every rule sees."""

    capacities: dict[str, CapacityInput]
    services: list[ServiceInput]
    outside: list[OutsideService]
    clashes: list[NameClash]
    shape_errors: list[tuple[str, str]]  # (service, why its task shape cannot be planned)
    steady: Plan
    surge: Plan
    placement: dict[str, CapacityPlacement] = field(default_factory=dict)  # ECS's own placement, by EC2 capacity

    def on(self, capacity: str) -> list[ServiceInput]:
        return [s for s in self.services if s.capacity == capacity]


# A rule yields (subject, message) pairs; the table adds the id, level and what the subject is.
Check = Callable[[Context], Iterable[tuple[str, str]]]


@dataclass(frozen=True)
class Rule:
    rule_id: str
    level: Level
    about: str  # what its findings are about: "service", "capacity", "container", "task definition", "stack"
    explanation: str
    check: Check | None  # the plan's rules; the others are checked where ``source`` says
    source: Source = Source.PLAN


def _task_rule(rule: TaskRule) -> Check:
    def check(ctx: Context) -> Iterator[tuple[str, str]]:
        for s in ctx.services:
            what = rule.check(s, ctx.capacities[s.capacity])
            if what is not None:
                yield s.name, f"{what}; {rule.fix}"

    return check


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def counts_exceed_max_instances(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():
        steady = ctx.steady.capacity(name)
        left = sum(u.tasks for u in steady.unplaced if u.reason.startswith("no room"))
        if left:
            counts = ", ".join(f"{s.name} {s.tasks} ({s.count_source})" for s in ctx.on(name))
            yield (
                name,
                f"the services' largest counts ({counts}) need {steady.instances_needed} instances of "
                f"{cap.instance_type}, more than max_instances {cap.max_instances} ({_plural(left, 'task')} "
                f"left unplaced); raise max_instances to at least {steady.instances_needed}, or lower the counts",
            )


def surge_does_not_fit(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():
        if cap.max_instances is None or ctx.steady.capacity(name).unplaced:
            continue
        need = ctx.surge.capacity(name).instance_count
        if need > cap.max_instances:
            surges = ", ".join(f"{s.name} {s.surge_count()}" for s in ctx.on(name))
            yield (
                name,
                f"a rolling deployment's surge (largest count x maximum percent / 100: {surges}) needs {need} "
                f"instances of {cap.instance_type}, more than max_instances {cap.max_instances}: deployments will "
                f"wait for capacity; raise max_instances to {need}, or lower the services' maximum percent",
            )


PLACEMENT_NEEDS_MORE = "ecs-gpu-sharing:EcsPlacementNeedsMoreInstances"
DEPLOYMENT_CANNOT_START = "ecs-gpu-sharing:DeploymentCannotStart"
PLACEMENT_SCATTERS = "ecs-gpu-sharing:PlacementScatters"


def ecs_placement_needs_more(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():
        found = ctx.placement.get(name)
        if found is None or cap.max_instances is None or ctx.steady.capacity(name).unplaced:
            continue
        packing = ctx.surge.capacity(name).instance_count
        if packing <= cap.max_instances < found.needed:  # past the packing, SurgeDoesNotFit says it
            yield (
                name,
                f"ECS's own placement needs {found.needed} instances of {cap.instance_type} at the peak of a "
                f"fleet-wide rollout (the worst of {found.replays} replays of its strategies, GPU choice and arrival "
                f"order; the plan's packing needs {packing}), more than max_instances {cap.max_instances}: up to "
                f"{found.waiting_at_max} new tasks would wait; raise max_instances to {found.needed}",
            )


def deployment_cannot_start(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():
        found = ctx.placement.get(name)
        for service in found.blocked if found is not None and cap.max_instances is not None else ():
            yield (
                service,
                f"at max_instances {cap.max_instances}, ECS finds no room for one new task of it once the fleet is "
                "placed: a deployment of it alone cannot start (minimum healthy 100% stops no task first); raise "
                "max_instances, or lower the service's minimum healthy percent",
            )


def placement_scatters(ctx: Context) -> Iterator[tuple[str, str]]:
    for s in ctx.services:
        if s.capacity in ctx.placement and scatters(s.placement):
            yield (
                s.name,
                f"its placement strategy ({strategy_label(s.placement)}) does not pack: ECS leaves its tasks on more "
                f"instances than the plan counts, and scale-in removes only empty ones; use {DEFAULT_PRESET} (the "
                "default), or acknowledge",
            )


def mps_client_limit(ctx: Context) -> Iterator[tuple[str, str]]:
    for s in ctx.services:
        usable = ctx.capacities[s.capacity].usable_gpu_memory_mib
        smallest = min(s.shape.gpu_budgets_mib, default=0)
        if smallest and usable // smallest > MAX_CLIENTS_PER_GPU:
            floor = math.ceil(usable / MAX_CLIENTS_PER_GPU)
            yield (
                s.name,
                f"containers of {smallest} MiB let ECS, which places by memory only, put {usable // smallest} of "
                f"them on one {usable} MiB GPU, more than the {MAX_CLIENTS_PER_GPU} clients NVIDIA MPS accepts (the "
                f"next CUDA context fails); give each container at least {floor} MiB",
            )


def task_shape_not_literal(ctx: Context) -> Iterator[tuple[str, str]]:
    yield from ctx.shape_errors


def service_outside_plan(ctx: Context) -> Iterator[tuple[str, str]]:
    for o in ctx.outside:
        yield o.name, f"runs on capacity {o.capacity} but is outside the fit plan: {o.reason}; {o.fix}"


def derived_max_over_quota(ctx: Context) -> Iterator[tuple[str, str]]:
    """A max_instances left to the plan is held to the quota a given one is: ECS's container instances per cluster."""
    limit = quotas.INSTANCES_PER_CLUSTER.number
    for name, cap in ctx.capacities.items():
        if cap.max_instances is not None or cap.kind == MANAGED_INSTANCES:
            continue
        need = ctx.surge.capacity(name).instance_count
        if need > limit:
            yield (
                name,
                f"max_instances would be derived as {need} (the deployment surge's instances of {cap.instance_type}), "
                f"more than ECS's {limit:,} container instances per cluster ({quotas.INSTANCES_PER_CLUSTER.source}); "
                "lower the counts or the services' maximum percent, use a larger instance type, or split the fleet "
                "over clusters",
            )


def tasks_over_quota(ctx: Context) -> Iterator[tuple[str, str]]:
    """A service's largest count within ECS's tasks per service (the fleet file's keys are bounded by it; a construct's
    auto scaling maximum is not)."""
    limit = quotas.TASKS_PER_SERVICE.number
    for s in ctx.services:
        if s.tasks > limit:
            yield (
                s.name,
                f"it is planned at {s.tasks:,} tasks ({s.count_source}), more than ECS's {limit:,} tasks per service "
                f"({quotas.TASKS_PER_SERVICE.source}); lower its auto scaling maximum or desired count, or split it "
                "into several services",
            )


ROLL_TAKES_HOST_OUT = "ecs-gpu-sharing:RollTakesHostOutOfService"


def roll_in_service(min_instances: int, max_instances: int) -> int:
    """The hosts a rolling replacement keeps in service (MinInstancesInService): every ``min_instances`` host, unless
    that is not below MaxSize. CloudFormation needs it below MaxSize ("UpdatePolicy attribute",
    AutoScalingRollingUpdate: "This value must be less than the MaxSize of the Auto Scaling group"), to launch a
    replacement beside them."""
    return max(0, min(min_instances, max_instances - 1))


def derived_max_instances(surge_instances: int, min_instances: int) -> int:
    """max_instances when none is given: the deployment surge's instances, at least one, and above ``min_instances``
    when there is a minimum, so a host roll keeps every minimum host in service (``roll_in_service``)."""
    return max(surge_instances, min_instances + 1 if min_instances else 1)


def roll_takes_host_out(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():
        if cap.kind == MANAGED_INSTANCES or cap.max_instances is None or cap.min_instances == 0:
            continue
        keep = roll_in_service(cap.min_instances, cap.max_instances)
        if keep < cap.min_instances:
            yield (
                name,
                f"max_instances {cap.max_instances} equals min_instances {cap.min_instances}, so a host roll (a new "
                f"AMI or instance type) keeps {keep} of them in service while it replaces one: CloudFormation "
                "launches a replacement only below MaxSize; raise max_instances to "
                f"{cap.min_instances + 1}, or acknowledge the dip",
            )


def max_instances_unknown(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():
        unknown = sorted({o.name for o in ctx.outside if o.capacity == name})
        if cap.max_instances is None and unknown and cap.kind != MANAGED_INSTANCES:
            yield (
                name,
                f"max_instances is left to the plan, but {', '.join(unknown)} cannot be counted (see "
                f"{'its' if len(unknown) == 1 else 'their'} warning), so the plan cannot derive it; give "
                "max_instances explicitly",
            )


def budget_below_need(ctx: Context) -> Iterator[tuple[str, str]]:
    for s in ctx.services:
        note = s.allocation
        if note is not None and s.clients and s.task_gpu_budget_mib < note.need_mib:
            yield (
                s.name,
                f"its GPU budget of {s.task_gpu_budget_mib} MiB is below what its allocation note says it needs: "
                f"{note.residency_mib} MiB resident + {note.peak_working_mib} MiB peak working memory = "
                f"{note.need_mib} MiB; raise the budget to at least {note.need_mib} MiB, or correct the note",
            )


def budget_is_a_guess(ctx: Context) -> Iterator[tuple[str, str]]:
    for s in ctx.services:
        if not s.clients or s.measured is not None:
            continue
        what = "no allocation note" if s.allocation is None else "an allocation note without evidence"
        yield (
            s.name,
            f"its GPU budget of {s.task_gpu_budget_mib} MiB is a guess ({what}): measure it with evaluate (how: "
            "BudgetIsAGuess in docs/rules.md), or acknowledge the warning with a reason",
        )


def evidence_older_than_image(ctx: Context) -> Iterator[tuple[str, str]]:
    for s in ctx.services:
        evidence = s.measured
        if evidence is None or evidence.image is None:
            continue
        measured, running = digest_of(evidence.image), digest_of(s.image)
        if measured is not None and measured != running:
            now = f"image {s.image}" if s.image else "an image the plan cannot read"
            yield (
                s.name,
                f"its evidence was measured on {evidence.image} ({evidence.measured_on.isoformat()}), but it runs "
                f"{now}; "
                "a new build can use more GPU memory: measure again, or acknowledge the warning with a reason",
            )


def isolation_not_enforceable(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():
        on = [s for s in ctx.on(name) if s.clients]
        if len({s.isolation_group for s in on}) < 2:
            continue
        hosts_apart = cap.gpus_per_instance == 1 or any(s.isolate_host for s in on)
        for s in on:
            if not s.isolation_group:
                continue
            where = f"its isolation group {s.isolation_group!r} shares capacity {name} with other groups"
            if cap.kind == MANAGED_INSTANCES:
                why = (
                    "the plan keeps them apart, but the app sets no placement expressions on Managed Instances; give "
                    "the group a capacity of its own"
                )
            elif hosts_apart and not s.kept_apart:
                # Separate hosts (asked for, or separate GPUs on one-GPU hosts): ECS keeps them only when told.
                why = (
                    "the plan keeps it on hosts of its own, but its service has no placement expression that tells "
                    "ECS to; give the services fixed names and memberOf 'not(task:group == service:<name>)' for "
                    "each service of another group (the fleet-file app does), or a capacity of its own"
                )
            elif not hosts_apart:
                why = (
                    f"the plan keeps the groups on separate GPUs of its {cap.gpus_per_instance}-GPU hosts, but ECS "
                    "picks the GPU inside a host and cannot be told to; set isolate_host to keep the groups on "
                    "separate hosts"
                )
            else:
                continue
            yield s.name, f"{where}: {why}"


def _clashes(kind: str) -> Check:
    def check(ctx: Context) -> Iterator[tuple[str, str]]:
        for c in ctx.clashes:
            if c.about == kind:
                yield (
                    c.name,
                    f"{len(c.paths)} {kind}s carry the name {c.name!r} ({', '.join(c.paths)}); plans are keyed by "
                    f"name, so give each {kind} its own construct id or name=",
                )

    return check


PLAN_RULES: tuple[Rule, ...] = (
    *(Rule(r.rule_id, Level.ERROR, "service", r.explanation, _task_rule(r)) for r in TASK_RULES),
    Rule(
        "ecs-gpu-sharing:CountsExceedMaxInstances",
        Level.ERROR,
        "capacity",
        "the services' largest counts must fit within the capacity's max_instances",
        counts_exceed_max_instances,
    ),
    Rule(
        quotas.INSTANCES_PER_CLUSTER.rule_id,
        Level.ERROR,
        "capacity",
        f"at most {quotas.INSTANCES_PER_CLUSTER.number:,} {quotas.INSTANCES_PER_CLUSTER.what} "
        f"({quotas.INSTANCES_PER_CLUSTER.source}): a derived max_instances is held to it, as a given one is",
        derived_max_over_quota,
    ),
    Rule(
        quotas.TASKS_PER_SERVICE.rule_id,
        Level.ERROR,
        "service",
        f"at most {quotas.TASKS_PER_SERVICE.number:,} {quotas.TASKS_PER_SERVICE.what} "
        f"({quotas.TASKS_PER_SERVICE.source}): a service's largest count (its auto scaling maximum) is held to it",
        tasks_over_quota,
    ),
    Rule(
        "ecs-gpu-sharing:MaxInstancesUnknown",
        Level.ERROR,
        "capacity",
        "max_instances can be derived only when every service on the capacity can be counted",
        max_instances_unknown,
    ),
    Rule(
        "ecs-gpu-sharing:ServiceNameClash",
        Level.ERROR,
        "service",
        "services are named in plans by the names users give; two services cannot share one",
        _clashes("service"),
    ),
    Rule(
        "ecs-gpu-sharing:CapacityNameClash",
        Level.ERROR,
        "capacity",
        "capacities are named in plans by the names users give; two capacities cannot share one",
        _clashes("capacity"),
    ),
    Rule(
        "ecs-gpu-sharing:TaskShapeNotLiteral",
        Level.ERROR,
        "service",
        "a task's CPU, memory and GPU figures must be literal numbers at synth for the plan to count them",
        task_shape_not_literal,
    ),
    Rule(
        BUDGET_BELOW_NEED,
        Level.ERROR,
        "service",
        "a GPU budget must cover the allocation note's model residency plus its peak working memory",
        budget_below_need,
    ),
    Rule(
        "ecs-gpu-sharing:BudgetIsAGuess",
        Level.WARNING,
        "service",
        "a GPU budget without measured evidence is a guess the plan trusts. Run the service under its real request mix "
        "with the telemetry daemon (GpuTelemetry), then `ecs-gpu-sharing evaluate --cluster CLUSTER` with `--fleet "
        "FLEET --write` (a fleet file: records the evidence) or `--plan cdk.out/gpu-fleet-plan.json` (a construct "
        "app: give the evidence in an AllocationNote)",
        budget_is_a_guess,
    ),
    Rule(
        "ecs-gpu-sharing:EvidenceOlderThanImage",
        Level.WARNING,
        "service",
        "evidence measured on another image than the one the service runs may not hold",
        evidence_older_than_image,
    ),
    Rule(
        "ecs-gpu-sharing:IsolationNotEnforceable",
        Level.WARNING,
        "service",
        "ECS cannot keep isolation groups on separate GPUs of one multi-GPU host",
        isolation_not_enforceable,
    ),
    Rule(
        SURGE_WARNING,
        Level.WARNING,
        "capacity",
        "a rolling deployment runs up to maximum percent of the tasks at once; they should fit max_instances",
        surge_does_not_fit,
    ),
    Rule(
        PLACEMENT_NEEDS_MORE,
        Level.WARNING,
        "capacity",
        "ECS places task by task with the services' strategies: at the peak of a fleet-wide rollout it may need more "
        "instances than the plan's packing; max_instances should hold what it needs (core.placement)",
        ecs_placement_needs_more,
    ),
    Rule(
        DEPLOYMENT_CANNOT_START,
        Level.WARNING,
        "service",
        "a deployment with minimum healthy 100% starts a new task before it stops an old one: there must be room for "
        "one at max_instances",
        deployment_cannot_start,
    ),
    Rule(
        PLACEMENT_SCATTERS,
        Level.WARNING,
        "service",
        "a placement strategy that does not end in binpack spreads tasks over more instances than the plan counts",
        placement_scatters,
    ),
    Rule(
        ROLL_TAKES_HOST_OUT,
        Level.WARNING,
        "capacity",
        "a host roll keeps min_instances hosts in service only when max_instances is above min_instances "
        "(CloudFormation launches each replacement below MaxSize)",
        roll_takes_host_out,
    ),
    Rule(
        CLIENT_LIMIT_WARNING,
        Level.WARNING,
        "service",
        f"ECS places by GPU memory only; budgets so small that more than {MAX_CLIENTS_PER_GPU} fit on a GPU can "
        "exceed NVIDIA MPS's client limit",
        mps_client_limit,
    ),
    Rule(
        OUTSIDE_PLAN_WARNING,
        Level.WARNING,
        "service",
        "a service on a GPU capacity whose count or task shape the plan cannot read is outside the fit proof",
        service_outside_plan,
    ),
)

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

RULES: tuple[Rule, ...] = (*PLAN_RULES, *OTHER_RULES)
"""Every rule of the library: the one table (the docs' rules page is generated from it)."""

RULES_BY_ID = {rule.rule_id: rule for rule in RULES}

_OWNED_BY = {"service": ("service", "container", "task definition"), "capacity": ("capacity",)}


def acknowledgeable(kind: str) -> frozenset[str]:
    """Warning ids a service (its containers and task definition included) or a capacity may acknowledge."""
    return frozenset(r.rule_id for r in RULES if r.level is Level.WARNING and r.about in _OWNED_BY[kind])


TASK_ALONE_RULES = frozenset({*(r.rule_id for r in TASK_RULES), BUDGET_BELOW_NEED})
"""The rules about one task alone (it can never fit a host, its budget is below its note): judged without a plan,
so the fleet-file parser refuses such a file with its other problems, at once."""


def task_alone_findings(capacities: Iterable[CapacityInput], services: Iterable[ServiceInput]) -> list[Finding]:
    """The findings of :data:`TASK_ALONE_RULES`, by the same checks ``assess`` runs, without planning."""
    caps = {c.name: c for c in capacities}
    none = Plan([], [], {}, {})
    ctx = Context(caps, [s for s in services if s.capacity in caps], [], [], [], none, none)
    return [
        Finding(rule.rule_id, rule.level, rule.about, subject, message)
        for rule in PLAN_RULES
        if rule.rule_id in TASK_ALONE_RULES and rule.check is not None
        for subject, message in rule.check(ctx)
    ]


@dataclass(frozen=True)
class Assessment:
    steady: Plan
    surge: Plan
    findings: tuple[Finding, ...]
    max_instances: dict[str, int]  # given, or derived so the surge fits, as packed and as ECS would place it
    outside: tuple[OutsideService, ...] = ()
    placement: dict[str, CapacityPlacement] = field(default_factory=dict)  # ECS's own placement, by EC2 capacity

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.error]

    @property
    def warnings(self) -> list[Finding]:
        """Warnings not acknowledged."""
        return [f for f in self.findings if not f.error and f.acknowledged is None]

    def about(self, what: str, subject: str) -> list[Finding]:
        """The findings about one service or capacity (``what``: "service" or "capacity") by its name."""
        return [f for f in self.findings if f.about == what and f.subject == subject]


def assess(
    capacities: Iterable[CapacityInput],
    services: Iterable[ServiceInput],
    *,
    outside: Iterable[OutsideService] = (),
    clashes: Iterable[NameClash] = (),
    shape_errors: Iterable[tuple[str, str]] = (),
) -> Assessment:
    """Plans ``services`` on ``capacities`` (at their largest counts, and at a deployment's surge) and runs
    every rule of :data:`RULES`."""
    caps = {c.name: c for c in sorted(capacities, key=lambda c: c.name)}
    svcs = sorted(services, key=lambda s: s.name)
    steady = plan(caps.values(), svcs)
    # The surge is planned without the bound: the answer says how many instances a deployment needs.
    surge = plan([replace(c, max_instances=None) for c in caps.values()], svcs, surge=True)
    findings = []
    placement: dict[str, CapacityPlacement] = {}
    for cap in caps.values():
        if cap.kind == MANAGED_INSTANCES or steady.capacity(cap.name).unplaced:
            continue  # AWS places there; a capacity whose tasks do not fit already fails
        try:
            packed = (surge.capacity(cap.name).instance_count, steady.capacity(cap.name).instance_count)
            placement[cap.name] = place_capacity(cap, svcs, packed)
        except Exception as error:  # the model's bug is reported as a finding, never a crash
            findings.append(
                Finding(
                    RULE_FAILED,
                    Level.ERROR,
                    "capacity",
                    cap.name,
                    f"the model of ECS's placement failed ({type(error).__name__}: {error}); report this with the "
                    "plan's inputs",
                )
            )
    ctx = Context(caps, svcs, list(outside), list(clashes), list(shape_errors), steady, surge, placement)
    acks = {("service", s.name, rule_id): reason for s in svcs for rule_id, reason in s.acknowledged}
    acks.update({("capacity", c.name, rule_id): reason for c in caps.values() for rule_id, reason in c.acknowledged})
    for rule in PLAN_RULES:
        assert rule.check is not None
        try:
            found = list(rule.check(ctx))
        except Exception as error:  # a rule's bug is reported as a finding, never a crash
            for name in caps:
                findings.append(
                    Finding(
                        RULE_FAILED,
                        Level.ERROR,
                        "capacity",
                        name,
                        f"rule {rule.rule_id} failed while checking the plan ({type(error).__name__}: {error}); "
                        "its verdict is unknown: report this with the plan's inputs",
                    )
                )
            continue
        for subject, message in found:
            ack = acks.get((rule.about, subject, rule.rule_id)) if rule.level is Level.WARNING else None
            findings.append(Finding(rule.rule_id, rule.level, rule.about, subject, message, acknowledged=ack))
    max_instances = {
        name: cap.max_instances
        if cap.max_instances is not None
        else derived_max_instances(
            max(surge.capacity(name).instance_count, placement[name].needed if name in placement else 0),
            cap.min_instances,
        )
        for name, cap in caps.items()
        if cap.max_instances is not None or cap.kind != MANAGED_INSTANCES  # AWS takes no limit there
    }
    return Assessment(steady, surge, tuple(findings), max_instances, tuple(ctx.outside), placement)


def markdown() -> str:
    """``docs/rules.md``: every rule of the table, with its id, level, subject and where it is checked."""
    lines = [
        "# Rules",
        "",
        "Generated from `ecs_gpu_sharing.core.rules.RULES` by `make docs`; do not edit. An error fails `cdk synth`",
        "(or `ecs-gpu-sharing plan`, or the fleet file's parse) naming the construct or key and the numbers; a",
        "warning can be acknowledged with a reason: `FleetPlan.of(scope).acknowledge(construct, rule_id, reason)` in",
        "a CDK app, an `acknowledge` table in the fleet file (`[service.<name>]` for service, container and task",
        "definition warnings, `[capacity.<name>]` for capacity warnings). The reason then shows in the synth output's",
        "place and in the plan files.",
        "",
        *table(
            ("rule id", "level", "about", "checked by", "what it holds"),
            ((f"`{r.rule_id}`", r.level, r.about, r.source, r.explanation) for r in RULES),
        ),
    ]
    return "\n".join(lines) + "\n"
