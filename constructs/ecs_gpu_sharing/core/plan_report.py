"""Renders a fleet assessment: the JSON contract, Markdown, a terminal table, an SVG and a short summary.

Pure Python. The JSON shape is a contract (``core.plan_document``, docs/plan-json.md); change it only with a version
note.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from . import plan_document as pd
from . import text
from .allocation import Evidence, headroom
from .cost import Prices, add_cost
from .files import WrittenParts, keep_texts
from .headroom import ORDER_HEADROOM_PERCENT, estimate_headroom, with_headroom
from .markdown import table
from .placement import REPLAYED_TASKS
from .planner import MANAGED_INSTANCES, CapacityPlan, GpuLoad, Plan, ServiceInput, interfaces_used
from .rules import Assessment, Finding, Level, finding_line, placement_modelled
from .shape import TaskShape


def _allocation(s: ServiceInput) -> pd.Allocation | None:
    """A service's allocation note with its headroom: budget less need, and budget less the measured peak."""
    note = s.allocation
    if note is None:
        return None
    return pd.Allocation(
        residency_mib=note.residency_mib,
        peak_working_mib=note.peak_working_mib,
        need_mib=note.need_mib,
        headroom_mib=headroom(s.task_gpu_budget_mib, note.need_mib),
        compute_percent=note.compute_percent,
        shared_failure=note.shared_failure,
        isolation_group=note.isolation_group or None,
        isolate_host=note.isolate_host,
        evidence=_evidence(s, note.evidence),
    )


def _evidence(s: ServiceInput, evidence: Evidence | None) -> pd.Evidence | None:
    if evidence is None:
        return None
    return pd.Evidence(
        peak_mib=evidence.peak_mib,
        p99_mib=evidence.p99_mib,
        measured_on=evidence.measured_on.isoformat(),
        source=evidence.source,
        image=evidence.image,
        headroom_mib=headroom(s.task_gpu_budget_mib, evidence.peak_mib),
    )


def allocation_line(s: ServiceInput) -> str | None:
    """One line about a service's allocation note, for the table, the Markdown and the SVG."""
    note = s.allocation
    if note is None:
        return None
    budget = s.task_gpu_budget_mib
    parts = [
        f"{s.name}: budget {budget} MiB, needs {note.need_mib} ({note.residency_mib} resident + "
        f"{note.peak_working_mib} working), headroom {budget - note.need_mib} MiB"
    ]
    if note.evidence is not None:
        e = note.evidence
        parts.append(
            f"measured peak {e.peak_mib} MiB on {e.measured_on.isoformat()} ({e.source}), "
            f"headroom {budget - e.peak_mib} MiB"
        )
    else:
        parts.append("not measured (a guess)")
    if note.compute_percent is not None:
        parts.append(f"needs {note.compute_percent}% of the GPU's compute")
    if note.isolation_group:
        parts.append(f"isolation group {note.isolation_group}" + (" (own hosts)" if note.isolate_host else ""))
    parts.append(f"if the MPS server or host restarts: {note.shared_failure}")
    return "; ".join(parts)


def document(
    assessment: Assessment,
    prices: Prices | None = None,
    *,
    allowances: Sequence[tuple[str, str, str]] = (),
    not_judged: Sequence[tuple[str, str]] = (),
    deployed_as: Mapping[str, pd.DeployedAs] | None = None,
    ahead: HostsAhead | None = None,
) -> pd.PlanDocument:
    """The plan document (``core.plan_document``): the same for ``ecs-gpu-sharing plan --json`` and
    ``cdk.out/gpu-fleet-plan.json``; with ``prices``, what it costs (``core.cost``), else how to get prices. A synth
    adds the allow-list's allowances (resource, rule id, reason) and what it could not judge (resource, reason).
    ``ahead``: the hosts and services ``HostsAhead`` made of this assessment's plans, taken where they stand."""
    plan = assessment.steady
    deployed_as = deployed_as or {}
    shapes = {s.name: s.shape for s in plan.services}
    made = ahead.hosts if ahead is not None else {}
    services = ahead.services if ahead is not None and ahead.stands(assessment) and not deployed_as else None
    planned = pd.PlanDocument(
        capacities=tuple(
            _capacity(c, assessment, made.get(c.capacity.name) or _instance_groups(c, shapes)) for c in plan.capacities
        ),
        services=services or _services(plan, assessment.surge, assessment.placement, deployed_as),
        outside_plan=tuple(
            pd.OutsidePlan(name=o.name, capacity=o.capacity, reason=o.reason) for o in assessment.outside
        ),
        allowances=tuple(pd.Allowance(resource=r, rule_id=rule, reason=why) for r, rule, why in allowances),
        not_judged=tuple(pd.NotJudged(resource=r, reason=why) for r, why in not_judged),
        findings=tuple(
            pd.Finding(
                rule_id=f.rule_id,
                level=str(f.level),
                about=f.about,
                subject=f.subject,
                message=f.message,
                acknowledged=f.acknowledged,
            )
            for f in assessment.findings
        ),
        summary=pd.Summary(
            instances=plan.instances,
            instance_lower_bound=plan.instance_lower_bound,
            gpus=plan.gpus,
            gpu_lower_bound=plan.gpu_lower_bound,
            whole_gpu_gpus=plan.whole_gpu_gpus,
            fits=plan.fits and not assessment.errors,
            cost_note="",
        ),
    )
    return add_cost(planned, prices)


def _services(
    plan: Plan, surge: Plan, placed: Collection[str], deployed_as: Mapping[str, pd.DeployedAs]
) -> tuple[pd.Service, ...]:
    """The document's services: ``placed``, the capacities whose placement was modelled."""
    return tuple(
        pd.Service(
            name=s.name,
            capacity=s.capacity,
            tasks=plan.counts[s.name],
            count_source=s.count_source,
            max_percent=s.max_percent,
            surge_tasks=surge.counts[s.name],
            placement=tuple(s.placement) if s.capacity in placed else None,
            placed=plan.placed[s.name],
            task=pd.TaskFigures(
                cpu_units=s.cpu_units,
                memory_mib=s.memory_mib,
                gpu_budgets_mib=tuple(s.shape.gpu_budgets_mib),
                whole_gpus=s.whole_gpus,
            ),
            allocation=_allocation(s),
            evidence=_evidence(s, s.measured),
            deployed_as=deployed_as.get(s.name),
        )
        for s in plan.services
    )


INSTANCES_DEPTH = 3  # the levels a capacity's ``instances`` are nested at in the document: it, capacities, a capacity
SERVICES_DEPTH = 1  # ... and its ``services``: it


class HostsAhead:
    """A plan's hosts and services made as the document's parts (``hosts``, by capacity name, and ``services``, for
    ``document``'s ``ahead``) and their JSON text written at ``indent`` (``written``, for ``files.json_text``), called
    with the steady plan and the surge's before the document is made: the plan's bulk needs nothing but the plans, so
    the ``plan`` command has them made while ECS's placement is still replayed beside it (``assess``'s ``meanwhile``).
    The services are made as if the placement is modelled on each capacity ``placement_modelled`` names; where it was
    not (its model failed), the document makes its own."""

    def __init__(self, indent: int) -> None:
        self.indent = indent
        self.hosts: dict[str, tuple[pd.InstanceGroup, ...]] = {}
        self.services: tuple[pd.Service, ...] = ()
        self.written = WrittenParts()
        self._plans: tuple[Plan, Plan] | None = None
        self._placed: set[str] = set()

    def __call__(self, steady: Plan, surge: Plan) -> None:
        shapes = {s.name: s.shape for s in steady.services}
        for c in steady.capacities:
            self.hosts[c.capacity.name] = groups = _instance_groups(c, shapes)
            keep_texts(groups, self.indent, INSTANCES_DEPTH, self.written)
        self._plans = (steady, surge)
        self._placed = {c.capacity.name for c in steady.capacities if placement_modelled(c.capacity, steady)}
        self.services = _services(steady, surge, self._placed, {})
        keep_texts(self.services, self.indent, SERVICES_DEPTH, self.written)

    def stands(self, assessment: Assessment) -> bool:
        """Whether the services made here are ``assessment``'s: made of its plans, and its placement modelled where
        they say."""
        plans = self._plans
        return (
            plans is not None
            and plans[0] is assessment.steady
            and plans[1] is assessment.surge
            and self._placed == set(assessment.placement)
        )


def _instance_groups(c: CapacityPlan, shapes: dict[str, TaskShape]) -> tuple[pd.InstanceGroup, ...]:
    alike: dict[object, Any] = {}  # the parts of GPUs and of their tasks, made once (_gpu)
    return tuple(
        pd.InstanceGroup(
            count=group.count,
            gpus=tuple(_gpu(gpu, shapes, alike) for gpu in group.gpus),
            cpu_units_used=group.cpu_units_used,
            memory_mib_used=group.memory_mib_used,
            tasks_without_gpu=tuple(pd.HostTasks(service=name, tasks=n) for name, n in group.tasks_without_gpu),
        )
        for group in c.instances
    )


def _capacity(c: CapacityPlan, assessment: Assessment, instances: tuple[pd.InstanceGroup, ...]) -> pd.Capacity:
    cap = c.capacity
    placed = assessment.placement.get(cap.name)
    return pd.Capacity(
        name=cap.name,
        kind=cap.kind,
        instance_type=cap.instance_type,
        instance_types=tuple(cap.instance_types or (cap.instance_type,)),
        gpus_per_instance=cap.gpus_per_instance,
        ec2_gpu_memory_mib=cap.ec2_gpu_memory_mib,
        registered_gpu_memory_mib=cap.registered_gpu_memory_mib,
        gpu_margin_mib=cap.gpu_margin_mib,
        gpu_memory_basis=cap.gpu_memory_basis,
        gpu_memory_source=cap.gpu_memory_source,
        usable_gpu_memory_mib=cap.usable_gpu_memory_mib,
        host_cpu_units=cap.host_cpu_units,
        host_memory_mib=cap.host_memory_mib,
        daemons=tuple(cap.daemons),
        min_instances=cap.min_instances,
        max_instances=assessment.max_instances.get(cap.name),
        surge_instances=assessment.surge.capacity(cap.name).instance_count,
        ecs_placement_instances=placed.needed if placed else None,
        availability_zones=cap.zones if placed else None,
        expected_instances=placed.expected_after_rollout if placed else None,
        instance_lower_bound=c.instance_lower_bound,
        gpu_lower_bound=c.gpu_lower_bound,
        optimal=c.optimal,
        instances=instances,
    )


def _gpu(gpu: GpuLoad, shapes: dict[str, TaskShape], alike: dict[object, Any]) -> pd.Gpu:
    """The part of one GPU, made once for the GPUs alike in a capacity (``alike``, by what the part says), and each of
    its services' tasks the same way: a plan's hosts repeat a few GPUs' contents (held-out 1007 at 100,000 tasks on
    eight H100s a host: 234 of 2,696 GPUs), and the parts are frozen, so the same part stands for each;
    ``files.json_text`` writes it once."""
    key = (gpu.tasks, gpu.used_gpu_memory_mib, gpu.whole)
    part = alike.get(key)
    if part is None:
        part = alike[key] = pd.Gpu(
            tasks=tuple(_gpu_tasks(name, n, shapes, alike) for name, n in gpu.tasks),
            used_gpu_memory_mib=gpu.used_gpu_memory_mib,
            whole=gpu.whole,
        )
    return part


def _gpu_tasks(name: str, n: int, shapes: dict[str, TaskShape], alike: dict[object, Any]) -> pd.GpuTasks:
    part = alike.get((name, n))  # a pair: a GPU's key above is a triple
    if part is None:
        shape = shapes[name]
        part = alike[(name, n)] = pd.GpuTasks(
            service=name, tasks=n, task_gpu_budget_mib=shape.task_gpu_budget_mib, containers=shape.clients
        )
    return part


def sizing_line(assessment: Assessment, name: str, max_instances: int) -> str:
    """max_instances, what the packing's surge needs, what ECS's own placement needs and keeps after rollouts."""
    surge = assessment.surge.capacity(name).instance_count
    line = f"max instances {max_instances}, deployment surge needs {surge}"
    placed = assessment.placement.get(name)
    if placed is not None:
        line += f" packed, {placed.needed} as ECS places it"
        if (margin := with_headroom(placed.needed)) > placed.needed:
            line += f" ({margin} with {ORDER_HEADROOM_PERCENT}% headroom for orders not replayed)"
        line += f"; {text.count(placed.expected_after_rollout, 'instance')} expected after rollouts"
        if placed.scaled_from:
            line += (
                f" (estimated from replays of the fleet scaled from {placed.scaled_from:,} tasks to {REPLAYED_TASKS:,},"
                f" {estimate_headroom(placed.scaled_from):.0%} headroom added to the need)"
            )
    return line


def capacity_line(c: CapacityPlan) -> str:
    cap = c.capacity
    gpus = c.instance_count * cap.gpus_per_instance
    usable = gpus * cap.usable_gpu_memory_mib
    share = f" ({100 * c.used_gpu_memory_mib // usable}%)" if usable else ""
    density = f"{c.whole_gpu_gpus / c.gpus_used:.1f}x" if c.gpus_used else "-"
    return (
        f"{cap.name} ({cap.instance_type}): {text.count(c.instance_count, 'instance')}"
        f"{' (optimal)' if c.optimal else f', lower bound {c.instance_lower_bound}'}, "
        f"{c.gpus_used} of {gpus} GPUs used, "
        f"{c.used_gpu_memory_mib} of {usable} MiB usable GPU memory{share}; {c.whole_gpu_gpus} whole GPUs "
        f"otherwise ({density} density)"
    )


def types_line(c: CapacityPlan) -> str | None:
    """Which instance type the figures are from, when several are allowed."""
    cap = c.capacity
    if len(cap.instance_types) < 2:
        return None
    who = "AWS picks the type" if cap.kind == MANAGED_INSTANCES else "the group may launch any of them"
    return (
        f"{cap.name}: planned against {cap.instance_type}, the one of {', '.join(cap.instance_types)} that holds the "
        f"least ({who}; the plan holds for each)"
    )


def interfaces_line(c: CapacityPlan, services: Sequence[ServiceInput]) -> str | None:
    """Where the hosts' network interfaces bound the plan (an instance holds as many awsvpc tasks as it has): the
    limit, where it comes from, and how many instances are at it (``capacity_facts.task_network_interfaces``)."""
    used = interfaces_used(c, services)
    limit = c.capacity.task_network_interfaces
    at = sum(g.count for g, n in zip(c.instances, used, strict=True) if n >= limit) if used else 0
    if not at:
        return None
    fewest = " (the fewest of its types)" if len(c.capacity.instance_types) > 1 else ""
    return (
        f"{c.capacity.name}: at most {limit} awsvpc tasks a host (each takes one of the host's {limit + 1} network "
        f"interfaces{fewest}, less the host's own; ENI trunking is not assumed): {at} of "
        f"{text.count(c.instance_count, 'instance')} at it"
    )


def memory_line(c: CapacityPlan) -> str:
    """Where a capacity's per-GPU figure comes from: measured, the table (with its source), or the fallback."""
    cap = c.capacity
    return (
        f"{cap.name}: {cap.usable_gpu_memory_mib} MiB usable per GPU = {cap.registered_gpu_memory_mib} MiB as ECS "
        f"registers it ({cap.gpu_memory_basis}: {cap.gpu_memory_source}) - {cap.gpu_margin_mib} MiB margin; EC2 lists "
        f"{cap.ec2_gpu_memory_mib} MiB"
    )


def summary_lines(assessment: Assessment) -> list[str]:
    lines = [f"GPU fleet plan: {capacity_line(c)}" for c in assessment.steady.capacities]
    for c in assessment.steady.capacities:  # where a figure is not the table's, and where interfaces bind
        memory = memory_line(c) if c.capacity.gpu_memory_basis != "table" else None
        lines += [
            f"GPU fleet plan: {line}" for line in (memory, interfaces_line(c, assessment.steady.services)) if line
        ]
    for name, n in sorted(assessment.max_instances.items()):
        lines.append(f"GPU fleet plan: {name}: {sizing_line(assessment, name, n)}")
    # Each finding is printed once, by the CDK CLI on its construct (errors fail the synth; an acknowledged warning is
    # hidden there): here only their count, so a synth does not print every warning twice.
    warned, accepted = len(assessment.warnings), sum(1 for f in assessment.findings if f.acknowledged is not None)
    if warned or accepted:
        lines.append(
            f"GPU fleet plan: the fit plan's own {text.count(warned, 'warning')} and {accepted} acknowledged (each on "
            "its construct in the synth output, beside the task definitions' own warnings; all in gpu-fleet-plan.md)"
        )
    return lines


def _first_instances(group_index: int, c: CapacityPlan) -> tuple[int, int]:
    start = sum(g.count for g in c.instances[:group_index])
    return start, start + c.instances[group_index].count - 1


def _instance_label(c: CapacityPlan, index: int) -> str:
    first, last = _first_instances(index, c)
    return str(first) if first == last else f"{first}-{last}"


def to_table(assessment: Assessment) -> str:
    """Per group of identical hosts (``hosts``: how many), one row per GPU, one row of the tasks without a GPU, and
    one row of what a host's tasks take of its CPU and memory (where those bind, free GPU memory is no waste)."""
    plan = assessment.steady
    rows = ["capacity   hosts  gpu   used MiB / usable  tasks"]
    for c in plan.capacities:
        cap = c.capacity
        interfaces = interfaces_used(c, plan.services)
        for i, group in enumerate(c.instances):
            hosts = f"{group.count}x"
            for g, gpu in enumerate(group.gpus):
                names = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in gpu.tasks) or "(idle)"
                if gpu.whole:
                    names += " (whole GPU)"
                rows.append(
                    f"{cap.name:<9} {hosts:>6}  {g:>3}  {gpu.used_gpu_memory_mib:>9} / {cap.usable_gpu_memory_mib:<7} "
                    f"{names}"
                )
            if group.tasks_without_gpu:
                names = ", ".join(f"{name} x{n}" for name, n in group.tasks_without_gpu)
                rows.append(f"{cap.name:<9} {hosts:>6}    -  (no GPU)            {names}")
            rows.append(
                f"{cap.name:<9} {hosts:>6}  host  CPU {group.cpu_units_used} / {cap.host_cpu_units} units, memory "
                f"{group.memory_mib_used} / {cap.host_memory_mib} MiB"
                + (f", awsvpc tasks {interfaces[i]} / {cap.task_network_interfaces}" if interfaces else "")
            )
    rows.append("")
    rows.extend(capacity_line(c) for c in plan.capacities)
    rows.extend(memory_line(c) for c in plan.capacities)
    rows.extend(line for c in plan.capacities if (line := types_line(c)))
    rows.extend(line for c in plan.capacities if (line := interfaces_line(c, plan.services)))
    rows.extend(f"{name}: {sizing_line(assessment, name, n)}" for name, n in sorted(assessment.max_instances.items()))
    rows.append(
        f"total: {text.count(plan.instances, 'instance')} (lower bound {plan.instance_lower_bound}), {plan.gpus} GPUs "
        f"(lower bound {plan.gpu_lower_bound}), "
        f"{plan.whole_gpu_gpus} with a whole GPU per task; fits: {'yes' if plan.fits else 'no'}"
    )
    rows.extend(f"note: {line}" for s in plan.services if (line := allocation_line(s)))
    rows.extend(finding_rows(assessment.findings))
    return "\n".join(rows)


# A warning on more than FOLD_PAST subjects is shown for the first SHOWN_OF_FOLDED of them, the rest counted on a line:
# on a fleet of 300 services whose budgets are guesses, 300 lines of BudgetIsAGuess buried the plan's totals above.
FOLD_PAST = 5
SHOWN_OF_FOLDED = 3


def finding_rows(findings: Sequence[Finding] | Sequence[pd.Finding]) -> list[str]:
    """Each finding on a line, in order, but a warning (not acknowledged) of one rule on more than FOLD_PAST subjects:
    its first SHOWN_OF_FOLDED, then one line counting the rest. Errors and acknowledged warnings are never folded;
    `plan --json` and the plan file list every finding. The same from a fleet file's plan and a plan JSON read back."""

    def folds(f: Finding | pd.Finding) -> bool:
        return f.level == Level.WARNING and f.acknowledged is None

    many = Counter((f.rule_id, f.about) for f in findings if folds(f))
    rows: list[str] = []
    shown: Counter[tuple[str, str]] = Counter()
    for f in findings:
        key = (f.rule_id, f.about)
        if not folds(f) or many[key] <= FOLD_PAST:
            rows.append(finding_line(f.rule_id, str(f.level), f.about, f.subject, f.message, f.acknowledged))
            continue
        shown[key] += 1
        if shown[key] <= SHOWN_OF_FOLDED:
            rows.append(finding_line(f.rule_id, str(f.level), f.about, f.subject, f.message, f.acknowledged))
        if shown[key] == SHOWN_OF_FOLDED:
            rest = many[key] - SHOWN_OF_FOLDED
            rows.append(f"warning [{f.rule_id}]: the same on {rest} more {f.about}s (the plan JSON lists each)")
    return rows


def to_markdown(
    assessment: Assessment, *, title: str = "GPU fleet plan", cost_lines: Sequence[str] | None = None
) -> str:
    plan = assessment.steady
    out = [
        f"# {title}",
        "",
        "A proof that a placement exists and a capacity estimate; where ECS's own placement was replayed "
        "(core.placement), the instances it needs at a rollout's peak and keeps after it.",
        "",
    ]
    out += [
        "| capacity | instance type | instances | max instances | as ECS places (peak) | expected after rollouts "
        "| GPUs used | GPU memory used / usable (MiB) | whole-GPU equivalent |"
    ]
    out += ["| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in plan.capacities:
        usable = c.instance_count * c.capacity.gpus_per_instance * c.capacity.usable_gpu_memory_mib
        placed = assessment.placement.get(c.capacity.name)
        out.append(
            f"| {c.capacity.name} | {c.capacity.instance_type} | {c.instance_count} | "
            f"{assessment.max_instances.get(c.capacity.name, '-')} | {placed.needed if placed else '-'} | "
            f"{placed.expected_after_rollout if placed else '-'} | {c.gpus_used} | "
            f"{c.used_gpu_memory_mib} / {usable} | "
            f"{c.whole_gpu_gpus} |"
        )
    out += [
        "",
        "| service | capacity | tasks | counted from | placed | surge |",
        "| --- | --- | ---: | --- | ---: | ---: |",
    ]
    for s in plan.services:
        out.append(
            f"| {s.name} | {s.capacity} | {plan.counts[s.name]} | {s.count_source} | {plan.placed[s.name]} "
            f"| {assessment.surge.counts[s.name]} |"
        )
    out += ["", "## GPU memory", ""]
    out += [f"- {memory_line(c)}" for c in plan.capacities]
    out += [f"- {line}" for c in plan.capacities if (line := types_line(c))]
    out += [f"- {line}" for c in plan.capacities if (line := interfaces_line(c, plan.services))]
    for o in assessment.outside:
        out.append(f"| {o.name} | {o.capacity} | ? | outside the plan: {o.reason} | - | - |")
    notes = [f"- {line}" for s in plan.services if (line := allocation_line(s))]
    if notes:
        out += ["", "## Allocation notes", "", *notes]
    if cost_lines is not None:
        out += ["", "## Cost", "", *(f"- {line.strip()}" for line in cost_lines)]
    out += ["", "## Findings", ""]
    out += [f"- {f}" for f in assessment.findings] or ["- none"]
    return "\n".join(out) + "\n"


def doc_summary(plan: pd.PlanDocument) -> list[str]:
    """A plan document in a few lines: per capacity its instances, GPUs, maximum and surge; the totals; the
    findings."""
    lines = []
    for cap in plan.capacities:
        lines.append(
            f"{cap.name} ({cap.instance_type}): {text.count(cap.instance_count, 'instance')}, "
            f"{text.count(cap.gpus_used, 'GPU')} used, max {cap.max_instances}, deployment surge needs "
            f"{cap.surge_instances}"
            + (
                f" packed, {cap.ecs_placement_instances} as ECS places it, {cap.expected_instances} expected "
                "after rollouts"
                if cap.ecs_placement_instances is not None
                else ""
            )
        )
    summary = plan.summary
    lines.append(
        f"total: {text.count(summary.instances, 'instance')} (lower bound {summary.instance_lower_bound}), "
        f"{summary.gpus} GPUs; fits: {'yes' if summary.fits else 'no'}"
    )
    lines.extend(finding_rows(plan.findings))
    return lines


def allow_list_markdown(allowances: Sequence[tuple[str, str, str]], not_judged: Sequence[tuple[str, str]]) -> str:
    """The plan file's section on the allow-list: every allowance with its reason, and what could not be judged."""
    if not allowances and not not_judged:
        return ""
    lines = ["", "## Allowed on GPU hosts", ""]
    if allowances:
        lines += table(
            ("resource", "rule", "reason"),
            (
                (text.markdown(r), f"`{rule.removeprefix('ecs-gpu-sharing:')}`", text.markdown(why))
                for r, rule, why in allowances
            ),
        )
    else:
        lines.append("Nothing beyond the allow-list.")
    if not_judged:
        lines += ["", "Not judged (the templates do not hold what they would need):", ""]
        lines += [f"- {text.markdown(r)}: {text.markdown(why)}" for r, why in not_judged]
    return "\n".join(lines) + "\n"
