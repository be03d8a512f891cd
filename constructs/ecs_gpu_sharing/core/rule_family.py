"""A family of rules checked outside the plan, each row declared beside its check (the cdk-nag way): a module makes
one ``Family`` and writes ``ROOT_USER = RULES.declare(...)`` where it checks the rule, so the id is a symbol and
the level, subject, explanation and where it is checked sit with the check. ``core.rules`` lists the families
into one table. Pure Python, and a leaf: a family's module can import it without importing the planner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from .errors import GpuSharingError

PREFIX = "ecs-gpu-sharing:"


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Source(StrEnum):
    """Where a rule is checked."""

    PLAN = "fit plan"  # by ``assess``, over the plan of every service on a GPU capacity
    TASK_DEFINITION = "task definition"  # on the task definition as rendered (shared-GPU ones, and any on GPU hosts)
    CAPACITY = "capacity"  # by the capacity construct, on its instance types
    FLEET_FILE = "fleet file"  # by the fleet-file parser, before anything is built
    TEMPLATE = "templates"  # on the synthesized templates (AwsLimitsChecks), and by the fleet-file parser


@dataclass(frozen=True)
class Declared:
    """One rule's row: its id, level, what its findings are about, where it is checked and why it exists."""

    rule_id: str
    level: Level
    about: str  # "service", "capacity", "container", "task definition", "stack"
    source: Source
    explanation: str


@dataclass
class Family:
    """The rules one module checks, in the order it declares them."""

    name: str
    rows: list[Declared] = field(default_factory=list)

    def declare(self, rule_id: str, level: Level, about: str, source: Source, explanation: str) -> str:
        """Declares a rule of this family and returns its id (for the module's constant)."""
        if not rule_id.startswith(PREFIX) or any(r.rule_id == rule_id for r in self.rows):
            raise GpuSharingError(
                f"rule family {self.name}: {rule_id!r} is not a new {PREFIX}Name id; give each rule its own id, "
                f"spelled {PREFIX} and a name"
            )
        self.rows.append(Declared(rule_id, level, about, source, explanation))
        return rule_id
