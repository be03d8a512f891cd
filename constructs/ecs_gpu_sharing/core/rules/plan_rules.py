"""The rules the plan checks: each check a function of the plan's Context, registered beside its id, level,
subject and explanation by ``@plan_rule``; ``PLAN_RULES`` is the table they make, in the order declared."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TypeVar

from .. import quotas
from ..allocation import digest_of
from ..errors import GpuSharingError
from ..mps import MAX_CLIENTS_PER_GPU
from ..placement_strategies import DEFAULT_PRESET, scatters, strategy_label
from ..planner import MANAGED_INSTANCES, ServiceInput, tasks_on_a_host
from ..rule_family import Level
from ..task_rules import TASK_RULES, TaskRule
from ..text import few
from .model import (
    BUDGET_BELOW_NEED,
    CLIENT_LIMIT_WARNING,
    FRACTION_WARNING,
    OUTSIDE_PLAN_WARNING,
    SURGE_WARNING,
    Check,
    Context,
    Rule,
)
from .sizing import derived_max, roll_in_service

PLACEMENT_NEEDS_MORE = "ecs-gpu-sharing:EcsPlacementNeedsMoreInstances"
DEPLOYMENT_CANNOT_START = "ecs-gpu-sharing:DeploymentCannotStart"
PLACEMENT_SCATTERS = "ecs-gpu-sharing:PlacementScatters"
ROLL_TAKES_HOST_OUT = "ecs-gpu-sharing:RollTakesHostOutOfService"
HOST_PORT_TWICE = "ecs-gpu-sharing:HostPortTwiceOnAHost"
DISTINCT_INSTANCE_PACKED = "ecs-gpu-sharing:DistinctInstancePacked"
CONSTRAINT_NOT_PLANNED = "ecs-gpu-sharing:PlacementConstraintNotPlanned"
ZONE_REBALANCING_NOT_REPLAYED = "ecs-gpu-sharing:ZoneRebalancingNotReplayed"


_REGISTERED: list[Rule] = []
_TABLE_BUILT = False  # set once PLAN_RULES is made, at the end of this module
_C = TypeVar("_C", bound=Check)


def plan_rule(rule_id: str, level: Level, about: str, explanation: str) -> Callable[[_C], _C]:
    """Registers the check below it as a plan rule, its id, level, subject and explanation beside it (the cdk-nag
    way). The table (``PLAN_RULES``) is in the order the rules are declared here; a rule declared anywhere else, once
    the table is made, would never run, so it is refused."""

    def register(check: _C) -> _C:
        if _TABLE_BUILT:
            raise GpuSharingError(
                f"plan rule {rule_id} ({getattr(check, '__name__', check)}) is declared after the plan's rule table "
                "was made, so it would never run; declare it in core/rules/plan_rules.py, above PLAN_RULES"
            )
        _REGISTERED.append(Rule(rule_id, level, about, explanation, check))
        return check

    return register


def _task_rule(rule: TaskRule) -> Check:
    def check(ctx: Context) -> Iterator[tuple[str, str]]:
        for s in ctx.services:
            what = rule.check(s, ctx.capacities[s.capacity])
            if what is not None:
                yield s.name, f"{what}; {rule.fix}"

    return check


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


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


LISTED = 5  # services a capacity's message names, the largest counts first; the rest are counted


def _largest_few(parts: list[tuple[int, str, str]]) -> str:
    """(count, name, text) of each service: the texts of the LISTED largest counts (ties by name), and how many more."""
    return few([text for _, _, text in sorted(parts, key=lambda p: (-p[0], p[1]))], LISTED)


@plan_rule(
    "ecs-gpu-sharing:CountsExceedMaxInstances",
    Level.ERROR,
    "capacity",
    "the services' largest counts must fit within the capacity's max_instances",
)
def counts_exceed_max_instances(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():
        steady = ctx.steady.capacity(name)
        left = sum(u.tasks for u in steady.unplaced if u.reason.startswith("no room"))
        if left:
            counts = _largest_few([(s.tasks, s.name, f"{s.name} {s.tasks} ({s.count_source})") for s in ctx.on(name)])
            yield (
                name,
                f"the services' largest counts ({counts}) need {steady.instances_needed} instances of "
                f"{cap.instance_type}, more than max_instances {cap.max_instances} ({_plural(left, 'task')} "
                f"left unplaced); raise max_instances to at least {steady.instances_needed}, or lower the counts",
            )


@plan_rule(
    quotas.INSTANCES_PER_CLUSTER.rule_id,
    Level.ERROR,
    "capacity",
    f"at most {quotas.INSTANCES_PER_CLUSTER.number:,} {quotas.INSTANCES_PER_CLUSTER.what} "
    f"({quotas.INSTANCES_PER_CLUSTER.source}): a derived max_instances is held to it, as a given one is",
)
def derived_max_over_quota(ctx: Context) -> Iterator[tuple[str, str]]:
    """A max_instances left to the plan is held to the quota a given one is: ECS's container instances per cluster."""
    limit = quotas.INSTANCES_PER_CLUSTER.number
    for name, cap in ctx.capacities.items():
        if cap.max_instances is not None or cap.kind == MANAGED_INSTANCES:
            continue
        need = derived_max(ctx, name)
        if need > limit:
            placed = ctx.placement.get(name)
            why = f"the deployment surge packs into {ctx.surge.capacity(name).instance_count} {cap.instance_type}"
            if placed is not None:
                why += f"; ECS's own placement needs {placed.needed} at the peak of a fleet-wide rollout"
            yield (
                name,
                f"max_instances would be derived as {need} ({why}), "
                f"more than ECS's {limit:,} container instances per cluster ({quotas.INSTANCES_PER_CLUSTER.source}); "
                "lower the counts or the services' maximum percent, use a larger instance type, or split the fleet "
                "over clusters",
            )


@plan_rule(
    quotas.TASKS_PER_SERVICE.rule_id,
    Level.ERROR,
    "service",
    f"at most {quotas.TASKS_PER_SERVICE.number:,} {quotas.TASKS_PER_SERVICE.what} "
    f"({quotas.TASKS_PER_SERVICE.source}): a service's largest count (its auto scaling maximum) is held to it",
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


@plan_rule(
    "ecs-gpu-sharing:MaxInstancesUnknown",
    Level.ERROR,
    "capacity",
    "max_instances can be derived only when every service on the capacity can be counted",
)
def max_instances_unknown(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():  # the synth stops here before warnings show: say why, and the fix
        unknown = {
            o.name: f"{o.name} cannot be counted ({o.reason}: {o.fix})" for o in ctx.outside if o.capacity == name
        }
        if cap.max_instances is None and unknown and cap.kind != MANAGED_INSTANCES:
            yield (
                name,
                f"max_instances is left to the plan, but {'; '.join(unknown[n] for n in sorted(unknown))}, so the plan "
                "cannot derive it; give max_instances explicitly",
            )


plan_rule(
    "ecs-gpu-sharing:ServiceNameClash",
    Level.ERROR,
    "service",
    "services are named in plans by the names users give; two services cannot share one",
)(_clashes("service"))


plan_rule(
    "ecs-gpu-sharing:CapacityNameClash",
    Level.ERROR,
    "capacity",
    "capacities are named in plans by the names users give; two capacities cannot share one",
)(_clashes("capacity"))


@plan_rule(
    "ecs-gpu-sharing:TaskShapeNotLiteral",
    Level.ERROR,
    "service",
    "a task's CPU, memory and GPU figures must be literal numbers at synth for the plan to count them",
)
def task_shape_not_literal(ctx: Context) -> Iterator[tuple[str, str]]:
    yield from ctx.shape_errors


@plan_rule(
    BUDGET_BELOW_NEED,
    Level.ERROR,
    "service",
    "a GPU budget must cover the allocation note's model residency plus its peak working memory",
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


@plan_rule(
    "ecs-gpu-sharing:BudgetIsAGuess",
    Level.WARNING,
    "service",
    "a GPU budget without measured evidence is a guess the plan trusts. Run the service under its real request mix "
    "with the telemetry daemon (GpuTelemetry), then `ecs-gpu-sharing evaluate --cluster CLUSTER` with `--fleet "
    "FLEET --write` (a fleet file: records the evidence) or `--plan cdk.out/gpu-fleet-plan.json` (a construct "
    "app: give the evidence in an AllocationNote)",
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


@plan_rule(
    "ecs-gpu-sharing:EvidenceOlderThanImage",
    Level.WARNING,
    "service",
    "evidence measured on another image than the one the service runs may not hold",
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


@plan_rule(
    "ecs-gpu-sharing:IsolationNotEnforceable",
    Level.WARNING,
    "service",
    "ECS cannot keep isolation groups on separate GPUs of one multi-GPU host",
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


@plan_rule(
    SURGE_WARNING,
    Level.WARNING,
    "capacity",
    "a rolling deployment runs up to maximum percent of the tasks at once; they should fit max_instances",
)
def surge_does_not_fit(ctx: Context) -> Iterator[tuple[str, str]]:
    for name, cap in ctx.capacities.items():
        if cap.max_instances is None or ctx.steady.capacity(name).unplaced:
            continue
        need = ctx.surge.capacity(name).instance_count
        if need > cap.max_instances:
            surges = _largest_few([(s.surge_count(), s.name, f"{s.name} {s.surge_count()}") for s in ctx.on(name)])
            yield (
                name,
                f"a rolling deployment's surge (largest count x maximum percent / 100: {surges}) needs {need} "
                f"instances of {cap.instance_type}, more than max_instances {cap.max_instances}: deployments will "
                f"wait for capacity; raise max_instances to {need}, or lower the services' maximum percent",
            )


@plan_rule(
    PLACEMENT_NEEDS_MORE,
    Level.WARNING,
    "capacity",
    "ECS places task by task with the services' strategies: at the peak of a fleet-wide rollout it may need more "
    "instances than the plan's packing; max_instances should hold what it needs (core.placement)",
)
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


@plan_rule(
    DEPLOYMENT_CANNOT_START,
    Level.WARNING,
    "service",
    "a deployment with minimum healthy 100% starts a new task before it stops an old one: there must be room for "
    "one at max_instances",
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


@plan_rule(
    PLACEMENT_SCATTERS,
    Level.WARNING,
    "service",
    "a placement strategy that does not end in binpack spreads tasks over more instances than the plan counts",
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


@plan_rule(
    ROLL_TAKES_HOST_OUT,
    Level.WARNING,
    "capacity",
    "a host roll keeps min_instances hosts in service only when max_instances is above min_instances "
    "(CloudFormation launches each replacement below MaxSize)",
)
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


@plan_rule(
    CLIENT_LIMIT_WARNING,
    Level.WARNING,
    "service",
    f"ECS places by GPU memory only; budgets so small that more than {MAX_CLIENTS_PER_GPU} fit on a GPU can "
    "exceed NVIDIA MPS's client limit",
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


FRACTION_ROOM_MIB = 1024
"""What a suggested fraction leaves of a budget for the CUDA context and a framework's libraries (a PyTorch process
held 676 MiB beyond its allocator on an H200: docs/gpu-measured.md)."""


@plan_rule(
    FRACTION_WARNING,
    Level.WARNING,
    "service",
    "under MPS a framework is told the whole GPU as its total, so a fraction of GPU memory in a container's command "
    "(vLLM's --gpu-memory-utilization) is a fraction of the whole GPU, not of the container's budget",
)
def memory_fraction_of_whole_gpu(ctx: Context) -> Iterator[tuple[str, str]]:
    for s in ctx.services:
        cap = ctx.capacities[s.capacity]
        total = cap.registered_gpu_memory_mib or cap.usable_gpu_memory_mib
        for flag, fraction, budget in s.shape.memory_fractions:
            asked = math.floor(fraction * total)
            if asked + cap.cuda_context_mib <= budget:
                continue
            most = max(0, budget - FRACTION_ROOM_MIB) * 100 // total / 100
            context = f" and a {cap.cuda_context_mib} MiB CUDA context" if cap.cuda_context_mib else ""
            fix = (
                f"set it at most {most:.2f} (the budget less {FRACTION_ROOM_MIB} MiB for the CUDA context and "
                "libraries, over the GPU)"
                if most > 0
                else f"raise the GPU budget to at least {FRACTION_ROOM_MIB + math.ceil(total / 100)} MiB (the "
                f"{FRACTION_ROOM_MIB} MiB a CUDA context and libraries take, and a hundredth of the GPU) for a "
                "fraction of 0.01"
            )
            yield (
                s.name,
                f"the container's {flag} {fraction:g} asks for {asked} MiB{context}: under MPS the framework takes "
                f"the fraction of the whole GPU ({total} MiB as ECS registers it), not of its budget of {budget} MiB, "
                f"and cannot start or runs out of memory; {fix}, or give the size in bytes where the framework takes "
                "one",
            )


@plan_rule(
    HOST_PORT_TWICE,
    Level.ERROR,
    "service",
    "ECS places a task only on a host where the host ports it maps are free ('Use strategies to define Amazon ECS task "
    "placement': CPU, GPU, memory and port requirements), so no host holds two tasks mapping one static host port",
)
def host_port_twice(ctx: Context) -> Iterator[tuple[str, str]]:
    said: set[str] = set()
    for when, mapping, on in _hosts_planned(ctx, lambda s: bool(s.shape.host_ports)):
        for (port, protocol), held in _port_holders(on, mapping):
            total = sum(n for _, n in held)
            shown = ", ".join(name if n == 1 else f"{name} x{n}" for name, n in held)
            for name in [name for name, _ in held if name not in said]:
                said.add(name)
                yield (
                    name,
                    f"the plan puts {total} tasks that map host port {port}/{protocol} on one host ({shown}) {when}, "
                    "where ECS places one: its instances are too few and the extra tasks wait; map host port 0 (a "
                    "dynamic port, which a load balancer's target group follows) or use the awsvpc network mode",
                )


def _hosts_planned(
    ctx: Context, keep: Callable[[ServiceInput], bool]
) -> Iterator[tuple[str, dict[str, ServiceInput], dict[str, int]]]:
    """Each host group of the steady plan, then of its deployment surge, on the capacities where a service that
    ``keep`` holds of runs: when, those services by name, and each service's tasks on one of its hosts. A fleet of
    thousands of host groups with no such service is not read."""
    for when, p in (("at its largest counts", ctx.steady), ("at a deployment's surge", ctx.surge)):
        for c in p.capacities:
            kept = {s.name: s for s in p.services if s.capacity == c.capacity.name and keep(s)}
            if kept:
                for on in tasks_on_a_host(c, p.services):
                    yield when, kept, on


def _port_holders(
    on: dict[str, int], mapping: dict[str, ServiceInput]
) -> list[tuple[tuple[int, str], list[tuple[str, int]]]]:
    """The static host ports that more than one task of one host maps, each with (service, its tasks there)."""
    holders: dict[tuple[int, str], list[tuple[str, int]]] = {}
    for name in sorted(mapping):
        for port in mapping[name].shape.host_ports if name in on else ():
            holders.setdefault(port, []).append((name, on[name]))
    return [(port, held) for port, held in sorted(holders.items()) if sum(n for _, n in held) > 1]


@plan_rule(
    DISTINCT_INSTANCE_PACKED,
    Level.ERROR,
    "service",
    "a distinctInstance placement constraint keeps each task of the service's group on a different container "
    "instance (Amazon ECS API Reference, PlacementConstraint), so no host of the plan holds two of its tasks",
)
def distinct_instance_packed(ctx: Context) -> Iterator[tuple[str, str]]:
    said: set[str] = set()
    for when, distinct, on in _hosts_planned(ctx, lambda s: s.distinct_instance):
        for name, n in sorted(on.items()):
            if name in distinct and n > 1 and name not in said:
                said.add(name)
                yield (
                    name,
                    f"its distinctInstance constraint runs one of its tasks an instance, but the plan puts {n} of its "
                    f"tasks on one host {when} (a rolling deployment's new tasks are of its group too): its instances "
                    "are too few and the extra tasks wait; drop the constraint (the service spreads over Availability "
                    "Zones), or run it on a capacity of its own with max_instances set",
                )


@plan_rule(
    CONSTRAINT_NOT_PLANNED,
    Level.WARNING,
    "service",
    "a memberOf placement constraint lets ECS use only the hosts its expression matches, and the plan counts every "
    "host of the capacity (it models only isolation groups' task:group terms and the MPS capability)",
)
def constraint_not_planned(ctx: Context) -> Iterator[tuple[str, str]]:
    for s in ctx.services:
        for expression in s.constraints_not_planned:
            yield (
                s.name,
                f"its memberOf expression {expression!r} lets ECS place its tasks only on the hosts it matches, but "
                "the plan counts every host of the capacity, so its instances and max_instances may be too few; give "
                "the service a capacity of its own whose hosts all match, or acknowledge the warning with a reason",
            )


@plan_rule(
    ZONE_REBALANCING_NOT_REPLAYED,
    Level.WARNING,
    "service",
    "ECS's Availability Zone rebalancing moves a service's running tasks between zones, which the plan's replay of "
    "ECS's placement does not do (core.constraints.zone_rebalancing says where ECS does it)",
)
def zone_rebalancing_not_replayed(ctx: Context) -> Iterator[tuple[str, str]]:
    for s in ctx.services:
        if s.zone_rebalancing and ctx.capacities[s.capacity].kind != MANAGED_INSTANCES:
            yield (
                s.name,
                "ECS rebalances its tasks over Availability Zones (availabilityZoneRebalancing ENABLED, or left out, "
                "which ECS turns on for a new service spread over zones first): it stops tasks in the zone with the "
                "most and starts them in the zone with the fewest, each start loading its model again, and the plan's "
                "replay of ECS's placement does not, so max_instances may hold too few; set it DISABLED "
                "(SharedGpuService's default; on an aws-ecs-patterns service, service.node.default_child."
                "availability_zone_rebalancing), or acknowledge the warning",
            )


@plan_rule(
    OUTSIDE_PLAN_WARNING,
    Level.WARNING,
    "service",
    "a service on a GPU capacity whose count or task shape the plan cannot read is outside the fit proof",
)
def service_outside_plan(ctx: Context) -> Iterator[tuple[str, str]]:
    for o in ctx.outside:
        yield o.name, f"runs on capacity {o.capacity} but is outside the fit plan: {o.reason}; {o.fix}"


PLAN_RULES: tuple[Rule, ...] = (
    *(Rule(r.rule_id, Level.ERROR, "service", r.explanation, _task_rule(r)) for r in TASK_RULES),
    *_REGISTERED,
)
_TABLE_BUILT = True
