"""The fit rules, as one table (``RULES``): the plan's rules, each a check declared with its id, level, subject and
explanation (``plan_rules``, by ``@plan_rule``), and the rules checked elsewhere, each declared by its family in
the module that checks it (``core.rule_family``; ``other_rules`` lists the families); ``model`` holds a row and its
findings. Pure Python.

``assess`` plans every service on its capacity together and runs every rule over the plan. The CDK layer
turns its findings into synth errors (on the construct concerned) and warnings acknowledgeable by id; the
CLI prints them. Every finding carries its rule's id, errors included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import TYPE_CHECKING

from .. import quotas
from ..beside import Beside, Claims, step_back
from ..capacity_facts import UNVERIFIED_INSTANCE_FAMILY
from ..markdown import table
from ..placement import (
    WHOLE_TASKS,
    CapacityPlacement,
    FreeReplays,
    free_replay_count,
    place_capacity,
    scaled_instances,
)
from ..planner import MANAGED_INSTANCES, CapacityInput, Plan, ServiceInput, packing, plan
from ..replay import Outcome
from ..rule_family import Level, Source
from ..shape import TASK_MIXES_GPU_OPTIONS
from ..task_rules import TASK_RULES, task_problems
from .model import (
    BUDGET_BELOW_NEED,
    CLIENT_LIMIT_WARNING,
    FRACTION_WARNING,
    OUTSIDE_PLAN_WARNING,
    SURGE_WARNING,
    Check,
    Context,
    Finding,
    NameClash,
    OutsideService,
    Rule,
    finding_line,
)
from .other_rules import RULE_FAILED
from .other_rules import rows as other_rows
from .plan_rules import (
    CONSTRAINT_NOT_PLANNED,
    DEPLOYMENT_CANNOT_START,
    DISTINCT_INSTANCE_PACKED,
    HOST_PORT_TWICE,
    PLACEMENT_NEEDS_MORE,
    PLACEMENT_SCATTERS,
    PLAN_RULES,
    ROLL_TAKES_HOST_OUT,
    ZONE_REBALANCING_NOT_REPLAYED,
    budget_below_need,
    budget_is_a_guess,
    counts_exceed_max_instances,
    deployment_cannot_start,
    derived_max_over_quota,
    ecs_placement_needs_more,
    evidence_older_than_image,
    isolation_not_enforceable,
    max_instances_unknown,
    mps_client_limit,
    placement_scatters,
    roll_takes_host_out,
    service_outside_plan,
    surge_does_not_fit,
    task_shape_not_literal,
    tasks_over_quota,
)
from .sizing import derived_max, derived_max_instances, roll_in_service

if TYPE_CHECKING:
    OTHER_RULES: tuple[Rule, ...]
    """The rules checked outside the plan (``other_rules.rows``)."""
    RULES: tuple[Rule, ...]
    """Every rule of the library: the one table (the docs' rules page is generated from it)."""
    RULES_BY_ID: dict[str, Rule]


@cache
def rule_table() -> tuple[Rule, ...]:
    """``RULES``: the plan's rules, then those checked outside the plan (their families imported on this first read,
    not before a plan: ``other_rules``)."""
    return (*PLAN_RULES, *other_rows())


@cache
def _rules_by_id() -> dict[str, Rule]:
    return {rule.rule_id: rule for rule in rule_table()}


def __getattr__(name: str) -> object:
    """``RULES``, ``RULES_BY_ID`` and ``OTHER_RULES``, made on first read (``rule_table``)."""
    if name == "RULES":
        return rule_table()
    if name == "RULES_BY_ID":
        return _rules_by_id()
    if name == "OTHER_RULES":
        return other_rows()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_OWNED_BY = {"service": ("service", "container", "task definition"), "capacity": ("capacity",)}


@cache  # read for each service of a fleet file; the rules are fixed
def acknowledgeable(kind: str) -> frozenset[str]:
    """Warning ids a service (its containers and task definition included) or a capacity may acknowledge."""
    return frozenset(r.rule_id for r in rule_table() if r.level is Level.WARNING and r.about in _OWNED_BY[kind])


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


Job = tuple[str, int]  # a capacity's name and the number of one of its replays without a limit (FreeReplays)


def replay_jobs(caps: Iterable[CapacityInput], services: Sequence[ServiceInput]) -> list[Job]:
    """The replays ``assess`` makes beside its plans: each of every capacity whose every task fits its hosts (a task
    that fits none would launch a host at each try). A capacity left out is replayed after the plans, where its
    problems are reported."""
    jobs: list[Job] = []
    for cap in caps:
        mine = _placeable(cap, services)
        if mine:
            jobs.extend((cap.name, number) for number in range(free_replay_count(cap, mine)))
    return jobs


def _placeable(cap: CapacityInput, services: Sequence[ServiceInput]) -> list[ServiceInput]:
    """The capacity's services that run tasks, where each task fits its hosts; none where one does not (it would
    launch a host at each try of a replay): what ``assess`` works out beside its plans."""
    mine = [s for s in services if s.capacity == cap.name and s.tasks]
    return [] if any(task_problems(s, cap) for s in mine) else mine


Replays = tuple[dict[str, dict[int, Outcome]], set[str]]  # outcomes by capacity and number; capacities that raised


def replay_claimed(
    caps: Iterable[CapacityInput], services: Sequence[ServiceInput], jobs: Sequence[Job], claims: Claims
) -> Replays:
    """The ``jobs`` this process takes from ``claims``, replayed, until none is left: their outcomes by capacity and
    number, and the capacities whose replays raised (each replayed again after the plans, where the error shows)."""
    by_name = {c.name: c for c in caps}
    made: dict[str, FreeReplays] = {}
    found: dict[str, dict[int, Outcome]] = {}
    failed: set[str] = set()
    while (claim := claims.take()) is not None:
        name, number = jobs[claim]
        if name in failed:
            continue
        try:
            if name not in made:
                made[name] = FreeReplays(by_name[name], services)
            found.setdefault(name, {})[number] = made[name](number)
        except Exception:  # reported where it is worked out again
            failed.add(name)
    return found, failed


def _joined(jobs: Sequence[Job], parts: Iterable[Replays]) -> dict[str, list[Outcome]]:
    """Each capacity's replays in their order, from every process's part, where all came back: none for a capacity
    whose replay raised or whose replay was taken by a child that died (it is replayed after the plans)."""
    found: dict[str, dict[int, Outcome]] = {}
    failed: set[str] = set()
    for outcomes, raised in parts:
        failed |= raised
        for name, numbered in outcomes.items():
            found.setdefault(name, {}).update(numbered)
    wanted: dict[str, int] = {}
    for name, _ in jobs:
        wanted[name] = wanted.get(name, 0) + 1
    return {
        name: [numbered[n] for n in range(wanted[name])]
        for name, numbered in found.items()
        if name not in failed and len(numbered) == wanted.get(name)
    }


def scale_capacities(caps: Iterable[CapacityInput], services: Sequence[ServiceInput]) -> dict[str, tuple[int, int]]:
    """``placement.scaled_instances`` for each capacity of more than WHOLE_TASKS tasks, each fitting its hosts: what
    ``assess`` runs beside its plans and the replays. A capacity whose packing raises is left out."""
    out = {}
    for cap in caps:
        mine = _placeable(cap, services)
        if sum(s.tasks for s in mine) <= WHOLE_TASKS:
            continue
        try:
            out[cap.name] = scaled_instances(cap, mine)
        except Exception:  # reported where it is worked out again
            continue
    return out


def _scaled_then_replayed(
    caps: Sequence[CapacityInput], services: Sequence[ServiceInput], jobs: Sequence[Job], claims: Claims
) -> tuple[dict[str, tuple[int, int]], Replays]:
    """The scaled fleets' packings, then the replays left to take (the third process beside the plans). The packing is
    one piece of work the caller waits for, where the replays are many any process may take: in a child it runs at
    the caller's priority, and the child steps back for the replays (``beside.step_back``)."""
    scaled = scale_capacities(caps, services)
    step_back()
    return scaled, replay_claimed(caps, services, jobs, claims)


BESIDE_TASKS = 50  # tasks on EC2 capacities from which ECS's placement is replayed beside the plans (docs/planning.md)


def assess(
    capacities: Iterable[CapacityInput],
    services: Iterable[ServiceInput],
    *,
    outside: Iterable[OutsideService] = (),
    clashes: Iterable[NameClash] = (),
    shape_errors: Iterable[tuple[str, str]] = (),
    meanwhile: Callable[[Plan, Plan], object] | None = None,
) -> Assessment:
    """Plans ``services`` on ``capacities`` (at their largest counts, and at a deployment's surge) and runs
    every rule of :data:`RULES`. ``meanwhile``: called with the steady plan and the surge's once this process has
    planned and taken its share of the replays, before it waits for the processes beside it: work that needs the plans
    alone, done while they finish (the ``plan`` command writes the plan's hosts and services there)."""
    caps = {c.name: c for c in sorted(capacities, key=lambda c: c.name)}
    svcs = sorted(services, key=lambda s: s.name)
    ec2 = [c for c in caps.values() if c.kind != MANAGED_INSTANCES]
    on_ec2 = [sum(s.tasks for s in svcs if s.capacity == c.name) for c in ec2]
    # ECS's placement is replayed in two more processes while the plans are made, and the scaled fleet packed in a
    # fourth, where that pays (``beside``): the plans and the replays take about as long on some fleets, and on others
    # one of them most of the time. Each process takes the next replay as it is free (``Claims``), the scaled
    # packing's once that is done, and this one those left after its plans, so none waits on another's fixed share
    # with a core idle (docs/planning.md).
    jobs = replay_jobs(ec2, svcs) if sum(on_ec2) >= BESIDE_TASKS else []
    with Claims(len(jobs)) as claims:
        replaying = bool(jobs) and claims.shared
        with (
            Beside(partial(replay_claimed, ec2, svcs, jobs, claims), worth=replaying) as first,
            Beside(partial(replay_claimed, ec2, svcs, jobs, claims), worth=replaying) as second,
            Beside(
                partial(_scaled_then_replayed, ec2, svcs, jobs, claims),
                worth=replaying and max(on_ec2, default=0) > WHOLE_TASKS,
                urgent=True,
            ) as scaling,
        ):
            steady = plan(caps.values(), svcs)
            # The surge is planned without the bound: the answer says how many instances a deployment needs.
            free = [replace(c, max_instances=None) for c in caps.values()]
            surge = _steady_repeated(svcs, steady, plan(free, svcs, surge=True, host_lp=False))
            if _surge_read(caps, svcs, surge):
                surge = _steady_repeated(svcs, steady, plan(free, svcs, surge=True))
            parts = [replay_claimed(ec2, svcs, jobs, claims) if jobs else ({}, set())]
            if meanwhile is not None:
                meanwhile(steady, surge)
            parts += [half.result() for half in (first, second) if half.started]
            scaled: dict[str, tuple[int, int]] = {}
            if scaling.started:
                scaled, part = scaling.result()
                parts.append(part)
            replays = _joined(jobs, parts)
    findings = []
    placement: dict[str, CapacityPlacement] = {}
    for cap in caps.values():
        if not placement_modelled(cap, steady):
            continue
        try:
            packed = (surge.capacity(cap.name), steady.capacity(cap.name))
            placement[cap.name] = place_capacity(cap, svcs, packed, replays.get(cap.name), scaled.get(cap.name))
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
        name: cap.max_instances if cap.max_instances is not None else derived_max(ctx, name)
        for name, cap in caps.items()
        if cap.max_instances is not None or cap.kind != MANAGED_INSTANCES  # AWS takes no limit there
    }
    return Assessment(steady, surge, tuple(findings), max_instances, tuple(ctx.outside), placement)


def placement_modelled(cap: CapacityInput, steady: Plan) -> bool:
    """Whether ECS's placement on ``cap`` is modelled (``place_capacity``): not where AWS places (Managed Instances),
    nor where the steady plan leaves tasks unplaced (that capacity already fails)."""
    return cap.kind != MANAGED_INSTANCES and not steady.capacity(cap.name).unplaced


def surge_factor(services: Iterable[ServiceInput]) -> int | None:
    """The whole number every one of ``services`` (one capacity's) surges by: their maximum percent, where it is the
    same for all and a multiple of 100 (ECS's default of 200 among them), over 100; None otherwise. A surge of k times
    every count is held by the steady plan's hosts k times over."""
    percents = {s.max_percent for s in services if s.tasks}
    if len(percents) != 1:
        return None
    (percent,) = percents
    return percent // 100 if percent >= 100 and percent % 100 == 0 else None


def _steady_repeated(services: Sequence[ServiceInput], steady: Plan, surge: Plan) -> Plan:
    """``surge`` with each capacity's packing replaced by the steady plan's hosts k times over, where its services
    all surge by k (``surge_factor``), the steady plan holds all of them, and that is fewer instances. The steady
    plan has the host-level LP's packing; k copies of each of its hosts hold k times each count, the surge. The
    surge's bounds stay its own (k times a bound on the steady hosts bounds nothing about the surge's)."""
    out = []
    for packed in surge.capacities:
        name = packed.capacity.name
        k = surge_factor(s for s in services if s.capacity == name)
        held = steady.capacity(name)
        if k is None or not held.fits or not packed.fits or k * held.instance_count >= packed.instance_count:
            out.append(packed)
            continue
        groups = [replace(g, count=g.count * k) for g in held.instances]
        out.append(replace(packed, instances=groups, instances_needed=k * held.instance_count))
    return replace(surge, capacities=out)


def _surge_read(caps: Mapping[str, CapacityInput], services: Iterable[ServiceInput], surge: Plan) -> bool:
    """Whether a capacity's surge is read where the host-level LP might pack it tighter: a given max_instances (which
    ``SurgeDoesNotFit`` compares it with, so the figure is the same whatever max_instances is given), or a derived one
    past ECS's instances per cluster. Where its services all surge by a whole factor (``surge_factor``), the packing
    in hand is at most the steady plan's LP packing repeated (``_steady_repeated``); a given max_instances reads it
    only where it does not fit (the LP then decides whether the surge does) or is more than HOST_LP_GAP above the
    surge's bound (a small fleet's steady hosts, repeated, can be a host or two more than the LP packs: 8 where it
    packs 7; a large fleet's within 0.1%). Where max_instances is left to the plan, it is what ECS's own placement
    needs, which is never below the surge's packing, so the LP, the planner's costliest strategy, would only double a
    plan's time at 10,000 tasks (docs/planning.md). Not where the LP would not run (``packing.host_lp_runs``): a plan
    at its bound, or a capacity's surge past the LP's tasks and services within HOST_LP_GAP of its bound (the few
    partitions within them there, isolation groups kept apart, go without it too)."""
    limit = quotas.INSTANCES_PER_CLUSTER.number
    for name, cap in caps.items():
        packed = surge.capacity(name)
        counts = [s.surge_count() for s in services if s.capacity == name]
        tasks, kinds = sum(counts), sum(1 for n in counts if n)
        if not packing.host_lp_runs(tasks, kinds, packed.instance_count, packed.instance_lower_bound):
            continue  # the LP does not run: planning again would give the same plan
        repeated = surge_factor(s for s in services if s.capacity == name) is not None
        close = packed.instance_count <= packing.HOST_LP_GAP * packed.instance_lower_bound
        if cap.max_instances is not None and (not repeated or not close or packed.instance_count > cap.max_instances):
            return True
        if cap.kind != MANAGED_INSTANCES and packed.instance_count > limit:
            return True
    return False


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
            ((f"`{r.rule_id}`", r.level, r.about, r.source, r.explanation) for r in rule_table()),
        ),
    ]
    return "\n".join(lines) + "\n"


__all__ = [
    "BUDGET_BELOW_NEED",
    "CLIENT_LIMIT_WARNING",
    "CONSTRAINT_NOT_PLANNED",
    "DEPLOYMENT_CANNOT_START",
    "DISTINCT_INSTANCE_PACKED",
    "FRACTION_WARNING",
    "HOST_PORT_TWICE",
    "OTHER_RULES",
    "OUTSIDE_PLAN_WARNING",
    "PLACEMENT_NEEDS_MORE",
    "PLACEMENT_SCATTERS",
    "PLAN_RULES",
    "ROLL_TAKES_HOST_OUT",
    "RULES",
    "RULES_BY_ID",
    "RULE_FAILED",
    "SURGE_WARNING",
    "TASK_ALONE_RULES",
    "TASK_MIXES_GPU_OPTIONS",
    "UNVERIFIED_INSTANCE_FAMILY",
    "ZONE_REBALANCING_NOT_REPLAYED",
    "Assessment",
    "Check",
    "Context",
    "Finding",
    "Level",
    "NameClash",
    "OutsideService",
    "Rule",
    "Source",
    "acknowledgeable",
    "assess",
    "budget_below_need",
    "budget_is_a_guess",
    "counts_exceed_max_instances",
    "deployment_cannot_start",
    "derived_max_instances",
    "derived_max_over_quota",
    "ecs_placement_needs_more",
    "evidence_older_than_image",
    "finding_line",
    "isolation_not_enforceable",
    "markdown",
    "max_instances_unknown",
    "mps_client_limit",
    "placement_scatters",
    "roll_in_service",
    "roll_takes_host_out",
    "rule_table",
    "service_outside_plan",
    "surge_does_not_fit",
    "surge_factor",
    "task_alone_findings",
    "task_shape_not_literal",
    "tasks_over_quota",
]
