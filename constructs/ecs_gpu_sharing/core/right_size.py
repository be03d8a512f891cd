"""Judging budgets by what was measured, and re-planning with the budgets that follow. Pure Python.

``evaluate`` reads, per service, the telemetry daemon's measured GPU memory (peak and p99), the utilization of its
GPUs, and its stopped tasks; this module turns those into a verdict and a suggested budget, and (for a fleet file)
plans the fleet again with the suggestions so the change in hosts and GPUs is seen before anything is written.
What is judged is a ``Subject``: a service's task GPU budget, its allocation note's need and its task memory, from
a fleet file, a synth plan (``cdk.out/gpu-fleet-plan.json``) or the task definitions ECS runs.

A task killed at its memory limit (``OutOfMemoryError``: the kernel's OOM killer on the container's host memory)
is no GPU budget problem: it gets a host-memory advice (raise ``memory_mib``) and leaves the GPU verdict alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from . import plan_inputs
from .fleet import CONTAINER_NAME, FleetSpec
from .plan_document import PlanDocument
from .rules import Assessment, assess

TOO_TIGHT = "too tight"
FITS = "fits"
TOO_LOOSE = "too loose"
NO_DATA = "no data"
LIMIT_BROKEN = "limit broken"  # a peak above the budget: MPS did not hold it, and a higher budget is no answer

DEFAULT_MARGIN_PERCENT = 10
TIGHT_RATIO = 0.95  # a peak at 95% of the budget or more leaves no room for the next request's growth
LOOSE_RATIO = 0.7  # a suggestion at 70% of the budget or less frees a sizeable share of a GPU
ROUND_MIB = 64
NVML_OVER_LIMIT_MIB = 32
"""How far above an MPS container's pinned limit NVML may count it while the limit holds: NVML counted an H200
client's CUDA context at 516 MiB where the limit counted 514 (docs/gpu-measured.md), so a task that fills its budget
reads a little above it. A task's peak within this much a GPU container above its budget is the limit reached (too
tight), not broken."""


@dataclass(frozen=True)
class Subject:
    """What a service's budget is judged by: its task's GPU budget (MiB: every MPS container's, summed, as the daemon
    measures the task), its allocation note's need (0: none) and its task's host memory (MiB; ``None`` when
    unknown). ``sidecars``: the GPU sidecars' budgets within the task's (a fleet file's; ``--write`` sets only the
    model container's budget, so a suggestion is split by container)."""

    name: str
    budget_mib: int
    need_mib: int = 0
    memory_mib: int | None = None
    usable_mib: int | None = None  # one GPU's usable memory on its capacity: no suggestion goes above it
    sidecars: tuple[tuple[str, int], ...] = ()  # (container, MPS budget MiB) of the GPU sidecars
    container: str = CONTAINER_NAME  # the model container, whose budget --write sets


def fleet_subjects(spec: FleetSpec) -> dict[str, Subject]:
    """A fleet file's services as subjects: the task's budget is the model container's and its GPU sidecars'."""
    out = {}
    for name, s in spec.services.items():
        sidecars = tuple((c.name, c.gpu_budget_mib) for c in s.sidecars if c.gpu_budget_mib)
        out[name] = Subject(
            name,
            s.gpu_budget_mib + sum(budget for _, budget in sidecars),
            s.allocation.need_mib if s.allocation is not None else 0,
            s.memory_mib,
            spec.capacities[s.capacity].facts.usable_gpu_memory_mib if s.capacity in spec.capacities else None,
            sidecars,
        )
    return out


def plan_subjects(plan: PlanDocument) -> dict[str, Subject]:
    """A synth plan's (``gpu-fleet-plan.json``, read with ``plan_document.load``) MPS services as subjects: each
    task's budgets summed."""
    usable = {cap.name: cap.usable_gpu_memory_mib for cap in plan.capacities}
    return {
        s.name: Subject(
            s.name,
            sum(s.task.gpu_budgets_mib),
            s.allocation.need_mib if s.allocation is not None else 0,
            s.task.memory_mib,
            usable.get(s.capacity),
        )
        for s in plan.services
        if s.task.gpu_budgets_mib
    }


@dataclass(frozen=True)
class Measured:
    """What was measured of one service over the window (``None``: no data)."""

    service: str
    ecs_service: str | None  # its ECS service name
    peak_mib: int | None = None
    p99_mib: int | None = None
    utilization_percent: float | None = None
    host_memory_stops: int = 0  # tasks killed at their memory limit (host memory, not GPU)
    mps_stops: int = 0
    crash_stops: int = 0
    recent_stop_reasons: tuple[str, ...] = ()  # ECS's stoppedReason of tasks stopped in the last hour
    image: str | None = None  # the running image, name@sha256:digest
    containers: tuple[tuple[str, int], ...] = ()  # each GPU container's own peak (MiB); peak_mib is their sum


@dataclass(frozen=True)
class Verdict:
    service: str
    budget_mib: int
    measured: Measured
    verdict: str
    suggested_mib: int  # for the task (all its MPS containers)
    why: str
    memory_advice: str | None = None  # tasks killed for host memory: what to raise instead
    write_mib: int | None = None  # the model container's budget --write sets (the task's less its GPU sidecars')
    refusal: str | None = None  # why --write leaves this service alone, when it does

    @property
    def headroom_mib(self) -> int | None:
        peak = self.measured.peak_mib
        return None if peak is None else self.budget_mib - peak


def _round_up(mib: float) -> int:
    return int(math.ceil(mib / ROUND_MIB) * ROUND_MIB)


def _memory_advice(subject: Subject, m: Measured) -> str | None:
    if not m.host_memory_stops:
        return None
    n = m.host_memory_stops
    limit = f" above its {subject.memory_mib} MiB" if subject.memory_mib else ""
    return (
        f"{n} task{'s' if n != 1 else ''} killed at the container's memory limit (host memory, not GPU memory): "
        f"raise memory_mib{limit}; the GPU budget is not the cause"
    )


def judge(
    subjects: FleetSpec | Mapping[str, Subject],
    measured: Mapping[str, Measured],
    margin_percent: int = DEFAULT_MARGIN_PERCENT,
) -> list[Verdict]:
    """A verdict and a suggested budget per service (a fleet file's, or the given subjects).

    The suggestion is the measured peak plus ``margin_percent``, rounded up to 64 MiB, never below what the
    service's allocation note says it needs and never above one GPU's usable memory. A peak above the budget (by
    more than ``NVML_OVER_LIMIT_MIB`` a GPU container) is a broken limit, reported, never a reason to raise the
    budget. A service whose peak reached 95% of its budget is too tight (its peak is capped by the budget itself, so
    the suggestion is the budget plus the margin at least); a suggestion at 70% of the budget or less is too loose.
    Tasks killed for host memory add a memory advice and change no GPU figure.
    """
    if isinstance(subjects, FleetSpec):
        subjects = fleet_subjects(subjects)
    out = []
    factor = 1 + margin_percent / 100
    for name, subject in subjects.items():
        budget = subject.budget_mib
        m = measured.get(name) or Measured(name, None)
        advice = _memory_advice(subject, m)
        if m.peak_mib is None:
            why = "no GPU memory measured in the window (is the telemetry daemon running, and the service?)"
            out.append(Verdict(name, budget, m, NO_DATA, budget, why, advice))
            continue
        if m.peak_mib > budget + NVML_OVER_LIMIT_MIB * (1 + len(subject.sidecars)):
            why = (
                f"peak {m.peak_mib} MiB is above the {budget} MiB budget: MPS's pinned-memory limit did not hold the "
                "task (docs/security.md); find out how before any budget changes"
            )
            out.append(Verdict(name, budget, m, LIMIT_BROKEN, budget, why, advice))
            continue
        sidecar_mib = sum(budget for _, budget in subject.sidecars)
        model_peak = dict(m.containers).get(subject.container) if subject.sidecars else None
        if model_peak is not None:  # the model's own peak and margin; the sidecars keep their budgets
            suggested = max(_round_up(model_peak * factor) + sidecar_mib, subject.need_mib)
        else:
            suggested = max(_round_up(m.peak_mib * factor), subject.need_mib)
        ceiling = subject.usable_mib
        if m.peak_mib >= budget * TIGHT_RATIO:
            suggested = max(suggested, _round_up(budget * factor))
            if ceiling is not None and suggested > ceiling:
                suggested = max(budget, ceiling)  # one task's budget is at most one GPU's usable memory
            why = f"peak {m.peak_mib} MiB is {100 * m.peak_mib / budget:.0f}% of the {budget} MiB budget"
            if m.peak_mib > budget:
                why += " (NVML counts a CUDA context a little above what the pinned limit counts: the limit held)"
            verdict = TOO_TIGHT
        elif suggested <= budget * LOOSE_RATIO:
            share = 100 * suggested / budget
            why = f"peak {m.peak_mib} MiB plus {margin_percent}% is {suggested} MiB, {share:.0f}% of the budget"
            verdict = TOO_LOOSE
        else:
            verdict, suggested, why = FITS, budget, f"peak {m.peak_mib} MiB of {budget} MiB"
        write, refusal = _split(subject, m, suggested)
        out.append(Verdict(name, budget, m, verdict, suggested, why, advice, write, refusal))
    return out


def _split(subject: Subject, m: Measured, suggested: int) -> tuple[int | None, str | None]:
    """The model container's budget for a task's suggestion (the task's less its GPU sidecars'), or why there is none:
    the records give no peak of a container's own, or a sidecar is tight in its own budget (which --write, writing
    only the model container's, cannot raise)."""
    if not subject.sidecars:
        return suggested, None
    names = ", ".join(name for name, _ in subject.sidecars)
    peaks = dict(m.containers)
    missing = [c for c in (subject.container, *(name for name, _ in subject.sidecars)) if c not in peaks]
    if missing:
        return None, (
            f"its task has GPU sidecars ({names}) and the evidence has no peak of its own for {', '.join(missing)}: "
            f"the {suggested} MiB suggested for the task cannot be split by container; set the budgets by hand"
        )
    for name, budget in subject.sidecars:
        if peaks[name] >= budget * TIGHT_RATIO:
            return None, (
                f"sidecar {name} peaked at {peaks[name]} MiB of its {budget} MiB budget: raise that sidecar's "
                f"gpu_budget_mib by hand (--write sets only the {subject.container} container's budget)"
            )
    return suggested - sum(budget for _, budget in subject.sidecars), None


def resized(spec: FleetSpec, verdicts: list[Verdict]) -> FleetSpec:
    """The fleet with each judged service's model-container budget replaced by what --write would set (fitting ones,
    and tasks whose suggestion cannot be split, keep theirs)."""
    budgets = {v.service: v.write_mib for v in verdicts if v.write_mib is not None}
    services = {
        name: replace(s, gpu_budget_mib=budgets.get(name, s.gpu_budget_mib)) for name, s in spec.services.items()
    }
    return replace(spec, services=services)


def replan(spec: FleetSpec, verdicts: list[Verdict]) -> tuple[Assessment, Assessment]:
    """The fleet's plan with its budgets now, and with the suggested ones."""
    after = resized(spec, verdicts)
    return (
        assess(*plan_inputs.from_fleet(spec)),
        assess(*plan_inputs.from_fleet(after)),
    )


def verdict_json(v: Verdict) -> dict[str, Any]:
    """A verdict as ``evaluate --json`` writes it."""
    m = v.measured
    return {
        "service": v.service,
        "ecs_service": m.ecs_service,
        "budget_mib": v.budget_mib,
        "peak_mib": m.peak_mib,
        "p99_mib": m.p99_mib,
        "headroom_mib": v.headroom_mib,
        "utilization_percent": m.utilization_percent,
        "host_memory_stops": m.host_memory_stops,
        "mps_stops": m.mps_stops,
        "crash_stops": m.crash_stops,
        "recent_stop_reasons": list(m.recent_stop_reasons),
        "image": m.image,
        "verdict": v.verdict,
        "suggested_mib": v.suggested_mib,
        "why": v.why,
        "memory_advice": v.memory_advice,
        "write_mib": v.write_mib,
        "write_refused": v.refusal,
    }


def verdict_table(verdicts: list[Verdict]) -> str:
    """The verdicts as ``evaluate`` shows them: a table, then why, the memory advice and what --write leaves alone."""
    rows = [
        ("service", "budget", "peak", "p99", "headroom", "host-mem/MPS/crash stops", "util %", "verdict", "suggested")
    ]
    for v in verdicts:
        m = v.measured
        rows.append(
            (
                v.service,
                str(v.budget_mib),
                "-" if m.peak_mib is None else str(m.peak_mib),
                "-" if m.p99_mib is None else str(m.p99_mib),
                "-" if v.headroom_mib is None else str(v.headroom_mib),
                f"{m.host_memory_stops}/{m.mps_stops}/{m.crash_stops}",
                "-" if m.utilization_percent is None else str(m.utilization_percent),
                v.verdict,
                str(v.suggested_mib),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += [f"{v.service}: {v.why}" for v in verdicts]
    lines += [f"{v.service}: {v.memory_advice}" for v in verdicts if v.memory_advice]
    lines += [f"{v.service}: --write leaves it alone: {v.refusal}" for v in verdicts if v.refusal]
    return "\n".join(lines)
