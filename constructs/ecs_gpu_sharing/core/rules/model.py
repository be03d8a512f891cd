"""A rule's row and its findings: levels, sources, what a plan's rules read (Context)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..placement import CapacityPlacement
from ..planner import CapacityInput, Plan, ServiceInput
from ..rule_family import Level, Source

BUDGET_BELOW_NEED = "ecs-gpu-sharing:BudgetBelowNeed"
SURGE_WARNING = "ecs-gpu-sharing:SurgeDoesNotFit"
CLIENT_LIMIT_WARNING = "ecs-gpu-sharing:MpsClientLimit"
FRACTION_WARNING = "ecs-gpu-sharing:MemoryFractionOfWholeGpu"
OUTSIDE_PLAN_WARNING = "ecs-gpu-sharing:ServiceOutsidePlan"


@dataclass(frozen=True)
class OutsideService:
    """A service on a GPU capacity that the plan cannot count, and why; it is reported, never dropped."""

    name: str
    capacity: str
    reason: str
    fix: str


@dataclass(frozen=True)
class NameClash:
    """Two constructs of one kind that would carry the same name in the plan."""

    about: str  # "service" or "capacity"
    name: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Finding:
    """One rule's verdict about a service or a capacity."""

    rule_id: str
    level: Level
    about: str  # what the subject is: "service" or "capacity"
    subject: str  # its name in the plan
    message: str
    acknowledged: str | None = None  # the reason a warning was accepted for its service

    @property
    def error(self) -> bool:
        return self.level is Level.ERROR

    def __str__(self) -> str:
        return finding_line(self.rule_id, str(self.level), self.about, self.subject, self.message, self.acknowledged)


def finding_line(rule_id: str, level: str, about: str, subject: str, message: str, acknowledged: str | None) -> str:
    """One finding on one line, the same from a fleet file's plan and from a plan JSON read back."""
    if acknowledged is not None:
        return f"acknowledged [{rule_id}]: {about} {subject}: {acknowledged}"
    return f"{level} [{rule_id}]: {about} {subject}: {message}"


@dataclass(frozen=True)
class Context:
    """What every rule sees."""

    capacities: dict[str, CapacityInput]
    services: list[ServiceInput]
    outside: list[OutsideService]
    clashes: list[NameClash]
    shape_errors: list[tuple[str, str]]  # (service, why its task shape cannot be planned)
    steady: Plan
    surge: Plan
    placement: dict[str, CapacityPlacement] = field(default_factory=dict)  # ECS's own placement, by EC2 capacity

    def on(self, capacity: str) -> list[ServiceInput]:
        return [s for s in self.services if s.capacity == capacity]


# A rule yields (subject, message) pairs; the table adds the id, level and what the subject is.
Check = Callable[[Context], Iterable[tuple[str, str]]]


@dataclass(frozen=True)
class Rule:
    rule_id: str
    level: Level
    about: str  # what its findings are about: "service", "capacity", "container", "task definition", "stack"
    explanation: str
    check: Check | None  # the plan's rules; the others are checked where ``source`` says
    source: Source = Source.PLAN
