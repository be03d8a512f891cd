"""AWS's limits that a fleet can run into, as one table. Pure Python.

Each limit has a rule id, its number, what it counts and where AWS states it. The fleet-file parser checks what it
can see before anything is built (services per load balancer, containers per task, tags, ...); the synth-time check
(``core.template_limits``, run by ``cdk.template_limits.AwsLimitsPlugin``) checks the synthesized templates against
the same rows. A row's number is changed here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rule_family import PREFIX, Family, Level, Source


@dataclass(frozen=True)
class Limit:
    rule_id: str
    number: int
    what: str
    source: str

    def message(self, subject: str, seen: int | str, fix: str) -> str:
        """One line: the subject, what it has, the limit, and what to do."""
        shown = f"{seen:,}" if isinstance(seen, int) else seen
        return f"[{self.rule_id}] {subject}: {shown} {self.what}, over AWS's limit of {self.number:,}; {fix}"


_CFN = "AWS CloudFormation User Guide, 'Understand CloudFormation quotas'"
_ECS = "Amazon ECS Developer Guide, 'Amazon ECS service quotas'"
_ALB = "Elastic Load Balancing, 'Quotas for your Application Load Balancers'"
_NLB = "Elastic Load Balancing, 'Quotas for your Network Load Balancers'"

RESOURCES_PER_STACK = Limit(
    f"{PREFIX}ResourcesPerStack", 500, "resources in one stack", f"{_CFN}: resources per template, 500"
)
OUTPUTS_PER_STACK = Limit(
    f"{PREFIX}OutputsPerStack",
    200,
    "outputs in one stack",
    f"{_CFN}: outputs per template, 200 (every value another stack imports is one)",
)
PARAMETERS_PER_STACK = Limit(
    f"{PREFIX}ParametersPerStack", 200, "parameters in one stack", f"{_CFN}: parameters per template, 200"
)
TEMPLATE_BYTES = Limit(
    f"{PREFIX}TemplateSize",
    1_000_000,
    "bytes of template",
    f"{_CFN}: template body size in an Amazon S3 object, 1 MB (CDK uploads every template to S3)",
)
CONTAINERS_PER_TASK_DEFINITION = Limit(
    f"{PREFIX}ContainersPerTaskDefinition",
    10,
    "containers in one task definition",
    f"{_ECS}: containers per task definition, 10 (not adjustable)",
)
TASK_DEFINITION_BYTES = Limit(
    f"{PREFIX}TaskDefinitionSize",
    65_536,
    "bytes of task definition",
    f"{_ECS}: task definition max size, 64 KiB",
)
CAPACITY_PROVIDERS_PER_CLUSTER = Limit(
    f"{PREFIX}CapacityProvidersPerCluster",
    20,
    "capacity providers on one cluster",
    f"{_ECS}: capacity providers per cluster, 20 (not adjustable)",
)
TASKS_PER_SERVICE = Limit(f"{PREFIX}TasksPerService", 5000, "tasks in one service", f"{_ECS}: tasks per service, 5,000")
SERVICE_CONNECT_TASKS_PER_SERVICE = Limit(
    f"{PREFIX}ServiceConnectTasksPerService",
    1000,
    "tasks in one service with Service Connect",
    f"{_ECS}: tasks per service using Service Connect or service discovery, 1,000 (an AWS Cloud Map quota: "
    "instances per service)",
)
SERVICES_PER_CLUSTER = Limit(
    f"{PREFIX}ServicesPerCluster", 5000, "services in one cluster", f"{_ECS}: services per cluster, 5,000 (adjustable)"
)
INSTANCES_PER_CLUSTER = Limit(
    f"{PREFIX}InstancesPerCluster",
    5000,
    "container instances in one cluster",
    f"{_ECS}: container instances per cluster, 5,000 (not adjustable)",
)
RULES_PER_ALB = Limit(
    f"{PREFIX}RulesPerApplicationLoadBalancer",
    100,
    "listener rules on one application load balancer (default rules not counted)",
    f"{_ALB}: rules per Application Load Balancer (excluding default rules), 100",
)
TARGET_GROUPS_PER_ALB = Limit(
    f"{PREFIX}TargetGroupsPerApplicationLoadBalancer",
    100,
    "target groups on one application load balancer",
    f"{_ALB}: target groups per Application Load Balancer, 100 (not adjustable)",
)
TARGETS_PER_ALB = Limit(
    f"{PREFIX}TargetsPerApplicationLoadBalancer",
    1000,
    "targets on one application load balancer at a deployment's surge",
    f"{_ALB}: targets per Application Load Balancer, 1,000 (each task is a target of its service's target group "
    "while it runs, a deployment's new tasks beside the old)",
)
CONDITION_VALUES_PER_RULE = Limit(
    f"{PREFIX}ConditionValuesPerRule",
    5,
    "condition values in one listener rule",
    f"{_ALB}: condition values per rule, 5",
)
PATH_PATTERN_CHARACTERS = Limit(
    f"{PREFIX}PathPatternLength",
    128,
    "characters in one path pattern",
    "Elastic Load Balancing, 'Listener rules for your Application Load Balancer': a path pattern is up to 128 "
    "characters",
)
LISTENERS_PER_NLB = Limit(
    f"{PREFIX}ListenersPerNetworkLoadBalancer",
    50,
    "listeners on one network load balancer",
    f"{_NLB}: listeners per Network Load Balancer, 50",
)
INSTANCE_TYPES_PER_GROUP = Limit(
    f"{PREFIX}InstanceTypesPerAutoScalingGroup",
    40,
    "instance types in one Auto Scaling group",
    "Amazon EC2 Auto Scaling, MixedInstancesPolicy launch template overrides: at most 40 instance types per group",
)
RULES_PER_SECURITY_GROUP = Limit(
    f"{PREFIX}RulesPerSecurityGroup",
    60,
    "rules one way on one security group",
    "Amazon VPC User Guide, 'Amazon VPC quotas': inbound or outbound rules per security group, 60 (adjustable; "
    "IPv4 and IPv6 rules counted apart; EC2 refuses the next with RulesPerSecurityGroupLimitExceeded)",
)
TAGS_PER_RESOURCE = Limit(
    f"{PREFIX}TagsPerResource",
    50,
    "tags on one resource",
    "AWS tagging best practices and botocore's ECS model (Tags: max 50): user tags per resource, 50",
)
DIMENSIONS_PER_METRIC = Limit(
    f"{PREFIX}DimensionsPerMetric",
    30,
    "dimensions on one metric",
    "Amazon CloudWatch, 'CloudWatch service quotas' and botocore's CloudWatch model (Dimensions: max 30): 30",
)

LIMITS: tuple[Limit, ...] = (
    RESOURCES_PER_STACK,
    OUTPUTS_PER_STACK,
    PARAMETERS_PER_STACK,
    TEMPLATE_BYTES,
    CONTAINERS_PER_TASK_DEFINITION,
    TASK_DEFINITION_BYTES,
    CAPACITY_PROVIDERS_PER_CLUSTER,
    TASKS_PER_SERVICE,
    SERVICES_PER_CLUSTER,
    INSTANCES_PER_CLUSTER,
    RULES_PER_ALB,
    TARGET_GROUPS_PER_ALB,
    TARGETS_PER_ALB,
    CONDITION_VALUES_PER_RULE,
    PATH_PATTERN_CHARACTERS,
    LISTENERS_PER_NLB,
    INSTANCE_TYPES_PER_GROUP,
    RULES_PER_SECURITY_GROUP,
    TAGS_PER_RESOURCE,
    DIMENSIONS_PER_METRIC,
)

RESERVED_PROVIDER_PREFIXES = ("aws", "ecs", "fargate")
"""Amazon ECS API Reference, CreateCapacityProvider, name: "can't be prefixed with "aws", "ecs", or "fargate"". ECS
refuses them in any case: aws-cdk pull request 36584 shows a stack named ``EcsCp`` failing to deploy its provider."""


def reserved_provider_prefix(name: str) -> str | None:
    """The prefix ECS reserves that ``name`` starts with, as written there (any case); ``None`` when it starts with
    none."""
    lowered = name.lower()
    return next((name[: len(p)] for p in RESERVED_PROVIDER_PREFIXES if lowered.startswith(p)), None)


MAX_TASKS_PER_SERVICE = TASKS_PER_SERVICE.number
"""Amazon ECS service quota "Tasks per service": 5,000. A larger count can never run."""

MAX_INSTANCES_PER_CLUSTER = INSTANCES_PER_CLUSTER.number
"""Amazon ECS service quota "Container instances per cluster": 5,000. A capacity cannot have more hosts."""

STACK_RESOURCE_HEADROOM = 0.8
"""The app fills a services stack to at most 80% of RESOURCES_PER_STACK, so a later edit of a service (a new
route, scaling, a sidecar's log group) does not push its stack over the limit and force a move."""

RULES = Family("AWS limits")
for _limit in LIMITS:
    # Those two are plan rules as well (core.rules.plan_rules): the plan derives maxima, and counts a construct's
    # auto scaling maximum; their rows are declared there.
    if _limit not in (INSTANCES_PER_CLUSTER, TASKS_PER_SERVICE):
        RULES.declare(
            _limit.rule_id,
            Level.ERROR,
            "stack",
            Source.FLEET_FILE if _limit is TARGETS_PER_ALB else Source.TEMPLATE,  # no template holds a task's target
            f"at most {_limit.number:,} {_limit.what} ({_limit.source})",
        )
DUPLICATE_RULE_ID = RULES.declare(
    f"{PREFIX}DuplicateSecurityGroupRule",
    Level.ERROR,
    "stack",
    Source.TEMPLATE,
    "EC2 refuses a security group rule that already exists, and CloudFormation fails the stack",
)
"""Not a quota, but a deploy failure of the same kind: EC2 refuses a security group rule that already exists
(InvalidPermission.Duplicate, EC2 API reference, AuthorizeSecurityGroupIngress), and CloudFormation fails the stack."""
