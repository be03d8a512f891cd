"""``FleetPlan``: plans, at synth, every service that runs on a GPU capacity of an app, together.

One per app, or per ``cdk.Stage`` (each is one cloud assembly, deployed on its own), created on first use. At synth
it finds every ECS service on a registered GPU capacity (``discovery``), plans them with the pure core, turns the
findings into synth errors on the construct concerned and warnings acknowledgeable by id, derives ``max_instances``
where it was left out, and, once the app has synthesized without errors, writes the plan next to the templates
(``gpu-fleet-plan.json`` and ``.md``). A failed synth leaves no plan file from an earlier run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ecs as ecs
from constructs import Construct, IConstruct, IValidation

from ..core import cost, plan_report, written_fit
from ..core.allocation import AllocationNote, Evidence
from ..core.container_guards import GUARD_RULES, guard_violations, rule_of
from ..core.errors import CapacityError, PlanError, ServiceError
from ..core.escalation import TASK_ROLE_ESCALATION
from ..core.files import json_text, write_atomic
from ..core.fleet import SERVICE_TAG
from ..core.mps import require_int
from ..core.plan_document import DeployedAs
from ..core.quotas import MAX_TASKS_PER_SERVICE
from ..core.rules import RULE_FAILED, RULES_BY_ID, Assessment, Level, acknowledgeable, assess, derived_max_instances
from ..core.service_rules import CAPACITY_METADATA, check_all
from ..core.template_limits import Violation
from ..core.tenancy import (
    SHARED_VOLUME_NAMED_TWICE,
    TASK_DEFINITION_NOT_READABLE,
    TASK_OVERRIDES_NOT_READABLE,
    TASK_ROLE_NOT_READABLE,
    Judgement,
    judge,
)
from ..core.text import visible
from .discovery import Discovered, PlannedCapacity, discover, stage_of, user_construct
from .limits import WrittenTemplates
from .refusals import kind_of, require_name
from .rendered import rendered_properties, template_key

PLAN_FILE = "gpu-fleet-plan"
PRICES_CONTEXT = "ecs-gpu-sharing:prices"
"""CDK context: a prices file (``ecs-gpu-sharing prices refresh``) the plan files are costed with."""
_ID = "EcsGpuSharingFleetPlan"


def _construct_path(scope: Any, method: str) -> str:
    """The path of the construct a plan method is given, or a refusal naming the method: a string or another object
    is no construct to hold the entry."""
    path = getattr(getattr(scope, "node", None), "path", None)
    if not isinstance(path, str):
        raise ServiceError(
            f"FleetPlan.{method} takes a construct (a service, a capacity, a task definition or a construct holding "
            f"them), got {kind_of(scope)} {scope!r:.80}"
        )
    return path


def planned_tasks(option: str, tasks: Any, *, owner: str) -> int:
    """A count to plan a service at (``plan_count``, a service's ``planned_count``): at most ECS's tasks per service."""
    return require_int(option, tasks, low=0, high=MAX_TASKS_PER_SERVICE, owner=owner, error=ServiceError)


class FleetPlan(Construct):
    """The fleet plan of an app or a stage. Use :meth:`of`; GPU capacities register themselves, services are found at
    synth."""

    PRICES_CONTEXT = PRICES_CONTEXT

    @staticmethod
    def of(scope: IConstruct) -> FleetPlan:
        """The plan of the stage ``scope`` is in: the app's, or that of the innermost ``cdk.Stage`` holding it. A stage
        is one cloud assembly, deployed on its own (CDK Pipelines deploys one an environment), so each plans its own
        services on its own capacities and writes its plan files in its own assembly directory."""
        owner = stage_of(scope)
        existing = owner.node.try_find_child(_ID)
        if isinstance(existing, FleetPlan):
            return existing
        return FleetPlan(owner, _ID)  # type: ignore[arg-type]

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        self._capacities: list[PlannedCapacity] = []
        self._names: dict[IConstruct, str] = {}
        self._counts: dict[IConstruct, int] = {}
        self._allocations: dict[IConstruct, AllocationNote] = {}
        self._evidence: dict[IConstruct, Evidence] = {}
        self._acks: dict[IConstruct, dict[str, str]] = {}
        self._allowed: dict[IConstruct, dict[str, str]] = {}  # scope -> allow-list rule -> why it may
        self._judgement: Judgement | None = None  # the written templates, judged (core.tenancy)
        self._assessment: Assessment | None = None
        self._discovered: Discovered | None = None
        self._sealed = False  # set when synthesis starts: inputs no longer change, the plan is computed once
        cdk.Aspects.of(scope).add(_AttachFindings(self))
        if isinstance(scope, cdk.Stage):
            cdk.Validations.of(scope).add_plugins(_WritePlan(self))

    def add_capacity(self, capacity: PlannedCapacity) -> None:
        self._capacities.append(capacity)
        provider = getattr(capacity, "capacity_provider", None)
        for resource in provider.node.find_all() if provider is not None else []:
            if isinstance(resource, ecs.CfnCapacityProvider):
                # How the written templates tell a GPU capacity's provider (core.tenancy), whoever names it.
                resource.add_metadata(CAPACITY_METADATA, capacity.plan_name)
        capacity.node.add_validation(_Findings(self, "capacity", capacity))

    @staticmethod
    def _service_handle(given: Any, method: str) -> IConstruct:
        """The construct a service's plan entries are kept under, from any handle a team holds: an ECS service (a
        pattern's ``.service`` included: its entries go to the pattern, the name the plan shows), the construct holding
        one as ``Service`` (a pattern, a ``SharedGpuService``), or a task definition (for every service that runs it).
        Anything else is refused: never a silent no-op."""
        if isinstance(given, ecs.BaseService):
            return user_construct(given)
        if isinstance(given, ecs.TaskDefinition):
            return given
        node = getattr(given, "node", None)
        if node is not None and isinstance(node.try_find_child("Service"), ecs.BaseService):
            return given  # type: ignore[no-any-return]
        where = node.path if node is not None else repr(given)
        raise ServiceError(
            f"{where}: FleetPlan.{method} takes a service: an ECS service, an aws-ecs-patterns service or its "
            f".service, a SharedGpuService, or the task definition they run; got {kind_of(given)}"
        )

    def name_service(self, service: IConstruct, name: str) -> None:
        """Names ``service`` (any handle ``_service_handle`` takes) in the plan."""
        handle = self._service_handle(service, "name_service")
        self._names[handle] = require_name(name, owner=handle.node.path, error=ServiceError)

    def plan_count(self, service: IConstruct, tasks: int) -> None:
        """Plans ``service`` (an ECS service, a pattern or its ``.service``, a ``SharedGpuService``, or the task
        definition they run) at ``tasks`` tasks, the count to use when its own count is a deploy-time value (a
        ``CfnParameter``, say)."""
        handle = self._service_handle(service, "plan_count")
        self._counts[handle] = planned_tasks("tasks", tasks, owner=handle.node.path)

    def set_allocation(self, service: IConstruct, allocation: AllocationNote) -> None:
        """Gives ``service`` (an ECS service, a pattern or its ``.service``, a ``SharedGpuService``, or the task
        definition they run) its allocation note: the plan checks its budget against it, keeps its isolation group
        apart, and shows it. ``SharedGpuService`` and ``SharedGpuManagedInstancesService`` take it as
        ``allocation=``."""
        handle = self._service_handle(service, "set_allocation")
        if not isinstance(allocation, AllocationNote):
            raise ServiceError(f"{handle.node.path}: allocation must be an AllocationNote, got {allocation!r}")
        self._allocations[handle] = allocation

    def set_evidence(self, service: IConstruct, evidence: Evidence) -> None:
        """Gives ``service`` (any handle ``set_allocation`` takes) what was measured of it when it has no allocation
        note (with a note, give the evidence in the note): its budget is then no longer a guess."""
        handle = self._service_handle(service, "set_evidence")
        if not isinstance(evidence, Evidence):
            raise ServiceError(f"{handle.node.path}: evidence must be an Evidence, got {evidence!r}")
        self._evidence[handle] = evidence

    def acknowledge(self, scope: IConstruct, rule_id: str, reason: str) -> None:
        """Accepts a warning with a reason, for ``scope`` and everything in it: a service (a ``SharedGpuService``,
        a pattern, an ``Ec2Service``), a capacity, or a construct holding several. The one way to acknowledge: the
        synth output no longer shows the warning (``cdk.Annotations``), and the plan files show the reason in its
        place. ``rule_id`` is a warning of the rule table (``core.rules.RULES``)."""
        owner = _construct_path(scope, "acknowledge")
        rule = RULES_BY_ID.get(rule_id) if isinstance(rule_id, str) else None
        if rule is None or rule.level is not Level.WARNING:
            known = ", ".join(sorted(acknowledgeable("service") | acknowledgeable("capacity")))
            raise ServiceError(
                f"{owner}: rule id {rule_id!r:.80} is not a warning that can be acknowledged; these can: {known}"
            )
        if not visible(reason):
            raise ServiceError(f"{owner}: acknowledging {rule_id} needs a reason (a string with visible characters)")
        # A pattern's .service: its findings are reported on the pattern, so the acknowledgment goes there too.
        held = user_construct(scope) if isinstance(scope, ecs.BaseService) else scope
        for target in dict.fromkeys((scope, held)):
            self._acks.setdefault(target, {})[rule_id] = reason
            cdk.Annotations.of(target).acknowledge_warning(rule_id, reason)

    def _plans_around(self) -> list[FleetPlan]:
        """The plans of the stages holding this plan's stage, the outermost first, then this one: what a team gives
        the app's plan (``FleetPlan.of(app)``) about a construct in a stage holds there too."""
        scopes = self.node.scope.node.scopes if self.node.scope is not None else []
        return [p for s in scopes if isinstance(p := s.node.try_find_child(_ID), FleetPlan)]

    def _entries(self, of: Callable[[FleetPlan], Mapping[IConstruct, Any]]) -> dict[IConstruct, Any]:
        """One kind of entry (names, counts, ...) from every plan around this one, the innermost given last."""
        out: dict[IConstruct, Any] = {}
        for plan in self._plans_around():
            out.update(of(plan))
        return out

    def acknowledged(self, construct: IConstruct) -> dict[str, str]:
        """The warnings accepted for ``construct``: its own acknowledgments and those of every scope above it."""
        out: dict[str, str] = {}
        acks = self._entries(lambda p: p._acks)
        for scope in construct.node.scopes:
            out.update(acks.get(scope, {}))
        return out

    ALLOWABLE = (
        *GUARD_RULES,
        TASK_ROLE_ESCALATION,
        TASK_DEFINITION_NOT_READABLE,
        TASK_ROLE_NOT_READABLE,
        SHARED_VOLUME_NAMED_TWICE,
        TASK_OVERRIDES_NOT_READABLE,
        *written_fit.ALLOWABLE,
    )
    """The rules ``allow`` can permit: the allow-list over task definitions, task-role escalation, a service on a GPU
    capacity whose task definition the app does not hold, a runner's overrides the synth cannot read, and a service
    the plan does not count."""

    def allow(self, scope: IConstruct, rule_id: str, reason: str) -> None:
        """Permits ``scope`` (a task definition, a service or pattern, or any construct holding them) to break one
        rule of the allow-list on GPU hosts (``FleetPlan.ALLOWABLE``), for ``reason``; the plan files list every
        allowance with its reason. The one way to permit it: the library's telemetry daemon is allowed its GPU device
        files, two read-only host paths and its writes to the evidence log group this way. Think twice for a model:
        a guard keeps a tenant within its share of a host other teams use."""
        owner = _construct_path(scope, "allow")
        if not isinstance(rule_id, str) or rule_id not in self.ALLOWABLE or not visible(reason):
            raise ServiceError(
                f"{owner}: allow takes a rule id of the allow-list ({', '.join(self.ALLOWABLE)}) and a reason with "
                f"visible characters, got {rule_id!r} and {reason!r}; name the one rule it may break, and why"
            )
        self._allowed.setdefault(scope, {})[rule_id] = reason

    def allowed_rules(self, construct: IConstruct) -> dict[str, str]:
        """The allow-list rules ``construct`` may break: its own allowances and those of every scope above it."""
        out: dict[str, str] = {}
        allowed = self._entries(lambda p: p._allowed)
        for scope in construct.node.scopes:
            out.update(allowed.get(scope, {}))
        return out

    def _allowed_resources(self) -> dict[tuple[str, str], dict[str, str]]:
        """Each allowance as the written templates name its resources: every CloudFormation resource in the scope,
        and, for a service in it, its task definition and task role."""
        out: dict[tuple[str, str], dict[str, str]] = {}
        for scope, rules in self._entries(lambda p: p._allowed).items():
            resources = [c for c in scope.node.find_all() if isinstance(c, cdk.CfnResource)]
            for service in (c for c in scope.node.find_all() if isinstance(c, ecs.BaseService)):
                task = service.task_definition
                if isinstance(task, ecs.TaskDefinition):
                    resources.extend(c for c in task.node.find_all() if isinstance(c, cdk.CfnResource))
            for resource in resources:
                out.setdefault(template_key(resource), {}).update(rules)
        return out

    def judge_templates(self, templates: Mapping[str, Any]) -> Judgement:
        """The written templates judged: every service on a GPU capacity, however it was built (``core.tenancy``),
        and what runs there against the plan (``core.written_fit``)."""
        allowed = self._allowed_resources()
        judgement = _judged("the allow-list over the written templates", lambda: judge(templates, allowed))
        _ = self.assessment
        assert self._discovered is not None
        capacities = {c.name: c for c in self._discovered.capacities}
        maxima, counted = self.assessment.max_instances, self._discovered.counted
        as_planned = _judged(
            "the plan as written", lambda: written_fit.judge(templates, capacities, counted, allowed, maxima)
        )
        judgement.violations.extend(as_planned.violations)
        judgement.allowed.extend(a for a in as_planned.allowed if a not in judgement.allowed)
        judgement.not_judged.extend(as_planned.not_judged)
        self._judgement = judgement
        return judgement

    def capacity_name_taken(self, name: str) -> bool:
        return any(c.plan_name == name for c in self._capacities)

    @property
    def assessment(self) -> Assessment:
        """The plan of every service on a GPU capacity, computed once when the app synthesizes."""
        if self._assessment is not None:
            return self._assessment
        if not self._sealed:
            raise PlanError("the fleet plan is computed when the app synthesizes; read it after app.synth()")
        found = discover(
            self.node.scope,  # type: ignore[arg-type]
            self._capacities,
            names=self._entries(lambda p: p._names),
            stated_counts=self._entries(lambda p: p._counts),
            allocations=self._entries(lambda p: p._allocations),
            evidence=self._entries(lambda p: p._evidence),
            acknowledged=self.acknowledged,
        )
        result = assess(
            found.capacities,
            found.services,
            outside=found.outside,
            clashes=found.clashes,
            shape_errors=found.shape_errors,
        )
        self._assessment, self._discovered = result, found
        self._remove_stale_files()
        return result

    def planned_task_gpu_budget(self, service: IConstruct) -> int | None:
        """The GPU budget (MiB) of one task of ``service`` (any handle ``set_allocation`` takes but a task
        definition) as the plan holds it: every container's MPS share summed; None when the plan does not hold it.
        Read when the app synthesizes (a dashboard's ``Lazy`` values), so it is the budget the plan was made with."""
        handle = self._service_handle(service, "planned_task_gpu_budget")
        _ = self.assessment
        assert self._discovered is not None
        names = {n for n, owners in self._discovered.services_by_name.items() if handle in owners}
        budgets = [s.task_gpu_budget_mib for s in self._discovered.services if s.name in names]
        return budgets[0] if len(budgets) == 1 else None

    def max_instances(self, capacity: PlannedCapacity) -> int:
        given = capacity.given_max_instances
        if given is not None:
            return given
        if not self._sealed:
            # Planning reads resolved task definitions; doing that before synth would freeze aws-ecs's lazy lists.
            raise CapacityError(
                f"{capacity.node.path}: max_instances is derived from the fleet plan when the app synthesizes; "
                "read it after app.synth(), or give max_instances"
            )
        return self.assessment.max_instances.get(capacity.plan_name, derived_max_instances(0, capacity.min_instances))

    def _service_findings(self, construct: IConstruct) -> list[str]:
        _ = self.assessment  # computes the plan, and the names discovery found, once
        assert self._discovered is not None
        names = [n for n, owners in self._discovered.services_by_name.items() if construct in owners]
        service = construct if isinstance(construct, ecs.BaseService) else construct.node.try_find_child("Service")
        resource = service.node.default_child if isinstance(service, ecs.BaseService) else None
        tags = cdk.TagManager.of(resource) if resource is not None else None
        if len(names) == 1 and tags is not None:
            # The plan's name on the deployed service: evaluate --plan finds the service by it.
            tags.set_tag(SERVICE_TAG, names[0])
        return self._report(construct, "service", names)

    def _report(self, scope: IConstruct, kind: str, subjects: list[str]) -> list[str]:
        errors = []
        for subject in subjects:
            for finding in self.assessment.about(kind, subject):
                if finding.error:
                    errors.append(f"[{finding.rule_id}] {finding.message}")
                else:
                    cdk.Annotations.of(scope).add_warning_v2(finding.rule_id, finding.message)
        return errors

    def _outdir(self) -> Path | None:
        """The directory of this plan's stage's cloud assembly (``cdk.out``, or ``cdk.out/assembly-<stage>``)."""
        stage = self.node.scope
        return Path(stage.outdir) if isinstance(stage, cdk.Stage) else None

    def own_templates(self, paths: Iterable[str]) -> list[str]:
        """The templates this plan judges, of those CDK hands its stage's plugins (every one under the stage): all but
        those of a stage inside it with a plan of its own, which judges them."""
        stage = self.node.scope
        planned = [
            Path(s.outdir).resolve()
            for s in (stage.node.find_all() if stage is not None else [])
            if s is not stage and isinstance(s, cdk.Stage) and isinstance(s.node.try_find_child(_ID), FleetPlan)
        ]
        return [p for p in paths if not any(Path(p).resolve().is_relative_to(d) for d in planned)]

    def _remove_stale_files(self) -> None:
        outdir = self._outdir()
        if outdir is not None:
            FleetPlan.remove_plan_files(outdir)

    @staticmethod
    def remove_plan_files(outdir: Path) -> None:
        """Removes the plan files of an earlier synth from ``outdir``: for an app that fails before synthesis (a fleet
        file refused), so no plan of another fleet is left to be read as this one's."""
        for suffix in (".json", ".md"):
            (Path(outdir) / f"{PLAN_FILE}{suffix}").unlink(missing_ok=True)

    def _deployed_as(self) -> dict[str, DeployedAs]:
        """Each planned service's stack, logical id and the nested stack resources between them: what CloudFormation
        records of it, which no tenant can claim (a tag can be copied; ``evaluate --plan`` reads the service's ARN
        from the stack). A nested stack's name is made at deploy, so the top stack is named with the logical id of
        each nested stack resource down to the service's own."""
        assert self._discovered is not None
        out: dict[str, DeployedAs] = {}
        for name, owners in self._discovered.services_by_name.items():
            found = [
                c
                for owner in owners
                for c in (owner, *owner.node.children)
                if isinstance(c, ecs.BaseService) and isinstance(c.node.default_child, cdk.CfnResource)
            ]
            if len(found) == 1:
                stack = cdk.Stack.of(found[0])
                logical_id = stack.get_logical_id(found[0].node.default_child)  # type: ignore[arg-type]
                nested: list[str] = []
                while stack.nested_stack_parent is not None and stack.nested_stack_resource is not None:
                    nested.insert(0, stack.nested_stack_parent.get_logical_id(stack.nested_stack_resource))
                    stack = stack.nested_stack_parent
                out[name] = DeployedAs(stack=stack.stack_name, logical_id=logical_id, nested_stacks=tuple(nested))
        return out

    def write(self, outdir: Path) -> None:
        """Writes the plan files (each atomically) and prints the summary; called once the app has synthesized."""
        if not self._capacities:
            return
        result = self.assessment
        given = self.node.try_get_context(PRICES_CONTEXT)
        prices = cost.load_prices(given) if isinstance(given, str) and given else None
        judged = self._judgement or Judgement()
        not_judged = [(n.path, n.reason) for n in judged.not_judged]
        doc = plan_report.document(
            result, prices, allowances=judged.allowed, not_judged=not_judged, deployed_as=self._deployed_as()
        )
        lines = cost.cost_lines(doc)
        outdir.mkdir(parents=True, exist_ok=True)
        write_atomic(outdir / f"{PLAN_FILE}.json", json_text(doc, indent=1) + "\n")
        markdown = plan_report.to_markdown(result, cost_lines=cost.cost_lines(doc, hint=False))
        markdown += plan_report.allow_list_markdown(judged.allowed, not_judged)
        write_atomic(outdir / f"{PLAN_FILE}.md", markdown)
        notes = [f"not judged: {path}: {why}" for path, why in not_judged]
        stage = self.node.scope
        # A stage's plan says which stage it is; an app's (its path is empty) says nothing more, as before stages.
        title = f"GPU fleet plan of {stage.node.path}" if stage is not None and stage.node.path else "GPU fleet plan"
        for line in [*plan_report.summary_lines(result), *notes, lines[0]]:
            line = line.removeprefix("GPU fleet plan: ")
            print(f"{title}: {line}", file=sys.stderr)


def _judged(what: str, check: Callable[[], Judgement]) -> Judgement:
    """A check over the written templates; its bug is reported as the error RuleFailed, never a crash."""
    try:
        return check()
    except Exception as error:
        message = (
            f"[{RULE_FAILED}] {what} failed while checking the templates ({type(error).__name__}: {error}); its "
            "verdict is unknown: report this with the app"
        )
        return Judgement(violations=[Violation(RULE_FAILED, "", "", message)])


@jsii.implements(IValidation)
class _Findings:
    def __init__(self, plan: FleetPlan, kind: str, scope: Any) -> None:
        self._plan, self._kind, self._scope = plan, kind, scope

    def validate(self) -> list[str]:
        if self._kind == "service":
            return self._plan._service_findings(self._scope)
        return self._plan._report(self._scope, "capacity", [self._scope.plan_name])


@jsii.implements(IValidation)
class _Guards:
    """The container guards for a task definition that is no shared-GPU task definition (those judge themselves),
    when a service runs it in a cluster with a GPU capacity: whatever runs on a GPU host may not steer the GPU,
    map GPU devices, run privileged, add host capabilities or share the host's namespaces."""

    def __init__(self, plan: FleetPlan, task_definition: ecs.TaskDefinition) -> None:
        self._plan, self._task_definition = plan, task_definition
        self.services: list[ecs.BaseService] = []

    def validate(self) -> list[str]:
        gpu_clusters = [c.cluster for c in self._plan._capacities]
        if not any(any(s.cluster is c for c in gpu_clusters) for s in self.services):
            return []
        rendered = rendered_properties(self._task_definition)
        allowed = self._plan.allowed_rules(self._task_definition)
        return [
            f"{line} (it runs on the GPU hosts of this cluster)"
            for line in guard_violations(rendered)
            if rule_of(line) not in allowed
        ]


@jsii.implements(cdk.IAspect)
class _AttachFindings:
    """At the start of synthesis: seals the plan's inputs and gives every service's user-facing construct the
    validation that reports the plan's findings about it."""

    def __init__(self, plan: FleetPlan) -> None:
        self._plan = plan
        self._attached: set[str] = set()
        self._guards: dict[str, _Guards] = {}

    def visit(self, node: IConstruct) -> None:
        self._plan._sealed = True
        if isinstance(node, ecs.BaseService):
            owner = user_construct(node)
            if owner.node.path not in self._attached:
                self._attached.add(owner.node.path)
                owner.node.add_validation(_Findings(self._plan, "service", owner))
            task = node.task_definition
            if isinstance(task, ecs.TaskDefinition) and not hasattr(task, "gpu_rule_violations"):
                guards = self._guards.get(task.node.path)
                if guards is None:
                    guards = self._guards[task.node.path] = _Guards(self._plan, task)
                    task.node.add_validation(guards)
                guards.services.append(node)


@jsii.implements(cdk.IPolicyValidationPlugin)
class _WritePlan:
    """Runs after the cloud assembly is written, so the plan files appear only for a synth that passed."""

    def __init__(self, plan: FleetPlan) -> None:
        self._plan = plan

    @property
    def name(self) -> str:
        return "ecs-gpu-sharing-fleet-plan"

    @property
    def version(self) -> str | None:
        return None

    @property
    def rule_ids(self) -> list[str] | None:
        return None

    def validate(self, context: cdk.IPolicyValidationContext) -> cdk.PolicyValidationPluginReport:
        # The allow-list over what was written, for every service on a GPU capacity however it was built: escape
        # hatches, L1 resources, imported clusters and other stacks are seen only here.
        written = WrittenTemplates(self._plan.own_templates(context.template_paths))  # read once, for both
        judgement = self._plan.judge_templates(written.templates)
        # AWS's limits and the rules its services enforce at deploy, on every template of its stage.
        violations = written.policy_violations(
            [*judgement.violations, *check_all(written.templates, as_written=written.as_written)]
        )
        if violations:
            return cdk.PolicyValidationPluginReport(success=False, violations=violations)
        outdir = self._plan._outdir()
        if outdir is not None:
            self._plan.write(outdir)
        return cdk.PolicyValidationPluginReport(success=True, violations=[])
