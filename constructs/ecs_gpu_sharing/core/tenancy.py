"""Every service on a GPU capacity, found in the written templates however it was built, and what it may do there.
Pure Python: templates in, findings out.

A GPU capacity's provider carries the metadata ``ecs-gpu-sharing:capacity`` (``FleetPlan`` writes it). A service
is on a GPU capacity when its capacity provider strategy names such a provider (by reference, across stacks, or by
its literal name), or when it uses the EC2 launch type or its cluster's default strategy on a cluster that holds one
(referenced, or named literally); L1 resources, imported clusters and other stacks of the app are found the same way
as the library's own constructs. A service that may be on one (its cluster or provider cannot be told from the
templates) is judged too: an allow-list holds what it cannot rule out.

For each such service: its task definition is judged by ``core.container_guards`` as written (escape hatches
included), its task role's policies, inline, managed and attached (``add_to_task_role_policy``,
``Policy.attach_to_role``, ``Grant.add_to_principal`` all land as ``AWS::IAM::Policy`` resources naming the role),
by ``core.escalation``; a plan service name claimed twice by the ``ecs-gpu-sharing:service`` tag is refused. What
cannot be read is listed as not judged, with why; a task definition the templates do not hold, on a GPU capacity,
is refused.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .container_guards import guard_violations, log_groups_not_read, rule_of
from .escalation import (
    TASK_ROLE_ESCALATION,
    TASK_ROLE_REFUSED_POLICY,
    WRITES_EVIDENCE,
    escalations,
    refused_managed_policy,
    unread_managed_policy,
)
from .hardening import managed_policies
from .rule_family import Family, Level, Source
from .runners import Runner, runners
from .service_rules import Resource, Templates
from .service_rules.base import CAPACITY_METADATA, cdk_path, listed
from .shape import camel_keys
from .telemetry import SERVICE_TAG
from .template_limits import Violation
from .tokens import text_pattern

SHARED_TASK_METADATA = "ecs-gpu-sharing:shared-gpu"  # a task definition made to share a GPU: judged wherever it runs
RULES = Family("tenancy")
TASK_DEFINITION_NOT_READABLE = RULES.declare(
    "ecs-gpu-sharing:TaskDefinitionNotReadable",
    Level.ERROR,
    "service",
    Source.TEMPLATE,
    "a service on a GPU capacity runs a task definition the app's templates do not hold: what it runs cannot be "
    "judged by the allow-list (FleetPlan.allow permits it, with a reason)",
)
TASK_ROLE_NOT_READABLE = RULES.declare(
    "ecs-gpu-sharing:TaskRoleNotReadable",
    Level.ERROR,
    "task definition",
    Source.TEMPLATE,
    "a task definition on a GPU capacity whose task role the app's templates do not hold (an ARN written as "
    "text): its policies cannot be judged (FleetPlan.allow permits it, with a reason)",
)
SERVICE_NAME_CLAIMED = RULES.declare(
    "ecs-gpu-sharing:ServiceNameClaimedTwice",
    Level.ERROR,
    "service",
    Source.TEMPLATE,
    "two services carry one plan name in the ecs-gpu-sharing:service tag, by which evaluate finds a plan's "
    "service: only the library sets it",
)
SHARED_VOLUME_NAMED_TWICE = RULES.declare(
    "ecs-gpu-sharing:SharedVolumeNamedTwice",
    Level.ERROR,
    "task definition",
    Source.TEMPLATE,
    "a shared-scope Docker volume is one volume per host by its name (amazon-ecs-agent, agent/api/task/task.go, "
    "addSharedVolumes): two task definitions on GPU hosts that name it read and write each other's files "
    "(FleetPlan.allow permits it, with a reason)",
)
TASK_OVERRIDES_NOT_READABLE = RULES.declare(
    "ecs-gpu-sharing:TaskOverridesNotReadable",
    Level.ERROR,
    "service",
    Source.TEMPLATE,
    "a scheduled task, pipe or state machine that runs a task on a GPU capacity overrides the task definition with "
    "values the synth cannot read (the event's input, the machine's input): its environment and task role could be "
    "anything (FleetPlan.allow permits it, with a reason)",
)
FARGATE_PROVIDERS = frozenset({"FARGATE", "FARGATE_SPOT"})

Key = tuple[str, str]  # (stack, logical id)
Allowed = Mapping[Key, Mapping[str, str]]  # resource -> rule id -> reason


@dataclass(frozen=True)
class NotJudged:
    stack: str
    logical_id: str
    path: str
    reason: str


@dataclass
class Judgement:
    violations: list[Violation] = field(default_factory=list)
    not_judged: list[NotJudged] = field(default_factory=list)
    allowed: list[tuple[str, str, str]] = field(default_factory=list)  # (resource path, rule id, reason) used


class GpuCapacities:
    """The GPU capacity providers and the clusters that hold them."""

    def __init__(self, ctx: Templates) -> None:
        self.ctx = ctx
        self.providers: dict[Key, str] = {}  # provider resource -> capacity name
        self.provider_names: dict[str, str] = {}  # literal provider name -> capacity name
        groups: dict[str, str] = {}  # a GPU capacity's Auto Scaling group, as written -> capacity name
        for r in ctx.of_type("AWS::ECS::CapacityProvider"):
            name = (r.attributes.get("Metadata") or {}).get(CAPACITY_METADATA)
            if isinstance(name, str):
                self.providers[(r.stack, r.logical_id)] = name
                if isinstance(r.props.get("Name"), str):
                    self.provider_names[r.props["Name"]] = name
                group = self._group(r)
                if group is not None:
                    groups[group] = name
        # Another provider over a GPU capacity's Auto Scaling group is that capacity too, whoever wrote it.
        for r in ctx.of_type("AWS::ECS::CapacityProvider"):
            group = self._group(r)
            if (r.stack, r.logical_id) not in self.providers and group in groups:
                self.providers[(r.stack, r.logical_id)] = groups[group]
                if isinstance(r.props.get("Name"), str):
                    self.provider_names[r.props["Name"]] = groups[group]
        self.clusters: set[Key] = set()
        self.cluster_names: set[str] = set()
        # a GPU cluster as written (its resource, or its literal name) -> its GPU capacities and default strategy
        self.held: dict[Key | str, set[str]] = defaultdict(set)
        self.defaults: dict[Key | str, tuple[str, ...]] = {}
        # A cluster's providers and default strategy, set on the cluster or by an association resource.
        for r in ctx.of_type("AWS::ECS::ClusterCapacityProviderAssociations"):
            self._hold(r, r.props.get("Cluster"))
        for r in ctx.of_type("AWS::ECS::Cluster"):
            self._hold(r, {"Ref": r.logical_id})
        for (stack, logical), name in self.providers.items():
            resource = ctx.target({"Ref": logical}, stack)
            if resource is not None and resource.props.get("ClusterName") is not None:  # Managed Instances
                cluster = self._add_cluster(resource.props["ClusterName"], stack)
                if cluster is not None:
                    self.held[cluster].add(name)
        self.unnamed = False  # a GPU cluster whose name CloudFormation makes up: a literal name may be it
        for key in list(self.clusters):
            resource = ctx.target({"Ref": key[1]}, key[0])
            name = resource.props.get("ClusterName") if resource is not None else None
            if isinstance(name, str):
                self.cluster_names.add(name)
                self.held[name] |= self.held.get(key, set())
                self.defaults.setdefault(name, self.defaults.get(key, ()))
            else:
                self.unnamed = True

    def _group(self, provider: Resource) -> str | None:
        """The Auto Scaling group a provider scales, as one comparable value (references followed)."""
        value = (provider.props.get("AutoScalingGroupProvider") or {}).get("AutoScalingGroupArn")
        if value is None:
            return None
        target = self.ctx.target(value, provider.stack)
        if target is not None:
            return f"{target.stack}/{target.logical_id}"
        return json.dumps(value, sort_keys=True)

    def _hold(self, holder: Resource, cluster: Any) -> None:
        """Records ``cluster`` as a GPU cluster when ``holder`` gives it a GPU capacity's provider, with its default
        strategy."""
        held = {n for p in holder.props.get("CapacityProviders") or [] if (n := self.provider(p, holder.stack))}
        key = self._add_cluster(cluster, holder.stack) if held else None
        if key is not None:
            self.held[key] |= held
            self.defaults[key] = self.strategy(holder.props.get("DefaultCapacityProviderStrategy"), holder.stack)

    def _cluster_key(self, value: Any, stack: str) -> Key | str | None:
        """A cluster as written: its resource of the templates, else its literal name (an ARN's last part)."""
        target = self.ctx.target(value, stack)
        if target is not None:
            return (target.stack, target.logical_id)
        return value.rsplit("/", 1)[-1] if isinstance(value, str) else None

    def _add_cluster(self, value: Any, stack: str) -> Key | str | None:
        """Records a GPU cluster as written; returns how ``held`` knows it."""
        key = self._cluster_key(value, stack)
        if isinstance(key, tuple):
            self.clusters.add(key)
        elif isinstance(key, str):
            self.cluster_names.add(key)
        return key

    def strategy(self, items: Any, stack: str) -> tuple[str, ...]:
        """The GPU capacities a capacity provider strategy names (keys in either case), in its order."""
        names = (self.provider(camel_keys(i).get("capacityProvider"), stack) for i in listed(items))
        return tuple(dict.fromkeys(n for n in names if n is not None))

    def landing(self, runner: Runner) -> tuple[tuple[str, ...], bool]:
        """The GPU capacities a runner's tasks may land on, and whether they are named (by its strategy or its
        cluster's default one) rather than any GPU host of its cluster (the EC2 launch type)."""
        if isinstance(runner.strategy, list) and runner.strategy:
            return self.strategy(runner.strategy, runner.resource.stack), True
        if runner.launch_type not in (None, "EC2"):
            return (), True
        cluster = self._cluster_key("default" if runner.cluster is None else runner.cluster, runner.resource.stack)
        if cluster is None:
            return (), True
        if runner.launch_type is None and self.defaults.get(cluster):
            return self.defaults[cluster], True
        return tuple(sorted(self.held.get(cluster, ()))), False

    def provider(self, value: Any, stack: str) -> str | None:
        """The GPU capacity a provider reference or name names, or ``None``."""
        target = self.ctx.target(value, stack)
        if target is not None:
            return self.providers.get((target.stack, target.logical_id))
        return self.provider_names.get(value) if isinstance(value, str) else None

    def cluster(self, value: Any, stack: str) -> str:
        """``gpu``, ``other`` or ``unknown`` for a service's cluster as written (absent: the account's default)."""
        if value is None:
            value = "default"
        target = self.ctx.target(value, stack)
        if target is not None:
            if target.kind != "AWS::ECS::Cluster":
                return "unknown"
            return "gpu" if (target.stack, target.logical_id) in self.clusters else "other"
        if isinstance(value, str):
            if value.rsplit("/", 1)[-1] in self.cluster_names:
                return "gpu"
            return "unknown" if self.unnamed else "other"
        return "unknown"


def placement(caps: GpuCapacities, runner: Runner) -> tuple[str, str] | None:
    """(``gpu``, where) when the runner runs on a GPU capacity, (``maybe``, why) when the templates cannot rule it
    out, ``None`` when it does not."""
    service = runner.resource
    cluster = caps.cluster(runner.cluster, service.stack)
    strategy = runner.strategy
    if isinstance(strategy, list) and strategy:
        unknown = []
        for item in strategy:
            given = camel_keys(item).get("capacityProvider")
            found = caps.provider(given, service.stack)
            if found is not None:
                return "gpu", f"GPU capacity {found}"
            if isinstance(given, str) and given in FARGATE_PROVIDERS:
                continue
            if caps.ctx.target(given, service.stack) is None:
                unknown.append(given)
        if unknown and cluster != "other":
            return "maybe", f"its capacity provider {_show(unknown[0])} cannot be told apart from a GPU capacity's"
        return None
    launch = runner.launch_type
    if launch in ("FARGATE", "EXTERNAL"):
        return None
    if cluster == "gpu":
        if launch == "EC2":
            return "gpu", "the EC2 hosts of a cluster with a GPU capacity"
        return "gpu", "the default capacity provider strategy of a cluster with a GPU capacity"
    if cluster == "unknown":
        return "maybe", f"its cluster {_show(runner.cluster)} cannot be told apart from a GPU capacity's cluster"
    return None


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)[:120]


def log_groups_named(ctx: Templates, value: Any, stack: str) -> Any:
    """``value`` with each reference to a log group of the templates (``Ref``, ``Fn::GetAtt``, through an export) in
    place of the group's name as a pattern (``tokens.text_pattern``; a group the template leaves unnamed is named by
    CloudFormation after its stack and logical id): a Ref to the evidence group carries no name to read, and the guards
    and the escalation check judge log groups by their names."""
    if isinstance(value, Mapping):
        target = ctx.target(value, stack) if len(value) == 1 else None
        if target is not None and target.kind == "AWS::Logs::LogGroup":
            name = target.props.get("LogGroupName")
            return f"{target.stack}-{target.logical_id}-*" if name is None else text_pattern(name)
        return {k: log_groups_named(ctx, v, stack) for k, v in value.items()}
    if isinstance(value, list):
        return [log_groups_named(ctx, v, stack) for v in value]
    return value


def _role_documents(ctx: Templates, role: Resource) -> tuple[list[Any], list[str], list[Any]]:
    """Every policy document that applies to ``role`` as the templates hold it, its AWS managed policy names, and the
    managed policies it names that are neither AWS's nor in the templates (what they grant cannot be read)."""
    docs: list[Any] = [
        log_groups_named(ctx, p.get("PolicyDocument"), role.stack)
        for p in role.props.get("Policies") or []
        if isinstance(p, Mapping)
    ]
    arns = role.props.get("ManagedPolicyArns") or []
    names = managed_policies(arns)
    elsewhere = []
    for arn in arns if isinstance(arns, list) else [arns]:
        managed = ctx.target(arn, role.stack)
        if managed is not None and managed.kind == "AWS::IAM::ManagedPolicy":
            docs.append(log_groups_named(ctx, managed.props.get("PolicyDocument"), managed.stack))
        elif not managed_policies([arn]):
            elsewhere.append(arn)
    for kind, key in (
        ("AWS::IAM::Policy", "Roles"),
        ("AWS::IAM::ManagedPolicy", "Roles"),
        ("AWS::IAM::RolePolicy", "RoleName"),
    ):
        for policy in ctx.of_type(kind):
            named = policy.props.get(key)
            for value in named if isinstance(named, list) else [named]:
                target = ctx.target(value, policy.stack)
                by_name = isinstance(value, str) and value == role.props.get("RoleName")  # a literal role name
                if by_name or (
                    target is not None and (target.stack, target.logical_id) == (role.stack, role.logical_id)
                ):
                    docs.append(log_groups_named(ctx, policy.props.get("PolicyDocument"), policy.stack))
                    break
    return docs, names, elsewhere


def judge(templates: Mapping[str, Mapping[str, Any]], allowed: Allowed | None = None) -> Judgement:
    """Judges every service on a GPU capacity in ``templates`` (stack name -> template); ``allowed`` permits findings
    on a resource by rule id, with the reason the plan lists."""
    ctx = Templates(templates)
    caps = GpuCapacities(ctx)
    out = Judgement()
    seen: set[Key] = set()
    for shared in sorted(ctx.of_type("AWS::ECS::TaskDefinition"), key=lambda r: (r.stack, r.logical_id)):
        if (shared.attributes.get("Metadata") or {}).get(SHARED_TASK_METADATA):
            seen.add((shared.stack, shared.logical_id))
            _judge_task(ctx, out, allowed or {}, shared, "a shared-GPU task definition")
    if not caps.providers:
        _shared_volumes(ctx, out, allowed or {}, seen)
        out.violations.extend(_claimed_twice(ctx))
        return out
    for runner in sorted(runners(ctx), key=lambda r: (r.resource.stack, r.resource.logical_id)):
        where = placement(caps, runner)
        if where is None:
            continue
        state, detail = where
        task = ctx.target(runner.task_definition, runner.resource.stack) or by_family(ctx, runner.task_definition)
        if task is None or task.kind != "AWS::ECS::TaskDefinition":
            _unreadable_task(out, allowed or {}, runner, state, detail)
            continue
        on = detail if state == "gpu" else f"what may be a GPU host ({detail})"
        runs = f"{runner.what} {cdk_path(runner.resource)} runs it on {on}"
        if (task.stack, task.logical_id) not in seen:
            seen.add((task.stack, task.logical_id))
            _judge_task(ctx, out, allowed or {}, task, runs, sure=state == "gpu")
        _judge_overrides(ctx, out, allowed or {}, runner, runs, sure=state == "gpu")
    _shared_volumes(ctx, out, allowed or {}, seen)
    out.violations.extend(_claimed_twice(ctx))
    return out


def by_family(ctx: Templates, value: Any) -> Resource | None:
    """The task definition of the templates whose family a literal names alone (how CDK's Step Functions tasks write
    it): ECS runs the family's latest revision, the one the template registers. A revision or an ARN pins one the
    templates need not hold, and reads as unknown."""
    if not isinstance(value, str) or ":" in value or "/" in value:
        return None
    found = [t for t in ctx.of_type("AWS::ECS::TaskDefinition") if t.props.get("Family") == value]
    return found[0] if len(found) == 1 else None


def _shared_volumes(ctx: Templates, out: Judgement, allowed: Allowed, judged: set[Key]) -> None:
    """A shared-scope Docker volume named by more than one of the task definitions judged (those that run, or may run,
    on GPU hosts): the first keeps it, each other is refused, naming the first."""
    first: dict[str, Resource] = {}
    tasks = [t for key in sorted(judged) if (t := ctx.resource(*key)) is not None]
    for task in tasks:
        for volume in [camel_keys(v) for v in task.props.get("Volumes") or [] if isinstance(v, Mapping)]:
            config = camel_keys(volume.get("dockerVolumeConfiguration"))
            if str(config.get("scope")).lower() != "shared":
                continue
            name = volume.get("name")
            key = json.dumps(name)
            if key not in first:
                first[key] = task
                continue
            message = (
                f"{cdk_path(task)} names the shared Docker volume {name!r}, as {cdk_path(first[key])} does: the agent "
                "makes one volume per host of that name, so each reads and writes the other's files; name it after "
                "its own service, or allow it with a reason (FleetPlan.allow)"
            )
            add_finding(out, allowed, [task], SHARED_VOLUME_NAMED_TWICE, message)


def _unreadable_task(out: Judgement, allowed: Allowed, runner: Runner, state: str, detail: str) -> None:
    service = runner.resource
    reason = (
        f"its task definition {_show(runner.task_definition)} is not in the app's templates, so what it "
        "runs cannot be judged"
    )
    if state == "maybe":
        out.not_judged.append(NotJudged(service.stack, service.logical_id, cdk_path(service), f"{detail}; {reason}"))
        return
    message = (
        f"{runner.what} {cdk_path(service)} runs on {detail}, but {reason}; define the task definition in the "
        "app, or allow it with a reason (FleetPlan.allow)"
    )
    add_finding(out, allowed, [service], TASK_DEFINITION_NOT_READABLE, message)


def _judge_task(
    ctx: Templates, out: Judgement, allowed: Allowed, task: Resource, runs: str, *, sure: bool = True
) -> None:
    """The allow-list over the task definition, then its task role's policies; a role the templates do not hold is
    refused where the task surely runs on a GPU host (``sure``), listed as not judged where it only may."""
    named = log_groups_named(ctx, task.props, task.stack)
    for line in [*guard_violations(named), *log_groups_not_read(named)]:
        rule = rule_of(line)
        add_finding(out, allowed, [task], rule, f"{cdk_path(task)}: {line.removeprefix(f'[{rule}] ')} ({runs})")
    _judge_role(ctx, out, allowed, task.props.get("TaskRoleArn"), task, cdk_path(task), runs, sure=sure)


def _judge_role(
    ctx: Templates,
    out: Judgement,
    allowed: Allowed,
    written: Any,
    holder: Resource,
    whose: str,
    runs: str,
    *,
    sure: bool,
) -> None:
    """A task role as written (``None``: none) judged by ``core.escalation``; ``holder`` is the resource that names it
    (a task definition, or a runner that overrides its role), ``whose`` what the findings call it."""
    if written is None:
        return
    role = ctx.target(written, holder.stack)
    if role is None or role.kind != "AWS::IAM::Role":
        why = f"its task role {_show(written)} is not in the app's templates, so its policies cannot be judged"
        if sure:
            message = f"{whose}: {why} ({runs}); give it a role of the app, or allow it with a reason"
            add_finding(out, allowed, [holder], TASK_ROLE_NOT_READABLE, message)
        else:
            out.not_judged.append(NotJudged(holder.stack, holder.logical_id, cdk_path(holder), why))
        return
    docs, names, elsewhere = _role_documents(ctx, role)
    subject = f"{cdk_path(role)}: the task role of {whose}"
    for name in names:
        refused = refused_managed_policy(name)
        if refused is not None:
            text = f"[{TASK_ROLE_REFUSED_POLICY}] {subject} has the AWS managed policy {refused}"
            out.violations.append(Violation(TASK_ROLE_REFUSED_POLICY, role.stack, role.logical_id, text))
    unread = [w for name in names if (w := unread_managed_policy(name)) is not None]
    unread += [
        f"the managed policy {_show(arn)} is not in the app's templates, so what it grants cannot be judged"
        for arn in elsewhere
    ]
    execs = holder.kind == "AWS::ECS::TaskDefinition" and _executed(ctx, holder)
    for why in [*escalations(docs), *unread]:
        if execs and WRITES_EVIDENCE in why:
            why += f"; {_EXEC_LOGS}"
        message = (
            f"{subject} ({runs}): {why}; name the actions and resources the task needs, or allow "
            f"{TASK_ROLE_ESCALATION} with a reason (FleetPlan.allow)"
        )
        add_finding(out, allowed, [role, holder], TASK_ROLE_ESCALATION, message)


_EXEC_LOGS = (
    "ECS Exec (enable_execute_command) has aws-ecs grant these on every log group where the cluster's execute command "
    "configuration names none: give the cluster execute_command_configuration=ecs.ExecuteCommandConfiguration("
    "logging=ecs.ExecuteCommandLogging.OVERRIDE, log_configuration=ecs.ExecuteCommandLogConfiguration("
    "cloud_watch_log_group=...)), or logging NONE"
)


def _executed(ctx: Templates, task: Resource) -> bool:
    """Whether a service of the templates runs ``task`` with ECS Exec on."""
    return any(
        service.props.get("EnableExecuteCommand") in (True, "true")
        and ctx.target(service.props.get("TaskDefinition"), service.stack) is task
        for service in ctx.of_type("AWS::ECS::Service")
    )


def _judge_overrides(
    ctx: Templates, out: Judgement, allowed: Allowed, runner: Runner, runs: str, *, sure: bool
) -> None:
    """What a runner's RunTask request overrides, judged as the task definition is: each container's environment and
    environment files by the allow-list, a task role override by the escalation check; overrides the synth cannot
    read are refused where the task surely runs on a GPU host, and listed as not judged where it only may."""
    overrides, where = runner.overrides, f"{runner.what} {cdk_path(runner.resource)}"
    if overrides is None:
        return
    given = camel_keys(overrides).get("containerOverrides") if not isinstance(overrides, str) else None
    if given is not None and not (isinstance(given, list) and all(isinstance(c, Mapping) for c in given)):
        overrides = "its container overrides are a value the synth cannot read"
    if isinstance(overrides, str):
        if sure:
            message = (
                f"{where}: {overrides}, so the environment and task role it gives the task cannot be judged ({runs}); "
                "write the overrides in the template (a value the run fills is fine, a variable's name is not), or "
                f"allow {TASK_OVERRIDES_NOT_READABLE} with a reason (FleetPlan.allow)"
            )
            add_finding(out, allowed, [runner.resource], TASK_OVERRIDES_NOT_READABLE, message)
        else:
            out.not_judged.append(
                NotJudged(runner.resource.stack, runner.resource.logical_id, cdk_path(runner.resource), overrides)
            )
        return
    request = camel_keys(overrides)
    containers = [
        {k: v for k, v in camel_keys(c).items() if k in ("name", "environment", "environmentFiles")}
        for c in given or []
    ]
    for line in guard_violations({"containerDefinitions": containers}):
        rule = rule_of(line)
        add_finding(
            out, allowed, [runner.resource], rule, f"{where} overrides {line.removeprefix(f'[{rule}] ')} ({runs})"
        )
    _judge_role(
        ctx, out, allowed, request.get("taskRoleArn"), runner.resource, f"the overrides of {where}", runs, sure=sure
    )


def add_finding(out: Judgement, allowed: Allowed, subjects: list[Resource], rule_id: str, message: str) -> None:
    for subject in subjects:
        reason = allowed.get((subject.stack, subject.logical_id), {}).get(rule_id)
        if reason is not None:
            entry = (cdk_path(subject), rule_id, reason)
            if entry not in out.allowed:
                out.allowed.append(entry)
            return
    first = subjects[0]
    text = message if message.startswith("[") else f"[{rule_id}] {message}"
    out.violations.append(Violation(rule_id, first.stack, first.logical_id, text))


def _claimed_twice(ctx: Templates) -> Iterator[Violation]:
    """Two services that carry one plan name in the service tag: ``evaluate`` could not tell which is the plan's."""
    claims: dict[str, list[Resource]] = defaultdict(list)
    for service in ctx.of_type("AWS::ECS::Service"):
        for tag in service.props.get("Tags") or []:
            if isinstance(tag, Mapping) and tag.get("Key") == SERVICE_TAG:
                claims[json.dumps(tag.get("Value"))].append(service)
    for value, services in sorted(claims.items()):
        for extra in services[1:]:
            yield Violation(
                SERVICE_NAME_CLAIMED,
                extra.stack,
                extra.logical_id,
                f"[{SERVICE_NAME_CLAIMED}] {cdk_path(extra)} carries {SERVICE_TAG}={json.loads(value)}, the name of "
                f"{cdk_path(services[0])} in the plan; evaluate finds a plan's service by this tag, so only the "
                "library sets it: remove the tag",
            )
