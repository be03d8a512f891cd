"""What the real AWS services refuse and an emulator lets through, as one table. Pure Python: templates in, findings
out.

moto (the deploy rehearsal's emulator) checks request shapes against botocore's models; the real services also check
how resources fit together: a Service Connect task without task-level memory, a rolling update that cannot launch a
host, a key policy naming a role that does not exist yet. Each row here is one such rule: its id, the service that
enforces it, the requirement, where AWS states it (page title and sentence), and a check that reads the synthesized
templates as CloudFormation will see them, whichever construct wrote them (the cdk-nag way). The checks run at
``cdk synth`` in every app that uses the library (``FleetPlan`` adds them; ``AwsLimitsChecks`` holds them for an app
without one), and again in the deploy rehearsal, which names every row it cannot see enforced in moto.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import quotas
from ..markdown import table
from ..rule_family import PREFIX, Family, Level, Source
from ..template_limits import Violation, check_templates
from .autoscaling import (
    AUTOSCALING_RULES,
    GROUP_ONE_LAUNCH_SOURCE,
    GROUP_SIZES,
    ROLL_BELOW_MAX_SIZE,
    ROLL_PAUSE_TIME,
    USER_DATA_SIZE,
    WARM_POOL_ON_ECS_CAPACITY,
)
from .base import CAPACITY_METADATA, ECS_API, Check, Finding, Resource, ServiceRule, Template, Templates
from .containers import (
    AWSLOGS_OPTIONS,
    CONTAINER_NAMES,
    CONTAINER_RULES,
    DEPENDENCIES_RESOLVE,
    EFS_VOLUME_OPTIONS,
    EXITING_DEPENDENCY_NOT_ESSENTIAL,
    FIRELENS_PAIRED,
    HEALTH_CHECK_IN_RANGE,
    MOUNT_POINT_VOLUME,
    SYSCTL_NAMESPACED,
)
from .ecs import (
    AWSVPC_HOST_PORT,
    AWSVPC_NETWORK_CONFIGURATION,
    CONTAINER_MEMORY_ON_EC2,
    DEPLOYMENT_OPTIONS_OF_CONTROLLER,
    ESSENTIAL_CONTAINER,
    LOAD_BALANCER_CONTAINER,
    MEMORY_RESERVATION_BELOW_LIMIT,
    NETWORK_CONFIGURATION_NOT_AWSVPC,
    NETWORK_MODE_OPTIONS,
    NO_PUBLIC_IP_ON_EC2,
    PLACEMENT_CONSTRAINTS,
    PLACEMENT_STRATEGIES,
    PORT_MAPPING_NAME,
    PROVIDER_NAME_PREFIX,
    SERVICE_CONNECT_NAME_TWICE,
    SERVICE_CONNECT_TASK_MEMORY,
    SERVICE_CONNECT_TASKS,
    SERVICE_REGISTRIES,
    SERVICE_ROLE,
    STRATEGY_ONE_BASE,
    STRATEGY_WEIGHTS,
    STRATEGY_WITH_LAUNCH_TYPE,
    TARGET_CAPACITY_RANGE,
    TARGET_GROUPS_PER_SERVICE,
    TARGET_TYPE_MATCHES_NETWORK_MODE,
    TERMINATION_PROTECTION,
    awsvpc_host_port,
    awsvpc_network_configuration,
    container_memory_on_ec2,
    deployment_options_of_controller,
    essential_container,
    load_balancer_container,
    memory_reservation_below_limit,
    network_configuration_not_awsvpc,
    network_mode_options,
    no_public_ip_on_ec2,
    placement_constraints,
    placement_strategies,
    port_mapping_name,
    provider_name_prefix,
    service_connect_name_twice,
    service_connect_task_memory,
    service_connect_tasks,
    service_registries,
    service_role,
    strategy_one_base,
    strategy_weights,
    strategy_with_launch_type,
    target_capacity_range,
    target_groups_per_service,
    target_type_matches_network_mode,
    termination_protection,
)
from .elb import (
    ALB_TWO_ZONES,
    DEREGISTRATION_DELAY,
    ELB_NAME_LENGTH,
    ELB_RULES,
    HEALTH_CHECK_TIMEOUT,
    LISTENER_RULE_PRIORITY,
    TARGET_GROUP_HEALTH_CHECK,
    TARGET_GROUP_ONE_BALANCER,
    TARGET_GROUP_ROUTED_FIRST,
)
from .kms import KEY_POLICY_PRINCIPALS, KEY_POLICY_SIZE, KMS_RULES, RESOURCE_POLICY_PRINCIPALS
from .names import ECS_NAMES, NAME_CLAIMED_TWICE, NAME_RULES
from .network import EFS_REACHABLE, HOSTS_REACH_ECS, NETWORK_RULES
from .observability import (
    ALARM_DATAPOINTS,
    ALARM_PERIOD,
    ALARM_TOPIC_PUBLISH,
    LOG_GROUP_KEY,
    LOG_RETENTION,
    RULE_TARGETS,
    alarm_datapoints,
    alarm_period,
    alarm_topic_admits_cloudwatch,
    log_group_key,
    log_retention,
    rule_targets,
)
from .providers import (
    PROVIDER_ASSOCIATED_FIRST,
    PROVIDER_ONE_CLUSTER,
    provider_associated_first,
    provider_in_one_cluster,
)
from .roles import (
    EXECUTION_ROLE_FOR_SECRETS,
    MANAGED_INSTANCES_ROLE_NAME,
    ROLE_RULES,
    TASK_ROLE_TRUST,
    TRUST_POLICY_PRINCIPALS,
)

# --- the table -----------------------------------------------------------------------------------------------------

_ECS_GUIDE = "Amazon ECS Developer Guide"
_ECS_API = ECS_API

SERVICE_RULES: tuple[ServiceRule, ...] = (
    ServiceRule(
        SERVICE_CONNECT_TASK_MEMORY,
        "Amazon ECS",
        "an EC2 task definition of a service with Service Connect has task-level memory",
        f"{_ECS_GUIDE}, 'Service Connect considerations': \"On Amazon EC2, task memory is optional, but it is required "
        'for Service Connect"; "task definitions that set container memory limits for all containers instead of '
        "setting the task memory limit aren't supported\"",
        service_connect_task_memory,
    ),
    ServiceRule(
        SERVICE_CONNECT_NAME_TWICE,
        "Amazon ECS (AWS Cloud Map)",
        "each Service Connect discovery name, and each client alias's name and port, is claimed by one service of a "
        "namespace",
        'Amazon ECS API Reference, ServiceConnectServiceResource: discoveryName "must be unique within the AWS Cloud '
        'Map namespace"; ServiceConnectClientAlias: "Each name and port mapping must be unique within the namespace"',
        service_connect_name_twice,
    ),
    ServiceRule(
        SERVICE_CONNECT_TASKS,
        "Amazon ECS (AWS Cloud Map)",
        f"a service with Service Connect runs at most {quotas.SERVICE_CONNECT_TASKS_PER_SERVICE.number:,} tasks",
        quotas.SERVICE_CONNECT_TASKS_PER_SERVICE.source,
        service_connect_tasks,
    ),
    ServiceRule(
        AWSVPC_NETWORK_CONFIGURATION,
        "Amazon ECS",
        "a service whose task definition uses awsvpc has a network configuration",
        f'{_ECS_API}, CreateService, networkConfiguration: "This parameter is required for task definitions that use '
        'the awsvpc network mode to receive their own elastic network interface"',
        awsvpc_network_configuration,
    ),
    ServiceRule(
        NETWORK_CONFIGURATION_NOT_AWSVPC,
        "Amazon ECS",
        "a service has a network configuration only with the awsvpc network mode",
        f'{_ECS_API}, CreateService, networkConfiguration: "... and it isn\'t supported for other network modes"',
        network_configuration_not_awsvpc,
    ),
    ServiceRule(
        TARGET_TYPE_MATCHES_NETWORK_MODE,
        "Amazon ECS",
        "awsvpc tasks register in ip target groups; bridge and host tasks in instance target groups",
        f"{_ECS_GUIDE}, 'Use an Application Load Balancer for Amazon ECS': \"If your service's task definition uses "
        'the awsvpc network mode ..., you must choose ip as the target type"',
        target_type_matches_network_mode,
    ),
    ServiceRule(
        LOAD_BALANCER_CONTAINER,
        "Amazon ECS",
        "a service's load balancer names a container of its task definition and a port that container maps",
        f'{_ECS_API}, LoadBalancer: containerName "as it appears in a container definition"; containerPort "This '
        'port must correspond to a containerPort in the task definition the tasks in the service are using"',
        load_balancer_container,
    ),
    ServiceRule(
        DEPLOYMENT_OPTIONS_OF_CONTROLLER,
        "Amazon ECS",
        "a service under the CODE_DEPLOY or EXTERNAL deployment controller has no circuit breaker and no bake time, "
        "and on EC2 no maximum percent but the default",
        f'{_ECS_API}, DeploymentConfiguration: deploymentCircuitBreaker "can only be used for services using the '
        'rolling update (ECS) deployment type"; maximumPercent "You can\'t specify a custom maximumPercent value for '
        "a service that uses either the blue/green (CODE_DEPLOY) or EXTERNAL deployment types and has tasks that use "
        'the EC2 launch type"; AWS CloudFormation User Guide, AWS::ECS::Service DeploymentConfiguration, '
        'BakeTimeInMinutes: EXTERNAL and CODE_DEPLOY "do not support the BakeTimeInMinutes parameter"',
        deployment_options_of_controller,
    ),
    ServiceRule(
        TARGET_GROUPS_PER_SERVICE,
        "Amazon ECS",
        "a service attaches at most five target groups, and more than one only under the ECS deployment controller",
        f"{_ECS_GUIDE}, 'Registering multiple target groups with an Amazon ECS service': \"you cannot attach more than "
        'five target groups to a service"; more than one only where "The service must use the rolling update (ECS) '
        'deployment controller type"',
        target_groups_per_service,
    ),
    ServiceRule(
        NO_PUBLIC_IP_ON_EC2,
        "Amazon ECS",
        "a service on EC2 container instances asks for no public IP for its tasks",
        'CreateService answers InvalidParameterException "Assign public IP is not supported for this launch type" '
        "for an EC2 service (aws-cdk#13348, on an Auto Scaling group's capacity provider; hashicorp/waypoint#643); "
        "aws/containers-roadmap#450 is the open request to support it",
        no_public_ip_on_ec2,
    ),
    ServiceRule(
        SERVICE_ROLE,
        "Amazon ECS",
        "a service names a Role only with a load balancer, and not with awsvpc, service discovery, the EXTERNAL "
        "controller or more than one target group",
        f'{_ECS_API}, CreateService, role: "only permitted if you are using a load balancer with your service and your '
        'task definition doesn\'t use the awsvpc network mode"; the service-linked role is required with "service '
        "discovery, an external deployment controller, multiple target groups ... in which case you don't specify a "
        'role here"',
        service_role,
    ),
    ServiceRule(
        SERVICE_REGISTRIES,
        "Amazon ECS",
        "a service names at most one service registry",
        f'{_ECS_API}, CreateService, serviceRegistries: "Each service may be associated with one service registry"',
        service_registries,
    ),
    ServiceRule(
        AWSVPC_HOST_PORT,
        "Amazon ECS",
        "in awsvpc and host mode a port mapping's host port is left out or equals its container port",
        f'{_ECS_API}, PortMapping, hostPort: "If you use containers in a task with the awsvpc or host network mode, '
        'the hostPort can either be left blank or set to the same value as the containerPort"',
        awsvpc_host_port,
    ),
    ServiceRule(
        NETWORK_MODE_OPTIONS,
        "Amazon ECS",
        "an awsvpc container sets no hostname or extraHosts, and only a bridge container sets links",
        f'{_ECS_API}, ContainerDefinition: hostname "is not supported if you\'re using the awsvpc network mode"; '
        'extraHosts "isn\'t supported for ... tasks that use the awsvpc network mode"; links "is only supported if the '
        'network mode of a task definition is bridge"',
        network_mode_options,
    ),
    ServiceRule(
        PORT_MAPPING_NAME,
        "Amazon ECS",
        "a port mapping's name is up to 64 lowercase letters, digits, underscores and hyphens, not starting with a "
        "hyphen",
        f'{_ECS_API}, PortMapping, name: "The name can include up to 64 characters. The characters can include '
        "lowercase letters, numbers, underscores (_), and hyphens (-). The name can't start with a hyphen\"",
        port_mapping_name,
    ),
    *CONTAINER_RULES,
    *ROLE_RULES,
    ServiceRule(
        CONTAINER_MEMORY_ON_EC2,
        "Amazon ECS",
        "on EC2, a task without task-level memory gives every container a memory limit or reservation",
        f"{_ECS_API}, ContainerDefinition, memory: \"If you're using the EC2 launch type, you must specify either a "
        'task-level memory value or a container-level memory value"',
        container_memory_on_ec2,
    ),
    ServiceRule(
        MEMORY_RESERVATION_BELOW_LIMIT,
        "Amazon ECS",
        "a container's memory limit is above its reservation, and the task's memory holds its containers'",
        f'{_ECS_API}, ContainerDefinition, memoryReservation: "If you specify both, memory must be greater than '
        "memoryReservation\"; RegisterTaskDefinition, memory: the containers' memory must fit the task's",
        memory_reservation_below_limit,
    ),
    ServiceRule(
        ESSENTIAL_CONTAINER,
        "Amazon ECS",
        "a task definition has at least one essential container",
        f'{_ECS_API}, ContainerDefinition, essential: "All tasks must have at least one essential container"',
        essential_container,
    ),
    ServiceRule(
        STRATEGY_WITH_LAUNCH_TYPE,
        "Amazon ECS",
        "a service names a capacity provider strategy or a launch type, not both",
        f'{_ECS_API}, CreateService, capacityProviderStrategy: "If a capacityProviderStrategy is specified, the '
        'launchType parameter must be omitted"',
        strategy_with_launch_type,
    ),
    ServiceRule(
        PLACEMENT_CONSTRAINTS,
        "Amazon ECS",
        "a service's tasks run under at most 10 placement constraints, the service's and its task definition's "
        "together",
        f'{_ECS_API}, CreateService, placementConstraints: "You can specify a maximum of 10 constraints for each task. '
        'This limit includes constraints in the task definition and those specified at runtime"',
        placement_constraints,
    ),
    ServiceRule(
        PLACEMENT_STRATEGIES,
        "Amazon ECS",
        "a service has at most 5 placement strategy rules",
        f'{_ECS_API}, CreateService, placementStrategy: "You can specify a maximum of 5 strategy rules for each '
        'service"',
        placement_strategies,
    ),
    ServiceRule(
        STRATEGY_ONE_BASE,
        "Amazon ECS",
        "at most one capacity provider of a strategy has a base",
        f'{_ECS_API}, CapacityProviderStrategyItem, base: "Only one capacity provider in a capacity provider strategy '
        'can have a base defined"',
        strategy_one_base,
    ),
    ServiceRule(
        STRATEGY_WEIGHTS,
        "Amazon ECS",
        "a capacity provider strategy names at most 20 providers, and one of several has a weight above 0",
        f'{_ECS_API}, CapacityProviderStrategyItem, weight: "When multiple capacity providers are specified within a '
        "capacity provider strategy, at least one of the capacity providers must have a weight value greater than "
        'zero"; CreateService, capacityProviderStrategy: "A capacity provider strategy can contain a maximum of 20 '
        'capacity providers"',
        strategy_weights,
    ),
    ServiceRule(
        PROVIDER_ASSOCIATED_FIRST,
        "Amazon ECS",
        "a service or task set whose strategy (or its cluster's default strategy) names a capacity provider is "
        "created after the provider is associated with the cluster",
        f'{_ECS_API}, CapacityProviderStrategyItem: "Only capacity providers that are already associated with a '
        'cluster and have an ACTIVE or UPDATING status can be used in a capacity provider strategy"',
        provider_associated_first,
    ),
    ServiceRule(
        PROVIDER_ONE_CLUSTER,
        "Amazon ECS",
        "an Auto Scaling group capacity provider is associated with one cluster",
        f'{_ECS_API}, CreateCluster, capacityProviders: "If specifying a capacity provider that uses an Auto Scaling '
        'group, the capacity provider must be created but not associated with another cluster"',
        provider_in_one_cluster,
    ),
    ServiceRule(
        PROVIDER_NAME_PREFIX,
        "Amazon ECS",
        'a capacity provider\'s name does not start with "aws", "ecs" or "fargate"',
        f'{_ECS_API}, CreateCapacityProvider, name: "The name can\'t be prefixed with "aws", "ecs", or "fargate""',
        provider_name_prefix,
    ),
    ServiceRule(
        TARGET_CAPACITY_RANGE,
        "Amazon ECS",
        "managed scaling's target capacity is a percent from 1 to 100",
        f'{_ECS_API}, ManagedScaling, targetCapacity: "The value must be greater than 0 and less than or equal to 100"',
        target_capacity_range,
    ),
    ServiceRule(
        TERMINATION_PROTECTION,
        "Amazon ECS",
        "managed termination protection comes with managed scaling and a group that protects new instances from "
        "scale-in",
        f'{_ECS_API}, AutoScalingGroupProvider, managedTerminationProtection: "When using managed termination '
        "protection, managed scaling must also be used otherwise managed termination protection doesn't work\" and "
        '"the Auto Scaling group ... must have instance protection from scale in enabled"',
        termination_protection,
    ),
    *AUTOSCALING_RULES,
    *NETWORK_RULES,
    *ELB_RULES,
    ServiceRule(
        ALARM_PERIOD,
        "Amazon CloudWatch",
        "an alarm's period is 10, 20, 30 s or a multiple of 60, and its periods together span at most one day",
        'Amazon CloudWatch API Reference, PutMetricAlarm, Period: "Valid values are 10, 20, 30, and any multiple of '
        '60"; EvaluationPeriods: "An alarm\'s total current evaluation period can be no longer than one day"',
        alarm_period,
    ),
    ServiceRule(
        ALARM_DATAPOINTS,
        "Amazon CloudWatch",
        "an alarm's datapoints to alarm are at most its evaluation periods",
        "Amazon CloudWatch User Guide, 'Evaluating an alarm': \"Datapoints to Alarm ... must be less than or equal to "
        'Evaluation Periods"',
        alarm_datapoints,
    ),
    ServiceRule(
        ALARM_TOPIC_PUBLISH,
        "Amazon SNS and AWS KMS",
        "an alarm's SNS topic lets CloudWatch publish: its topic policy, where it has one, allows "
        "cloudwatch.amazonaws.com sns:Publish, and its customer managed key lets CloudWatch use it",
        "AWS re:Post Knowledge Center, 'Why didn't I receive an SNS notification for my CloudWatch alarm trigger?': "
        '"Resource: arn:aws:cloudwatch:...:alarm:ALARM_NAME is not authorized to perform: SNS:Publish" until the '
        "access policy allows the service principal cloudwatch.amazonaws.com; Amazon SNS Developer Guide, "
        "'Encryption at rest': an alarm's topic needs a customer managed key whose policy lets CloudWatch use it",
        alarm_topic_admits_cloudwatch,
        rehearsal="not enforced by moto, nor by CloudFormation: the alarm deploys and its notifications fail",
    ),
    ServiceRule(
        RULE_TARGETS,
        "Amazon EventBridge",
        "an EventBridge rule has at most 5 targets",
        "Amazon EventBridge User Guide, 'Amazon EventBridge quotas': \"Targets per rule: 5\"",
        rule_targets,
    ),
    ServiceRule(
        LOG_RETENTION,
        "Amazon CloudWatch Logs",
        "a log group's retention is one of the day counts CloudWatch Logs offers",
        'Amazon CloudWatch Logs API Reference, PutRetentionPolicy, retentionInDays: "Possible values are: 1, 3, 5, 7, '
        '14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, and 3653"',
        log_retention,
    ),
    ServiceRule(
        LOG_GROUP_KEY,
        "Amazon CloudWatch Logs and AWS KMS",
        "a log group encrypted with a customer managed key of the templates has a key whose policy lets CloudWatch "
        "Logs (logs.<region>.amazonaws.com) use it",
        "Amazon CloudWatch Logs User Guide, 'Encrypt log data in CloudWatch Logs using AWS Key Management Service', "
        'Step 2: "By default, all AWS KMS keys are private ... you must give CloudWatch Logs permission" '
        "(the principal logs.region.amazonaws.com); CreateLogGroup refuses a key it may not use",
        log_group_key,
    ),
    *NAME_RULES,
    *KMS_RULES,
)

SERVICE_RULES_BY_ID = {rule.rule_id: rule for rule in SERVICE_RULES}
RULES = Family("AWS services' deploy-time rules")
for _rule in SERVICE_RULES:  # each row is declared with its check above; the family reads the table
    RULES.declare(
        _rule.rule_id,
        Level.ERROR,
        "stack",
        Source.TEMPLATE,
        f"{_rule.requirement}, as {_rule.service} enforces it at deploy",
    )


def check_service_rules(templates: Mapping[str, Template]) -> list[Violation]:
    """Every row of ``SERVICE_RULES`` that the templates break; a check that fails is reported as a finding, not raised
    (the cdk-nag way: one broken check must not hide the others)."""
    ctx = Templates(templates)
    out: list[Violation] = []
    for rule in SERVICE_RULES:
        try:
            for resource, what in rule.check(ctx):
                out.append(Violation(rule.rule_id, resource.stack, resource.logical_id, f"[{rule.rule_id}] {what}"))
        except Exception as error:
            out.append(
                Violation(
                    rule.rule_id,
                    "",
                    None,
                    f"[{rule.rule_id}] the check failed ({type(error).__name__}: {error}); a bug to report",
                )
            )
    return out


def check_all(templates: Mapping[str, Template], as_written: Mapping[str, Template] | None = None) -> list[Violation]:
    """AWS's limits (``core.quotas``, ``core.template_limits``) and its service-side rules, over every template;
    ``as_written``, where the checks read ``templates`` otherwise (nested stacks joined to their parents,
    ``core.nested_stacks``), is what each template's own limits are counted on."""
    return [*check_templates(templates, as_written), *check_service_rules(templates)]


def rule_ids() -> list[str]:
    """The ids ``check_all`` reports under."""
    return [*(limit.rule_id for limit in quotas.LIMITS), quotas.DUPLICATE_RULE_ID, *SERVICE_RULES_BY_ID]


def markdown() -> str:
    """docs/aws-rules.md: the table, generated."""
    rows = [
        [f"`{r.rule_id.removeprefix(PREFIX)}`", r.service, r.requirement, r.source, r.rehearsal] for r in SERVICE_RULES
    ]
    return (
        "# What AWS refuses that an emulator does not\n\n"
        "<!-- generated by `make docs` from core/service_rules/; do not edit -->\n\n"
        "Each row is a rule the real service enforces when CloudFormation creates or updates the resource, or the ECS "
        "agent when it starts a host or a task, and moto (the deploy rehearsal's emulator) does not. Every row is "
        "checked at `cdk synth` on every template of an app that uses the library, nested stacks' included (a GPU "
        "capacity brings the check; "
        "`AwsLimitsChecks` adds it to an app without one), and "
        "again by `make rehearse` before it deploys. A finding fails the synth, naming the stack, the resource and "
        "what to change. Ids carry the prefix `ecs-gpu-sharing:`.\n\n"
        + "\n".join(table(["rule", "service", "requirement", "source", "in the rehearsal"], rows))
        + "\n"
    )


__all__ = [
    "ALARM_DATAPOINTS",
    "ALARM_PERIOD",
    "ALARM_TOPIC_PUBLISH",
    "ALB_TWO_ZONES",
    "AWSLOGS_OPTIONS",
    "AWSVPC_HOST_PORT",
    "AWSVPC_NETWORK_CONFIGURATION",
    "CAPACITY_METADATA",
    "CONTAINER_MEMORY_ON_EC2",
    "CONTAINER_NAMES",
    "DEPENDENCIES_RESOLVE",
    "DEPLOYMENT_OPTIONS_OF_CONTROLLER",
    "DEREGISTRATION_DELAY",
    "ECS_NAMES",
    "EFS_REACHABLE",
    "EFS_VOLUME_OPTIONS",
    "ELB_NAME_LENGTH",
    "ESSENTIAL_CONTAINER",
    "EXECUTION_ROLE_FOR_SECRETS",
    "EXITING_DEPENDENCY_NOT_ESSENTIAL",
    "FIRELENS_PAIRED",
    "GROUP_ONE_LAUNCH_SOURCE",
    "GROUP_SIZES",
    "HEALTH_CHECK_IN_RANGE",
    "HEALTH_CHECK_TIMEOUT",
    "HOSTS_REACH_ECS",
    "KEY_POLICY_PRINCIPALS",
    "KEY_POLICY_SIZE",
    "LISTENER_RULE_PRIORITY",
    "LOAD_BALANCER_CONTAINER",
    "LOG_GROUP_KEY",
    "LOG_RETENTION",
    "MANAGED_INSTANCES_ROLE_NAME",
    "MEMORY_RESERVATION_BELOW_LIMIT",
    "MOUNT_POINT_VOLUME",
    "NAME_CLAIMED_TWICE",
    "NETWORK_CONFIGURATION_NOT_AWSVPC",
    "NETWORK_MODE_OPTIONS",
    "NO_PUBLIC_IP_ON_EC2",
    "PLACEMENT_CONSTRAINTS",
    "PLACEMENT_STRATEGIES",
    "PORT_MAPPING_NAME",
    "PREFIX",
    "PROVIDER_ASSOCIATED_FIRST",
    "PROVIDER_NAME_PREFIX",
    "PROVIDER_ONE_CLUSTER",
    "RESOURCE_POLICY_PRINCIPALS",
    "ROLL_BELOW_MAX_SIZE",
    "ROLL_PAUSE_TIME",
    "RULE_TARGETS",
    "SERVICE_CONNECT_TASKS",
    "SERVICE_CONNECT_TASK_MEMORY",
    "SERVICE_REGISTRIES",
    "SERVICE_ROLE",
    "SERVICE_RULES",
    "SERVICE_RULES_BY_ID",
    "STRATEGY_ONE_BASE",
    "STRATEGY_WEIGHTS",
    "STRATEGY_WITH_LAUNCH_TYPE",
    "SYSCTL_NAMESPACED",
    "TARGET_CAPACITY_RANGE",
    "TARGET_GROUPS_PER_SERVICE",
    "TARGET_GROUP_HEALTH_CHECK",
    "TARGET_GROUP_ONE_BALANCER",
    "TARGET_GROUP_ROUTED_FIRST",
    "TARGET_TYPE_MATCHES_NETWORK_MODE",
    "TASK_ROLE_TRUST",
    "TERMINATION_PROTECTION",
    "TRUST_POLICY_PRINCIPALS",
    "USER_DATA_SIZE",
    "WARM_POOL_ON_ECS_CAPACITY",
    "Check",
    "Finding",
    "Resource",
    "ServiceRule",
    "Template",
    "Templates",
    "check_all",
    "check_service_rules",
    "markdown",
    "rule_ids",
]
