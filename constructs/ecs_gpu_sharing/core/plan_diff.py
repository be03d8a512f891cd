"""What changed between two fleet plans (``gpu-fleet-plan.json`` or ``plan --json``), for review. Pure Python.

Per capacity: instances, GPUs, GPU memory used, ``max_instances``, the deployment surge's instances and, where both
plans were costed with a prices file, the cost per month (in cents); per service:
added, left the plan (removed, or now outside it, with why), tasks and GPU budgets changed; checks (errors) that newly
fail; capacities that leave (removed, or of another kind: CloudFormation replaces them), with the services that ran
on them, since a deploy cannot take a capacity off the cluster while its tasks run there (``fleet capacities``). A
plan *grows* when any capacity figure rises (its cost included), a capacity appears, a service leaves the plan, a
capacity that ran services leaves, or a check newly fails; CI can ask for a review then (exit status 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import plan_document as pd
from . import text

# (key in a capacity's summary, label): the figures compared per capacity; more of any is growth.
_FIGURES = (
    ("instances", "instances"),
    ("gpus", "GPUs"),
    ("gpu_memory_mib", "GPU MiB used"),
    ("max_instances", "max instances"),
    ("surge_instances", "surge instances"),
)


_COST, _COST_LABEL = "cost_cents_per_month", "cost (cents/month)"
_EXPECTED_COST = "expected_cost_cents_per_month"
# Compared only where both plans carry them: a plan without prices, or written before ECS's placement was modelled
# (or for a capacity where it is not), has no figure to compare.
_OPTIONAL = (
    ("ecs_placement_instances", "instances as ECS places"),
    ("expected_instances", "expected instances"),
    (_COST, _COST_LABEL),
    (_EXPECTED_COST, "expected cost (cents/month)"),
)


@dataclass(frozen=True)
class Change:
    name: str
    old: int | None  # None: not in the old plan
    new: int | None  # None: not in the new plan

    @property
    def delta(self) -> int:
        return (self.new or 0) - (self.old or 0)


@dataclass
class PlanDiff:
    capacities: dict[str, dict[str, Change]] = field(default_factory=dict)  # capacity -> label -> change
    services_added: list[str] = field(default_factory=list)
    services_removed: list[str] = field(default_factory=list)
    left_plan: dict[str, str] = field(default_factory=dict)  # removed service -> why (outside the plan, or removed)
    tasks_changed: list[Change] = field(default_factory=list)
    budgets_changed: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)
    newly_failing: list[str] = field(default_factory=list)
    no_longer_failing: list[str] = field(default_factory=list)
    # capacity -> (why it leaves, the services the old plan ran on it): only capacities that ran some
    capacities_leaving: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    @property
    def grew(self) -> bool:
        return (
            bool(self.newly_failing)
            or bool(self.services_removed)
            or bool(self.capacities_leaving)
            or any(c.delta > 0 for figures in self.capacities.values() for c in figures.values())
        )

    @property
    def empty(self) -> bool:
        return not (
            self.services_added
            or self.services_removed
            or self.tasks_changed
            or self.budgets_changed
            or self.newly_failing
            or self.no_longer_failing
            or any(c.delta for figures in self.capacities.values() for c in figures.values())
        )


def _capacity_figures(cap: pd.Capacity) -> dict[str, int]:
    priced = {}
    if cap.cost is not None:
        priced[_COST] = round(cap.cost.per_month * 100)
        if cap.cost.expected_per_month is not None:  # a plan costed before ECS's placement was modelled has none
            priced[_EXPECTED_COST] = round(cap.cost.expected_per_month * 100)
    modelled = {
        k: v
        for k, v in (
            ("ecs_placement_instances", cap.ecs_placement_instances),
            ("expected_instances", cap.expected_instances),
        )
        if v is not None
    }
    return {
        **priced,
        **modelled,
        "max_instances": cap.max_instances or 0,
        "surge_instances": cap.surge_instances,
        "instances": cap.instance_count,
        "gpus": cap.gpus_used,
        "gpu_memory_mib": sum(g.count * gpu.used_gpu_memory_mib for g in cap.instances for gpu in g.gpus),
    }


def _errors(plan: pd.PlanDocument) -> set[str]:
    return {f"{f.rule_id} {f.about} {f.subject}: {f.message}" for f in plan.errors}


def _plan(doc: pd.PlanDocument | Any, source: str) -> pd.PlanDocument:
    return doc if isinstance(doc, pd.PlanDocument) else pd.load(doc, source=source)


def diff(old: Any, new: Any, *, old_source: str = "old", new_source: str = "new") -> PlanDiff:
    """What changed from ``old`` to ``new``: plan documents, or their JSON (read with ``plan_document.load``)."""
    old, new = _plan(old, old_source), _plan(new, new_source)
    result = PlanDiff()
    old_caps = {c.name: _capacity_figures(c) for c in old.capacities}
    new_caps = {c.name: _capacity_figures(c) for c in new.capacities}
    for name in sorted(set(old_caps) | set(new_caps)):
        before, after = old_caps.get(name), new_caps.get(name)
        result.capacities[name] = {
            label: Change(name, before[key] if before else None, after[key] if after else None)
            for key, label in _FIGURES
        }
        for key, label in _OPTIONAL:
            if (before is None or key in before) and (after is None or key in after) and (before or after):
                result.capacities[name][label] = Change(
                    name, before[key] if before else None, after[key] if after else None
                )
    old_tasks = {s.name: s.tasks for s in old.services}
    new_tasks = {s.name: s.tasks for s in new.services}
    result.services_added = sorted(set(new_tasks) - set(old_tasks))
    result.services_removed = sorted(set(old_tasks) - set(new_tasks))
    outside = {o.name: o.reason for o in new.outside_plan}
    result.left_plan = {n: outside.get(n) or "not in the new plan" for n in result.services_removed}
    old_budgets = {s.name: list(s.task.gpu_budgets_mib) for s in old.services}
    new_budgets = {s.name: list(s.task.gpu_budgets_mib) for s in new.services}
    result.budgets_changed = {
        n: (old_budgets[n], new_budgets[n])
        for n in sorted(set(old_budgets) & set(new_budgets))
        if old_budgets[n] != new_budgets[n]
    }
    result.tasks_changed = [
        Change(n, old_tasks[n], new_tasks[n])
        for n in sorted(set(old_tasks) & set(new_tasks))
        if old_tasks[n] != new_tasks[n]
    ]
    result.capacities_leaving = _leaving(old, new)
    result.newly_failing = sorted(_errors(new) - _errors(old))
    result.no_longer_failing = sorted(_errors(old) - _errors(new))
    return result


def _leaving(old: pd.PlanDocument, new: pd.PlanDocument) -> dict[str, tuple[str, list[str]]]:
    """The old plan's capacities that ran services and that the new plan drops or gives another kind."""
    kinds = {c.name: c.kind for c in new.capacities}
    out = {}
    for cap in old.capacities:
        ran = sorted(s.name for s in old.services if s.capacity == cap.name and s.tasks)
        if not ran or kinds.get(cap.name) == cap.kind:
            continue
        out[cap.name] = ("removed" if cap.name not in kinds else f"now {kinds[cap.name]}", ran)
    return out


def _cell(change: Change) -> str:
    if change.old is None:
        return f"(new) {change.new}"
    if change.new is None:
        return f"{change.old} (removed)"
    if change.delta == 0:
        return str(change.new)
    return f"{change.old} -> {change.new} ({change.delta:+d})"


def _labels(d: PlanDiff) -> list[str]:
    costed = any(_COST_LABEL in figures for figures in d.capacities.values())
    return [label for _, label in _FIGURES] + ([_COST_LABEL] if costed else [])


def _cells(figures: dict[str, Change], labels: list[str]) -> list[str]:
    return [_cell(figures[label]) if label in figures else "-" for label in labels]


def to_text(d: PlanDiff) -> str:
    labels = _labels(d)
    table = [["capacity", *labels]] + [
        [text.one_line(name), *(text.one_line(c) for c in _cells(figures, labels))]
        for name, figures in d.capacities.items()
    ]
    widths = [max(len(row[k]) for row in table) + 2 for k in range(len(table[0]))]  # each column its widest cell's
    rows = ["".join(f"{cell:<{w}}" for cell, w in zip(row, widths, strict=True)) for row in table]
    rows += _lists(d, bullet="")
    rows.append("grew: yes (review the capacity and services above)" if d.grew else "grew: no")
    return "\n".join(row.rstrip() for row in rows)


def to_markdown(d: PlanDiff) -> str:
    labels = _labels(d)
    out = ["### GPU fleet plan: what changed", ""]
    out.append("| capacity | " + " | ".join(labels) + " |")
    out.append("| --- |" + " ---: |" * len(labels))
    for name, figures in d.capacities.items():
        out.append(f"| {text.markdown(name)} | " + " | ".join(text.markdown(c) for c in _cells(figures, labels)) + " |")
    out.append("")
    out += _lists(d, bullet="- ", show=text.markdown)
    out.append("")
    out.append(
        "**Capacity grows, a service or a busy capacity left the plan, or a check newly fails: please review.**"
        if d.grew
        else "Nothing grew."
    )
    return "\n".join(out) + "\n"


def _lists(d: PlanDiff, *, bullet: str, show: Callable[[Any], str] = text.one_line) -> list[str]:
    """The changes as lines; every value read from a plan file goes through ``show`` (escaped for where it lands: a
    name from a forged file must not start a line, a heading or a link in a PR comment, or move a terminal)."""
    rows = []
    if d.services_added:
        rows.append(f"{bullet}services added: {', '.join(show(n) for n in d.services_added)}")
    for name in d.services_removed:
        rows.append(f"{bullet}service {show(name)} left the plan: {show(d.left_plan.get(name, 'not in the new plan'))}")
    for c in d.tasks_changed:
        rows.append(f"{bullet}service {show(c.name)}: tasks {show(_cell(c))}")
    for name, (before, after) in d.budgets_changed.items():
        rows.append(f"{bullet}service {show(name)}: GPU budgets (MiB) {show(before)} -> {show(after)}")
    for name, (why, ran) in d.capacities_leaving.items():
        rename = "" if why == "removed" else ", the new kind under another name"
        rows.append(
            f"{bullet}capacity {show(name)} leaves ({show(why)}) while services ran on it ({show(text.few(ran))}): a "
            "deploy cannot take it off the cluster while their tasks run there; deploy in two steps, moving the "
            f"services first{rename} (`ecs-gpu-sharing fleet capacities` checks the account)"
        )
    rows += [f"{bullet}newly failing: {show(e)}" for e in d.newly_failing]
    rows += [f"{bullet}no longer failing: {show(e)}" for e in d.no_longer_failing]
    return rows
