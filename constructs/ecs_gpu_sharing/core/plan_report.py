"""Renders a fleet assessment: the JSON contract, Markdown, a terminal table, an SVG and a short summary.

Pure Python. The JSON shape is a contract (README, "Planning without synth"); change it only with a version note.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from .allocation import headroom
from .cost import Prices, add_cost
from .planner import MANAGED_INSTANCES, CapacityPlan, Plan, ServiceInput
from .rules import Assessment


def _note_json(s: ServiceInput) -> dict[str, Any] | None:
    """A service's allocation note with its headroom: budget less need, and budget less the measured peak."""
    note = s.note
    if note is None:
        return None
    evidence = note.evidence
    return {
        "residency_mib": note.residency_mib,
        "peak_working_mib": note.peak_working_mib,
        "need_mib": note.need_mib,
        "headroom_mib": headroom(s.task_gpu_budget_mib, note.need_mib),
        "compute_percent": note.compute_percent,
        "shared_failure": note.shared_failure,
        "isolation_group": note.isolation_group or None,
        "isolate_host": note.isolate_host,
        "evidence": None
        if evidence is None
        else {
            "peak_mib": evidence.peak_mib,
            "p99_mib": evidence.p99_mib,
            "measured_on": evidence.measured_on.isoformat(),
            "source": evidence.source,
            "image": evidence.image,
            "headroom_mib": headroom(s.task_gpu_budget_mib, evidence.peak_mib),
        },
    }


def note_line(s: ServiceInput) -> str | None:
    """One line about a service's allocation note, for the table, the Markdown and the SVG."""
    note = s.note
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


def to_json(assessment: Assessment, prices: Prices | None = None) -> dict[str, Any]:
    """The plan as JSON: the same for ``ecs-gpu-sharing plan --json`` and ``cdk.out/gpu-fleet-plan.json``; with
    ``prices``, what it costs (``core.cost``), else how to get prices."""
    plan = assessment.steady
    doc = {
        "capacities": [_capacity_json(c, assessment) for c in plan.capacities],
        "services": [
            {
                "name": s.name,
                "capacity": s.capacity,
                "tasks": plan.counts[s.name],
                "count_source": s.count_source,
                "max_percent": s.max_percent,
                "surge_tasks": assessment.surge.counts[s.name],
                "placed": plan.placed[s.name],
                "task": {
                    "cpu_units": s.cpu_units,
                    "memory_mib": s.memory_mib,
                    "gpu_budgets_mib": list(s.shape.gpu_budgets_mib),
                    "whole_gpus": s.whole_gpus,
                },
                "allocation": _note_json(s),
            }
            for s in plan.services
        ],
        "outside_plan": [{"name": o.name, "capacity": o.capacity, "reason": o.reason} for o in assessment.outside],
        "findings": [
            {
                "rule_id": f.rule_id,
                "level": str(f.level),
                "kind": f.kind,
                "subject": f.subject,
                "message": f.message,
                "acknowledged": f.acknowledged,
            }
            for f in assessment.findings
        ],
        "summary": {
            "instances": plan.instances,
            "instance_lower_bound": plan.instance_lower_bound,
            "gpus": plan.gpus,
            "gpu_lower_bound": plan.gpu_lower_bound,
            "whole_gpu_gpus": plan.whole_gpu_gpus,
            "fits": plan.fits and not assessment.errors,
        },
    }
    return add_cost(doc, prices)


def _capacity_json(c: CapacityPlan, assessment: Assessment) -> dict[str, Any]:
    cap = c.capacity
    shapes = {s.name: s.shape for s in assessment.steady.services}
    return {
        "name": cap.name,
        "kind": cap.kind,
        "instance_type": cap.instance_type,
        "instance_types": list(cap.instance_types or (cap.instance_type,)),
        "gpus_per_instance": cap.gpus_per_instance,
        "ec2_gpu_memory_mib": cap.ec2_gpu_memory_mib,
        "ecs_gpu_memory_mib": cap.ecs_gpu_memory_mib,
        "gpu_margin_mib": cap.gpu_margin_mib,
        "gpu_memory_basis": cap.gpu_memory_basis,
        "gpu_memory_source": cap.gpu_memory_source,
        "usable_gpu_memory_mib": cap.usable_gpu_memory_mib,
        "host_cpu_units": cap.host_cpu_units,
        "host_memory_mib": cap.host_memory_mib,
        "daemons": list(cap.daemons),  # daemon services whose task per host the host figures leave out
        "min_instances": cap.min_instances,
        "max_instances": assessment.max_instances.get(cap.name),
        "surge_instances": assessment.surge.capacity(cap.name).instance_count,
        "instance_lower_bound": c.instance_lower_bound,
        "gpu_lower_bound": c.gpu_lower_bound,
        "optimal": c.optimal,
        "instances": [
            {
                "count": group.count,
                "gpus": [
                    {
                        "tasks": [
                            {
                                "service": name,
                                "tasks": n,
                                "gpu_budget_mib": shapes[name].task_gpu_budget_mib,
                                "containers": shapes[name].clients,
                            }
                            for name, n in gpu.tasks
                        ],
                        "used_gpu_memory_mib": gpu.used_gpu_memory_mib,
                        "whole": gpu.whole,
                    }
                    for gpu in group.gpus
                ],
                "cpu_units_used": group.cpu_units_used,
                "memory_mib_used": group.memory_mib_used,
                "tasks_without_gpu": [{"service": name, "tasks": n} for name, n in group.tasks_without_gpu],
            }
            for group in c.instances
        ],
    }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def capacity_line(c: CapacityPlan) -> str:
    cap = c.capacity
    gpus = c.instance_count * cap.gpus_per_instance
    usable = gpus * cap.usable_gpu_memory_mib
    share = f" ({100 * c.used_gpu_memory_mib // usable}%)" if usable else ""
    density = f"{c.whole_gpu_gpus / c.gpus_used:.1f}x" if c.gpus_used else "-"
    return (
        f"{cap.name} ({cap.instance_type}): {_count(c.instance_count, 'instance')}"
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


def memory_line(c: CapacityPlan) -> str:
    """Where a capacity's per-GPU figure comes from: measured, the table (with its source), or the fallback."""
    cap = c.capacity
    return (
        f"{cap.name}: {cap.usable_gpu_memory_mib} MiB usable per GPU = {cap.ecs_gpu_memory_mib} MiB as ECS registers "
        f"it ({cap.gpu_memory_basis}: {cap.gpu_memory_source}) - {cap.gpu_margin_mib} MiB margin; EC2 lists "
        f"{cap.ec2_gpu_memory_mib} MiB"
    )


def summary_lines(assessment: Assessment) -> list[str]:
    lines = [f"GPU fleet plan: {capacity_line(c)}" for c in assessment.steady.capacities]
    lines += [
        f"GPU fleet plan: {memory_line(c)}"
        for c in assessment.steady.capacities
        if c.capacity.gpu_memory_basis != "table"
    ]
    for name, n in sorted(assessment.max_instances.items()):
        surge = assessment.surge.capacity(name).instance_count
        lines.append(f"GPU fleet plan: {name}: max instances {n}, deployment surge needs {surge}")
    lines.extend(f"GPU fleet plan: {f}" for f in assessment.findings)
    return lines


def _first_instances(group_index: int, c: CapacityPlan) -> tuple[int, int]:
    start = sum(g.count for g in c.instances[:group_index])
    return start, start + c.instances[group_index].count - 1


def _instance_label(c: CapacityPlan, index: int) -> str:
    first, last = _first_instances(index, c)
    return str(first) if first == last else f"{first}-{last}"


def to_table(assessment: Assessment) -> str:
    """One row per GPU of each group of identical instances (``0-11`` is instances 0 to 11, all alike)."""
    plan = assessment.steady
    rows = ["capacity  instances  gpu  used MiB / usable  tasks"]
    for c in plan.capacities:
        for i, group in enumerate(c.instances):
            label = _instance_label(c, i)
            for g, gpu in enumerate(group.gpus):
                names = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in gpu.tasks) or "(idle)"
                if gpu.whole:
                    names += " (whole GPU)"
                rows.append(
                    f"{c.capacity.name:<9} {label:>9}  {g:>3}  "
                    f"{gpu.used_gpu_memory_mib:>8} / {c.capacity.usable_gpu_memory_mib:<6}  {names}"
                )
            if group.tasks_without_gpu:
                names = ", ".join(f"{name} x{n}" for name, n in group.tasks_without_gpu)
                rows.append(f"{c.capacity.name:<9} {label:>9}    -         (no GPU)        {names}")
    rows.append("")
    rows.extend(capacity_line(c) for c in plan.capacities)
    rows.extend(memory_line(c) for c in plan.capacities)
    rows.extend(line for c in plan.capacities if (line := types_line(c)))
    rows.append(
        f"total: {plan.instances} instances (lower bound {plan.instance_lower_bound}), {plan.gpus} GPUs "
        f"(lower bound {plan.gpu_lower_bound}), "
        f"{plan.whole_gpu_gpus} with a whole GPU per task; fits: {'yes' if plan.fits else 'no'}"
    )
    rows.extend(f"note: {line}" for s in plan.services if (line := note_line(s)))
    rows.extend(str(f) for f in assessment.findings)
    return "\n".join(rows)


def to_markdown(
    assessment: Assessment, *, title: str = "GPU fleet plan", cost_lines: Sequence[str] | None = None
) -> str:
    plan = assessment.steady
    out = [
        f"# {title}",
        "",
        "A proof that a placement exists and a capacity estimate, not where ECS will put tasks.",
        "",
    ]
    out += [
        "| capacity | instance type | instances | max instances | GPUs used "
        "| GPU memory used / usable (MiB) | whole-GPU equivalent |"
    ]
    out += ["| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for c in plan.capacities:
        usable = c.instance_count * c.capacity.gpus_per_instance * c.capacity.usable_gpu_memory_mib
        out.append(
            f"| {c.capacity.name} | {c.capacity.instance_type} | {c.instance_count} | "
            f"{assessment.max_instances.get(c.capacity.name, '-')} | {c.gpus_used} | "
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
    for o in assessment.outside:
        out.append(f"| {o.name} | {o.capacity} | ? | outside the plan: {o.reason} | - | - |")
    notes = [f"- {line}" for s in plan.services if (line := note_line(s))]
    if notes:
        out += ["", "## Allocation notes", "", *notes]
    if cost_lines is not None:
        out += ["", "## Cost", "", *(f"- {line.strip()}" for line in cost_lines)]
    out += ["", "## Findings", ""]
    out += [f"- {f}" for f in assessment.findings] or ["- none"]
    return "\n".join(out) + "\n"


def _colours(names: list[str]) -> dict[str, str]:
    # Hues a golden angle apart, in service order: neighbours differ, the same fleet always looks the same.
    return {name: f"hsl({round(i * 137.508) % 360}, 60%, 50%)" for i, name in enumerate(names)}


def to_svg(plan: Plan, *, caption: str | None = None) -> str:
    """Each group of identical instances' GPUs as bars, filled by their tasks in proportion to GPU memory; a
    ``caption`` (such as the plan's cost) is written under them."""
    bar_w, bar_h, gap, label_w = 360, 18, 6, 190
    colour = _colours([s.name for s in plan.services])
    budget = {s.name: s.task_gpu_budget_mib for s in plan.services}
    tip = {s.name: f"; {line}" if (line := note_line(s)) else "" for s in plan.services}
    rows: list[str] = []
    y = 10
    for c in plan.capacities:
        usable = c.capacity.usable_gpu_memory_mib
        rows.append(
            f'<text x="4" y="{y + 12}" font-weight="bold">'
            f"{escape(c.capacity.name)} ({escape(c.capacity.instance_type)})</text>"
        )
        y += bar_h + gap
        for i, group in enumerate(c.instances):
            label = _instance_label(c, i)
            plural = "instances" if group.count > 1 else "instance"
            for g, gpu in enumerate(group.gpus):
                rows.append(f'<text x="14" y="{y + 13}">{plural} {label} GPU {g}</text>')
                rows.append(f'<rect x="{label_w}" y="{y}" width="{bar_w}" height="{bar_h}" fill="#eee" stroke="#999"/>')
                x = float(label_w)
                for name, n in gpu.tasks:
                    for _ in range(n):
                        w = bar_w if gpu.whole else bar_w * budget[name] / usable
                        rows.append(
                            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{colour[name]}" '
                            f'stroke="#fff"><title>{escape(name)}: {budget[name]} MiB{escape(tip[name])}</title></rect>'
                        )
                        x += w
                rows.append(
                    f'<text x="{label_w + bar_w + 8}" y="{y + 13}">{gpu.used_gpu_memory_mib} / {usable} MiB</text>'
                )
                y += bar_h + gap
        y += gap
    for name, fill in colour.items():  # the legend
        rows.append(f'<rect x="14" y="{y}" width="{bar_h}" height="{bar_h}" fill="{fill}"/>')
        rows.append(f'<text x="{14 + bar_h + 6}" y="{y + 13}">{escape(name)}</text>')
        y += bar_h + gap
    if caption:
        rows.append(f'<text x="4" y="{y + 13}">{escape(caption)}</text>')
        y += bar_h + gap
    width = label_w + bar_w + 160
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 10}" '
        'font-family="sans-serif" font-size="12">\n' + "\n".join(rows) + "\n</svg>\n"
    )
