"""Judging budgets by what was measured, and re-planning with the budgets that follow. Pure Python.

``evaluate`` reads, per fleet service, the telemetry daemon's measured GPU memory (peak and p99), the utilization
of its GPUs, and its stopped tasks; this module turns those into a verdict and a suggested budget, and plans the
fleet again with the suggestions so the change in hosts and GPUs is seen before anything is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .fleet import FleetSpec
from .rules import Assessment, assess

TOO_TIGHT = "too tight"
FITS = "fits"
TOO_LOOSE = "too loose"
NO_DATA = "no data"

DEFAULT_MARGIN_PERCENT = 10
TIGHT_RATIO = 0.95  # a peak at 95% of the budget or more leaves no room for the next request's growth
LOOSE_RATIO = 0.7  # a suggestion at 70% of the budget or less frees a sizeable share of a GPU
ROUND_MIB = 64


@dataclass(frozen=True)
class Measured:
    """What was measured of one fleet service over the window (``None``: no data)."""

    service: str
    ecs_service: str | None  # its ECS service name, found by the fleet tag
    peak_mib: int | None = None
    p99_mib: int | None = None
    utilization_percent: float | None = None
    oom_stops: int = 0
    mps_stops: int = 0
    crash_stops: int = 0
    recent_stop_reasons: tuple[str, ...] = ()  # ECS's stoppedReason of tasks stopped in the last hour
    image: str | None = None  # the running image, name@sha256:digest


@dataclass(frozen=True)
class Verdict:
    service: str
    budget_mib: int
    measured: Measured
    verdict: str
    suggested_mib: int
    why: str

    @property
    def headroom_mib(self) -> int | None:
        peak = self.measured.peak_mib
        return None if peak is None else self.budget_mib - peak


def _round_up(mib: float) -> int:
    return int(math.ceil(mib / ROUND_MIB) * ROUND_MIB)


def judge(
    spec: FleetSpec, measured: dict[str, Measured], margin_percent: int = DEFAULT_MARGIN_PERCENT
) -> list[Verdict]:
    """A verdict and a suggested budget per fleet service.

    The suggestion is the measured peak plus ``margin_percent``, rounded up to 64 MiB, and never below what the
    service's allocation note says it needs. A service whose tasks stopped for memory, or whose peak reached 95% of
    its budget, is too tight (its peak is capped by the budget itself, so the suggestion is the budget plus the
    margin at least); a suggestion at 70% of the budget or less is too loose.
    """
    out = []
    factor = 1 + margin_percent / 100
    for name, svc in spec.services.items():
        budget = svc.gpu_budget_mib
        m = measured.get(name) or Measured(name, None)
        need = svc.note.need_mib if svc.note is not None else 0
        if m.peak_mib is None:
            why = "no GPU memory measured in the window (is the telemetry daemon running, and the service?)"
            out.append(Verdict(name, budget, m, NO_DATA, budget, why))
            continue
        suggested = max(_round_up(m.peak_mib * factor), need)
        if m.oom_stops or m.peak_mib >= budget * TIGHT_RATIO:
            suggested = max(suggested, _round_up(budget * factor))
            why = (
                f"{m.oom_stops} task{'s' if m.oom_stops != 1 else ''} stopped for memory; " if m.oom_stops else ""
            ) + f"peak {m.peak_mib} MiB is {100 * m.peak_mib / budget:.0f}% of the {budget} MiB budget"
            out.append(Verdict(name, budget, m, TOO_TIGHT, suggested, why))
        elif suggested <= budget * LOOSE_RATIO:
            share = 100 * suggested / budget
            why = f"peak {m.peak_mib} MiB plus {margin_percent}% is {suggested} MiB, {share:.0f}% of the budget"
            out.append(Verdict(name, budget, m, TOO_LOOSE, suggested, why))
        else:
            out.append(Verdict(name, budget, m, FITS, budget, f"peak {m.peak_mib} MiB of {budget} MiB"))
    return out


def resized(spec: FleetSpec, verdicts: list[Verdict]) -> FleetSpec:
    """The fleet with each judged service's budget replaced by its suggestion (fitting ones keep theirs)."""
    budgets = {v.service: v.suggested_mib for v in verdicts}
    services = {
        name: replace(s, gpu_budget_mib=budgets.get(name, s.gpu_budget_mib)) for name, s in spec.services.items()
    }
    return replace(spec, services=services)


def replan(spec: FleetSpec, verdicts: list[Verdict]) -> tuple[Assessment, Assessment]:
    """The fleet's plan with its budgets now, and with the suggested ones."""
    after = resized(spec, verdicts)
    return (
        assess(spec.capacity_inputs(), spec.service_inputs()),
        assess(after.capacity_inputs(), after.service_inputs()),
    )
